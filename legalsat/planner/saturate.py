"""Equality saturation of one request: its program run under limits, one ruleset at a time.

Limits are results, not exceptions (egg's StopReason): the run stops when an iteration
changes nothing (`saturated`), or before an iteration would pass `node_limit` (that
iteration is rolled back with push/pop), or before an iteration the last ones predict would
end past the time budget (`next_iteration_s`, the serialization after the rounds included:
`finish_s`), or after `max_iterations`.
The request's hard deadline is the caller's: a worker process that overruns is killed from
outside (a signal cannot stop an egglog iteration).

Each iteration runs the rulesets of `ROUND` one by one, and records for each the rule
matches, the e-nodes it added and its time (`SaturationReport.steps`).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from legalsat.planner.egglog_bindings import bindings
from legalsat.planner.reports import Limits, RulesetStep, SaturationReport, StopReason
from legalsat.planner.rules.language import LANGUAGE
from legalsat.planner.rules.program import ROUND, base_program
from legalsat.targets import Target

# e-class ids of the nodes of the term sorts in egraph-serialize JSON (not primitives, and
# not the outputs of analysis relations): what the response and the viewer count
TERM_SORTS = tuple(re.findall(r"\(datatype (\w+)", LANGUAGE))  # Dims, TDims, Mov, Plan
_ECLASS = re.compile(f'"eclass":"((?:{"|".join(TERM_SORTS)})-[^"]*)"')
_RUN = {"analysis": "(run-schedule (saturate (run analysis)))", "layout": "(run layout 1)",
        "padding": "(run padding 1)", "strategy": "(run strategy 1)"}
# after the rounds: strategies for every form the last round made, with complete facts
_FINISH = ("analysis", "strategy", "analysis", "strategy")
_FINISH_RUN = {"analysis": _RUN["analysis"], "strategy": "(run-schedule (saturate (run strategy)))"}


class _Template:
    """A target's compiled program (rules parsed and compiled once per process). Each request
    runs between a push and a pop of it. An EGraph never leaves its process or thread."""

    def __init__(self, target: Target):
        self.egraph = eg = bindings.EGraph()
        eg.run_program(*eg.parse_program(base_program(target)))
        self.cmd = {name: eg.parse_program(text) for name, text in _RUN.items()}
        self.finish = {name: eg.parse_program(text) for name, text in _FINISH_RUN.items()}
        self.size = eg.parse_program("(print-size)")
        self.push = eg.parse_program("(push)")
        self.pop = eg.parse_program("(pop)")

    def run(self, commands) -> bindings.RunReport:
        return self.egraph.run_program(*commands)[-1].report

    def nodes(self) -> int:
        return sum(n for _, n in self.egraph.run_program(*self.size)[-1].sizes)


DEFAULT_LIMITS = Limits()
# keyed by the whole (frozen) target: the same name with other cost facts is another program
_TEMPLATES: dict[Target, _Template] = {}


def template(target: Target) -> _Template:
    if target not in _TEMPLATES:
        _TEMPLATES[target] = _Template(target)
    return _TEMPLATES[target]


@dataclass
class Saturation:
    """A saturated e-graph (valid inside its `with` block only) and what the run did."""

    egraph: bindings.EGraph
    report: SaturationReport
    snapshot: str  # egraph-serialize JSON of the saturated e-graph (for the viewer)


class _Recorder:
    """Runs rulesets, recording each as a RulesetStep."""

    def __init__(self, t: _Template):
        self.t = t
        self.steps: list[RulesetStep] = []
        self.matches: Counter[str] = Counter()
        self.size = t.nodes()

    def run(self, iteration: int, ruleset: str, commands) -> bool:
        start = time.perf_counter()
        report = self.t.run(commands)
        elapsed = (time.perf_counter() - start) * 1000
        size = self.t.nodes() if report.updated else self.size  # a run that changed nothing added nothing
        matched = sum(report.num_matches_per_rule.values())
        self.matches.update({k: v for k, v in report.num_matches_per_rule.items() if v})
        self.steps.append(RulesetStep(iteration, ruleset, matched, size - self.size, round(elapsed, 3)))
        self.size = size
        return report.updated


# the most a saturation round multiplies these e-graphs by (their growth bound)
ROUND_GROWTH = 4


# what serializing a saturated e-graph costs a node (the e-class count and the viewer's snapshot
# come from one serialization after the rounds), on the 2-core machine (`python -m
# benchmarks.bench_finish`, benchmarks/finish_results.json): 1.5-2.5 us for a rank-7 copy
# stopped by node limits (1,038 e-nodes: 1.6 ms; 98,689: 228 ms) and 2.3-2.8 us stopped by its
# time budget (317,025: 875 ms); the planner suite's small graphs 1.5-4.3 us (0.2-1.6 ms).
# Each run of 20,000 nodes or more (where the serialization weighs) replaces the rate by the
# average of it and its own, each sample held to 0.5-4x the default: a process learns its
# machine's and its requests', and one slow finish (a descheduled worker) cannot raise it so
# far that small requests with tight budgets stop after their first rounds
FINISH_S_PER_NODE = 2e-6
FINISH_RATE_MIN_NODES = 20_000
FINISH_RATE_RANGE = (0.5 * FINISH_S_PER_NODE, 4 * FINISH_S_PER_NODE)
_finish_rate = FINISH_S_PER_NODE


def finish_s(nodes: int) -> float:
    """What the work after the rounds is expected to take for an e-graph of `nodes` e-nodes
    (its serialization: linear in the e-graph; the last rounds' strategies are small)."""
    return nodes * _finish_rate


def _learn_finish_rate(seconds: float, nodes: int) -> None:
    global _finish_rate
    if nodes >= FINISH_RATE_MIN_NODES:
        low, high = FINISH_RATE_RANGE
        _finish_rate = (_finish_rate + min(max(seconds / nodes, low), high)) / 2


def next_iteration_s(last: float, before: float) -> float:
    """What the next iteration is expected to take, from the last two: the last one's time
    grown as it grew (at least 1x, at most ROUND_GROWTH x: a round at most quadruples these e-graphs). A
    run stops at its time budget before an iteration so predicted would end past it, rather
    than after: a rank-7 copy under a 1.5 s timeout ran a 17th round to 119,012 e-nodes and
    answered 2.1 s in, incomplete; with this prediction it stopped after 16 and answered 1.1 s
    in, planned, and with the serialization counted too (`finish_s`) after 15, 0.6 s in
    (`python -m benchmarks.bench_deadline`, benchmarks/deadline_results.json)."""
    if last <= 0:
        return 0.0
    return last * min(ROUND_GROWTH, max(1.0, last / before)) if before > 0 else last


@contextmanager
def saturate(start_facts: str, target: Target, limits: Limits = DEFAULT_LIMITS) -> Iterator[Saturation]:
    """Saturate the program of `start_facts` (egglog commands binding `$root`, see
    legalsat.planner.rules.program.request_program) under `limits`."""
    t = template(target)
    eg = t.egraph
    eg.run_program(*t.push)
    depth = 1  # snapshots this request holds on the template's stack
    try:
        eg.run_program(*eg.parse_program(start_facts))
        rec = _Recorder(t)
        base = rec.size
        start = time.perf_counter()
        stop, it = StopReason.ITERATION_LIMIT, 0
        last = before = 0.0  # the last two iterations' seconds
        grown = rec.size  # the e-graph's size before the last iteration
        for it in range(1, limits.max_iterations + 1):
            began = time.perf_counter()
            # the budget holds the rounds and the finish: the next round as predicted, then
            # the serialization of the e-graph it leaves (grown as the last round grew it)
            after = rec.size * min(ROUND_GROWTH, max(1.0, rec.size / max(grown, 1)))
            if began - start + next_iteration_s(last, before) + finish_s(round(after)) > limits.time_budget_s:
                stop, it = StopReason.TIME_LIMIT, it - 1
                break
            grown = rec.size
            # snapshot only when an iteration could plausibly cross the limit (ROUND_GROWTH); a
            # snapshot costs a copy of the e-graph
            guarded = ROUND_GROWTH * (rec.size - base) >= limits.node_limit
            if guarded:
                eg.run_program(*t.push)
                depth += 1
            kept, kept_matches = len(rec.steps), rec.matches.copy()
            updated = False
            for ruleset in ROUND:
                updated |= rec.run(it, ruleset, t.cmd[ruleset])
            if rec.size - base > limits.node_limit:
                if guarded:
                    eg.run_program(*t.pop)  # roll the iteration back
                    depth -= 1
                    del rec.steps[kept:]
                    rec.matches, rec.size = kept_matches, t.nodes()
                stop, it = StopReason.NODE_LIMIT, it - 1
                break
            if not updated:
                stop = StopReason.SATURATED
                break
            last, before = time.perf_counter() - began, last
        finish = time.perf_counter()
        for ruleset in _FINISH:
            rec.run(0, ruleset, t.finish[ruleset])
        # one serialization gives the e-class count and the viewer's snapshot; the e-class ids
        # are read with a regex (same counts as parsing the JSON, ~10x faster on large graphs)
        snapshot = eg.serialize([]).to_json()
        classes = _ECLASS.findall(snapshot)
        _learn_finish_rate(time.perf_counter() - finish, rec.size)
        report = SaturationReport(it, stop, len(classes), len(set(classes)), tuple(rec.steps),
                                  tuple(sorted(rec.matches.items())))
        yield Saturation(eg, report, snapshot)
    finally:
        for _ in range(depth):  # back to the bare template for the next request
            eg.run_program(*t.pop)
