"""benchmarks/kernel_report.py: plan regret of the recorded kernel run, eagerly and, for the
launch-scale items, on their time from CUDA graphs."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.kernel_report import measured, regrets

HERE = Path(__file__).resolve().parent.parent / "benchmarks"


def test_launch_scale_items_get_a_regret_on_their_device_time():
    results = json.loads((HERE / "kernel_results.json").read_text())
    plans = json.loads((HERE / "kernel_plans.json").read_text())
    eager, _ = measured(results, plans)
    graph, _ = measured(results, plans, "graph_ms")
    # only the items timed from CUDA graphs have device times, every one of them a default variant's
    timed = {w["name"] for w in results["workloads"] if any("graph_ms" in c for c in w["candidates"])}
    assert timed and {w for w, _ in graph} == timed
    # the host's launch is not in them: below an eager time of a long kernel by its spread at most
    # (a 511 us candidate of a workload timed so: 511.35 from graphs against 511.30 eagerly)
    assert all(graph[k] < eager[k] * 1.01 for k in graph)
    assert all(graph[k] < eager[k] for k in graph if eager[k] < 0.05)  # short: the launch shows
    name = "transpose 517×33 bf16"
    est = {k: 1.0 for k in eager if k[0] == name}
    order = {name: ["staged_smem", "direct"]}
    # each timing's regret is its own: the first plan's time over that timing's best
    for meas in (eager, graph):
        want = meas[(name, "staged_smem")] / min(meas[(name, s)] for s in ("staged_smem", "direct"))
        assert regrets({name: {}}, meas, est, order)[name]["regret"] == want
    # where the host's launch reorders the candidates (eagerly the direct kernel ahead, on the
    # device the staged one, as a run of this item recorded before), the two regrets part
    host = {(name, "staged_smem"): 0.0113, (name, "direct"): 0.0100}
    device = {(name, "staged_smem"): 0.00128, (name, "direct"): 0.00131}
    assert regrets({name: {}}, host, est, order)[name]["regret"] == 1.13
    assert regrets({name: {}}, device, est, order)[name]["regret"] == 1.0
