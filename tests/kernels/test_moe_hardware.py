"""The MoE routing run on the H100 (benchmarks/bench_moe.py, benchmarks/moe_results.json),
replayed without a GPU: every plan of every workload and small gather case was bit-exact,
the plan chosen first ran at least at PyTorch's speed (eager and torch.compile), and the
planner still returns the plans that ran."""

from __future__ import annotations

import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
RESULTS = json.loads((BENCH / "moe_results.json").read_text())
PLANS = json.loads((BENCH / "moe_plans.json").read_text())


def test_every_kernel_that_ran_was_exact():
    rows = RESULTS["workloads"] + RESULTS["cases"]
    assert len(rows) == len(PLANS["workloads"]) + len(PLANS["cases"])
    assert all(c["exact"] for r in rows for c in r["candidates"]), [r["name"] for r in rows]


def test_the_first_plan_is_at_least_as_fast_as_pytorch():
    for w in RESULTS["workloads"]:
        first = w["candidates"][0]
        assert first["strategy"] == "inspector_executor", w["name"]
        assert first["ms"] <= w["torch_ms"] and first["ms"] <= w["torch_compile_ms"], w["name"]


def test_the_planner_still_returns_the_plans_that_ran():
    from legalsat.api import optimize

    for name, entry in PLANS["workloads"].items():
        w = entry["workload"]
        now = optimize({"request_id": name, "target": "sm90", "op": w["op"], "options": {"max_plans": 5}})
        assert [p["term"] for p in now["plans"]] == [p["term"] for p in entry["response"]["plans"]], name
        assert now["plans"][0]["gather"] == entry["response"]["plans"][0]["gather"], name
