"""The wgmma matrix descriptor: the fields read off a stage layout are CuTe's canonical ones,
they address every element, and layouts no descriptor addresses are refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import legalsat
from legalsat.analyses.wgmma import K_BITS, canonical_offset, operand_fields
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.movement import Major

SWIZZLES = (Swizzle.NONE, Swizzle.B32, Swizzle.B64, Swizzle.B128)


def wgmma_fields(dtype: str, shape, strides, tile, kind: str) -> dict:
    out = legalsat.optimize({"op": {"kind": "load_tile", "tile": tile, "consumer": kind,
                                    "src": {"dtype": dtype, "shape": shape, "strides": strides}}})
    return out["plans"][0]["tile_load"]


def test_k_major_128b_operand_has_cutes_fields():
    # CuTe's K-major SW128 atom: 8 rows of 128 bytes, SBO = 1024 bytes between 8-row groups
    tl = wgmma_fields("bfloat16", [4096, 4096], [4096, 1], [128, 64], "wgmma_a")
    wg = tl["wgmma"]
    assert (wg["major"], wg["layout_type"], wg["sbo_bytes"]) == ("k", 1, 1024)
    # four k-slices of 16 elements, 32 bytes apart inside the swizzle atom
    assert [s["start_offset_bytes"] for s in wg["k_slices"]] == [0, 32, 64, 96]
    assert wg["mn_block_bytes"] == 64 * 128  # the next 64 rows of M


def test_mn_major_b_operand_strides_its_chunks_by_the_tile_rows():
    tl = wgmma_fields("float16", [4096, 4096], [4096, 1], [64, 256], "wgmma_b")
    wg = tl["wgmma"]
    assert wg["major"] == "mn" and wg["layout_type"] == 1
    assert wg["lbo_bytes"] == 64 * 128  # the next 64-column chunk: 64 K rows of 128 bytes on
    assert wg["sbo_bytes"] == 1024  # the next 8 K rows


def test_8_bit_and_tf32_operands_are_k_major_only():
    tl = wgmma_fields("int8", [1024, 1024], [1024, 1], [128, 128], "wgmma_b")
    assert tl["wgmma"] is None and "K-major only" in tl["note"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from(SWIZZLES), st.sampled_from(list(Major)),
       st.integers(1, 8), st.integers(1, 3), st.integers(1, 4))
def test_fields_of_a_canonical_layout_are_recovered(eb, swizzle, major, groups, lbo_units, sbo_units):
    """Lay a slice out exactly as a descriptor (LBO, SBO) would address it; the fields read
    back are those, and moving one element breaks the match."""
    if major is Major.MN and eb != 2:
        return
    t, w = 16 // eb, swizzle.span_bytes // 16
    mn_extent, k_width = 8 * groups, K_BITS // (8 * eb)
    # strides large enough not to overlap the atom they step over
    atom = 8 * 16 * max(w, 1)
    lbo, sbo = lbo_units * atom * 4, sbo_units * atom
    if major is Major.K and w:
        lbo = 16
    if major is Major.K and not w:
        sbo, lbo = 128, lbo_units * 128 * groups
    if major is Major.MN and w and mn_extent <= t * w:
        lbo = 16
    if major is Major.MN and not w:
        sbo = 128 * 2 if mn_extent > t else 0
        lbo = 256 * groups * 2
    mn, k = np.meshgrid(np.arange(mn_extent), np.arange(k_width), indexing="ij")
    rel = canonical_offset(major, swizzle, eb, lbo, sbo, mn, k)
    f = operand_fields(rel, major, swizzle, eb)
    assert f is not None
    assert np.array_equal(canonical_offset(major, swizzle, eb, f.lbo_bytes, f.sbo_bytes, mn, k), rel)
    moved = rel.copy()
    moved[-1, -1] += 16 * 1024
    assert operand_fields(moved, major, swizzle, eb) is None


def test_slices_starting_on_their_swizzle_repeat_have_base_offset_zero():
    """PTX and CuTe: 0 on the pattern's repeat boundary (a 32B-swizzled MN-major B's k-slices
    start 512 bytes apart, two repeats of 256: the offset was (512 >> 7) & 7 = 4)."""
    from legalsat.analyses.wgmma import base_offset

    wg = wgmma_fields("bfloat16", [8192, 8192], [8192, 1], [64, 16], {"kind": "wgmma_b", "major": "mn"})["wgmma"]
    assert wg["swizzle"] == "32B" and [s["start_offset_bytes"] for s in wg["k_slices"]] == [0, 512, 1024, 1536]
    assert [s["base_offset"] for s in wg["k_slices"]] == [0, 0, 0, 0]
    # off a boundary: the 128-byte row phase within the repeat
    assert [base_offset(384, sw) for sw in (Swizzle.B128, Swizzle.B64, Swizzle.B32, Swizzle.NONE)] == [3, 3, 1, 0]


def test_a_wide_b_operand_is_read_in_instruction_blocks_of_n():
    """N = 512 is two n=256 instructions (wgmma's n is at most 256), or the request's n; the
    plan says where each block starts."""
    wg = wgmma_fields("bfloat16", [8192, 8192], [8192, 1], [64, 512], "wgmma_b")["wgmma"]
    assert (wg["major"], wg["mn_block"], wg["mn_block_bytes"]) == ("mn", 256, 4 * 64 * 128)
    k_major = {"kind": "wgmma_b", "instruction": [64, 128, 16]}
    wg = wgmma_fields("bfloat16", [8192, 8192], [1, 8192], [64, 256], k_major)["wgmma"]
    assert (wg["major"], wg["mn_block"], wg["mn_block_bytes"]) == ("k", 128, 16 * wg["sbo_bytes"])
    tl = wgmma_fields("bfloat16", [8192, 8192], [1, 8192], [64, 200], {"kind": "wgmma_b", "instruction": [64, 64, 16]})
    assert tl["wgmma"] is None and "blocks of the instruction's n (64)" in tl["note"]


def test_8_bit_integer_operands_use_the_integer_ns():
    """s8/u8 wgmma has n = 8, 16, 24, 32, 48, 64, 80, ... (no 40): a 40-column B is read in
    n = 8 blocks, and an instruction of n = 40 is refused, naming the field."""
    import pytest

    from legalsat.diagnostics import InputError

    wg = wgmma_fields("int8", [4096, 4096], [1, 4096], [64, 40], "wgmma_b")["wgmma"]
    assert wg["mn_block"] == 8 and wg["mn_block_bytes"] > 0
    assert wgmma_fields("float8_e4m3fn", [4096, 4096], [1, 4096], [64, 40], "wgmma_b")["wgmma"]["mn_block"] == 40
    with pytest.raises(InputError) as e:
        wgmma_fields("int8", [4096, 4096], [1, 4096], [64, 80], {"kind": "wgmma_b", "instruction": [64, 40, 32]})
    assert e.value.headline.field == "op.consumer.instruction" and "multiple of 16" in e.value.headline.fix


def test_every_recorded_wgmma_plan_addresses_its_own_stage():
    """The probe's CPU twin (tools/wgmma_probe.py `emulate`): every block and k-slice of every
    distinct wgmma plan of the plan files, read through the plan's descriptor fields with the
    canonical layout and the swizzle, finds exactly the operand's elements where TMA puts them."""
    from tools.wgmma_probe import cases, emulate, prepare

    todo = cases()
    assert len(todo) >= 150
    assert [c["name"] for c in todo if emulate(c, prepare(c))] == []


@pytest.mark.parametrize("dtype,strides,tile,consumer,field", [
    ("bfloat16", [1, 4096], [128, 64], {"kind": "wgmma_a", "major": "k"}, "op.consumer.major"),
    ("int8", [1024, 1], [128, 128], {"kind": "wgmma_b"}, "op.src.strides"),  # 8-bit MN-major
    ("bfloat16", [1, 8192], [64, 200], {"kind": "wgmma_b", "instruction": [64, 64, 16]}, "op.tile"),
])
def test_a_wgmma_operand_the_tensor_core_cannot_read_is_a_warning_of_the_response(dtype, strides, tile, consumer,
                                                                                   field):
    """Such a tile was planned `ok`, TMA first, with the reason only in tile_load.note: a client
    reading status and strategy went on to a wgmma that cannot read it. The response now says so
    in `warnings`, naming the request field and a fix."""
    shape = [8192, 8192] if tile == [64, 200] else [4096, 4096] if dtype == "bfloat16" else [1024, 1024]
    resp = legalsat.optimize({"op": {"kind": "load_tile", "src": {"dtype": dtype, "shape": shape, "strides": strides},
                                     "tile": tile, "consumer": consumer}})
    note = resp["plans"][0]["tile_load"]["note"]
    (w,) = [w for w in resp["warnings"] if w["code"] == "wgmma_unreadable"]
    assert w["field"] == field and w["message"] == note and w["fix"]
    readable = legalsat.optimize({"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [4096, 4096],
                                                                      "strides": [4096, 1]},
                                         "tile": [128, 64], "consumer": {"kind": "wgmma_a"}}})
    assert not any(w["code"] == "wgmma_unreadable" for w in readable.get("warnings") or [])


@pytest.mark.parametrize("rows", [16, 32, 48])
def test_an_a_tile_of_fewer_than_64_rows_gets_no_descriptor(rows):
    """Every wgmma shape is m64nNkK: a 16-, 32- or 48-row A tile got descriptor fields and no
    warning, and an instruction with them reads 64 rows, past the stage (CuTe refuses such
    tiles: "Tile_M must be a multiple of 64"). Its plan says why instead."""
    out = legalsat.optimize({"op": {"kind": "load_tile", "tile": [rows, 64],
                                    "src": {"dtype": "bfloat16", "shape": [512, 512], "strides": [512, 1]},
                                    "consumer": {"kind": "wgmma_a", "instruction": [64, 128, 16]}}})
    assert all(p["tile_load"]["wgmma"] is None for p in out["plans"])
    assert [w["code"] for w in out["warnings"]] == ["wgmma_unreadable"] and f"{rows} rows" in out["warnings"][0]["message"]


def test_a_broadcast_operand_is_refused_for_its_broadcast_not_its_swizzle():
    """An A tile over a stride-0 dim was refused with "no wgmma descriptor addresses the none
    layout" and the fix "load a tile whose contiguous extent is whole swizzle spans", which it
    already was: the plan loads the broadcast row once."""
    out = legalsat.optimize({"op": {"kind": "load_tile", "tile": [64, 64],
                                    "src": {"dtype": "bfloat16", "shape": [8, 64], "strides": [0, 1]},
                                    "consumer": {"kind": "wgmma_a", "instruction": [64, 64, 16]}}})
    w = out["warnings"][0]
    assert w["code"] == "wgmma_unreadable" and w["field"] == "op.src.strides[0]" and "broadcast" in w["message"]
    assert "contiguous()" in w["fix"]


@pytest.mark.parametrize("dtype,element,field,says", [
    ("complex64", None, "op.src.dtype", "64-bit complex64"),
    ("float8_e4m3fnuz", None, "op.consumer.element", "not float8_e4m3fnuz"),
    ("float64", None, "op.src.dtype", "64-bit float64"),
    ("int64", "float64", "op.consumer.element", "64-bit float64"),
    ("int32", None, "op.consumer.element", "not int32"),
])
def test_every_element_type_wgmma_does_not_read_gets_the_tile_and_the_warning(dtype, element, field, says):
    """A wgmma operand tile of any element type the tensor core does not read is loaded in the
    layout asked for (CuTe's TMA tests land an fp64 tile in wgmma's MN-major 128-byte swizzle
    atom, which no wgmma reads) with the `wgmma_unreadable` warning, not refused (complex64 and
    gfx942's fp8 were request errors). The warning names the field behind it, and says whether a
    type of the words' width could be read."""
    consumer = {"kind": "wgmma_a", "major": "mn", **({"element": element} if element else {})}
    resp = legalsat.optimize({"op": {"kind": "load_tile", "src": {"dtype": dtype, "shape": [32, 16],
                                                                  "strides": [1, 32]},
                                     "tile": [16, 8], "consumer": consumer}})
    plan = resp["plans"][0]
    assert plan["strategy"] == "tma" and plan["tile_load"]["wgmma"] is None
    (w,) = [w for w in resp["warnings"] if w["code"] == "wgmma_unreadable"]
    assert w["field"] == field and says in w["message"] and w["fix"]
