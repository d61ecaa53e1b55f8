"""The TMA store row rule, replayed from the H100's measurements (benchmarks/tma_store_row_probe.json,
written by tools/tma_store_row_probe.py): a store writes each box row in whole 16-byte chunks,
so the planner offers no TMA plan whose destination rows are not a multiple of 16 bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legalsat.api import optimize

RECORDED = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "tma_store_row_probe.json").read_text())
DTYPES = {1: "uint8", 2: "int16", 4: "float32", 8: "float64"}


def _store_rows(plan: dict) -> list[int]:
    """Bytes of a row of each store descriptor of a plan."""
    from legalsat.schemas.descriptors import parse_descriptor

    out = []
    for d in plan.get("descriptors") or []:
        if d["role"] == "store":
            desc = parse_descriptor({k: v for k, v in d.items() if k != "role"})
            out.append(desc.global_dim[0] * desc.dtype.storage_bits // 8)
    return out


@pytest.mark.parametrize("case", RECORDED["cases"], ids=lambda c: f"{c['row_bytes']}B-rows")
def test_the_measured_overwrite_is_the_rule_and_no_tma_plan_stores_a_partial_chunk(case):
    """TMA plans of transposes into padded rows wrote the padding on the H100 (bit-exact in the
    interpreter, which clips at the row's end): 8 bytes past each 24-byte row, 12 past 20. A
    plan may still use TMA for the whole 16-byte chunks of such rows (its tail piece direct)."""
    assert case["view_written"]
    from legalsat.terms.descriptor import store_row_overrun

    assert case["bytes_past_each_row"] == [store_row_overrun(case["row_bytes"])]  # the rule planner and emitter share
    rows, cols, pitch = case["rows"], case["cols"], case["pitch"]
    dtype = DTYPES[case["element_bytes"]]
    straight = {"dtype": dtype, "shape": [rows, cols], "strides": [pitch, 1]}
    transposed = {"dtype": dtype, "shape": [rows, cols], "strides": [1, 16 * -(-rows * case["element_bytes"] // 16)
                                                                    // case["element_bytes"]]}
    for src in (straight, transposed):
        out = optimize({"op": {"kind": "copy", "src": src, "dst": straight}, "options": {"max_plans": 8}})
        for p in out["plans"]:
            assert all(row % 16 == 0 for row in _store_rows(p)), (p["strategy"], _store_rows(p))


def test_a_transpose_into_rows_of_partial_chunks_has_no_tma_plan():
    """Found on the H100 by running fuzzed requests' plans: 6 of 21 elements' padding written."""
    out = optimize({"op": {"kind": "copy", "src": {"dtype": "float64", "shape": [7, 3], "strides": [1, 8]},
                           "dst": {"dtype": "float64", "shape": [7, 3], "strides": [4, 1]}}, "options": {"max_plans": 5}})
    assert out["plans"] and all(p["strategy"] != "tma" for p in out["plans"])
    rejected = next(r for r in out["rejected"] if r["strategy"] == "tma")
    assert [x["rule"] for x in rejected["reasons"]] == ["tma_store_row"]


def test_a_plan_storing_partial_rows_by_tma_is_refused_by_the_kernel_emitter():
    """A plan cached or edited before the rule: its kernel would write past each row."""
    import copy

    from legalsat.diagnostics import InputError
    from legalsat.kernels import emit

    view = {"dtype": "float32", "shape": [64, 64]}
    out = optimize({"op": {"kind": "copy", "src": {**view, "strides": [64, 1]}, "dst": {**view, "strides": [1, 64]}},
                    "options": {"max_plans": 5}})
    plan = copy.deepcopy(next(p for p in out["plans"] if p["strategy"] == "tma"))
    piece = next(p for p in plan["pieces"] if p["strategy"] == "tma")
    store = next(d for d in piece["descriptors"] if d["role"] == "store")
    store["global_dim"][0] = 3  # 12-byte rows
    with pytest.raises(InputError) as e:
        emit(plan, "tl")
    assert e.value.headline.field.endswith(".global_dim") and "16-byte" in e.value.headline.message
