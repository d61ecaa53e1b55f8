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
    assert all(graph[k] < eager[k] for k in graph)  # the host's launch is not in them
    name = "transpose 517×33 bf16"
    est = {k: 1.0 for k in eager if k[0] == name}
    order = {name: ["staged_smem", "direct"]}
    # the recorded run: eagerly the direct kernel was faster (host launch), on the device the staged one
    assert regrets({name: {}}, eager, est, order)[name]["regret"] > 1.05
    assert regrets({name: {}}, graph, est, order)[name]["regret"] == 1.0
