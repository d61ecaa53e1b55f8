"""The request's time budget as every planning stage sees it.

`options.timeout_ms` is the planner's budget for one request: saturation takes at most half
of it (then stops with `stop_reason: time_limit`), z3 and islpy share what is left, and a
candidate reached after it is spent is rejected with `planning_deadline`. A stage that runs
out of its share reports a named reason (`solver_timeout`, `proof_budget`), never a hang.
The same holds whoever calls: the command line, the Python API and the service's workers
(whose hard deadline, past which a worker is killed, adds a grace for process overhead).

A budget knows what set it: the request's own `options.timeout_ms`, or a caller's cap below it
(the service's LEGALSAT_DEADLINE_MS); what a stage reports when it runs out names that one and
the fix that would change it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class BudgetCap:
    """What set a request's budget below its own timeout_ms, as its messages say it
    (`phrase`, then the budget in ms), and what changes it (`fix`)."""

    phrase: str
    fix: str


# the service's own cap: LEGALSAT_DEADLINE_MS, below the request's timeout_ms
DEADLINE_CAP = BudgetCap("the LEGALSAT_DEADLINE_MS cap", "the service plans within LEGALSAT_DEADLINE_MS: raise it "
                         "where the service runs, or plan this request with `legalsat optimize` (no cap)")


def queue_cap(waited_ms: int) -> BudgetCap:
    """The budget a job had left after waiting `waited_ms` for a worker (its time runs from its
    arrival: the lesser of its timeout_ms and LEGALSAT_DEADLINE_MS)."""
    return BudgetCap(f"the time the service gives it (the lesser of its timeout_ms and LEGALSAT_DEADLINE_MS, from its "
                     f"arrival) less the {waited_ms} ms it waited for a worker",
                     "retry when the service is less busy, send fewer requests at once, or run the service with more "
                     "workers (LEGALSAT_WORKERS)")


_DEADLINE: ContextVar[float | None] = ContextVar("legalsat_planning_deadline", default=None)
# (budget in ms, the cap when a caller's cap set it below the request's timeout_ms)
_SET_BY: ContextVar[tuple[int, BudgetCap | None]] = ContextVar("legalsat_budget_set_by", default=(0, None))

SOLVER_MAX_MS = 2000  # one z3 problem never takes more, whatever the budget
ISL_OPERATIONS_PER_MS = 2000  # islpy's operation counter, about a millisecond's worth on one core
ISL_MIN_OPERATIONS = 200_000  # a proof always gets this much (small proofs take far less)


@contextmanager
def deadline(timeout_ms: int, capped_by: BudgetCap | None = None) -> Iterator[None]:
    """Plan under a budget of `timeout_ms` from now (nested budgets keep the earlier end).
    `capped_by`: the cap that set `timeout_ms` below the request's own."""
    end = time.monotonic() + timeout_ms / 1000
    outer = _DEADLINE.get()
    token = _DEADLINE.set(end if outer is None else min(outer, end))
    named = _SET_BY.set((timeout_ms, capped_by))
    try:
        yield
    finally:
        _SET_BY.reset(named)
        _DEADLINE.reset(token)


def budget_name() -> str:
    """What set the current budget, for messages: the request's timeout_ms or a caller's cap."""
    ms, cap = _SET_BY.get()
    return f"{cap.phrase} ({ms} ms, below the request's timeout_ms)" if cap else f"the request's timeout_ms ({ms} ms)"


def budget_fix(fix: str) -> str:
    """`fix` when the request's own timeout_ms set the budget; else how to change the cap."""
    _, cap = _SET_BY.get()
    return cap.fix if cap else fix


def remaining_ms() -> float | None:
    """Milliseconds left of the current budget (None: no budget set)."""
    end = _DEADLINE.get()
    return None if end is None else max(0.0, (end - time.monotonic()) * 1000)


def solver_ms() -> int:
    """z3's timeout for the next problem: what is left, at most SOLVER_MAX_MS, at least 1."""
    left = remaining_ms()
    return SOLVER_MAX_MS if left is None else max(1, min(SOLVER_MAX_MS, int(left)))


def isl_operations() -> int:
    """islpy's operation budget for the next proof (0: unbounded, when no budget is set)."""
    left = remaining_ms()
    return 0 if left is None else max(ISL_MIN_OPERATIONS, int(left * ISL_OPERATIONS_PER_MS))
