"""What a saturation run did, as data: why it stopped, and per iteration and ruleset the
rules that matched, the e-nodes added and the time taken (egg's `StopReason` and
per-iteration reports). Limits are results, not exceptions."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class StopReason(StrEnum):
    SATURATED = "saturated"              # an iteration changed nothing
    NODE_LIMIT = "node_limit"            # the next iteration would pass the node limit (rolled back)
    TIME_LIMIT = "time_limit"            # the time budget was spent
    ITERATION_LIMIT = "iteration_limit"  # max_iterations rounds ran


@dataclass(frozen=True)
class Limits:
    """Saturation bounds: e-nodes the request may add, seconds, and rounds."""

    node_limit: int = 20000
    time_budget_s: float = 1.0
    max_iterations: int = 40


@dataclass(frozen=True)
class RulesetStep:
    """One ruleset's run inside one iteration (iteration 0: the final strategy pass)."""

    iteration: int
    ruleset: str
    matches: int
    nodes_added: int
    time_ms: float


@dataclass(frozen=True)
class SaturationReport:
    """A whole run: `iterations` completed rounds, the stop reason, the saturated e-graph's
    size (e-nodes and e-classes of the term sorts), each ruleset step, and the total matches
    per named rule (rules that never matched are left out)."""

    iterations: int
    stop_reason: StopReason
    enodes: int
    eclasses: int
    steps: tuple[RulesetStep, ...] = ()
    rule_matches: tuple[tuple[str, int], ...] = ()
