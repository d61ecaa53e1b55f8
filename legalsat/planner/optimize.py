"""The planner: one validated request through the named, timed stages.

    saturate (egglog) -> extract (best term per strategy) -> solve (z3 fields, descriptor
    legality, protocols) -> verify (islpy proofs) -> PlanResponse

Limits are reported in the response's saturation report (`stop_reason`), never raised. A
candidate that cannot be realized becomes a rejection with its reasons; a plan whose proof
fails is never returned.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

from legalsat.diagnostics import Category, Code
from legalsat.planner import stages
from legalsat.planner.budget import budget_fix, budget_name, deadline, remaining_ms
from legalsat.planner.build import Built
from legalsat.planner.explain import explain
from legalsat.planner.formulation import Candidate
from legalsat.planner.plan import Cost, Plan, PlanResponse, Rejected, Relayout
from legalsat.planner.rank import LAUNCH_BOUND, launch_key_us, rank_plans
from legalsat.planner.reasons import why_not
from legalsat.planner.reports import StopReason
from legalsat.planner.request import PlanRequest
from legalsat.planner.solve import Infeasible
from legalsat.terms.movement import moved_elements
from legalsat.terms.strategy import Strategy

# Part of every plan-cache key: a new version never serves an older version's plans. /12: no TMA
# store of partial 16-byte rows (tma_store_row), not_reached reasons, explain's launch and limit lines.
# /13: the wgmma_unreadable warning, and "why not TMA" without a box no request named. /14: a
# re-calibration; /15: launch-bound candidates past max_plans, staged vectors, short wgmma A
# tiles, inspector estimates; /16: tile walk estimates re-fitted.
# /17: estimates of a copy's solved fields, staged tiles within any budget, status incomplete.
# /18: wgmma_unreadable for every element type; /19: shifted loads of misaligned source rows,
# no skewed tile whose source runs are under a sector, and a time-limited saturation that stops
# before an iteration predicted to end past its budget. /20: shuffle plans in interleave form
# (planes <-> interleaved channels) and their 16-byte estimate for odd channel counts. /21: no
# shuffle plan for even channel counts, fewer warps for short interleave runs, the odd form of a
# small transpose dense on both sides. /22: staged tiles into rows on 16 bytes but off a sector
# skewed where the destination exceeds L2 (`skewed_stores`). /23: direct gathers of contiguous
# slabs of 16-byte elements over 4 KiB move each slab in parts, a program each (`solve_row_parts`).
# /24: direct copies of 16-byte words in 8 KiB blocks of 16 warps, one vector a thread.
# /25: plain 32 KiB staged tiles of 32 warps. /26: TMA tile loads of one-element views,
# inner_box_16B for a whole-dim tile whose rows do not merge with the next dim's, a tile walk dim
# past 2^32 said in the request's terms, a tile load's why-not-TMA descriptor boxed by its tile,
# strides_in_bytes only where bytes would give a contiguous dim, a term request's warnings naming
# the term.
PLANNER_VERSION = "legalsat-planner/26"


class Clock:
    """Milliseconds per stage (laps are charged to the stage that just ended)."""

    def __init__(self) -> None:
        self.t = dict.fromkeys(stages.STAGES, 0.0)
        self.start = self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.t[stage] += (now - self._last) * 1000
        self._last = now

    def result(self) -> dict[str, float]:
        out = {k: round(v, 3) for k, v in self.t.items()}
        out["total"] = round((time.perf_counter() - self.start) * 1000, 3)
        return out


def plan_candidate(req: PlanRequest, cand: Candidate, clock: Clock) -> Plan:
    """One candidate -> its plan (raises Infeasible); the proof must hold."""
    built: Built = stages.solve(req, cand)
    clock.lap("solve")
    proof = stages.verify(built)
    clock.lap("verify")
    if not proof.ok:
        raise Infeasible([Code.PROOF.at(f"the plan's element map is not the request's ({proof.relation}: "
                                        f"equal={proof.equal}, injective={proof.injective})")])
    m = req.movement
    bytes_moved = 2 * moved_elements(m) * m.src.esize  # read + write
    us = built.estimated_us if built.estimated_us is not None else cand.cost / 1e6
    cost = Cost(round(us, 3), bytes_moved, round(bytes_moved / (us * 1e6), 3) if us else None, req.target.cost.source)
    return Plan(m.kind, cand.strategy, cand.term, built.tile, built.grid, built.num_warps, built.num_stages,
                req.smem_bytes, built.vector_bytes, built.descriptors, built.smem, built.pipeline, built.gather, built.pieces,
                tuple(Relayout(r.side, r.old_bytes, r.new_bytes) for r in cand.form.relayouts), cost, proof,
                None, built.tile_load)


def _kept_rank_us(plans: list[Plan], keep: int, facts) -> float:
    """What a plan must be estimated below to rank before the `keep`-th of `plans`: that plan's
    estimate, or where launch-bound plans are ranked by their launch key, the largest such key
    (a plan estimated below one is ranked with them: rank.ranked_launch_bound)."""
    ranked, bound = rank_plans(plans, facts)
    last = ranked[keep - 1]
    keys = [launch_key_us(p, facts) for p, b in zip(ranked, bound) if b]
    return max([last.cost.estimated_us, *keys])


def _status(plans: list[Plan], rejected: list[Rejected]) -> str:
    """ok: a plan; incomplete: none, and a limit cut some strategy short (a larger budget may
    plan it); infeasible: none, every strategy ruled out."""
    if plans:
        return "ok"
    cut_short = any(r.code.category is Category.LIMIT for x in rejected for r in x.reasons)
    return "incomplete" if cut_short else "infeasible"


def optimize(req: PlanRequest) -> PlanResponse:
    """Plan one validated request (see the module docstring) within its timeout_ms
    (legalsat.planner.budget)."""
    with deadline(req.options.timeout_ms, req.options.timeout_capped_by):
        return _optimize(req)


def _optimize(req: PlanRequest) -> PlanResponse:
    clock = Clock()
    with stages.saturate(req) as sat:
        clock.lap("saturate")
        cands = stages.extract(sat)
        report = sat.report
        snapshot = sat.snapshot if req.options.keep_egraph else None
        clock.lap("extract")
    plans, rejected = [], []
    not_returned = 0  # candidates past options.max_plans, planned or not
    # past max_plans, a candidate the e-graph estimates launch-bound is planned still: the final
    # order ranks such plans by what they add to their launch (rank.rank_plans), so it may come
    # before one already planned (a 16 x 512 transpose's first plan was shuffle, staged_smem or
    # direct as max_plans was 1, 3 or 4)
    # Past max_plans, a candidate is planned still while it may rank before the last plan kept:
    # the builders' estimates are never below the e-graph's (a copy's fields, a tile walk), so a
    # candidate whose e-graph cost is past the rank of the max_plans-th plan cannot come before
    # it (the 4096^2 fp32 transpose under 64 bytes returned its staged plan of 4 x 4 tiles at
    # 638 us with max_plans 1, and the direct copy of 134 us first with max_plans 6)
    launch_bound_ps = LAUNCH_BOUND * req.target.cost.launch_ns * 1000  # the e-graph's costs are ps
    for k, cand in enumerate(cands):
        if len(plans) >= req.options.max_plans and cand.cost > launch_bound_ps and \
                cand.cost / 1e6 >= _kept_rank_us(plans, req.options.max_plans, req.target.cost):
            not_returned = len(cands) - k  # cheapest first: none after ranks before the kept plans
            break
        if remaining_ms() == 0:  # the budget is spent: what was not reached says so
            rejected.append(Rejected(cand.strategy, cand.term, (Code.PLANNING_DEADLINE.at(
                f"{budget_name()} was spent before this candidate was solved",
                budget_fix(Code.PLANNING_DEADLINE.default_fix if req.options.max_plans > 1
                           else "raise options.timeout_ms")),)))
            continue
        try:
            plans.append(plan_candidate(req, cand, clock))
        except Infeasible as e:
            clock.lap("solve")
            rejected.append(Rejected(cand.strategy, cand.term, e.reasons))
    # builders may know better than the e-graph (tile loads)
    plans, bound = rank_plans(plans, req.target.cost)
    not_returned += len(plans[req.options.max_plans:])
    plans, bound = plans[:req.options.max_plans], bound[:req.options.max_plans]
    if req.options.explain:
        plans = list(explain(req, plans, not_returned, bound))
    offered = {c.strategy for c in cands}
    stopped = None if report.stop_reason == StopReason.SATURATED else report.stop_reason.value
    rejected += [Rejected(s, None, tuple(why_not(req, s, stopped))) for s in Strategy if s not in offered]
    # a wgmma operand the best plan lands where the tensor core cannot read it: said at the top,
    # not only in its tile_load.note (a client that reads status and strategy would go on)
    if req.from_term:  # a term request has no op: the notes name the term (Diagnostic.in_term)
        plans = [replace(p, tile_load=replace(p.tile_load, note=p.tile_load.note.in_term()))
                 if p.tile_load is not None and p.tile_load.note else p for p in plans]
    unreadable = tuple(p.tile_load.note for p in plans[:1] if p.tile_load is not None and p.tile_load.note)
    return PlanResponse(req.request_id if req.request_id is not None else uuid.uuid4().hex[:16], req.target.name, PLANNER_VERSION, req.term_text,
                        _status(plans, rejected), tuple(plans), tuple(rejected), report, clock.result(),
                        snapshot, req.warnings + unreadable)
