"""The planner's named stages, each a function you can call on its own and whose output
`dump` turns into JSON (`legalsat optimize --stage NAME` prints it):

    saturate(req)         -> Saturation         egglog under the request's limits (a context manager)
    extract(sat)          -> list[Candidate]    the cheapest term of every strategy
    solve(req, cand)      -> Built              z3 fields, checked descriptors, verified protocol
                                                (raises Infeasible with catalogue reasons)
    verify(built)         -> Proof              islpy: the plan moves exactly the request's elements

`legalsat.planner.optimize.optimize` runs them in order and times each.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum

from legalsat.diagnostics import Code, Diagnostic
from legalsat.planner.budget import budget_fix, budget_name, isl_operations, remaining_ms
from legalsat.planner.build import Built, build
from legalsat.planner.extract import extract as _extract
from legalsat.planner.formulation import Candidate
from legalsat.planner.plan import Proof
from legalsat.planner.reports import Limits
from legalsat.planner.request import PlanRequest
from legalsat.planner.rules.program import request_program
from legalsat.planner.saturate import Saturation
from legalsat.planner.saturate import saturate as _saturate
from legalsat.planner.solve import Infeasible

STAGES = ("saturate", "extract", "solve", "verify")


def limits(req: PlanRequest) -> Limits:
    """Saturation's bounds for a request: its node limit and half of its time budget."""
    return Limits(node_limit=req.options.node_limit, time_budget_s=req.options.timeout_ms / 2000)


@contextmanager
def saturate(req: PlanRequest) -> Iterator[Saturation]:
    """Stage `saturate`: the request's e-graph, valid inside the `with` block."""
    with _saturate(request_program(req.movement, req.options.allow_padding), req.target, limits(req)) as sat:
        yield sat


def extract(sat: Saturation) -> list[Candidate]:
    """Stage `extract`: the best term of every strategy the e-graph offers, cheapest first."""
    return _extract(sat)


def solve(req: PlanRequest, cand: Candidate) -> Built:
    """Stage `solve`: the candidate's fields (raises Infeasible with the reasons)."""
    return build(req, cand)


def verify(built: Built) -> Proof:
    """Stage `verify`: the islpy proof of a built plan, within islpy's share of the request's
    budget (raises Infeasible `proof_budget` when it does not finish in it).

    islpy counts operations, not time, and how many it does a millisecond differs from proof
    to proof (a rank-8 permute's ran faster than ISL_OPERATIONS_PER_MS assumes). A proof that
    spends its operations with time left is tried again, with what is left at the rate it just
    ran (each try gets more operations than the last, or the proof is out of budget): the
    budget is time, whatever the proof's rate."""
    import islpy as isl

    ctx = isl.DEFAULT_CONTEXT
    limit = isl_operations()
    try:
        while True:
            ctx.reset_operations()
            ctx.set_max_operations(limit)
            start = time.monotonic()
            try:
                return built.prove()
            except isl.Error as e:
                # an exhausted budget surfaces as "maximal number of operations", or inside a
                # parse as a syntax error (isl's parser stops mid-string); anything else is a bug
                message = str(e)
                if "maximal number of operations" not in message and not (limit and "syntax error" in message):
                    raise
            spent_ms = max((time.monotonic() - start) * 1000, 0.01)
            left = remaining_ms() or 0.0
            # at the rate this proof ran, what is left buys how many operations (a margin of 10 %)
            more = int(0.9 * left * limit / spent_ms)
            if more <= limit:
                raise Infeasible([Code.PROOF_BUDGET.at(
                    f"the plan's islpy proof did not finish within what {budget_name()} left for it",
                    budget_fix(Code.PROOF_BUDGET.default_fix))])
            limit = more
    finally:
        ctx.set_max_operations(0)


def dump(obj: object) -> object:
    """A stage's output (or any planner dataclass) as JSON-able data: dataclasses as dicts,
    enums by value, callables and e-graphs left out, diagnostics by code."""
    if isinstance(obj, Saturation):
        return dump(obj.report)
    if isinstance(obj, Diagnostic):
        return {"code": obj.id, "message": obj.message, "fix": obj.fix, "field": obj.field}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if not callable(v) or isinstance(v, Enum):
                out[f.name] = dump(v)
        return out
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [dump(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): dump(v) for k, v in obj.items()}
    return obj
