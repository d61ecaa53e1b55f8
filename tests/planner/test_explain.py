"""`options.explain`: each plan says what dominates its estimate, where it ranks, and which
constraint limited each solved field; the numbers are the plan's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legalsat.api import optimize

ROOT = Path(__file__).resolve().parents[2]
TRANSPOSE = json.loads((ROOT / "examples" / "optimize_transpose.json").read_text())
MOE = {"op": {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [16384, 2048], "strides": [2048, 1]},
              "axis": 0, "index": {"count": 131072, "distribution": "random", "groups": 128}}}


@pytest.fixture(scope="module")
def transpose():
    return optimize({**TRANSPOSE, "options": {"explain": True, "max_plans": 3}})


def _plan(out: dict, strategy: str) -> dict:
    return next(p for p in out["plans"] if p["strategy"] == strategy)


def test_explain_is_absent_unless_asked():
    out = optimize({**TRANSPOSE, "options": {"max_plans": 3}})
    assert all(p.get("explain") is None for p in out["plans"])


def test_each_plan_says_what_dominates_and_where_it_ranks(transpose):
    plans = transpose["plans"]
    assert plans[0]["explain"][1].startswith(f"ranked 1 of {len(plans)}")
    for i, p in enumerate(plans[1:], start=2):
        gap = p["cost"]["estimated_us"] - plans[0]["cost"]["estimated_us"]
        assert p["explain"][1].startswith(f"ranked {i} of {len(plans)}: +{gap:.2f} us")
    for p in plans:
        head = p["explain"][0]
        assert head.startswith(("bandwidth-bound at", "launch-bound"))
        assert f"estimated {p['cost']['estimated_us']:.2f} us" in p["explain"][2]


def test_staged_and_tma_name_their_bank_conflicts_and_limits(transpose):
    staged = _plan(transpose, "staged_smem")["explain"]
    ways = _plan(transpose, "staged_smem")["smem"]
    assert any(f"{ways['write_conflict_ways']:g}-way writes" in line for line in staged)
    assert any(line.startswith("limit: tile dim") for line in staged)
    tma = _plan(transpose, "tma")["explain"]
    assert any("swizzle span" in line for line in tma)  # the inner box is as wide as its 128B swizzle
    assert any(line.startswith("limit: stages") for line in tma)


def test_a_direct_transpose_names_its_element_by_element_side(transpose):
    direct = _plan(transpose, "direct")["explain"]
    assert "element by element" in direct[0]
    assert any("2/32 of a 32-byte sector" in line for line in direct)


def test_an_moe_gather_names_the_inspector_passes():
    out = optimize({**MOE, "options": {"explain": True}})
    insp = _plan(out, "inspector_executor")
    passes = insp["gather"]["inspector"]["passes"]
    assert any(f"inspector: {len(passes)} passes ({', '.join(passes)})" in line for line in insp["explain"])
    assert any(line.startswith(f"launches: {1 + len(passes)} kernel") for line in insp["explain"])
    assert any(line.startswith("limit: rows_per_program") for line in insp["explain"])


def test_a_reason_about_one_view_says_which():
    """A permute whose views both have too many dims: one reason per view, each naming it
    (the two read alike before)."""
    from legalsat.testing.browser import VIEWER_CASES

    out = optimize(VIEWER_CASES["rank8-permute"])
    tma = next(r for r in out["rejected"] if r["strategy"] == "tma")["reasons"]
    assert [r["message"].split(":")[0] for r in tma] == ["op.src", "op.dst"]


def test_a_launch_bound_plan_ranked_below_a_higher_estimate_says_why():
    """128 x 96 fp64: the staged tile's estimate is lower than the direct copy's, but one program
    holds 32 KiB of it; the explanation ranks it by what that program adds to the launch."""
    view = {"dtype": "float64", "shape": [128, 96], "strides": [96, 1]}
    out = optimize({"op": {"kind": "copy", "src": view, "dst": {**view, "strides": [1, 128]}},
                    "options": {"explain": True}})
    first, staged, tma = (_plan(out, s) for s in ("direct", "staged_smem", "tma"))
    assert out["plans"][0] is first and staged["cost"]["estimated_us"] < first["cost"]["estimated_us"]
    assert "plans within 1.1 x one launch rank by estimate + largest program" in staged["explain"][1]
    assert first["explain"][1].startswith("ranked 1 of 3: plans within 1.1 x one launch rank by estimate + largest")
    assert "largest program: 32.0 KiB read and 32.0 KiB written alone at 74 GB/s adds 0.89 us to its launch" in staged["explain"]
    assert "TMA pipelines and warp shuffles come after the pointer kernels" in tma["explain"][1]


def test_a_gathers_largest_program_is_its_rows():
    """A launch-bound gather's program moves its rows' slabs: 64 rows of 128 bytes."""
    out = optimize({"op": {"kind": "gather", "src": {"dtype": "float32", "shape": [700, 32], "strides": [32, 1]},
                           "axis": 0, "index": {"count": 1000, "distribution": "warp_local"}},
                    "options": {"explain": True}})
    direct = _plan(out, "direct")
    assert direct["gather"]["rows_per_program"] == 64 and direct["gather"]["slab_bytes"] == 128
    assert any(line.startswith("largest program: 8.0 KiB read and 8.0 KiB written alone") for line in direct["explain"])


def test_an_index_major_gathers_limit_is_its_own():
    """A gather along an inner axis takes (entries, slab step) a program, not rows of a slab:
    its limit names the index-major shape's bounds, not the row gathers' block."""
    out = optimize({"op": {"kind": "gather", "src": {"dtype": "float32", "shape": [4, 4096], "strides": [4096, 1]},
                           "axis": 1, "index": {"count": 1000, "distribution": "random"}},
                    "options": {"explain": True}})
    limits = [line for line in _plan(out, "direct")["explain"] if line.startswith("limit")]
    assert limits == ["limit: entries 1024 x slab step 1: at most 1024 entries and 4.0 KiB per program, 2 warps"]


def test_a_tile_loads_estimate_is_explained_by_its_own_model():
    """A tile load reads each tile once into shared memory: its explanation adds the walk's
    fixed part to the read at the strategy's share of the copy bandwidth (it said "64 MiB
    read and written at 3003 GB/s x 130%" for a 32 MiB tensor, after a 3 us launch)."""
    import re

    out = optimize({"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [4096, 4096],
                                                       "strides": [4096, 1]},
                           "tile": [128, 64], "consumer": "wgmma_a"}, "options": {"explain": True}})
    for p in out["plans"]:
        head, _, estimate = p["explain"][:3]
        shares = [int(x) for x in re.findall(r"(\d+)% of copy bandwidth", head)]
        assert head.startswith("bandwidth-bound: each tile read once") and shares and all(s <= 100 for s in shares)
        parts = re.match(r"estimated ([\d.]+) us = the walk's fixed part ([\d.]+) us .* \+ 32\.0 MiB read once "
                         r"at \d+ GB/s x (\d+)% = ([\d.]+) us", estimate)
        assert parts, estimate
        total, fixed, share, read = (float(x) for x in parts.groups())
        assert share == shares[0] and abs(fixed + read - total) <= 0.02
        assert abs(total - p["cost"]["estimated_us"]) <= 0.01


def _suite_explained() -> list[tuple[str, dict]]:
    from legalsat.testing.planner_suite import requests

    out = []
    for req in requests():
        res = optimize({**req, "options": {**req.get("options", {}), "explain": True}})
        out += [(req["request_id"], p) for p in res["plans"]]
    return out


def test_every_suite_plans_explanation_adds_up_to_its_estimate():
    """The parts an explanation names (launches, a group sort, the bytes at the share it
    implies) add up to the estimate and no share exceeds the copy bandwidth: inspector-executor
    plans were 'launches 12.00 us + 32.0 MiB read and written at 3003 GB/s x 125%' (four
    launches counted, three charged), and a direct MoE gather's group sort hid in a 66% share."""
    import re

    for rid, p in _suite_explained():
        head, _, estimate = p["explain"][:3]
        assert all(int(x) <= 100 for x in re.findall(r"at (\d+)% of copy bandwidth", head)), (rid, head)
        m = re.match(r"estimated ([\d.]+) us = launches ([\d.]+) us(?: \+ sorting the slots by group ([\d.]+) us "
                     r"\([^)]*\))?(?: \+ the inspector's passes over its \d+ buckets ([\d.]+) us \([^)]*\))? "
                     r"\+ ([\d.]+) (B|KiB|MiB|GiB) moved \(read \+ written\) at (\d+) GB/s x ([\d.]+)%", estimate)
        if m is None:
            assert estimate.startswith("estimated") and ("walk's fixed part" in estimate or "x" not in estimate), \
                (rid, estimate)
            continue
        total, launch, sort, buckets, size, unit, gbps, share = m.groups()
        assert float(share) <= 100, (rid, estimate)
        moved = float(size) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
        parts = float(launch) + float(sort or 0) + float(buckets or 0) + moved / (int(gbps) * 1e3 * float(share) / 100)
        assert abs(parts - float(total)) <= 0.02 * float(total) + 0.05, (rid, estimate)


def _launches(line: str) -> float:
    return float(line.split(" launch(es) are ")[1].split(" of")[0])


def test_a_core_and_tail_plan_charges_the_launches_its_estimate_does():
    """A 1,000,003-element copy (a core and a tail piece): the headline put 2 launches, 6.00
    us, against an estimate of 4.35 us, which charges one."""
    out = optimize({"term": "(copy (view float16 (1000003) (1) 16) (view float16 (1000003) (1) 16))",
                    "options": {"explain": True}})
    for p in out["plans"]:
        lines = p["explain"]
        if " launch(es) are " in lines[0]:
            assert _launches(lines[0]) <= p["cost"]["estimated_us"], lines[0]
        assert f"estimated {p['cost']['estimated_us']:.2f} us = launches 3.00 us" in lines[2], lines[2]
        if len(p["pieces"]) > 1:
            assert any("(the estimate charges 1: the cost rules price the pieces as one movement)" in line
                       for line in lines)


def test_a_tile_loads_tile_is_not_explained_as_a_solved_limit():
    """The tile of a load_tile is the request's: 'tile dim 0 = 8 of 1: the extent 1' was invented."""
    out = optimize({"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [1, 509], "strides": [509, 1]},
                           "tile": [8, 64], "consumer": "rows"}, "options": {"explain": True}})
    for p in out["plans"]:
        assert not any(line.startswith("limit: tile dim") for line in p["explain"]), p["explain"]


def test_the_only_plan_is_not_claimed_when_max_plans_cut_the_list():
    out = optimize({**TRANSPOSE, "options": {"explain": True, "max_plans": 1}})
    standing = out["plans"][0]["explain"][1]
    assert "the only plan" not in standing and "options.max_plans 1: " in standing, standing


def test_sector_use_is_whole_only_for_runs_of_whole_sectors():
    """A 66-byte run was called 'whole 32-byte sectors'."""
    from legalsat.planner.explain import _sector_use

    assert _sector_use(4096, 128).endswith("whole 32-byte sectors")
    assert "a 66-byte run uses 66 of the 96 bytes" in _sector_use(66, 4096)
    assert "a 16-byte run uses 16 of the 32 bytes" in _sector_use(16, 64)


def test_a_headline_names_the_term_that_dominates_and_shares_keep_their_digits():
    """A grouped gather's direct plan read "launch-dominated: 1 launch(es) are 3.00 of its 15.17
    us" when the group sort was 12.16 of them; a tiny padded copy's TMA plan read "at 3003 GB/s
    x 0%"."""
    grouped = optimize({"op": {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [64, 32], "strides": [32, 1]},
                               "axis": 0, "index": {"count": 128, "distribution": "random", "groups": 4}},
                        "options": {"explain": True, "max_plans": 4}})
    direct = next(p for p in grouped["plans"] if p["strategy"] == "direct")
    assert direct["explain"][0].startswith("sort-dominated: sorting the slots by group"), direct["explain"][0]
    padded = optimize({"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, 33], "strides": [33, 1]},
                              "dst": {"dtype": "bfloat16", "shape": [64, 33], "strides": [1, 64]}},
                       "options": {"explain": True, "max_plans": 4, "allow_padding": True}})
    estimates = [p["explain"][2] for p in padded["plans"]]
    assert estimates and not any(" x 0%" in e for e in estimates), estimates


def test_a_conflicted_tiles_headline_reads_as_words():
    """gfx942's staged transpose read "16-byte stores, bank conflicts shared memory"."""
    out = optimize({**TRANSPOSE, "target": "gfx942", "options": {"explain": True, "max_plans": 3}})
    staged = _plan(out, "staged_smem")["explain"][0]
    assert "bank-conflicted shared memory" in staged and "conflicts shared" not in staged, staged


def test_a_paged_inspectors_estimate_charges_its_buckets():
    """A paged gather's inspector buckets every page: 100 entries over 2^28 pages zero 2 GiB of
    histogram and starts and scan them in one program, and its estimate said 9 us (the
    e-graph's, which charges the entries' passes only)."""
    out = optimize({"op": {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [1 << 29, 8], "strides": [8, 1]},
                           "axis": 0, "index": {"count": 100, "distribution": "paged", "page_size": 2}},
                    "options": {"explain": True, "max_plans": 4}})
    inspector = _plan(out, "inspector_executor")
    assert inspector["cost"]["estimated_us"] > 10_000 and "268435456 buckets" in inspector["explain"][2]
    assert out["plans"][0]["strategy"] == "direct"


def test_a_stage_count_the_budget_bounds_is_blamed_on_the_budget():
    """A transposing TMA copy at 40,000 bytes gets 2 stages (4 under the whole block): the
    limit line blamed 'the pipeline's depth cap' because it left out the second store-side
    box (the permute's scratch) and the stages' barriers, which the solver reserves; the
    plan's store_buffer_bytes said one box."""
    view = {"dtype": "bfloat16", "shape": [8192, 8192], "strides": [8192, 1]}
    out = optimize({"op": {"kind": "copy", "src": view, "dst": {**view, "strides": [1, 8192]}},
                    "options": {"smem_bytes": 40000, "explain": True, "max_plans": 5}})
    tma = _plan(out, "tma")
    smem = tma["pieces"][0]["smem"]
    assert tma["num_stages"] == 2 and smem["store_buffer_bytes"] == 2 * smem["bytes_per_stage"]
    line = next(x for x in tma["explain"] if x.startswith("limit: stages"))
    assert "shared-memory budget" in line and "depth cap" not in line, line


@pytest.mark.parametrize("pitch,skewed", [(50264, True), (50304, False)])
def test_a_skewed_tile_says_why_its_sectors_are_whole(pitch, skewed):
    """Rows on 16 bytes but off a sector, larger than L2: the plan's `skewed_stores` is said."""
    op = {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [50257, 4096], "strides": [4096, 1]},
          "dst": {"dtype": "bfloat16", "shape": [50257, 4096], "strides": [1, pitch]}}
    staged = _plan(optimize({"op": op, "options": {"explain": True}}), "staged_smem")
    assert any("a sector of its own" in line for line in staged["explain"]) == skewed


def test_the_warps_of_a_direct_block_and_a_staged_tile_are_explained_by_the_solvers_rules():
    """A direct copy of 16-byte words (8 KiB of 16 warps) and a 32 KiB staged tile (32 warps)
    went unexplained: explain kept its own copy of the warps rule, which knew neither."""
    bshd = {"op": {"kind": "copy",
                   "src": {"dtype": "bfloat16", "shape": [8, 4096, 32, 128], "strides": [16777216, 4096, 128, 1]},
                   "dst": {"dtype": "bfloat16", "shape": [8, 4096, 32, 128], "strides": [16777216, 128, 524288, 1]}},
            "options": {"explain": True}}
    direct = _plan(optimize(bshd), "direct")
    assert direct["num_warps"] == 16
    assert any(line.startswith("limit: num_warps 16: by the block's 8.0 KiB (one 16-byte vector a thread")
               for line in direct["explain"])
    staged = _plan(optimize({**TRANSPOSE, "options": {"explain": True, "max_plans": 3}}), "staged_smem")
    assert staged["pieces"][0]["tile"] == [128, 128] and staged["pieces"][0]["element_bytes"] == 2
    assert staged["num_warps"] == 32
    assert any(line.startswith("limit: num_warps 32: by the tile's 32.0 KiB") for line in staged["explain"])
