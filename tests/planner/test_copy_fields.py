"""A copy's solved fields under a shared-memory budget: staged tiles that fit it, estimates that
follow the tiles and boxes the budget leaves, the skewed tile's whole-vector stores, and the
H100 measurements of `benchmarks/bench_budget.py` replayed against the planner."""

from __future__ import annotations

import math

import pytest

from legalsat.api import optimize
from legalsat.kernels import default_variant, emit, piece_forms
from legalsat.testing.budget_replay import (
    budgets,
    earlier_records,
    measured,
    measured_key,
    recorded_runs,
    replay,
)


def _transpose(dtype: str, rows: int, cols: int, smem: int | None = None, dst_align: int = 16) -> dict:
    opts = {"max_plans": 5} | ({"smem_bytes": smem} if smem else {})
    return {"target": "sm90", "options": opts, "op": {
        "kind": "copy", "src": {"dtype": dtype, "shape": [rows, cols], "strides": [cols, 1]},
        "dst": {"dtype": dtype, "shape": [rows, cols], "strides": [1, rows], "base_align": dst_align}}}


def _plan(resp: dict, strategy: str) -> dict | None:
    return next((p for p in resp["plans"] if p["strategy"] == strategy), None)


@pytest.mark.parametrize("smem", [1024, 4096, 16384, 32768])
def test_a_small_budget_takes_a_smaller_staged_tile(smem):
    """A budget below the 128 x 128 bf16 tile (34,816 bytes with its row padding) used to
    refuse staged_smem ("no staged tile fits"); a smaller tile fits it (measured on the H100:
    a 1 KiB tile at 0.82 of the copy bandwidth, where direct ran at 0.17)."""
    staged = _plan(optimize(_transpose("bfloat16", 8192, 8192, smem)), "staged_smem")
    assert staged is not None
    core = staged["pieces"][0]
    assert core["smem"]["bytes_per_stage"] <= smem
    assert math.prod(core["tile"]) * 2 <= smem


def test_estimates_follow_the_tiles_a_budget_leaves():
    """The same strategy under a smaller budget is estimated slower, and a TMA plan of 8 x 8
    boxes (1,048,576 of them: 636 us on the H100, direct 545 us) ranks after the direct plan."""
    by_budget = {smem: optimize(_transpose("bfloat16", 8192, 8192, smem)) for smem in (1024, 4096, 16384, None)}
    for strategy in ("staged_smem", "tma"):
        us = [_plan(r, strategy)["cost"]["estimated_us"] for r in by_budget.values()]
        assert us == sorted(us, reverse=True) and us[0] > (1.15 if strategy == "staged_smem" else 2) * us[-1], \
            (strategy, us)
    order = [p["strategy"] for p in by_budget[1024]["plans"]]
    assert order.index("direct") < order.index("tma")
    tma = _plan(by_budget[1024], "tma")
    assert tma["cost"]["estimated_us"] >= 1048576 / 132 * 0.080


def test_a_program_bound_plan_says_so():
    req = _transpose("bfloat16", 8192, 8192, 1024)
    req["options"]["explain"] = True
    tma = _plan(optimize(req), "tma")
    assert tma["explain"][0].startswith("program-bound: 1,048,576 programs")
    assert any("16-byte runs" in line for line in tma["explain"])


def test_a_skewed_tile_stores_whole_vectors_into_misaligned_rows():
    """50257 x 4096 bf16 (destination pitch 100,514 bytes, larger than L2): the skewed tile
    starts each row's segment on a sector, so its stores are 16-byte vectors (the plan said 2,
    and the kernel ran plain: 479 us against the skewed tile's 296 on the H100)."""
    resp = optimize(_transpose("bfloat16", 50257, 4096))
    staged = _plan(resp, "staged_smem")
    assert staged["pieces"][0]["store_vector_bytes"] == 16
    assert "tl.gather" in emit(staged).source
    # a destination base aligned to 2 bytes only: element stores, the plain tile
    plain = _plan(optimize(_transpose("bfloat16", 50257, 4096, dst_align=2)), "staged_smem")
    assert plain["pieces"][0]["store_vector_bytes"] == 2
    assert "tl.gather" not in emit(plain).source


@pytest.mark.parametrize("smem,skewed", [(256, False), (512, False), (3072, True), (None, True)])
def test_a_tile_is_skewed_only_where_its_source_runs_fill_a_sector(smem, skewed):
    """The 50257 x 4096 bf16 transpose under 256 and 512 bytes takes 64 x 2 and 64 x 4 tiles
    (4- and 8-byte source runs): skewed, they ran 1305.6 and 653.7 us on the H100
    (budget_heldout_results_planner23.json), plain 977.1 and 520.2; from 64 x 16 (a sector) on,
    the skewed tile is the faster (336.3 against 492.6 us plain). The planned form's recorded time
    is under the other form's of the same tile."""
    staged = _plan(optimize(_transpose("bfloat16", 50257, 4096, smem)), "staged_smem")
    assert staged["pieces"][0]["store_vector_bytes"] == (16 if skewed else 2), staged["pieces"][0]["tile"]
    assert ("tl.gather" in emit(staged).source) == skewed
    heldout = dict(recorded_runs())["budget_heldout_results.json"]
    w = next(w for w in heldout["workloads"] if w["name"] == "transpose 50257×4096 bf16")
    earlier = earlier_records("budget_heldout_results.json", w["name"])
    first, us = replay(w, str(smem or 131072), earlier).plans[0]
    assert first["strategy"] == "staged_smem" and us is not None
    times: dict[str, float] = {}
    for record in reversed((w, *earlier)):
        times |= measured(record)
    other = measured_key("staged_smem", default_variant(first, True), [pc["tile"] for pc in first["pieces"]],
                         [pc.get("num_stages") for pc in first["pieces"]], ["plain" if skewed else "skewed"])
    assert piece_forms(first) == ["skewed" if skewed else "plain"] and us < times[other], (us, times.get(other))


@pytest.mark.parametrize("rows", [50258, 50260])
def test_a_plain_tile_into_rows_of_4_or_8_byte_pitch_is_emitted_plain(rows):
    """Destination pitches of 4 and 8 bytes' alignment: under 256 bytes the 64 x 2 tile's plan
    promised 4- and 8-byte stores (its pitch's alignment) and the kernels read any store wider
    than a word as the skewed tile's: they emitted the skew the plan had ruled out."""
    staged = _plan(optimize(_transpose("bfloat16", rows, 4096, 256)), "staged_smem")
    assert staged["pieces"][0]["tile"] == [64, 2]
    assert "tl.gather" not in emit(staged).source
    full = _plan(optimize(_transpose("bfloat16", rows, 4096)), "staged_smem")  # sector-long source runs
    assert "tl.gather" in emit(full).source


def _recorded():
    for name, results in recorded_runs():
        for w in results["workloads"]:
            for budget in budgets(w):
                yield pytest.param(w, budget, earlier_records(name, w["name"]), id=f"{name}:{w['name']}@{budget}")


@pytest.mark.parametrize("workload,budget,earlier", list(_recorded()))
def test_budget_measurements_replayed(workload, budget, earlier):
    """Every TMA and staged plan's estimate is within 1.75x of its kernel's time on the H100
    (the default variant; the farthest, 1.65x, BHSD→BHDS's [1, 32, 8] boxes under 3072 bytes,
    whose 16-byte store runs cost less than the table says), and the first plan is within 10%
    of the fastest measured one (the 4096^2 fp64 transpose under 256 bytes put a 256-byte
    staged tile, 321 us, before the direct copy, 166 us, while element-wise direct copies were
    estimated at one share for every element size)."""
    r = replay(workload, budget, earlier)
    for p, us in r.plans:
        assert us is not None, f"{p['strategy']} {[pc['tile'] for pc in p['pieces']]} was not measured: " \
                               "rerun benchmarks/bench_budget.py"
        if p["strategy"] in ("tma", "staged_smem"):
            ratio = p["cost"]["estimated_us"] / us
            assert 1 / 1.75 <= ratio <= 1.75, (p["strategy"], p["cost"]["estimated_us"], us)
    times = [us for _, us in r.plans]
    assert times[0] <= 1.10 * min(times), [(p["strategy"], us) for p, us in r.plans]


@pytest.mark.parametrize("dtype,need", [("bfloat16", 640), ("float32", 384), ("uint8", 1152)])
def test_a_budget_below_the_smallest_tma_pipeline_says_what_it_takes(dtype, need):
    """At 512 bytes a bf16 transpose's TMA was refused first with `inner_box_16B` ("the
    contiguous extent is 16384 bytes; a TMA inner box must be a multiple of 16 bytes"); the
    budget is what rules it out, and the reason says how much it takes: 2 stages and 2 store
    buffers of the smallest box (16 bytes along both contiguous dims) and 2 barriers."""
    rejected = optimize(_transpose(dtype, 8192, 8192, need - 1))["rejected"]
    reasons = next(r["reasons"] for r in rejected if r["strategy"] == "tma")
    assert [r["rule"] for r in reasons] == ["smem_budget"], reasons
    assert f"need {need} bytes" in reasons[0]["message"] and "options.smem_bytes" in reasons[0]["fix"]
    assert _plan(optimize(_transpose(dtype, 8192, 8192, need)), "tma") is not None


@pytest.mark.parametrize("dtype,rows,cols,smem", [("float32", 4096, 4096, 64), ("float32", 4096, 4096, 256),
                                                  ("bfloat16", 624, 62, None), ("bfloat16", 8192, 8192, 1024),
                                                  ("uint8", 8192, 8192, 2048), ("bfloat16", 1023, 4097, 1024)])
def test_the_first_plan_does_not_depend_on_max_plans(dtype, rows, cols, smem):
    """Candidates past max_plans were left unplanned by their e-graph cost, which knows neither
    a copy's fields nor the launch-bound ranking: 4096^2 fp32 under 64 bytes returned a staged
    plan of 638 us with max_plans 1, the direct copy of 134 us first with max_plans 6."""
    firsts = set()
    for max_plans in (1, 2, 6):
        req = _transpose(dtype, rows, cols, smem)
        req["options"]["max_plans"] = max_plans
        first = optimize(req)["plans"][0]
        firsts.add((first["strategy"], first["cost"]["estimated_us"]))
    assert len(firsts) == 1, firsts


def test_a_plain_tile_under_a_small_budget_keeps_sector_long_source_runs():
    """1023 x 4097 bf16 (its destination fits L2: plain tiles) in 1 KiB took 256 x 2 tiles, the
    longest destination run and 4-byte source runs."""
    staged = _plan(optimize(_transpose("bfloat16", 1023, 4097, 1024)), "staged_smem")
    src_run = staged["pieces"][0]["tile"][1] * 2  # dim 1 is the source's contiguous one
    assert src_run >= 32, staged["pieces"][0]["tile"]


def test_each_measured_kernel_of_a_budget_run_is_found_by_its_own_key():
    """Kernels of one tile that differ only in their stage count (a TMA box under two budgets:
    an fp64 kernel ran 224 us with 3 stages, 116 with 4) shared one key: the replay read one's
    time for the other."""
    for _, results in recorded_runs():
        for w in results["workloads"]:
            times = measured(w)
            for k in w["kernels"]:
                # records under one key are one kernel planned under several budgets (plans that
                # differ only in the bank model's description of the tile): the lookup may return
                # the other record's time, which must be the same kernel's within timing noise
                if "ms" in k:
                    key = measured_key(k["strategy"], k["variant"], k["tiles"], k["stages"], k["forms"])
                    assert 1 / 1.05 <= times[key] / (k["ms"] * 1e3) <= 1.05, (w["name"], key)
