"""Saturation's limits are results: the real loop stops with each StopReason, reports it,
rolls back an iteration that passes the node limit, and reports every ruleset step."""

from __future__ import annotations

import pytest

from legalsat.planner.reports import Limits, StopReason
from legalsat.planner.rules.program import request_program
from legalsat.planner.saturate import saturate
from legalsat.schemas.optimize import parse_request
from legalsat.targets import SM90
from legalsat.testing.planner_suite import suite_request

SMALL = {"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]},
                "dst": {"dtype": "bfloat16", "shape": [64, 96], "strides": [1, 64]}}}
# a rank-7 copy whose src pitches are padded at every dim: no two dims coalesce, so the layout
# rules explore the orders of seven dims (a request starts coalesced, see root_term)
_SHAPE = [2, 2, 3, 4, 5, 8, 64]
RANK7 = {"op": {"kind": "copy",
                "src": {"dtype": "float32", "shape": _SHAPE, "strides": [210600, 70200, 17550, 3510, 585, 65, 1]},
                "dst": {"dtype": "float32", "shape": _SHAPE, "strides": [61440, 30720, 10240, 2560, 512, 64, 1]}}}


def run(request: dict, limits: Limits):
    req = parse_request(request)
    with saturate(request_program(req.movement, False), SM90, limits) as sat:
        return sat.report


def test_saturated():
    r = run(SMALL, Limits())
    assert r.stop_reason is StopReason.SATURATED and 1 <= r.iterations < 40


def test_node_limit_rolls_the_iteration_back():
    unbounded = run(RANK7, Limits(node_limit=10_000_000, max_iterations=4))
    limit = 200
    r = run(RANK7, Limits(node_limit=limit))
    assert r.stop_reason is StopReason.NODE_LIMIT
    assert run(RANK7, Limits()).enodes > 2 * limit
    assert r.iterations < unbounded.iterations or unbounded.stop_reason is not StopReason.SATURATED
    # the rolled-back iteration left nothing: the rounds kept add at most the limit
    kept = sum(s.nodes_added for s in r.steps if s.iteration > 0)
    assert 0 < kept <= limit and r.steps[-1].iteration == 0


def test_a_contiguous_rank7_copy_starts_coalesced():
    """The suite's rank-7 contiguous copy is one dim before saturation starts: it saturates in
    a few rounds instead of reaching the node limit over the orders of its seven dims."""
    r = run(suite_request("rank7-contiguous-fp32"), Limits())
    assert r.stop_reason is StopReason.SATURATED and r.enodes < 100


def test_time_limit():
    r = run(RANK7, Limits(time_budget_s=0.0))
    assert r.stop_reason is StopReason.TIME_LIMIT and r.iterations == 0


def test_the_next_iteration_is_predicted_from_the_last_two():
    from legalsat.planner.saturate import next_iteration_s

    assert next_iteration_s(0.0, 0.0) == 0.0  # nothing run yet
    assert next_iteration_s(0.2, 0.0) == 0.2
    assert next_iteration_s(0.2, 0.1) == 0.4  # grown as it grew
    assert next_iteration_s(0.2, 0.01) == 0.8  # at most 4x: a round at most quadruples the e-graph
    assert next_iteration_s(0.1, 0.2) == 0.1  # a shrinking round is taken at its own time


def test_a_run_stops_before_an_iteration_predicted_to_end_past_its_budget(monkeypatch):
    """A rank-7 copy with a 1.5 s timeout (a 750 ms saturation budget) started a 17th round
    inside its budget that ended far past it, and answered 2.18 s into its 1.5 s
    (benchmarks/deadline_results.json); the loop now asks what the next iteration will take
    before it starts one."""
    import legalsat.planner.saturate as sat

    seen = []
    monkeypatch.setattr(sat, "next_iteration_s", lambda last, before: seen.append((last, before)) or
                        (3600.0 if len(seen) > 2 else 0.0))
    r = run(RANK7, Limits(time_budget_s=60.0))
    assert r.stop_reason is StopReason.TIME_LIMIT and r.iterations == 2
    assert seen[0] == (0.0, 0.0) and seen[2][0] > 0 and seen[2][1] == seen[1][0]


def test_the_budget_holds_the_serialization_after_the_rounds(monkeypatch):
    """The same copy under a 2.5 s timeout (1,250 ms of saturation) ran 17 rounds and then
    serialized the 119,012-node e-graph they left: 1,781 ms of saturation, 143 % of its budget
    (benchmarks/deadline_results.json, with the round's prediction alone; the serialization's
    rate: benchmarks/finish_results.json). The loop now counts that serialization, for the size
    the next round is expected to leave, in what the next round would end at."""
    import legalsat.planner.saturate as sat

    sizes = []
    monkeypatch.setattr(sat, "next_iteration_s", lambda last, before: 0.0)
    monkeypatch.setattr(sat, "finish_s", lambda nodes: sizes.append(nodes) or (3600.0 if len(sizes) > 2 else 0.0))
    r = run(RANK7, Limits(time_budget_s=60.0))
    assert r.stop_reason is StopReason.TIME_LIMIT and r.iterations == 2
    assert len(sizes) == 3 and min(sizes) > 0  # asked before each round, for the size it would leave


def test_the_finish_rate_follows_what_this_machine_measures(monkeypatch):
    import legalsat.planner.saturate as sat

    monkeypatch.setattr(sat, "_finish_rate", 6e-6)
    sat._learn_finish_rate(0.2, 1000)  # too small a graph to say anything: kept
    assert sat.finish_s(1000) == pytest.approx(6e-3)
    sat._learn_finish_rate(0.08, 40_000)  # 2 us a node here
    assert sat.finish_s(1000) == pytest.approx(4e-3)
    for _ in range(20):  # a worker descheduled mid-serialization: 25 us a node, held to 4x the default
        sat._learn_finish_rate(0.5, 20_000)
    assert sat.finish_s(1000) == pytest.approx(1000 * sat.FINISH_RATE_RANGE[1], rel=1e-3)


def test_iteration_limit():
    r = run(RANK7, Limits(max_iterations=1))
    assert r.stop_reason is StopReason.ITERATION_LIMIT and r.iterations == 1


def test_every_ruleset_step_is_reported():
    r = run(SMALL, Limits())
    rounds = [s for s in r.steps if s.iteration > 0]
    assert [s.ruleset for s in rounds[:5]] == ["analysis", "layout", "padding", "analysis", "strategy"]
    assert len(rounds) == 5 * r.iterations
    assert all(s.time_ms >= 0 for s in r.steps)
    matched = dict(r.rule_matches)
    assert matched["reorder"] >= 1 and matched["staged"] == 1 and "pad-dst" not in matched


def test_the_response_carries_the_report():
    import legalsat

    eg = legalsat.optimize(SMALL)["egraph"]
    assert eg["stop_reason"] == "saturated" and eg["report"]["steps"]
    assert eg["report"]["rule_matches"]["transposing"] >= 1


def test_planner_loads_only_egglogs_bindings_and_egglog_still_imports():
    """The planner loads egglog's compiled bindings without egglog's Python API (a third of a
    fresh process's start); egglog imported afterwards reuses them."""
    import subprocess
    import sys

    code = ("import sys; import legalsat.planner.saturate; assert 'egglog' not in sys.modules; "
            "import egglog; from egglog import EGraph, bindings; "
            "assert bindings is sys.modules['egglog.bindings'] is legalsat.planner.saturate.bindings; "
            "EGraph(); bindings.EGraph()")
    subprocess.run([sys.executable, "-c", code], check=True)
