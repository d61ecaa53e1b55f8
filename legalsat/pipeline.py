"""The planner: one request through named, timed stages.

    parse -> saturate (egglog) -> extract (best term per strategy) -> solve (z3 fields,
    descriptor legality, protocols) -> verify (islpy proofs) -> response

`optimize` takes a request (dict, JSON text or OptimizeRequest) and returns the response
dict of the published schema; invalid input raises InputError. Limits are reported in
`egraph.stop_reason`, never raised.
"""

from __future__ import annotations

import functools
import time
import uuid

from legalsat.errors import InputError
from legalsat.extract.forms import formulation
from legalsat.extract.plans import (
    build_copy,
    build_gather,
    build_load_tile,
    natural_descriptor,
    prove_copy_plan,
)
from legalsat.extract.saturate import Candidate, saturation
from legalsat.extract.solve import Infeasible
from legalsat.rules.language import STRATEGIES
from legalsat.schemas.optimize import PlanRequest, parse_request
from legalsat.terms.movement import Copy, Gather, LoadTile, moved_elements

PLANNER_VERSION = "legalsat-planner/2"

_NOT_OFFERED = {
    "staged_smem": ("not_transposing", "src and dst are contiguous along the same dim: staging "
                    "through shared memory would only add a pass", "none needed"),
    "shuffle": ("not_transposing_small", "no transposing formulation whose smaller contiguous side "
                "fits a warp (<= 64 bytes)", "none needed"),
    "inspector_executor": ("indices_unstructured", "inspector-executor pays off for paged, clustered "
                           "or expert-routed (groups) indices", "describe the index distribution "
                           "(paged / clustered / groups) if it has structure"),
    "direct": ("unsupported", "no direct formulation", "none"),
}


class _Clock:
    def __init__(self) -> None:
        self.t = {k: 0.0 for k in ("parse", "saturate", "extract", "solve", "verify")}
        self.start = time.perf_counter()
        self._last = self.start

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.t[stage] += (now - self._last) * 1000
        self._last = now

    def result(self) -> dict:
        out = {k: round(v, 3) for k, v in self.t.items()}
        out["total"] = round((time.perf_counter() - self.start) * 1000, 3)
        return out


def _why_not(req: PlanRequest, strategy: str) -> list[dict]:
    m = req.movement
    if strategy == "tma":
        if req.target.tma is None:
            return [{"rule": "no_tma", "message": f"{req.target.name} has no tensor memory accelerator",
                     "fix": "use another strategy"}]
        if isinstance(m, Gather):
            return [{"rule": "gather_tma", "message": "TMA gather4 is Blackwell-only; on this target an "
                     "indexed row copy has no descriptor form", "fix": "use direct or inspector_executor"}]
        views = [m.src] + ([m.dst] if isinstance(m, Copy) else [])
        reasons = [r for v in views for r in natural_descriptor(v, req.target)]
        if isinstance(m, Copy) and m.src.base_align % 16 == 0 and m.dst.base_align % 16 == 0 and not reasons:
            reasons = [{"rule": "inner_extent", "message": "no formulation has a contiguous inner "
                        "extent of 16 bytes or more on both sides", "fix": "none"}]
        if any("stride" in r["rule"] for r in reasons) and not req.options.allow_padding:
            reasons.append({"rule": "allow_padding", "message": "a padded row pitch would make "
                            "the strides 16-byte multiples", "fix": "set options.allow_padding "
                            "to let the plan re-allocate with a padded pitch"})
        return reasons or [{"rule": "tma_unavailable", "message": "no formulation may be TMA-legal",
                            "fix": "see the legality model"}]
    if isinstance(m, LoadTile) and strategy != "direct":
        return [{"rule": "load_tile", "message": f"tile loads use tma or direct staging, not {strategy}",
                 "fix": "none needed"}]
    if isinstance(m, Copy) and strategy == "inspector_executor":
        return [{"rule": "no_indices", "message": "a copy has no indices to inspect", "fix": "none needed"}]
    if isinstance(m, Gather) and strategy == "staged_smem":
        return [{"rule": "gather_staged", "message": "a gather's rows are contiguous on both sides: "
                 "nothing to transpose", "fix": "none needed"}]
    if isinstance(m, Gather) and strategy == "shuffle":
        return [{"rule": "not_warp_local", "message": "register shuffles need the gathered rows of a "
                 "warp within a 32-row window", "fix": 'use distribution "warp_local" if that holds'}]
    rule, msg, fix = _NOT_OFFERED[strategy]
    return [{"rule": rule, "message": msg, "fix": fix}]


def _build(req: PlanRequest, cand: Candidate, clock: _Clock) -> dict:
    """One candidate -> plan dict (raises Infeasible); the proof must hold."""
    form = formulation(cand.term)
    m = req.movement
    if isinstance(m, Copy):
        pieces, walks = build_copy(form, m, req.smem_bytes, req.target)
        prove = functools.partial(prove_copy_plan, m, form, walks)
        core = pieces[0]
        fields = {k: core.get(k) for k in ("tile", "grid", "num_warps", "num_stages", "vector_bytes",
                                            "descriptors", "smem", "async")}
        fields["descriptors"] = [d for p in pieces for d in (p.get("descriptors") or [])]
        fields["pieces"] = pieces
    elif isinstance(m, Gather):
        fields, prove = build_gather(form, m, req.target)
    else:
        fields, prove = build_load_tile(form, m, req.smem_bytes, req.target)
    clock.lap("solve")
    proof = prove()
    clock.lap("verify")
    if not proof.ok:
        raise Infeasible([{"rule": "proof", "message": f"the plan's element map is not the request's "
                           f"({proof.to_dict()})", "fix": "report this request: it is a planner bug"}])
    bytes_moved = 2 * moved_elements(m) * m.src.esize  # read + write
    us = cand.cost / 1e6
    plan = {"strategy": form.strategy, "term": cand.term, "num_warps": 4, "num_stages": 1,
            "vector_bytes": None, "descriptors": [], "smem": None, "async": None, "gather": None,
            "pieces": [], **{k: v for k, v in fields.items() if v is not None},
            "relayout": [{"side": r.side, "old_stride_bytes": r.old_bytes, "new_stride_bytes": r.new_bytes}
                         for r in form.relayouts],
            "cost": {"estimated_us": round(us, 3), "bytes_moved": bytes_moved,
                     "estimated_tbps": round(bytes_moved / (us * 1e6), 3) if us else None,
                     "model": req.target.cost.source},
            "proof": proof.to_dict()}
    if req.options.explain:
        plan["explain"] = [
            f"formulation {cand.term}",
            f"{len(form.pieces)} piece(s); element width {form.pieces[0].eb} bytes" if form.pieces else "",
            f"estimated {us:.2f} us from the {req.target.cost.source} cost model of {req.target.name}",
        ] + [f"needs {r.side} stride {r.old_bytes} -> {r.new_bytes} bytes (allow_padding)" for r in form.relayouts]
    return plan


def optimize(request: object) -> dict:
    """Plan one request (see the module docstring). Raises InputError for invalid input."""
    clock = _Clock()
    req = parse_request(request)
    clock.lap("parse")
    opts = req.options
    m = req.movement
    groups = m.index.groups if isinstance(m, Gather) else None
    with saturation(m, req.target, allow_padding=opts.allow_padding, node_limit=opts.node_limit,
                    time_budget_s=opts.timeout_ms / 2000, groups=groups) as sat:
        clock.lap("saturate")
        cands = sat.candidates()
        stats = {"enodes": sat.enodes, "eclasses": sat.eclasses, "iterations": sat.iterations,
                 "stop_reason": sat.stop_reason.value}
        snapshot = sat.snapshot if opts.keep_egraph else None
        clock.lap("extract")
    plans, rejected = [], []
    offered = {c.strategy for c in cands}
    for cand in cands:
        if len(plans) >= opts.max_plans:
            break
        try:
            plans.append(_build(req, cand, clock))
        except Infeasible as e:
            clock.lap("solve")
            rejected.append({"strategy": cand.strategy, "term": cand.term, "reasons": e.reasons})
    for s in STRATEGIES:
        if s not in offered:
            rejected.append({"strategy": s, "term": None, "reasons": _why_not(req, s)})
    out = {"request_id": req.request_id or uuid.uuid4().hex[:16], "target": req.target.name,
           "planner": PLANNER_VERSION, "term": req.term_text,
           "status": "ok" if plans else "infeasible", "plans": plans, "rejected": rejected,
           "egraph": stats, "timings_ms": clock.result()}
    if snapshot is not None:
        out["egraph"]["snapshot"] = snapshot
    return out


def error_response(err: InputError, request_id: str | None = None) -> dict:
    """The per-line / per-item error object of batch output."""
    return {"request_id": request_id, "status": "error", **err.to_dict()}
