"""Triton kernel templates per plan strategy: a plan in, a kernel module's source out.

`emit(plan, variant)` is pure Python (no torch, no triton): `legalsat emit` prints its
source anywhere; `legalsat.clients.triton.build_kernel` compiles and runs it. A plan is the
published `PlanOut` (legalsat.schemas.plan); a dict is validated into it first, so a plan
that did not come from the planner is refused with the field that is wrong.

Variants: "tl" (Triton language; runs in the interpreter, so CI checks every one bit-exact
on the CPU) and "gluon" (sm90 TMA plans: the explicit persistent pipeline; compiled in CI,
run on the GPU machine). Pieces the plan moves by another strategy than its own (a ragged
tail copied directly) are emitted by that strategy.

The kernels depend on the term language and the plan schema only, never on the planner.
"""

from __future__ import annotations

import contextlib
import dataclasses
import numbers
from collections.abc import Iterator
from math import prod

from pydantic import ValidationError

from legalsat.diagnostics import Code, InputError
from legalsat.kernels.direct import emit_direct_copy, emit_direct_gather
from legalsat.kernels.gather_gluon import (
    GLUON_GATHER_MIN_ROWS,
    GLUON_GATHER_MIN_SHARE,
    emit_staged_gather,
    staged_row_form,
)
from legalsat.kernels.inspector import emit_inspector_executor
from legalsat.kernels.interleave import GLUON_INTERLEAVE_LOAD_CHANNELS, emit_interleave, interleave_shape
from legalsat.kernels.shuffle import emit_shuffle, emit_shuffle_gather, shuffle_shape
from legalsat.kernels.source import (
    HEADER_GLUON,
    HEADER_GLUON_WGMMA,
    HEADER_TL,
    Emitted,
    TileOutput,
    hint_data_loads,
    state_program_ranges,
)
from legalsat.kernels.staged import emit_staged, staged_form
from legalsat.kernels.tile import emit_tile_tl, stage_words, tile_walk
from legalsat.kernels.tile_gluon import emit_tile_gluon
from legalsat.kernels.tma import emit_tma_tl, tma_piece
from legalsat.kernels.tma_gluon import emit_tma_gluon, gluon_box
from legalsat.kernels.words import plan_error, word_piece
from legalsat.schemas.plan import OptimizeResponse, PlanOut
from legalsat.schemas.validation import details_from_validation, field_path, json_kind
from legalsat.terms.dtypes import ELEMENT_TYPES
from legalsat.terms.movement import MovementKind
from legalsat.terms.sexpr import op_from_sexp
from legalsat.terms.strategy import Strategy

VARIANTS = ("tl", "gluon")


def validate_plan(obj: object, where: tuple[str | int, ...] = ()) -> PlanOut:
    """A plan (dict or PlanOut) as the validated model; InputError (`invalid_plan`) naming
    each field that is not what the planner returns (under the path `where`, e.g.
    ('plans', 1), for a plan taken from a response)."""
    if isinstance(obj, PlanOut):
        return obj
    if not isinstance(obj, dict):
        raise plan_error(field_path(where) or "plan", f"the plan is {json_kind(obj)}, not a JSON object",
                         "pass one plan object, or the whole optimize response")
    try:
        return PlanOut.model_validate(obj)
    except ValidationError as e:
        errors = [{**x, "loc": (*where, *x["loc"])} for x in e.errors(include_url=False)]
        raise InputError([plan_error(d.field or field_path(where) or "plan", d.message).headline
                          for d in details_from_validation(errors)]) from None


@contextlib.contextmanager
def fields_as_passed(obj: object, plan_index: int) -> Iterator[None]:
    """InputErrors raised inside name the plan's fields where `obj` holds them: under
    `plans[N].` when `obj` is a whole optimize response (pieces[0].tile -> plans[1].pieces[0].tile),
    unchanged when it is one plan. For the checks after `select_plan` (`emit`, the client's
    relayout and kernel), which see the plan alone."""
    try:
        yield
    except InputError as e:
        if not (isinstance(obj, OptimizeResponse) or isinstance(obj, dict) and "plans" in obj):
            raise
        prefix = f"plans[{plan_index}]."  # a plan's own fields (invalid_plan); a call's arguments stay as named
        raise InputError([dataclasses.replace(d, field=prefix + d.field)
                          if d.field and d.code is Code.INVALID_PLAN else d for d in e.details]) from None


def select_plan(obj: object, plan_index: int = 0, index_name: str = "plan_index") -> tuple[PlanOut, dict | None]:
    """(plan, the request's op or None) from a plan, or a whole optimize response (its
    `plan_index`-th plan); raises InputError naming what is wrong (`plan_index` as the caller
    spells it: `index_name`, e.g. the command line's --plan)."""
    if isinstance(obj, OptimizeResponse):
        obj = obj.model_dump(by_alias=True, exclude_unset=True)
    if isinstance(obj, dict) and "error" in obj and "plans" not in obj and "kind" not in obj:
        err = obj["error"] if isinstance(obj["error"], dict) else {}
        raise plan_error("error", f"this is an error answer ({str(err.get('code'))[:40]}: "
                         f"{str(err.get('message'))[:200]}), not a plan", "fix the request it answers, plan it "
                         "again, and pass the optimize response")
    if not (isinstance(obj, dict) and "plans" in obj):
        if isinstance(obj, dict) and (isinstance(obj.get("op"), dict) or "term" in obj and "strategy" not in obj):
            raise plan_error("plan", "this is an optimize request, not a plan", "plan it first (`legalsat optimize "
                             "REQUEST.json > RESPONSE.json`, or legalsat.optimize), then pass the response")
        if not (isinstance(plan_index, numbers.Integral) and plan_index == 0):  # it picks nothing in one plan
            raise plan_error(index_name, f"{index_name} {plan_index!r} picks a plan of a response, but this is one plan",
                             f"leave {index_name} out, or pass the whole optimize response")
        return validate_plan(obj), None
    plans = obj["plans"]
    if isinstance(plans, tuple):  # a response built in Python, as optimize takes tuples for lists
        plans = list(plans)
    if not isinstance(plans, list):
        raise plan_error("plans", f"plans is {json_kind(plans)}, not an array of plans",
                         "pass the optimize response as the planner returned it")
    if not plans:
        status = obj.get("status")
        raise plan_error("plans", "the response holds no plan" + (f" (status {status})" if isinstance(status, str)
                                                                  and len(status) < 40 else ""),
                         "read its `rejected` reasons and change the request")
    if isinstance(plan_index, numbers.Integral) and not isinstance(plan_index, bool):
        plan_index = int(plan_index)  # a numpy integer, as the rest of the API takes
    else:
        raise plan_error(index_name, f"{index_name} is {json_kind(plan_index)} ({plan_index!r}), not an integer",
                         f"pass an integer 0..{len(plans) - 1}")
    if not 0 <= plan_index < len(plans):
        raise plan_error(index_name, f"{index_name} {plan_index} is outside the response's {len(plans)} plans",
                         f"use 0..{len(plans) - 1}")
    plan = validate_plan(plans[plan_index], ("plans", plan_index))
    term = obj.get("term")
    if not term:  # the views every tensor is checked against come from it: without it, none would be
        raise plan_error("term", f"the response has {'no term' if term is None else 'an empty term'}: its plan "
                         "cannot be checked against the request's views", "pass the response as the planner "
                         "returned it (or pass one plan alone, plans[i], to run it checked against itself only)")
    # the response's term, read once and checked against the plan (emit and build_kernel alike)
    return plan, _request_op(term, plan)


def response_target(obj: object) -> str | None:
    """The target a whole optimize response (dict or OptimizeResponse) was planned for; None
    for a plan alone."""
    if isinstance(obj, dict):
        return obj.get("target") if "plans" in obj else None
    return getattr(obj, "target", None) if isinstance(obj, OptimizeResponse) else None


# the target the Gluon kernels are written for (hopper TMA, mbarriers, wgmma)
GLUON_TARGET = "sm90"
# what has a Gluon form, for the messages that say a plan has none
GLUON_FORMS = ("TMA pieces of 2-D or wider boxes of 128 bytes or more, gathers along an inner axis whose source "
               "rows are contiguous, and shuffle plans in interleave form")


def chosen_variant(variant: str, plan: PlanOut, sm90: bool, target: str | None, field: str) -> str:
    """The variant a build of `plan` runs (`emit` and `build_kernel` alike): "auto" is
    `default_variant(plan, sm90)`; "gluon" is refused for a response planned for another
    target than sm90 (its kernels are Hopper's: TMA, mbarriers, wgmma; `field` names what asked
    for it; a plan alone, target None, is taken as sm90's)."""
    if variant == "gluon" and target is not None and target != GLUON_TARGET:
        raise Code.INVALID_INPUT.error(f"the gluon variant is written for {GLUON_TARGET} (Hopper's TMA and "
                                       f"mbarriers); this response was planned for {target}",
                                       "use the tl variant (or auto), which runs on any GPU Triton targets",
                                       field)
    return default_variant(plan, sm90) if variant == "auto" else variant


def _request_op(response_term: object, plan: PlanOut) -> dict:
    """The request's op (src/dst views) from a response's s-expression term; an InputError
    naming `term` where it is not one `plan` can have come from (another kind of movement, an
    element type this client does not know: a bare KeyError before)."""
    if not isinstance(response_term, str):
        raise plan_error("term", f"the response's term is {json_kind(response_term)}, not the planner's s-expression",
                         "pass the response as the planner returned it")
    try:
        op = op_from_sexp(response_term)
    except InputError as e:
        raise plan_error("term", f"the response's term cannot be read: {e.headline.message}",
                         "pass the response as the planner returned it") from None
    if op.get("kind") != MovementKind(plan.kind).value:
        raise plan_error("term", f"the response's term is a {op.get('kind')} and its plan a {plan.kind}: the plan is "
                         "not the term's", "pass the response as the planner returned it")
    views = [v for k, v in op.items() if k in ("src", "dst") and isinstance(v, dict)]
    unknown = next((v["dtype"] for v in views if v.get("dtype") not in ELEMENT_TYPES), None)
    if unknown is not None:
        raise plan_error("term", f"the response's term has the element type {unknown!r}, which this client does not "
                         f"know (it knows {', '.join(sorted(ELEMENT_TYPES))})",
                         "update legalsat on this side to the planner's version, or plan the request again")
    return op


# a straight TMA copy's box from which its Gluon pipeline is the default: measured on the H100
# (benchmarks/bench_budget.py, BSHD→BHSD 8×32×4096×128 bf16 under options.smem_bytes), boxes of
# 16 and 32 KiB ran 0.1-3.2% faster in the Gluon pipeline than in the tl kernel (budget_results.json
# and budget_heldout_results.json); boxes of 8 KiB and less 1.4% to 6.8x slower
GLUON_DEFAULT_BOX_BYTES = 16384


def kernel_variants(plan: PlanOut | dict, sm90: bool) -> list[str]:
    """The variants `build_kernel` can run for `plan` on a GPU (sm90: Gluon's too): tl, and
    gluon where the plan has a Gluon form (TMA pieces `gluon_box` takes, gathers with the
    staged-row form, interleave pieces whose destination is interleaved)."""
    plan = validate_plan(plan)
    if not sm90:
        return ["tl"]
    try:
        if plan.strategy in (Strategy.TMA, Strategy.SHUFFLE) or plan.kind == MovementKind.GATHER:
            if emit(plan, "gluon").variant == "gluon":
                return ["tl", "gluon"]
    except InputError as e:  # a plan emit() refuses has no kernel of either variant
        if e.headline.code is Code.PLAN_INCONSISTENT:
            raise
    return ["tl"]


def piece_forms(plan: PlanOut | dict) -> list[str | None]:
    """Per piece, the tile a staged piece runs ("skewed" or "plain", `staged.staged_form`);
    None for the other strategies: what tells two kernels of one tile apart."""
    plan = validate_plan(plan)
    return [staged_form(word_piece(p, f"pieces[{i}]"), p, f"pieces[{i}]") if p.strategy == Strategy.STAGED_SMEM
            else None
            for i, p in enumerate(plan.pieces)]


def default_variant(plan: PlanOut | dict, sm90: bool) -> str:
    """The variant `build_kernel` runs by default: Gluon for sm90 TMA plans whose boxes, of at
    least GLUON_DEFAULT_BOX_BYTES, are copied straight or are of 1-byte words, and for sm90
    index-major gathers with the staged-row form whose index picks at least
    GLUON_GATHER_MIN_SHARE of a row, over GLUON_GATHER_MIN_ROWS rows or more
    (legalsat.kernels.gather_gluon); tl otherwise. Measured on the H100
    (benchmarks/kernel_results.json, budget_results.json): the transposing TMA kernels of
    1-byte words with 16 KiB boxes ran 1.41-1.48x faster in Gluon (the uint8 and fp8
    transposes), those of smaller boxes 0.28-0.95x of tl's (4 KiB: 1.16x); of wider words the tl
    kernel was faster on 8 of 9 transposing workloads (Gluon by 3-4% on NCHW→NHWC 32×96). Shuffle
    plans in interleave form run Gluon where it stores the interleaved side, or loads it with
    `GLUON_INTERLEAVE_LOAD_CHANNELS` channels or more (legalsat.kernels.interleave)."""
    plan = validate_plan(plan)
    if sm90 and plan.strategy == Strategy.DIRECT and plan.kind == MovementKind.GATHER and plan.gather is not None:
        g = plan.gather  # the staged row where the index picks enough of a row (GLUON_GATHER_MIN_SHARE)
        try:
            staged = all(staged_row_form(word_piece(p, f"pieces[{i}]"), p, g, plan.smem_budget_bytes)
                         for i, p in enumerate(plan.pieces))
        except InputError:
            return "tl"  # emit() reports what is wrong with the plan
        rows = min(word_piece(p, f"pieces[{i}]").elems for i, p in enumerate(plan.pieces)) if staged else 0
        return "gluon" if staged and g.index_count >= GLUON_GATHER_MIN_SHARE * g.index_bound \
            and rows >= GLUON_GATHER_MIN_ROWS else "tl"
    if sm90 and plan.strategy == Strategy.SHUFFLE and plan.kind == MovementKind.COPY:
        return "gluon" if _interleaving(plan) else "tl"  # its packed stores (legalsat.kernels.interleave)
    if not sm90 or plan.strategy != Strategy.TMA:
        return "tl"
    if plan.kind == MovementKind.LOAD_TILE:
        return "gluon"  # the consumer probe: the plan's pipeline and its consumer's reads
    try:
        tma = [tma_piece(p, f"pieces[{i}]") for i, p in enumerate(plan.pieces) if p.strategy == Strategy.TMA]
        straight = all((t.perm() is None or t.word == 1) and t.box_bytes() >= GLUON_DEFAULT_BOX_BYTES for t in tma)
    except InputError:
        return "tl"  # emit() reports what is wrong with the plan
    return "gluon" if straight and tma else "tl"


def _interleaving(plan: PlanOut) -> bool:
    """Whether a shuffle copy plan has a piece in interleave form that the Gluon kernel moves
    faster (`GLUON_INTERLEAVE_LOAD_CHANNELS`)."""
    try:
        forms = [interleave_shape(word_piece(p, f"pieces[{i}]")) for i, p in enumerate(plan.pieces)
                 if p.strategy == Strategy.SHUFFLE]
    except InputError:
        return False  # emit() reports what is wrong with the plan
    return any(f is not None and (f.to_interleaved or f.channels >= GLUON_INTERLEAVE_LOAD_CHANNELS) for f in forms)


def _emit_tile(plan: PlanOut, variant: str, strategy: Strategy) -> Emitted:
    """A load_tile plan's kernel: the Gluon consumer probe (TMA, sm90), or the tl walk."""
    w = tile_walk(plan)
    if variant == "gluon" and strategy is Strategy.TMA:
        texts, launches, descs, read, element = emit_tile_gluon(w, plan.smem_budget_bytes)
        wg = w.wgmma.element if element != "words" else None
        out = TileOutput(w.out_shape, element, read, stage_words(w), wg)
        return Emitted(strategy.value, "gluon", HEADER_GLUON_WGMMA + "\n\n" + texts[0], tuple(launches), descs,
                       tile=out)
    texts, launches, descs = emit_tile_tl(w)
    read = ("rows: each box through the descriptor" if strategy is Strategy.TMA
            else "rows: each box with masked pointer loads")
    return Emitted(strategy.value, "tl", HEADER_TL + "\n\n" + texts[0], tuple(launches), descs,
                   tile=TileOutput(w.out_shape, "words", read))


# elements of the largest block a copy or gather kernel holds (Triton's blocks are powers of
# two of at most 2^20 elements; the planner's are at most 64 KiB of 1-byte elements)
MAX_BLOCK_ELEMENTS = 1 << 17


def _check_blocks(plan: PlanOut) -> None:
    """InputError naming the field when a piece's tile, or a gather's rows per program (its
    executor's), is not a block the emitted kernels take: powers of two, MAX_BLOCK_ELEMENTS at
    most in all."""
    fields = [(f"pieces[{i}].tile", list(p.tile)) for i, p in enumerate(plan.pieces)]
    if plan.gather is not None:
        fields.append(("gather.rows_per_program", [plan.gather.rows_per_program]))
        if plan.gather.executor is not None:  # the inspector-executor's rows a program (kernels.inspector)
            fields.append(("gather.executor.tile_rows", [plan.gather.executor.tile_rows]))
        if plan.gather.window_rows is not None:  # a row gather's window (kernels.shuffle), a block too
            fields.append(("gather.window_rows", [plan.gather.window_rows]))
    for field, extents in fields:
        if any(t < 1 or t & (t - 1) for t in extents) or prod(extents) > MAX_BLOCK_ELEMENTS:
            raise plan_error(field, f"{field} is {extents}: a kernel's block is powers of two, at most "
                             f"{MAX_BLOCK_ELEMENTS} elements", "send the plan as the planner returned it")


def emit(plan: PlanOut | dict, variant: str = "tl") -> Emitted:
    """The kernel module of one plan. Raises InputError naming the plan field when the plan
    cannot become a kernel: the schema's checks, each emitter's own, and for fields that
    disagree in a way neither names (a plan edited by hand), the plan as a whole."""
    plan = validate_plan(plan)
    try:
        em = _emit(plan, variant)
        if plan.kind == MovementKind.LOAD_TILE:  # (tile loads' kernels: not measured so)
            return em
        return dataclasses.replace(em, source=hint_data_loads(state_program_ranges(em.source, em.launches)))
    except InputError:
        raise
    except (ArithmeticError, IndexError, KeyError, TypeError, ValueError) as e:
        # its own code (never mistaken for a refusal: `kernel_variants` passes it on) and the
        # emitter's traceback chained, should a plan the planner returned ever reach here
        raise Code.PLAN_INCONSISTENT.error(f"the plan's fields disagree with each other ({type(e).__name__}: {e})",
                                           field="plan") from e


def _emit(plan: PlanOut, variant: str) -> Emitted:
    if variant not in VARIANTS:
        raise Code.INVALID_ARGUMENT.error(f"variant is {variant!r}", f"use one of {VARIANTS}", "variant")
    if not plan.pieces:
        raise plan_error("pieces", "the plan has no pieces", "plan the request with legalsat >= planner/2")
    strategy = Strategy(plan.strategy)
    if plan.kind == MovementKind.LOAD_TILE:
        return _emit_tile(plan, variant, strategy)
    pieces = [(i, word_piece(p, f"pieces[{i}]"), p) for i, p in enumerate(plan.pieces)]
    _check_blocks(plan)
    texts: list[str] = []
    launches: list = []
    descs: dict = {}
    buffers: dict = {}
    header = HEADER_TL
    if plan.kind == MovementKind.GATHER:
        if plan.gather is None:
            raise plan_error("gather", "the gather plan has no gather fields")
        if strategy is Strategy.INSPECTOR_EXECUTOR:
            texts, launches, buffers = emit_inspector_executor(pieces, plan.gather, plan.num_warps)
        elif strategy is Strategy.DIRECT and variant == "gluon" and all(
                staged_row_form(wp, raw, plan.gather, plan.smem_budget_bytes) for _, wp, raw in pieces):
            texts, launches = emit_staged_gather(pieces, plan.gather)
            return Emitted(strategy.value, "gluon", HEADER_GLUON + "\n\n" + "\n\n".join(texts), tuple(launches))
        elif strategy is Strategy.DIRECT:
            texts, launches = emit_direct_gather(pieces, plan.gather, plan.num_warps)
        elif strategy is Strategy.SHUFFLE:
            texts, launches = emit_shuffle_gather(pieces, plan.gather, plan.num_warps)
        else:
            raise plan_error("strategy", f"{strategy.value} gathers are not emitted", "use the plan's direct candidate")
        variant = "tl"
    else:
        by_strategy: dict[Strategy, list] = {}
        for i, wp, raw in pieces:
            s = Strategy(raw.strategy)
            if s is Strategy.SHUFFLE and shuffle_shape(wp) is None and interleave_shape(wp) is None:
                raise plan_error(f"pieces[{i}]", "the piece is not a transpose of words a warp can hold "
                                 "(8-byte words at most, only the transposed dims tiled)",
                                 "send the plan as the planner returned it, or use its staged_smem candidate")
            by_strategy.setdefault(s, []).append((i, wp, raw))
        for s, group in by_strategy.items():
            # kernels are named by strategy and plan piece index: unique within a plan
            if s is Strategy.DIRECT:
                t, ls = emit_direct_copy(group)
            elif s is Strategy.STAGED_SMEM:
                t, ls = emit_staged(group)
            elif s is Strategy.SHUFFLE:
                inter = [x for x in group if interleave_shape(x[1]) is not None]
                t, ls = emit_shuffle([x for x in group if x not in inter])
                ti, li = emit_interleave(inter, variant == "gluon")
                t, ls = t + ti, ls + li
                if variant == "gluon" and inter:
                    header = HEADER_GLUON
            elif s is Strategy.TMA:
                tps = [(i, tma_piece(raw, f"pieces[{i}]"), raw) for i, _, raw in group]
                if variant == "gluon" and all(gluon_box(tp) for _, tp, _ in tps):
                    t, ls, d = emit_tma_gluon(tps, plan.smem_budget_bytes)
                    header = HEADER_GLUON
                else:  # tl, or pieces with no Gluon form (1-D boxes)
                    t, ls, d = emit_tma_tl([(i, raw) for i, _, raw in group])
                descs.update(d)
            else:
                raise plan_error(f"pieces[{group[0][0]}].strategy", f"a copy piece says {s.value!r}")
            texts += t
            launches += ls
        if variant == "gluon" and header != HEADER_GLUON:
            variant = "tl"  # nothing in this plan has a Gluon form
    return Emitted(strategy.value, variant, header + "\n\n" + "\n\n".join(texts), tuple(launches), descs, buffers)
