"""legalsat's four entry points, with one error policy.

    optimize(request)                          -> dict (OptimizeResponse's JSON form)
    validate_descriptor(descriptor, target)    -> VerdictOut
    analyze_bank_conflicts(request, target)    -> BankReportOut
    verify_pipeline(protocol)                  -> PipelineVerdictOut

Each takes its input as a dict, JSON text (str or bytes) or the request model. Input that
cannot be judged raises `legalsat.InputError`, whose details name each offending field and a
fix (HTTP answers it with 422, the command line writes it on the line's output); everything
else is an answer. The command line, the HTTP routes and the service's workers call these.
"""

from __future__ import annotations

import time

from legalsat.analyses.bank_conflicts import analyze_access
from legalsat.analyses.smem_layout import analyze_tile_access
from legalsat.analyses.tma_legality import check_descriptor
from legalsat.diagnostics import Code
from legalsat.planner import stages
from legalsat.planner.budget import DEADLINE_CAP, BudgetCap
from legalsat.planner.optimize import PLANNER_VERSION
from legalsat.planner.optimize import optimize as plan
from legalsat.planner.solve import Infeasible
from legalsat.protocols.verify import verify_protocol
from legalsat.schemas.bank import BankReportOut, parse_bank_request, report_model
from legalsat.schemas.convert import response_out
from legalsat.schemas.descriptors import VerdictOut, parse_descriptor, verdict_model
from legalsat.schemas.optimize import parse_request
from legalsat.schemas.plan import OptimizeResponse
from legalsat.schemas.protocol import PipelineVerdictOut, parse_protocol
from legalsat.schemas.protocol import verdict_model as protocol_verdict
from legalsat.targets import resolve_target
from legalsat.terms.smem import SharedAccess

__all__ = ["PLANNER_VERSION", "analyze_bank_conflicts", "dump_stages", "optimize", "optimize_response",
           "validate_descriptor", "verify_pipeline"]


def optimize_response(request: object, *, max_timeout_ms: int | None = None, max_node_limit: int | None = None,
                      timeout_cap: BudgetCap = DEADLINE_CAP) -> OptimizeResponse:
    """Plans, best first, for one request (see legalsat.schemas.optimize for the request).
    A caller's caps bound the request's `timeout_ms` and `node_limit` (PlanRequest.within);
    `timeout_cap` is what messages name when `max_timeout_ms` set the budget."""
    start = time.perf_counter()
    req = parse_request(request).within(max_timeout_ms, max_node_limit, timeout_cap)
    parse_ms = (time.perf_counter() - start) * 1000
    return response_out(plan(req), parse_ms)


def optimize(request: object, **caps) -> dict:
    """`optimize_response` as the JSON-shaped dict the routes and commands answer."""
    return optimize_response(request, **caps).model_dump(mode="json", by_alias=True, exclude_unset=True)


def dump_stages(request: object, until: str = "verify") -> dict:
    """Run the planner's named stages one at a time up to `until` (saturate, extract, solve,
    verify) and return each stage's output as JSON-able data (`legalsat optimize --stage`).
    Each stage runs whole: the request's `timeout_ms` is not applied (a dump is for reading
    every stage's output; `optimize` answers within the budget)."""
    if until not in stages.STAGES:
        raise Code.INVALID_INPUT.error(f"unknown stage {until!r}", f"use one of: {', '.join(stages.STAGES)}", "stage")
    req = parse_request(request)
    keep = stages.STAGES[:stages.STAGES.index(until) + 1]
    out: dict = {}
    with stages.saturate(req) as sat:
        out["saturate"] = stages.dump(sat)
        cands = stages.extract(sat) if "extract" in keep else []
    if "extract" in keep:
        out["extract"] = stages.dump(cands)
    if "solve" in keep:
        out["solve"], built = [], []
        for cand in cands:
            try:
                b = stages.solve(req, cand)
            except Infeasible as e:
                out["solve"].append({"strategy": cand.strategy.value, "reasons": stages.dump(e.reasons)})
                continue
            built.append((cand, b))
            out["solve"].append({"strategy": cand.strategy.value, "fields": stages.dump(b)})
        if "verify" in keep:
            out["verify"] = [{"strategy": c.strategy.value, "proof": stages.dump(stages.verify(b))} for c, b in built]
    return out


def validate_descriptor(descriptor: object, target: str = "sm90") -> VerdictOut:
    """The legality verdict of one `cuTensorMapEncodeTiled` argument set on `target`."""
    return verdict_model(check_descriptor(parse_descriptor(descriptor), resolve_target(target, need_tma=True)))


def analyze_bank_conflicts(request: object, target: str = "sm90") -> BankReportOut:
    """Wavefronts of one warp instruction (raw) or of a tile walked by a warp pattern
    (structured); `target` is the default when the request names none."""
    term, tgt = parse_bank_request(request, target)
    report = analyze_access(term, tgt) if isinstance(term, SharedAccess) else analyze_tile_access(term, tgt)
    return report_model(report)


def verify_pipeline(protocol: object) -> PipelineVerdictOut:
    """Hangs and races of an asynchronous copy protocol, for every trip count that matters."""
    return protocol_verdict(verify_protocol(parse_protocol(protocol)))
