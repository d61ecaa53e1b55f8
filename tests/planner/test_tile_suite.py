"""The tile loads of CuTe's Hopper TMA tests and Triton's tensor-descriptor tests
(legalsat/testing/data/tile_suite.jsonl): each gets a TMA plan whose descriptor the
driver-verified model accepts, whose walk islpy proves, and whose stage layout its consumer
reads without bank conflicts; wgmma operands get their matrix-descriptor fields, or a note
saying why the tensor core cannot read the tile."""

from __future__ import annotations

import pytest

import legalsat
from legalsat.diagnostics import InputError
from legalsat.testing.tile_workloads import (
    edge_tile_workloads,
    suite_cases,
    suite_request,
    suite_workloads,
    tensor_bytes,
)

CASES = {c["id"]: c for c in suite_cases()}
PLANNABLE = dict(suite_workloads())
# tiles that no single CTA's shared memory holds (Blackwell tests that split them over a
# 4-CTA cluster): answered with the budget and the fix, not a plan
TOO_BIG = {"gl-0059", "gl-0061"}


def test_suite_covers_both_projects_and_every_shape_of_the_issue():
    cases = list(CASES.values())
    assert len(cases) >= 900
    assert {c["source"]["repo"] for c in cases} == {"NVIDIA/cutlass", "triton-lang/triton"}
    assert any(max(c["tile"]) > 256 for c in cases)
    assert any(t > s for c in cases for t, s in zip(c["tile"], c["shape"]))
    assert any(0 in c["strides"] for c in cases)
    assert max(len(c["shape"]) for c in cases) >= 7


@pytest.mark.parametrize("cid", sorted(PLANNABLE))
def test_suite_tile_gets_a_proven_conflict_free_tma_plan(cid):
    out = legalsat.optimize(PLANNABLE[cid])
    if cid in TOO_BIG:
        assert not any(p["strategy"] == "tma" for p in out["plans"])
        reason = next(r for r in out["rejected"] if r["strategy"] == "tma")["reasons"][0]
        assert reason["rule"] == "smem_budget" and "cluster" in reason["fix"]
        return
    plan = out["plans"][0]
    assert plan["strategy"] == "tma"
    for d in plan["descriptors"]:
        assert legalsat.validate_descriptor(d).legal  # as the plan gives it
    assert plan["proof"]["verified"]
    assert plan["async"]["verified"]
    tl = plan["tile_load"]
    assert tl["read_conflict_ways"] == 1.0
    assert tl["oob_fill"] == "zero"
    if tl["consumer"].startswith("wgmma"):
        assert (tl["wgmma"] is None) == bool(tl.get("note"))


def test_ragged_descriptors_are_refused_as_tensors_with_a_fix():
    ragged = [c for c in CASES.values() if tensor_bytes(suite_request(c)) >= 1 << 40]
    assert len(ragged) == 24
    with pytest.raises(InputError) as e:
        legalsat.optimize(suite_request(ragged[0]))
    d = e.value.headline
    assert d.field == "op.src.shape" and "ragged" in d.fix


@pytest.mark.parametrize("dtype", ["int8", "bool", "float8_e4m3fn", "float8_e5m2", "int16"])
def test_word_moved_types_with_an_odd_pitch_get_direct_plans_and_the_reason(dtype):
    """Element types the driver has no enum for move as words; a pitch TMA cannot take is
    answered with a direct plan and the stride rule, not a crash."""
    out = legalsat.optimize({"op": {"kind": "load_tile", "tile": [64, 64], "consumer": "rows",
                                    "src": {"dtype": dtype, "shape": [300, 129], "strides": [129, 1]}}})
    assert [p["strategy"] for p in out["plans"]] == ["direct"]
    tma = next(r for r in out["rejected"] if r["strategy"] == "tma")
    assert tma["reasons"][0]["rule"] == "global_strides.align"


def test_a_tile_whose_only_conflict_free_box_is_no_power_of_two_gets_it():
    """CuTe's multimode tile: power-of-two boxes would be 64-byte slivers (off TMA's 128-byte
    alignment) or conflicted; a box of 3 along the extent-3 dim is neither."""
    plan = legalsat.optimize(PLANNABLE["cute-0081"])["plans"][0]
    assert plan["strategy"] == "tma" and plan["tile_load"]["read_conflict_ways"] == 1.0
    assert 3 in plan["descriptors"][0]["box_dim"] and len(plan["tile_load"]["boxes"]) == 1


UNIT_SPANNED = ["row vector [1,509] float16 tile 8x128", "column [509,1] float32 tile 128x32",
                "column [509,1] bfloat16 wgmma_a 64x64"]


@pytest.mark.parametrize("name", UNIT_SPANNED)
def test_an_extent_1_dim_the_tile_spans_takes_any_stride(name):
    """torch's strides of a [1, 509] row vector (a 1,018-byte pitch) and of a [509, 1] column
    (4 bytes) are no TMA stride, but only index 0 of that dim exists: the plan is TMA, its
    descriptor gives the dim a 16-byte pitch, and the proof covers the tensor as given."""
    from legalsat.testing.tile_workloads import tile_workloads

    req = dict(tile_workloads())[name]
    out = legalsat.optimize(req)
    plan = out["plans"][0]
    assert plan["strategy"] == "tma", out["rejected"]
    (d,) = plan["descriptors"]
    assert legalsat.validate_descriptor(d).legal
    assert all(s % 16 == 0 for s in d["global_strides"])
    assert plan["proof"]["verified"] and plan["tile_load"]["read_conflict_ways"] == 1.0
    if "wgmma" in name:
        assert plan["tile_load"]["wgmma"] is not None, plan["tile_load"]["note"]


ONE_ELEMENT = [(name, req) for name, req in edge_tile_workloads() if name.startswith("one element")]


@pytest.mark.parametrize("name, req", ONE_ELEMENT, ids=[n for n, _ in ONE_ELEMENT])
def test_a_tile_of_a_one_element_view_is_tma(name, req):
    """A view of one element (a [1] bf16 vector, whatever strides torch gave it) has its last dim
    contiguous: it took an 8-element stride there and was refused TMA as `inner_contiguous`
    ("the innermost dim has stride 8" of a stride-1 view)."""
    tile = req["op"]["tile"]
    out = legalsat.optimize(req)
    plan = out["plans"][0]
    assert plan["strategy"] == "tma", out["rejected"]
    (d,) = plan["descriptors"]
    assert legalsat.validate_descriptor(d).legal and d["global_dim"] == [1] * len(tile)
    assert plan["proof"]["verified"]


def test_a_tma_tile_takes_few_enough_boxes_for_its_stage():
    """255 int32 rows of 7 (a 32-wide tile): power-of-two boxes of 1 row made 255 copies a
    stage, past what a stage's protocol holds (planning raised a validation error); the TMA
    plan takes a layout of at most MAX_TMA_BOXES boxes."""
    from legalsat.api import optimize
    from legalsat.planner.build.tile import MAX_TMA_BOXES

    for op in ({"kind": "load_tile", "tile": [255, 32], "consumer": "rows",
                "src": {"dtype": "int32", "shape": [255, 7], "strides": [8, 1], "base_align": 16}},
               {"kind": "load_tile", "tile": [6, 1, 3, 1, 17, 32], "consumer": "rows",
                "src": {"dtype": "int32", "shape": [3, 1, 3, 3, 17, 7], "strides": [1224, 1224, 408, 136, 8, 1]}}):
        out = optimize({"op": op, "options": {"max_plans": 5}})
        tma = [p for p in out["plans"] if p["strategy"] == "tma"]
        assert tma and all(len(p["tile_load"]["boxes"]) <= MAX_TMA_BOXES for p in tma), out["rejected"]


def test_a_broadcast_wgmma_operand_says_the_stage_holds_one_copy():
    """A [2, 64, 64] operand whose outer dim is a broadcast, in [2, 32, 64] tiles: the stage
    holds 32 rows once, the 64 x 64 matrix reads rows 32-63 as a second copy. The note said the
    plan loads "its one row once" and the stage holds no 8-row groups, which was not so."""
    out = legalsat.optimize({"op": {"kind": "load_tile", "tile": [2, 32, 64], "consumer": "wgmma_a",
                                    "src": {"dtype": "bfloat16", "shape": [2, 64, 64], "strides": [0, 64, 1]}}})
    (w,) = [w for w in out["warnings"] if w["code"] == "wgmma_unreadable"]
    assert w["field"] == "op.src.strides[0]" and "one copy" in w["message"] and "64 x 64" in w["message"]
    assert "one row once" not in w["message"]
