"""Limits are results: z3 and islpy get their share of the request's `timeout_ms` and report
a named reason when it runs out; `timeout_ms` bounds the whole request alike in the Python
API, the command line and the service."""

from __future__ import annotations

import json
import time

import pytest
import z3

from legalsat.api import optimize
from legalsat.diagnostics import Code
from legalsat.planner import budget, stages
from legalsat.planner.prove import forget_proofs
from legalsat.planner.solve import FieldProblem, Infeasible
from legalsat.schemas.optimize import parse_request
from legalsat.terms.strategy import Strategy
from legalsat.testing.planner_suite import RANK8_PERMUTE


def test_z3_out_of_budget_is_solver_timeout():
    with budget.deadline(0):
        fp = FieldProblem("sum of three cubes")
        x, y, z = z3.Ints("x y z")
        fp.require("cubes", x * x * x + y * y * y + z * z * z == 33, "no such cubes")
        fp.require("large", z3.And(x > 10**6, y < -(10**6)), "large")
        with pytest.raises(Infeasible) as e:
            fp.solve([])
    assert [r.code for r in e.value.reasons] == [Code.SOLVER_TIMEOUT] and e.value.reasons[0].fix


def test_islpy_out_of_budget_is_proof_budget(monkeypatch):
    req = parse_request(RANK8_PERMUTE)
    with stages.saturate(req) as sat:
        cand = next(c for c in stages.extract(sat) if c.strategy is Strategy.STAGED_SMEM)
    built = stages.solve(req, cand)
    assert stages.verify(built).ok
    forget_proofs()  # a box proven once is not proven again: start from none
    monkeypatch.setattr(stages, "isl_operations", lambda: 50)
    with pytest.raises(Infeasible) as e:
        stages.verify(built)
    assert [r.code for r in e.value.reasons] == [Code.PROOF_BUDGET]


def test_a_proof_that_outruns_the_operation_rate_is_retried_at_its_own_rate(monkeypatch):
    """islpy's budget is operations, its rate differs from proof to proof: a rank-8 permute's
    proofs ran faster than ISL_OPERATIONS_PER_MS assumes, and with 300 ms its plans were refused
    `proof_budget` after 150 ms (half the budget unused) while 350 ms planned them. A proof
    that spends its operations with time left is retried at the rate it ran."""
    req = parse_request(RANK8_PERMUTE)
    with stages.saturate(req) as sat:
        cand = next(c for c in stages.extract(sat) if c.strategy is Strategy.STAGED_SMEM)
    built = stages.solve(req, cand)
    forget_proofs()
    monkeypatch.setattr(stages, "isl_operations", lambda: 50)  # far below what the proof needs
    with budget.deadline(60_000):
        assert stages.verify(built).ok


def test_a_budget_the_service_capped_names_the_cap_not_the_request():
    """When the service's LEGALSAT_DEADLINE_MS sets the budget below the request's timeout_ms,
    what ran out says so, and its fix is not `raise options.timeout_ms` (which changes nothing)."""
    req = parse_request({**RANK8_PERMUTE, "options": {"timeout_ms": 20_000, "max_plans": 5}})
    assert req.within(30_000).options.timeout_capped_by is None
    capped = req.within(1)
    assert capped.options.timeout_capped_by is budget.DEADLINE_CAP
    out = optimize({**RANK8_PERMUTE, "options": {"timeout_ms": 20_000, "max_plans": 5}}, max_timeout_ms=1)
    reasons = [r for x in out["rejected"] for r in x["reasons"] if r["rule"] in ("planning_deadline", "not_reached")]
    assert reasons
    for r in reasons:
        assert "LEGALSAT_DEADLINE_MS" in r["message"] + r["fix"] and "raise options.timeout_ms" not in r["fix"]
    own = optimize({**RANK8_PERMUTE, "options": {"timeout_ms": 1, "max_plans": 5}})
    mine = [r for x in own["rejected"] for r in x["reasons"] if r["rule"] == "planning_deadline"]
    assert mine and all("timeout_ms (1 ms)" in r["message"] and "options.timeout_ms" in r["fix"] for r in mine)


def test_no_plan_for_want_of_time_is_incomplete_not_infeasible():
    """A 2 ms budget planned nothing and said "infeasible" (exit 3 alike), with the fix "or lower
    options.max_plans" at max_plans 1; the same request plans with more time."""
    req = {"term": "(copy (view bfloat16 (8192 8192) (8192 1) 16) (view bfloat16 (8192 8192) (1 8192) 16))"}
    out = optimize({**req, "options": {"timeout_ms": 1, "max_plans": 1}})
    assert out["plans"] == [] and out["status"] == "incomplete"
    fixes = [r["fix"] for x in out["rejected"] for r in x["reasons"] if r["rule"] == "planning_deadline"]
    assert fixes and all("max_plans" not in f for f in fixes)
    assert optimize({**req, "options": {"max_plans": 1}})["status"] == "ok"
    ruled_out = {"op": {"kind": "load_tile", "src": {"dtype": "float16", "shape": [16, 4, 1], "strides": [4, 1, 1]},
                        "tile": [256, 256, 256], "consumer": "wgmma_a"}}
    assert optimize(ruled_out)["status"] == "infeasible"  # nothing cut short


def _rejected_codes(out: dict) -> set[str]:
    return {r["rule"] for x in out["rejected"] for r in x["reasons"]}


def test_timeout_ms_bounds_the_whole_request_in_the_api():
    """A rank-8 permute once spent 3 s of a 2 s budget in verification: now the answer keeps
    to the budget, and what it had no time for is rejected by name."""
    t = time.perf_counter()
    out = optimize({**RANK8_PERMUTE, "options": {"timeout_ms": 2000, "max_plans": 5}})
    assert out["status"] == "ok" and out["plans"]
    assert time.perf_counter() - t < 8  # the budget and the process's own overhead, on a loaded machine
    starved = optimize({**RANK8_PERMUTE, "options": {"timeout_ms": 1, "max_plans": 5}})
    assert starved["egraph"]["stop_reason"] == "time_limit"
    assert "planning_deadline" in _rejected_codes(starved)
    assert all(r["fix"] for x in starved["rejected"] for r in x["reasons"])


def test_timeout_ms_means_the_same_on_the_command_line(tmp_path, capsys):
    from legalsat.clients.cli import main

    path = tmp_path / "req.json"
    path.write_text(json.dumps({**RANK8_PERMUTE, "options": {"timeout_ms": 1, "max_plans": 5}}))
    main(["optimize", "--compact", str(path)])
    out = json.loads(capsys.readouterr().out)
    assert out["egraph"]["stop_reason"] == "time_limit" and "planning_deadline" in _rejected_codes(out)


def test_caps_bound_the_validated_request():
    """A server's deadline and a worker's node cap bound the request's own limits, whether
    the request names them or leaves them to their defaults."""
    req = parse_request(RANK8_PERMUTE)
    capped = req.within(max_timeout_ms=500, max_node_limit=1000)
    assert (capped.options.timeout_ms, capped.options.node_limit) == (500, 1000)
    named = parse_request({**RANK8_PERMUTE, "options": {"timeout_ms": 100, "node_limit": 50_000}})
    assert (named.within(500, 1000).options.timeout_ms, named.within(500, 1000).options.node_limit) == (100, 1000)
    assert req.within() is req


@pytest.mark.parametrize("shape,src,dst,method", [
    # dst interleaves two dims (no decoder from dst offsets to indices): decoded from src
    ([3, 7, 2, 3, 7], [294, 42, 21, 7, 1], [2, 100, 1, 64, 4096], "isl"),
    ([4096, 3, 7, 2, 3, 7], [882, 294, 42, 21, 7, 1], [28672, 2, 100, 1, 64, 4096], "isl"),
    # both sides interleave: every element listed
    ([3, 7, 2, 3, 7], [64, 100, 1, 2, 4096], [2, 100, 1, 64, 4096], "enumeration"),
], ids=["dst-interleaved", "dst-interleaved-3.6M", "both-interleaved"])
def test_a_copy_whose_destination_does_not_nest_is_proven_at_once(shape, src, dst, method):
    """isl's check with existentials, the fallback where dst's strides do not nest, ran for
    minutes past its operation budget (the service killed the worker at the deadline); such a
    copy is decoded from its src offsets, or listed element by element where neither side
    nests, well within the budget on a loaded machine, every plan proven."""
    req = {"op": {"kind": "copy", "src": {"dtype": "uint8", "shape": shape, "strides": src},
                  "dst": {"dtype": "uint8", "shape": shape, "strides": dst}}, "options": {"timeout_ms": 5000}}
    t = time.perf_counter()
    out = optimize(req)
    assert time.perf_counter() - t < 8 and out["status"] == "ok"
    assert all(p["proof"]["verified"] and p["proof"]["method"] == method for p in out["plans"])


def test_a_tile_no_stage_can_hold_is_refused_before_its_layouts_are_analysed():
    """A 256^3 fp16 wgmma operand tile (32 MiB a stage) over a 16 x 4 tensor: each candidate
    layout's wgmma analysis listed all 16.7 M element offsets before the budget was checked
    (6 to 29 s; the service killed the worker). The budget comes first now."""
    req = {"op": {"kind": "load_tile", "src": {"dtype": "float16", "shape": [16, 4, 1], "strides": [4, 1, 1]},
                  "tile": [256, 256, 256], "consumer": "wgmma_a"}, "options": {"timeout_ms": 5000}}
    t = time.perf_counter()
    out = optimize(req)
    assert time.perf_counter() - t < 3 and out["status"] == "infeasible"
    direct = next(r for r in out["rejected"] if r["strategy"] == "direct")
    assert direct["reasons"][0]["rule"] == "smem_budget" and "33554432 bytes" in direct["reasons"][0]["message"]
