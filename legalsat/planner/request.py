"""What the planner is asked: a validated movement, its target and the planning options.

legalsat.schemas.optimize validates untrusted input into a PlanRequest; the planner
trusts it (every invariant below holds).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from legalsat.diagnostics import Diagnostic
from legalsat.planner.budget import DEADLINE_CAP, BudgetCap
from legalsat.targets import Target
from legalsat.terms.movement import Movement


@dataclass(frozen=True)
class PlanOptions:
    """Planning options (defaults as the request schema documents them).

    `timeout_ms` bounds the whole request: saturation takes at most half of it. `smem_bytes`
    None means the target's shared memory per block."""

    allow_padding: bool = False
    max_plans: int = 3
    timeout_ms: int = 2000
    node_limit: int = 20000
    smem_bytes: int | None = None
    explain: bool = False
    keep_egraph: bool = False
    # the caller's cap that set timeout_ms below the request's own (None: the request's)
    timeout_capped_by: BudgetCap | None = None


@dataclass(frozen=True)
class PlanRequest:
    """A validated request. `term_text` is the canonical s-expression of `movement`."""

    target: Target
    movement: Movement
    options: PlanOptions
    term_text: str
    request_id: str | None = None
    warnings: tuple[Diagnostic, ...] = ()  # valid input that is likely not what was meant
    from_term: bool = False  # given as a term: its fields under op are said as the term's (Diagnostic.in_term)

    def within(self, max_timeout_ms: int | None = None, max_node_limit: int | None = None,
               timeout_cap: BudgetCap = DEADLINE_CAP) -> PlanRequest:
        """This request with its budget and node limit capped (a server's deadline, what a
        worker's memory holds); the caps a caller sets, applied to the validated options.
        A budget the cap lowered is reported as `timeout_cap`'s, not the request's."""
        o = self.options
        timeout = min(o.timeout_ms, max_timeout_ms or o.timeout_ms)
        nodes = min(o.node_limit, max_node_limit or o.node_limit)
        if (timeout, nodes) == (o.timeout_ms, o.node_limit):
            return self
        capped = timeout_cap if timeout < o.timeout_ms else None
        return replace(self, options=replace(o, timeout_ms=timeout, node_limit=nodes, timeout_capped_by=capped))

    @property
    def smem_bytes(self) -> int:
        """The shared-memory budget every strategy's fields must fit."""
        return self.options.smem_bytes or self.target.smem_per_block_bytes
