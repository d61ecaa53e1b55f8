"""Tile layouts chosen by the bank model."""

from legalsat.analyses.tile_layouts import best_staged_ways, consumer_layouts, staged_layouts
from legalsat.targets import resolve_target

SM90 = resolve_target("sm90")


def test_cols_consumer_is_judged_by_column_reads():
    # 4-byte column reads of 64-byte rows conflict without a swizzle; row reads would not
    none = next(t for t in consumer_layouts(2, 128, 64, "cols", SM90) if t.swizzle == "none")
    assert none.read_ways > 1
    assert consumer_layouts(2, 128, 64, "cols", SM90)[0].read_ways < none.read_ways


def test_wgmma_operand_prefers_128B_swizzle():
    assert consumer_layouts(2, 64, 128, "wgmma_a", SM90)[0].swizzle == "128B"


def test_staged_transpose_of_16_bit_elements_is_conflict_free():
    assert staged_layouts(2, SM90)[0].ways == 1.0
    assert best_staged_ways(2, SM90) == 1
