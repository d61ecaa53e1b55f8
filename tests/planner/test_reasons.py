"""Why a strategy has no plan (legalsat.planner.reasons): the request's own fields named,
with a fix that would make the strategy possible."""

from __future__ import annotations

import pytest

from legalsat.api import optimize


def _tma_reasons(tile: list[int], shape: list[int], dtype: str, base_align: int = 16) -> list[dict]:
    out = optimize({"op": {"kind": "load_tile", "tile": tile, "consumer": "rows",
                           "src": {"dtype": dtype, "shape": shape, "strides": [shape[1], 1],
                                   "base_align": base_align}}})
    assert [p["strategy"] for p in out["plans"]] == ["direct"]
    return next(r for r in out["rejected"] if r["strategy"] == "tma")["reasons"]


@pytest.mark.parametrize("tile, shape, dtype, fits", [
    ([40, 100], [1000, 1000], "bfloat16", "96 or 104"),
    ([8, 36], [64, 1000], "bfloat16", "32 or 40"),
    ([64, 24], [64, 96], "uint8", "16 or 32"),
    ([16, 5], [64, 96], "float32", "4 or 8"),
    ([64, 1], [64, 96], "bfloat16", "(8)"),
])
def test_a_tile_off_16_bytes_along_the_contiguous_dim_says_so(tile, shape, dtype, fits):
    """The tile walk's boxes would start at multiples of the tile's contiguous extent, which a
    TMA load or store needs on 16 bytes (the H100 faults otherwise: tools/tma_offset_probe.py);
    the reason names the tile's field and the extents that would do."""
    (reason,) = _tma_reasons(tile, shape, dtype)
    assert reason["rule"] == "inner_box_16B"
    assert reason["message"].startswith(f"op.tile[1] is {tile[1]} element")
    assert fits in reason["fix"] and "op.tile[1]" in reason["fix"]


def test_a_tile_on_16_bytes_keeps_its_tma_plan():
    out = optimize({"op": {"kind": "load_tile", "tile": [64, 60], "consumer": "rows",
                           "src": {"dtype": "float32", "shape": [512, 600], "strides": [600, 1]}}})
    assert out["plans"][0]["strategy"] == "tma"


def test_a_tile_past_the_contiguous_dim_names_its_width():
    """[16, 36] of a [64, 32] bf16 tensor: one box start along the dim; the box's 72 bytes are
    what does not fit."""
    (reason,) = _tma_reasons([16, 36], [64, 32], "bfloat16")
    assert reason["rule"] == "inner_box_16B" and "contiguous dim of 32" in reason["message"]
    assert "faults" not in reason["message"]
    assert reason["fix"].startswith("make op.tile[1] 32 (the whole dim) or a multiple of 8 (40: past the dim's end")


def test_a_tile_holding_the_whole_dim_is_left_to_the_descriptor_rules():
    """[16, 12] of a [64, 12] bf16 tensor: the tile's rows merge into one run; at an 8-byte base
    the descriptor's own rules say why TMA is out, not the tile's 24 bytes."""
    reasons = _tma_reasons([16, 12], [64, 12], "bfloat16", base_align=8)
    assert "inner_box_16B" not in {r["rule"] for r in reasons}
    assert "global_address.align" in {r["rule"] for r in reasons}
    # in the request's terms: its base_align, not the placeholder address the plan would carry
    align = next(r for r in reasons if r["rule"] == "global_address.align")
    assert align["message"] == "op.src.base_align is 8; TMA needs a 16-byte aligned base", align
    assert "0x" not in align["message"] + align["fix"] and "base_align" in align["fix"]


def test_recorded_tma_starts_fault_exactly_off_16_bytes():
    """The H100's answers to TMA boxes started at every offset up to 16 bytes
    (benchmarks/tma_offset_probe.json, tools/tma_offset_probe.py): exact on 16-byte starts,
    a fault everywhere else, load and store, for 1-, 2- and 4-byte elements: the boundary the
    tile reason above refuses TMA at."""
    import json
    from pathlib import Path

    rows = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "tma_offset_probe.json").read_text())
    assert {r["element"] for r in rows} == {"uint8", "bfloat16", "float32"} and {r["op"] for r in rows} == {"load", "store"}
    for r in rows:
        assert (r["verdict"] == "exact") == (r["offset_bytes"] % 16 == 0), r
        assert r["verdict"] == "exact" or "illegal instruction" in r["verdict"], r


def test_a_strategy_not_reached_before_a_limit_is_said_to_be_not_reached():
    """A rank-8 permute whose saturation ran out of time was told its staged plan was missing
    because it does not transpose; what is known is only that it was not reached."""
    from legalsat.api import optimize
    from legalsat.testing.planner_suite import reordered_copy

    out = optimize({"op": reordered_copy(), "options": {"timeout_ms": 1}})
    assert out["egraph"]["stop_reason"] == "time_limit"
    rules = {r["strategy"]: [x["rule"] for x in r["reasons"]] for r in out["rejected"]}
    assert "not_transposing" not in rules.get("staged_smem", []), rules
    assert rules.get("staged_smem") in (None, ["not_reached"], ["planning_deadline"]), rules
    assert rules["inspector_executor"] == ["no_indices"]  # what the request's kind decides stays said


def test_tma_not_reached_before_a_node_limit_is_not_blamed_on_the_uncoalesced_box():
    """NCHW -> NHWC stopped by a node limit of 40 was told TMA's box would move 12,845,056
    bytes (the whole tensor, uncoalesced); with the default limits it has a TMA plan. A reason
    of the views' base stays said."""
    from legalsat.api import optimize

    src = {"dtype": "bfloat16", "shape": [32, 64, 56, 56], "strides": [200704, 3136, 56, 1]}
    dst = {**src, "strides": [200704, 1, 3584, 64]}
    out = optimize({"op": {"kind": "copy", "src": src, "dst": dst}, "options": {"node_limit": 40}})
    assert out["egraph"]["stop_reason"] == "node_limit"
    tma = next(r for r in out["rejected"] if r["strategy"] == "tma")
    assert [x["rule"] for x in tma["reasons"]] == ["not_reached"], tma
    odd = optimize({"op": {"kind": "copy", "src": {**src, "base_align": 2}, "dst": dst}, "options": {"node_limit": 40}})
    rules = [x["rule"] for r in odd["rejected"] if r["strategy"] == "tma" for x in r["reasons"]]
    assert rules[0] == "not_reached" and "global_address.align" in rules, rules
    assert any(p["strategy"] == "tma" for p in optimize({"op": {"kind": "copy", "src": src, "dst": dst}})["plans"])


@pytest.mark.parametrize("op", [
    {"kind": "load_tile", "src": {"dtype": "float32", "shape": [3, 5], "strides": [5, 1]}, "tile": [64, 64],
     "consumer": "rows"},
    {"kind": "copy", "src": {"dtype": "float32", "shape": [3, 5], "strides": [5, 1]},
     "dst": {"dtype": "float32", "shape": [3, 5], "strides": [1, 3]}},
], ids=["tile", "copy"])
def test_why_not_tma_names_the_views_fault_not_a_box_no_request_named(op):
    """A row of 5 fp32 (20 bytes) was also refused for "inner box is 20 bytes (box_dim[0]=5)":
    a box the request never named (a compiler boxes it as 8, TMA filling past the row's end).
    The reasons are the views' own: their pitches. options.allow_padding is not offered: it
    plans neither (a tile load reads the tensor as it is; the copy's 12-byte destination rows
    are no TMA store's), and was offered for both."""
    reasons = next(r for r in optimize({"op": op})["rejected"] if r["strategy"] == "tma")["reasons"]
    rules = [r["rule"] for r in reasons]
    assert "global_strides.align" in rules and "allow_padding" not in rules
    padded = optimize({"op": op, "options": {"allow_padding": True}})
    assert not any(p["strategy"] == "tma" for p in padded["plans"])
    assert not any(r.startswith("box_dim") for r in rules), reasons


@pytest.mark.parametrize("dtype, below", [("float32", 1), ("float32", 2), ("bfloat16", 1), ("float64", 4)])
def test_a_base_align_below_the_element_is_planned_as_the_element(dtype, below):
    """A compiler that does not know a base's alignment may send 1: a tensor's elements lie on
    their own size, so the plans are those of a base aligned to the element (no word narrower
    than an element, nothing refused that the element's alignment allows)."""
    from legalsat.terms.dtypes import ELEMENT_TYPES

    def plans(align: int) -> list:
        out = optimize({"op": {"kind": "copy",
                               "src": {"dtype": dtype, "shape": [48, 40], "strides": [40, 1], "base_align": align},
                               "dst": {"dtype": dtype, "shape": [48, 40], "strides": [1, 48], "base_align": 16}}})
        return [(p["strategy"], [(q["vector_bytes"], q.get("store_vector_bytes")) for q in p["pieces"]])
                for p in out["plans"]]

    assert plans(below) == plans(ELEMENT_TYPES[dtype].storage_bits // 8)


@pytest.mark.parametrize("src, dst, sides", [
    ([8192, 2], [1, 4096], ["op.src"]),  # every other element of the source rows
    ([256, 4], [4, 256], ["op.src", "op.dst"]),  # strides sent in bytes: no side has a stride of 1
])
def test_a_side_without_a_unit_stride_is_why_staging_is_out(src, dst, sides):
    """A transpose whose source has no stride-1 dim was told its staged and shuffle plans were
    missing because src and dst are contiguous along the same dim, which neither is."""
    n = 4096 if src[0] == 8192 else 64
    out = optimize({"op": {"kind": "copy", "src": {"dtype": "float32", "shape": [n, n], "strides": src},
                           "dst": {"dtype": "float32", "shape": [n, n], "strides": dst}}})
    assert [p["strategy"] for p in out["plans"]] == ["direct"]
    for strategy in ("staged_smem", "shuffle"):
        (reason,) = next(r for r in out["rejected"] if r["strategy"] == strategy)["reasons"]
        assert reason["rule"] == "no_unit_stride" and "stride 1" in reason["fix"]
        assert reason["message"].startswith(" and ".join(sides) + (" has" if len(sides) == 1 else " have"))


@pytest.mark.parametrize("dtype, shape, pitch, tile, fits", [
    ("int8", [128, 24], 32, [128, 24], "16 or 32"),
    ("bfloat16", [64, 4], 8, [16, 4], "(8: "),
    ("float8_e4m3fn", [64, 8], 16, [32, 8], "(16: "),
])
def test_a_whole_dim_tile_whose_rows_lie_apart_names_its_width(dtype, shape, pitch, tile, fits):
    """A tile holding the whole contiguous dim of rows that do not lie end to end (a wider
    pitch) boxes as the dim's own width, off whole 16-byte units: the reason names the tile's
    field and the widths that take TMA (it was `tma_unavailable`, no field and no fix), and
    the widened tile, read past the dim's end as zeros, is planned TMA."""
    def plan(t):
        return optimize({"op": {"kind": "load_tile", "tile": t, "consumer": "rows",
                                "src": {"dtype": dtype, "shape": shape, "strides": [pitch, 1]}}})

    out = plan(tile)
    assert [p["strategy"] for p in out["plans"]] == ["direct"]
    (reason,) = next(r for r in out["rejected"] if r["strategy"] == "tma")["reasons"]
    assert reason["rule"] == "inner_box_16B", reason
    assert reason["message"].startswith(f"op.tile[1] is {tile[1]} element")
    assert f"contiguous dim of {shape[1]}" in reason["message"] and fits in reason["fix"]
    wider = int(reason["fix"].split("(")[1].split(":")[0].split(" or ")[-1])
    assert plan([tile[0], wider])["plans"][0]["strategy"] == "tma"


def test_a_tile_of_a_one_element_view_names_its_width():
    """[1, 1] fp32 in a [1, 1] tile: 4 bytes along the view's contiguous (last) dim."""
    out = optimize({"op": {"kind": "load_tile", "tile": [1, 1], "consumer": "rows",
                           "src": {"dtype": "float32", "shape": [1, 1], "strides": [1, 1]}}})
    (reason,) = next(r for r in out["rejected"] if r["strategy"] == "tma")["reasons"]
    assert reason["rule"] == "inner_box_16B" and reason["message"].startswith("op.tile[1] is 1 element (4 bytes)")


@pytest.mark.parametrize("shape, strides, tile, dim, most", [
    ([8589934592], [1], [256], "op.src dim 0 holds", 1 << 32),
    ([33554432, 256], [256, 1], [1, 256], "op.src dims [0, 1] (contiguous, so merged) hold", 1 << 24),
])
def test_a_tile_walk_dim_past_2_32_elements_is_said_in_the_requests_terms(shape, strides, tile, dim, most):
    """The descriptor's rule said to split global_dim[0], which a request cannot do (its dims
    merge back): the reason names the request's dim and the parts that take TMA, and those
    parts are planned TMA."""
    def plan(n):
        return optimize({"op": {"kind": "load_tile", "tile": tile, "consumer": "rows",
                                "src": {"dtype": "int8", "shape": [n, *shape[1:]], "strides": strides}}})

    out = plan(shape[0])
    assert [p["strategy"] for p in out["plans"]] == ["direct"]
    (reason,) = next(r for r in out["rejected"] if r["strategy"] == "tma")["reasons"]
    assert reason["rule"] == "global_dim.range" and reason["message"].startswith(f"{dim} 8589934592 elements")
    assert f"at most {most} along dim 0" in reason["fix"] and "global_dim" not in reason["fix"]
    assert plan(most)["plans"][0]["strategy"] == "tma"


@pytest.mark.parametrize("dtype, n, widths", [("float8_e5m2", 100, [64, 128]), ("bfloat16", 300, [256, 320])])
def test_a_one_row_tile_is_told_widths_that_land(dtype, n, widths):
    """A one-row tile of its whole dim off 16 bytes: the widths offered are ones whose boxes land
    (96 or 112 fp8 would be power-of-two boxes of 32 or 16 bytes, off the 128 bytes a next
    box's shared memory starts on: refused again, as `smem_box_align`)."""
    def plan(t):
        return optimize({"op": {"kind": "load_tile", "tile": [t], "consumer": "rows",
                                "src": {"dtype": dtype, "shape": [n], "strides": [1]}}})

    (reason,) = next(r for r in plan(n)["rejected"] if r["strategy"] == "tma")["reasons"]
    assert reason["rule"] == "inner_box_16B" and f"({widths[0]} or {widths[1]}:" in reason["fix"], reason
    assert all(plan(w)["plans"][0]["strategy"] == "tma" for w in widths)
