"""The H100 runs of the tile-load probes and the GEMM (benchmarks/*_results.json), replayed
without a GPU: every probe that ran was bit-exact and its stage held every byte where the
plan said; the planner still returns the plans that ran; its estimates are within 2x of the
measured walks; the GEMM was correct everywhere and within 10% of torch.matmul on the
aligned shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import legalsat

ROOT = Path(__file__).resolve().parents[2] / "benchmarks"
TILE_RUNS = {"own": ("tile_results.json", "tile_plans.json"), "suite": ("tile_suite_results.json",
                                                                          "tile_suite_plans.json"),
             "libraries": ("tile_library_results.json", "tile_library_plans.json"),
             # one-element views and tiles widened past their rows (bench_tiles run-edges)
             "edges": ("tile_edge_results.json", "tile_edge_plans.json")}
# per run: plans run at least, Gluon probes among them
TILE_RUN_SIZES = {"own": (600, 290), "suite": (1700, 870), "libraries": (670, 334), "edges": (20, 10)}


def _load(name: str) -> dict:
    return json.loads((ROOT / name).read_text())


@pytest.mark.parametrize("run", sorted(TILE_RUNS))
def test_every_probe_that_ran_was_exact(run):
    results = _load(TILE_RUNS[run][0])
    assert results["env"]["gpu"].startswith("NVIDIA H100")
    rows = results["rows"]
    plans, gluon = TILE_RUN_SIZES[run]
    assert len(rows) >= plans
    ran = [r for r in rows if r["exact"] is not None]
    assert all(r["exact"] for r in ran)
    assert all(r["stage_bytes_exact"] for r in ran if "stage_bytes_exact" in r)
    assert sum(1 for r in ran if r["variant"] == "gluon") >= gluon
    # what did not run is what Triton cannot express (boxes of no power-of-two extent), said so
    assert all("power-of-two" in r["skipped"] for r in rows if r["exact"] is None)
    if run == "own":  # broadcast dims whose last tile overhangs the tensor: zero there, on the GPU too
        overhang = [r for r in ran if r["name"].startswith("broadcast overhang")]
        assert len({r["name"] for r in overhang}) == 3 and {r["variant"] for r in overhang} == {"gluon", "tl"}


@pytest.mark.parametrize("run", sorted(TILE_RUNS))
def test_the_planner_still_returns_the_plans_that_ran(run):
    plans = _load(TILE_RUNS[run][1])
    names = sorted(plans)[::25]
    for name in names:
        got = legalsat.optimize(plans[name]["request"])
        want = plans[name]["response"]
        assert [p["strategy"] for p in got["plans"]] == [p["strategy"] for p in want["plans"]], name
        consumer = plans[name]["request"]["op"]["consumer"]
        is_a = (consumer if isinstance(consumer, str) else consumer["kind"]) == "wgmma_a"
        for g, w in zip(got["plans"], want["plans"]):
            for field in ("layout", "boxes", "coords", "grid"):
                assert g["tile_load"][field] == w["tile_load"][field], (name, field)
            short = is_a and w["tile_load"]["wgmma"] and w["tile_load"]["wgmma"]["mn_block"] < 64
            # an A tile of fewer than 64 rows: every wgmma reads 64, past the stage; its fields were
            # recorded (the probe read such tiles as the B operand) and are now withheld, said why
            assert g["tile_load"]["wgmma"] == (None if short else w["tile_load"]["wgmma"]), (name, "wgmma")
            assert not short or "64-row blocks" in g["tile_load"]["note"], name
            assert g["descriptors"] == w["descriptors"], name


def test_estimates_are_within_2x_of_the_measured_walks():
    from benchmarks.bench_tiles import estimates
    from legalsat.targets.sm90 import SM90

    # with the walks of many small tiles (run-small), which only the TMA round trip bounds: 8 x 8
    # bf16 tiles over 16384^2 took 1114 us where a model without it (tma_latency_ns 0) said 244
    rows = [r for f in ("tile_results.json", "tile_small_results.json") for r in _load(f)["rows"] if r.get("walk_ms")]
    assert len(rows) >= 616 and sum(1 for r in rows if "tile 8x8" in r["name"]) == 2
    ratios = [e / r["us_per_tile"] for e, r in zip(estimates(rows, SM90.cost), rows)]
    assert all(0.5 <= x <= 2.0 for x in ratios), sorted(ratios)[:3] + sorted(ratios)[-3:]


def test_the_boxes_of_a_stage_cost_what_the_estimate_says_nothing():
    """benchmarks/bench_tiles.py run-boxes on the H100: one tensor's tiles of 1 to 25 TMA boxes
    a stage (an extent that is not a power of two is cut into boxes of its largest power-of-two
    divisor: 176 rows into 11 of 16) walked at one bandwidth, within 2 %, through the plan's
    pipeline (one mbarrier a stage, every box's bytes expected on it). The estimate charges
    bytes, not boxes: it tracks every walk alike; the planner still cuts those tiles so."""
    from collections import defaultdict

    from legalsat.planner.build.tile import walk_cost
    from legalsat.targets.sm90 import SM90
    from legalsat.terms.strategy import Strategy

    results, plans = _load("tile_box_results.json"), _load("tile_box_plans.json")
    assert results["env"]["gpu"].startswith("NVIDIA H100")
    rows = [r for r in results["rows"] if r.get("walk_ms")]
    assert len(rows) == len(plans) == 16 and all(r["exact"] and r["variant"] == "gluon" for r in rows)
    # the B operands are read by wgmma (K-major, as an attention K tile feeds S = Q K^T)
    assert all(plans[r["name"]]["response"]["plans"][0]["tile_load"]["wgmma"] for r in rows if "wgmma" in r["name"])
    families = defaultdict(list)
    for r in rows:
        families[r["name"].split(" tile ")[0]].append(r)
    ratios = []
    for rs in families.values():
        assert min(r["boxes"] for r in rs) <= 2 and max(r["boxes"] for r in rs) >= 22
        gbps = [r["tile_bytes"] * r["tiles"] / r["walk_ms"] for r in rs]
        assert max(gbps) / min(gbps) < 1.02, gbps
        for r in rs:
            p = plans[r["name"]]["response"]["plans"][r["plan"]]
            est = walk_cost(SM90, Strategy.TMA, r["tiles"], r["tile_bytes"], r["stages"], p["vector_bytes"])
            ratios.append(est.total_us / r["tiles"] / r["us_per_tile"])
    assert max(ratios) / min(ratios) < 1.05, ratios
    for name in sorted(plans)[::5]:
        got = legalsat.optimize(plans[name]["request"])["plans"][0]["tile_load"]
        assert got["boxes"] == plans[name]["response"]["plans"][0]["tile_load"]["boxes"], name


def test_gemm_was_correct_everywhere_and_within_10_percent_on_aligned_shapes():
    from benchmarks.bench_gemm import ALIGNED

    results = _load("gemm_results.json")
    assert results["env"]["gpu"].startswith("NVIDIA H100")
    for row in results["rows"]:
        assert all(v["correct"] for v in row["variants"]), row["name"]
        default = next(v for v in row["variants"] if v["variant"] == "auto")
        if row["name"] in ALIGNED:
            assert default["vs_torch"] >= 0.9, row["name"]


def test_every_wgmma_descriptor_was_read_exactly_by_the_tensor_core():
    """tools/wgmma_probe.py on the H100: every distinct wgmma plan's descriptors (as the plan
    gives them: layout type, LBO, SBO, k-slice starts and base offsets, block steps), issued
    as wgmma.mma_async against an identity, read exactly the operand; each control (every
    start one 16-byte chunk on) read wrong, so the check can fail."""
    results = _load("wgmma_probe_results.json")
    assert results["env"]["gpu"].startswith("NVIDIA H100")
    rows = results["rows"]
    assert len(rows) >= 150 and all(r["exact"] for r in rows)
    assert len(results["controls"]) == len(rows) and all(c["wrong_elements"] > 0 for c in results["controls"])
    seen = {(r["element"], r["major"], r["swizzle"]) for r in rows}
    assert {e for e, _, _ in seen} >= {"bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "int8", "uint8"}
    assert {s for _, _, s in seen} == {"none", "32B", "64B", "128B"} and {m for _, m, _ in seen} == {"k", "mn"}


def test_the_planner_still_gives_the_descriptors_that_were_probed():
    fields = ("layout_type", "lbo_bytes", "sbo_bytes", "mn_block", "mn_block_bytes")
    for row in _load("wgmma_probe_results.json")["rows"][::4]:
        plans = legalsat.optimize(row["request"])["plans"]
        got = [p["tile_load"]["wgmma"] for p in plans if (p.get("tile_load") or {}).get("wgmma")]
        if row["consumer"] == "wgmma_a" and row["mn_block"] < 64:  # fewer rows than every wgmma reads:
            assert not got, row["name"]  # its own rows read exactly, the instruction's others past the stage
            continue
        assert any(tuple(g[f] for f in fields) == tuple(row[f] for f in fields) and
                   sorted({s["base_offset"] for s in g["k_slices"]}) == row["base_offsets"] for g in got), row["name"]
