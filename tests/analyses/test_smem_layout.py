"""Structured shared-memory accesses reduce to raw instructions and give the same answer."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from legalsat.analyses.bank_conflicts import analyze_access
from legalsat.analyses.smem_layout import analyze_tile_access, reduce_tile_access
from legalsat.diagnostics import InputError
from legalsat.targets import GFX942, SM90
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.dtypes import DTYPES
from legalsat.terms.smem import TILE_SWIZZLES, MemOp, SmemTile, TileAccess, WarpPattern

ELEMS = [d for d in DTYPES.values() if not d.packed]


@st.composite
def tile_accesses(draw):
    d = draw(st.sampled_from(ELEMS))
    ebytes = d.storage_bits // 8
    cols = draw(st.sampled_from([16, 32, 64, 128])) // ebytes * 2
    rows = draw(st.sampled_from([16, 32, 48]))
    pad = draw(st.sampled_from([0, 4, 8, 16, 128]))
    sw = draw(st.sampled_from(list(TILE_SWIZZLES)))
    vec_bytes = draw(st.sampled_from([4, 8, 16]))
    vector = max(1, vec_bytes // ebytes)
    tile = SmemTile(d, rows, cols, cols * ebytes + pad, sw)
    return TileAccess(tile, draw(st.sampled_from(list(WarpPattern))), vector,
                      draw(st.sampled_from(list(MemOp))))


@settings(max_examples=300, deadline=None)
@given(tile_accesses(), st.sampled_from([SM90, GFX942]))
def test_structured_equals_sum_of_raw(x, target):
    try:
        raw = reduce_tile_access(x, target)
    except InputError as e:
        assert e.headline.field and e.headline.fix
        return
    report = analyze_tile_access(x, target)
    assert len(report.instructions) == len(raw)
    for got, inst in zip(report.instructions, raw):
        assert got == analyze_access(inst, target)
    assert report.wavefronts == sum(analyze_access(i, target).wavefronts for i in raw)
    # every element of the tile is touched exactly once
    ebytes = x.tile.dtype.storage_bits // 8
    touched = [a for inst in raw for a in inst.addresses if a is not None]
    assert len(touched) * inst.access_bytes == x.tile.rows * x.tile.cols * ebytes
    assert len(set(touched)) == len(touched)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(TILE_SWIZZLES)), st.integers(0, 63))
def test_swizzle_permutes_16_byte_chunks_within_each_1024_byte_block(sw, block):
    base = block * 1024
    out = sorted(sw.apply(base + 16 * c) for c in range(64))
    assert out == [base + 16 * c for c in range(64)]
    assume(sw is not Swizzle.NONE)
    assert sw.apply(base + 16 * 8 + 0) != base + 16 * 8  # row 1 chunk 0 moves


def test_128b_swizzle_makes_column_reads_conflict_free():
    d = DTYPES["bfloat16"]
    plain = analyze_tile_access(TileAccess(SmemTile(d, 64, 64, 128), WarpPattern.COLS, 8), SM90)
    swz = analyze_tile_access(TileAccess(SmemTile(d, 64, 64, 128, Swizzle.B128),
                                         WarpPattern.COLS, 8), SM90)
    assert plain.conflict_ways == 8.0 and swz.conflict_ways == 1.0


def test_padding_by_16_bytes_also_fixes_column_reads():
    d = DTYPES["bfloat16"]
    padded = analyze_tile_access(TileAccess(SmemTile(d, 64, 64, 144), WarpPattern.COLS, 8), SM90)
    assert padded.conflict_ways == 1.0


def test_ldmatrix_on_swizzled_tile_is_conflict_free():
    d = DTYPES["float16"]
    r = analyze_tile_access(TileAccess(SmemTile(d, 64, 64, 128, Swizzle.B128),
                                       WarpPattern.LDMATRIX, 8), SM90)
    assert r.conflict_ways == 1.0
    plain = analyze_tile_access(TileAccess(SmemTile(d, 64, 64, 128), WarpPattern.LDMATRIX, 8), SM90)
    assert plain.conflict_ways == 8.0


@pytest.mark.parametrize("tile, pattern, vector, field", [
    (SmemTile(DTYPES["bfloat16"], 16, 64, 128), WarpPattern.ROWS, 3, "vector"),
    (SmemTile(DTYPES["bfloat16"], 16, 64, 100), WarpPattern.ROWS, 8, "tile.row_pitch_bytes"),
    (SmemTile(DTYPES["bfloat16"], 16, 64, 136, Swizzle.B128), WarpPattern.ROWS, 8,
     "tile.row_pitch_bytes"),
    (SmemTile(DTYPES["bfloat16"], 8, 64, 128), WarpPattern.LDMATRIX, 8, "tile"),
])
def test_impossible_walks_are_clear_errors(tile, pattern, vector, field):
    with pytest.raises(InputError) as e:
        reduce_tile_access(TileAccess(tile, pattern, vector), SM90)
    assert e.value.headline.field == field


def test_tmas_32b_and_64b_swizzled_rows_are_analysed_and_match_the_raw_form():
    """A 32B-swizzled tile of 32-byte rows, which TMA writes, was refused ("rows in whole
    128-byte units"); the same addresses in raw form answered."""
    import legalsat
    from legalsat.terms.descriptor import Swizzle

    for swizzle, cols in (("32B", 16), ("64B", 32)):
        tile = legalsat.analyze_bank_conflicts({"pattern": "cols", "vector": 8, "tile": {
            "dtype": "bfloat16", "shape": [64, cols], "swizzle": swizzle}})
        pitch = cols * 2
        first = [Swizzle(swizzle).apply(r * pitch) for r in range(32)]  # the first instruction: column 0, rows 0..31
        raw = legalsat.analyze_bank_conflicts({"op": "load", "access_bytes": 16, "addresses": first})
        assert tile.accesses[0].wavefronts == raw.wavefronts, (swizzle, tile.accesses[0], raw)


def test_a_tile_larger_than_shared_memory_is_refused_as_the_raw_form_is():
    import pytest

    import legalsat
    from legalsat.diagnostics import InputError

    with pytest.raises(InputError) as e:
        legalsat.analyze_bank_conflicts({"pattern": "rows", "vector": 8, "tile": {
            "dtype": "bfloat16", "shape": [4096, 64], "row_pitch_bytes": 1 << 20}})
    assert e.value.headline.field == "tile" and "232448" in e.value.headline.message
