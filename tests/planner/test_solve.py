"""The field solvers' closed forms give z3's lexicographic optimum: on random pieces, each
closed form equals the z3 form of the same problem (the z3 form is what runs when the closed
form finds no fields, so its unsat core explains the rejection)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legalsat.planner import solve
from legalsat.planner.formulation import Region
from legalsat.planner.solve import Infeasible

EXTENTS = st.sampled_from([1, 2, 3, 5, 7, 8, 16, 33, 64, 100, 128, 256, 257, 1000, 4096, 50257])


def _both(closed_name: str, fn, *args, **kw):
    """(closed form's answer, z3's answer): each a value or the Infeasible reasons' codes."""
    def run():
        try:
            return fn(*args, **kw)
        except Infeasible as e:
            return tuple(r.code for r in e.reasons)

    fast = run()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(solve, closed_name, lambda *a, **k: None)
        reference = run()
    return fast, reference


@settings(max_examples=150, deadline=None)
@given(eb=st.sampled_from([1, 2, 4, 8, 16]), extents=st.lists(EXTENTS, min_size=1, max_size=5),
       smem=st.sampled_from([4096, 16384, 65536, 232448]), store_buffers=st.sampled_from([1, 2]),
       cap=st.sampled_from([None, 32, 64, 128]), dst_inner=st.integers(-1, 4), data=st.data())
def test_tma_box_closed_form_is_z3s_optimum(eb, extents, smem, store_buffers, cap, dst_inner, data):
    dims = tuple((n, 1, 1) for n in extents)
    order = tuple(data.draw(st.permutations(range(len(dims)))))
    dst = dst_inner if 0 <= dst_inner < len(dims) else None
    r = Region(eb, 16, 16, dims)
    fast, ref = _both("_tma_box_closed", solve.solve_tma_box, r, order, smem, min(eb, 8),
                      store_buffers=store_buffers, inner_cap_bytes=cap, dst_inner=dst)
    assert fast == ref


@settings(max_examples=150, deadline=None)
@given(eb=st.sampled_from([1, 2, 4, 8, 16]), na=EXTENTS, nb=EXTENTS, pitch=st.integers(1, 70000),
       tile=st.sampled_from([2048, 32768, 65536]), run=st.sampled_from([128, 256]), small=st.booleans(),
       budget=st.sampled_from([None, 1024, 8192, 232448]))
def test_transpose_tile_closed_form_is_z3s_optimum(eb, na, nb, pitch, tile, run, small, budget):
    r = Region(eb, 16, 16, ((na, 1, pitch), (nb, na, 1)))
    fast, ref = _both("_transpose_tile_closed", solve.solve_transpose_tile, r, 0, 1, tile,
                      min_run_bytes=run, small=small, smem_budget=budget)
    assert fast == ref


@pytest.mark.parametrize("slab,count", [(128, 1), (128, 4096), (8192, 1000), (65536, 7), (3, 100000), (40000, 2)])
def test_rows_and_linear_closed_forms(slab, count):
    rows = solve.solve_rows(slab, 16, count)
    assert rows.rows * slab <= max(32768, slab) and rows.rows <= max(1, 2 * count)
    # the most rows within both bounds (and the 4096 cap)
    assert rows.rows == 4096 or 2 * rows.rows * slab > max(32768, slab) or rows.rows >= count
    lin = solve.solve_linear(Region(2, 16, 16, ((count, 1, 1),)))
    assert lin.block * 2 <= 16384 and lin.grid * lin.block >= count
