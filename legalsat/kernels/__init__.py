"""Triton kernel templates per plan strategy: a plan in, a kernel module's source out.

`emit(plan, variant)` is pure Python (no torch, no triton): `legalsat emit` prints its
source anywhere; `legalsat.clients.triton.build_kernel` compiles and runs it.

Variants: "tl" (Triton language; runs in the interpreter, so CI checks every one bit-exact
on the CPU) and "gluon" (sm90 TMA plans: the explicit persistent pipeline; compiled in CI,
run on the GPU machine). Pieces the plan moves by another strategy than its own (a ragged
tail copied directly) are emitted by that strategy.
"""

from __future__ import annotations

from legalsat.errors import InputError
from legalsat.extract.forms import formulation
from legalsat.kernels.direct import emit_direct_copy, emit_direct_gather
from legalsat.kernels.inspector import emit_inspector_executor
from legalsat.kernels.shuffle import emit_shuffle, emit_shuffle_gather, shuffle_shape
from legalsat.kernels.source import HEADER_GLUON, HEADER_TL, Emitted
from legalsat.kernels.staged import emit_staged
from legalsat.kernels.tma import emit_tma_tl, tma_piece
from legalsat.kernels.tma_gluon import emit_tma_gluon
from legalsat.kernels.words import plan_error, word_piece

STRATEGIES = ("direct", "tma", "staged_smem", "shuffle", "inspector_executor")
VARIANTS = ("tl", "gluon")


def plan_kind(plan: dict) -> str:
    """copy | gather | load_tile: the movement of the plan's own term."""
    try:
        return formulation(plan.get("term") or "").kind
    except (ValueError, KeyError, IndexError, TypeError):
        raise plan_error("term", "the plan's term is not a planner term", "send the plan as the planner returned it") from None


def select_plan(obj: object, plan_index: int = 0) -> tuple[dict, str | None]:
    """(plan dict, request term or None) from a plan, a PlanOut model, or a whole optimize
    response (its `plan_index`-th plan); raises InputError naming what is wrong."""
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(by_alias=True)
    if not isinstance(obj, dict):
        raise plan_error("plan", f"the plan is a {type(obj).__name__}, not a JSON object",
                         "pass one plan object, or the whole optimize response")
    if "plans" not in obj:
        return obj, None
    plans = obj["plans"]
    if not plans:
        raise plan_error("plans", "the response holds no plan (status infeasible)",
                         "read its `rejected` reasons and change the request")
    if not 0 <= plan_index < len(plans):
        raise plan_error("plan_index", f"plan_index {plan_index} is outside the response's {len(plans)} plans",
                         f"use 0..{len(plans) - 1}")
    return plans[plan_index], obj.get("term")


def default_variant(plan: dict, sm90: bool) -> str:
    """The variant `build_kernel` runs by default: Gluon for sm90 TMA plans that copy boxes
    straight (measured faster than the tl descriptor kernel on the H100), tl otherwise (for
    transposing TMA plans the tl kernel measured faster on four of the six transposing
    workloads, Gluon on the two NCHW→NHWC ones by under 3%: benchmarks/RESULTS.md)."""
    if not sm90 or plan.get("strategy") != "tma":
        return "tl"
    try:
        straight = all(tma_piece(p, f"pieces[{i}]").perm() is None
                       for i, p in enumerate(plan.get("pieces") or []) if p.get("strategy") == "tma")
    except InputError:
        return "tl"  # emit() reports what is wrong with the plan
    return "gluon" if straight else "tl"


def emit(plan: dict, variant: str = "tl") -> Emitted:
    """The kernel module of one plan (a dict as the planner returns it). Raises InputError
    naming the plan field when the plan cannot become a kernel."""
    strategy = plan.get("strategy")
    if strategy not in STRATEGIES:
        raise plan_error("strategy", f"strategy is {strategy!r}", f"use a plan whose strategy is one of {STRATEGIES}")
    if variant not in VARIANTS:
        raise plan_error("variant", f"variant is {variant!r}", f"use one of {VARIANTS}")
    raw_pieces = plan.get("pieces") or []
    if not raw_pieces:
        raise plan_error("pieces", "the plan has no pieces", "plan the request with legalsat >= planner/2")
    kind = plan_kind(plan)
    if kind == "load_tile":
        raise plan_error("term", "load_tile plans stage a tile for a consumer kernel (wgmma, rows, cols); "
                         "they are fused into it, not run alone", "use the plan's descriptors and smem fields "
                         "in the consumer's own kernel")
    pieces = [(i, word_piece(p, f"pieces[{i}]"), p) for i, p in enumerate(raw_pieces)]
    texts: list[str] = []
    launches: list = []
    descs: dict = {}
    buffers: dict = {}
    notes: list[str] = []
    if kind == "gather":
        gather = plan.get("gather") or {}
        for key in ("index_count", "index_bound", "src_index_stride_bytes", "out_index_stride_bytes"):
            if key not in gather:
                raise plan_error(f"gather.{key}", f"the gather plan lacks gather.{key}",
                                 "plan the request with legalsat >= planner/2")
        warps = plan.get("num_warps", 4)
        if strategy == "inspector_executor":
            texts, launches, buffers = emit_inspector_executor(pieces, gather, warps)
        elif strategy == "direct":
            texts, launches = emit_direct_gather(pieces, gather, warps)
        elif strategy == "shuffle":
            texts, launches = emit_shuffle_gather(pieces, gather, warps)
        else:
            raise plan_error("strategy", f"{strategy} gathers are not emitted", "use the plan's direct candidate")
        header = HEADER_TL
        variant = "tl"
    else:
        by_strategy: dict[str, list] = {}
        for i, wp, raw in pieces:
            s = raw.get("strategy", strategy)
            if s == "shuffle" and shuffle_shape(wp) is None:
                raise plan_error(f"pieces[{i}]", "the piece is not a transpose of words a warp can hold "
                                 "(8-byte words at most, only the transposed dims tiled)",
                                 "send the plan as the planner returned it, or use its staged_smem candidate")
            by_strategy.setdefault(s, []).append((i, wp, raw))
        header = HEADER_TL
        for s, group in by_strategy.items():
            # kernels are named by strategy and plan piece index: unique within a plan
            if s == "direct":
                t, ls = emit_direct_copy(group)
            elif s == "staged_smem":
                t, ls = emit_staged(group)
            elif s == "shuffle":
                t, ls = emit_shuffle(group)
            elif s == "tma" and variant == "gluon":
                t, ls, d = emit_tma_gluon([(i, raw) for i, _, raw in group])
                descs.update(d)
                header = HEADER_GLUON
            elif s == "tma":
                t, ls, d = emit_tma_tl([(i, raw) for i, _, raw in group])
                descs.update(d)
            else:
                raise plan_error("pieces[].strategy", f"a copy piece says {s!r}", "send the plan as returned")
            texts += t
            launches += ls
        if variant == "gluon" and header != HEADER_GLUON:
            variant = "tl"  # nothing in this plan has a Gluon form
    return Emitted(strategy, variant, header + "\n\n" + "\n\n".join(texts), tuple(launches),
                   descs, buffers, tuple(notes))

