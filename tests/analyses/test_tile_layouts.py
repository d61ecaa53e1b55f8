"""Tile layouts judged by the bank model: staged transposes, and loaded tiles read by their
consumer."""

import pytest

from legalsat.analyses.tile_layouts import best_staged_ways, stage_read_ways, staged_layouts
from legalsat.targets import resolve_target
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.movement import Consumer, Major, TileMatrix
from legalsat.terms.smem import LayoutDim, StageLayout

SM90 = resolve_target("sm90")


def row_major(rows: int, cols: int, eb: int, swizzle: Swizzle) -> StageLayout:
    """A rows x cols tile landed as boxes of one swizzle span (or whole rows), spans slowest."""
    box = swizzle.span_bytes // eb if swizzle.span_bytes else cols
    return StageLayout((LayoutDim(((1, 1),), box, cols // box, 1, rows * box),
                        LayoutDim(((0, 1),), rows, 1, box, rows * cols)), eb, swizzle)


def test_cols_consumer_is_judged_by_column_reads():
    # 4-byte column reads of 128-byte rows all hit one bank without a swizzle; rows do not
    mat = TileMatrix((128, 64), (0,), 1)
    none = stage_read_ways(row_major(128, 64, 2, Swizzle.NONE), mat, Consumer.COLS, None, SM90)
    swizzled = stage_read_ways(row_major(128, 64, 2, Swizzle.B128), mat, Consumer.COLS, None, SM90)
    assert none > 1 and swizzled < none
    assert stage_read_ways(row_major(128, 64, 2, Swizzle.NONE), mat, Consumer.ROWS, None, SM90) == 1


def test_wgmma_core_matrix_reads_need_the_swizzle():
    mat = TileMatrix((64, 64), (0,), 1)
    none = stage_read_ways(row_major(64, 64, 2, Swizzle.NONE), mat, Consumer.WGMMA_A, Major.K, SM90)
    assert none == 8  # eight 16-byte rows 128 bytes apart: one bank group
    assert stage_read_ways(row_major(64, 64, 2, Swizzle.B128), mat, Consumer.WGMMA_A, Major.K, SM90) == 1


def test_staged_transpose_of_16_bit_elements_is_conflict_free():
    assert staged_layouts(2, SM90)[0].ways == 1.0
    assert best_staged_ways(2, SM90) == 1


@pytest.mark.parametrize("eb,row_bytes", [(1, 128), (2, 256), (4, 128), (8, 512), (2, 32)])
def test_a_tall_staged_tile_has_its_first_bands_ways(eb, row_bytes):
    """staged_layouts analyses 64 rows of a taller tile: the full walk's ways are the same."""
    from legalsat.analyses.tile_layouts import _staged_layouts, staged_layouts
    from legalsat.targets import TARGETS

    t = TARGETS["sm90"]
    full = _staged_layouts(eb, t, 256, row_bytes)
    assert staged_layouts(eb, t, 256, row_bytes) == full == _staged_layouts(eb, t, 64, row_bytes)
