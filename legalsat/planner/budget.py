"""The request's time budget as every planning stage sees it.

`options.timeout_ms` is the planner's budget for one request: saturation takes at most half
of it (then stops with `stop_reason: time_limit`), z3 and islpy share what is left, and a
candidate reached after it is spent is rejected with `planning_deadline`. A stage that runs
out of its share reports a named reason (`solver_timeout`, `proof_budget`), never a hang.
The same holds whoever calls: the command line, the Python API and the service's workers
(whose hard deadline, past which a worker is killed, adds a grace for process overhead).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("legalsat_planning_deadline", default=None)

SOLVER_MAX_MS = 2000  # one z3 problem never takes more, whatever the budget
ISL_OPERATIONS_PER_MS = 2000  # islpy's operation counter, about a millisecond's worth on one core
ISL_MIN_OPERATIONS = 200_000  # a proof always gets this much (small proofs take far less)


@contextmanager
def deadline(timeout_ms: int) -> Iterator[None]:
    """Plan under a budget of `timeout_ms` from now (nested budgets keep the earlier end)."""
    end = time.monotonic() + timeout_ms / 1000
    outer = _DEADLINE.get()
    token = _DEADLINE.set(end if outer is None else min(outer, end))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


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
