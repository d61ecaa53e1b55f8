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
       budget=st.sampled_from([None, 1024, 8192, 232448]), skew=st.booleans(),
       programs=st.sampled_from([1, 264, 100000]))
def test_transpose_tile_closed_form_is_z3s_optimum(eb, na, nb, pitch, tile, run, small, budget, skew, programs):
    r = Region(eb, 16, 16, ((na, 1, pitch), (nb, na, 1)))
    fast, ref = _both("_transpose_tile_closed", solve.solve_transpose_tile, r, 0, 1, tile,
                      min_run_bytes=run, small=small, smem_budget=budget, skew=skew, min_programs=programs)
    assert fast == ref


@pytest.mark.parametrize("slab,count", [(128, 1), (128, 4096), (8192, 1000), (65536, 7), (3, 100000), (40000, 2)])
def test_rows_and_linear_closed_forms(slab, count):
    rows = solve.solve_rows(slab, 16, count)
    block = solve.SHORT_ROWS_BLOCK_BYTES if slab <= solve.SHORT_ROW_BYTES else 32768
    assert rows.rows * slab <= max(block, slab) and rows.rows <= max(1, 2 * count)
    # the most rows within both bounds (and the 4096 cap)
    assert rows.rows == 4096 or 2 * rows.rows * slab > max(block, slab) or rows.rows >= count
    lin = solve.solve_linear(Region(2, 16, 16, ((count, 1, 1),)))
    assert lin.block * 2 <= 16384 and lin.grid * lin.block >= count


def test_linear_blocks_hold_16_bytes_per_thread():
    """2-byte elements (scalar accesses on one side): 4 KiB blocks of 8 warps, 16 bytes a
    thread (the padded-pitch copy measured on the H100); 16-byte words: 8 KiB blocks of 16
    warps, one vector a thread (the flat copy measured there, benchmarks/copy_limit_probe.json),
    and a small piece's smaller blocks keep one vector a thread."""
    narrow = solve.solve_linear(Region(2, 2, 16, ((16384, 50257, 50264), (50257, 1, 1))), min_programs=264)
    assert (narrow.block, narrow.num_warps) == (2048, 8)
    wide = solve.solve_linear(Region(16, 16, 16, ((1 << 24, 1, 1),)), min_programs=264)
    assert (wide.block, wide.num_warps) == (512, 16)
    small = solve.solve_linear(Region(16, 16, 16, ((4096, 1, 1),)), min_programs=264)
    assert (small.block, small.num_warps) == (64, 2)


def test_small_pieces_are_split_so_every_sm_gets_programs():
    """A 517 x 33 bf16 piece (34 KiB) is cut into 1 KiB blocks (34 programs), not 4 KiB (9)."""
    f = solve.solve_linear(Region(2, 2, 2, ((517, 33, 1), (33, 1, 517))), min_programs=264)
    assert f.block * 2 == solve.MIN_BLOCK_BYTES and f.grid == 34


def test_plain_tile_of_a_misaligned_destination_that_fits_l2():
    """1023 x 4097 bf16 (destination pitch 2046 bytes): unskewed, 512-byte destination runs,
    16 KiB, 4 warps (the best measured on the H100); skewed: 128 / 256-byte runs."""
    r = Region(2, 2, 2, ((1023, 4097, 1), (4097, 1, 1023)))
    plain = solve.solve_transpose_tile(r, 1, 0, 32768, skew=False, min_programs=264)
    assert (plain.tile_a, plain.tile_b, plain.num_warps) == (32, 256, 4)
    skewed = solve.solve_transpose_tile(r, 1, 0, 32768)
    assert (skewed.tile_a, skewed.tile_b) == (128, 64)
    tiny = solve.solve_transpose_tile(Region(2, 2, 2, ((517, 33, 1), (33, 1, 517))), 1, 0, 32768, skew=False,
                                      min_programs=264)
    assert tiny.tile_a * tiny.tile_b * 2 == solve.PLAIN_MIN_TILE


def test_index_major_gather_takes_one_row_of_entries_per_program():
    """1,000 of 4,096 fp32 columns x 2,048 rows: 1,024 entries x 1 row, 2 warps (the fastest
    measured on the H100; two rows a program ran 11% slower)."""
    f = solve.solve_index_major(1000, 4, 2048)
    assert (f.rows, f.slab_step, f.num_warps) == (1024, 1, 2)
    few = solve.solve_index_major(10, 4, 2048)  # few entries: more rows a program, same bytes
    assert few.rows == 16 and few.rows * few.slab_step * 4 == solve.INDEX_MAJOR_BLOCK_BYTES


def test_short_gather_rows_take_8_KiB_per_program_over_8_warps():
    """Rows of at most 128 bytes: 32 bytes a thread (4M random, sorted and warp-local rows of
    128 B ran 0.8-2.5 % faster this way than in 32 KiB programs on the H100, ahead of
    torch.compile; tools/gather_sweep.py --row-gathers); longer rows keep 32 KiB."""
    from legalsat.planner.solve import solve_rows

    assert (solve_rows(128, 16, 1 << 22).rows, solve_rows(128, 16, 1 << 22).num_warps) == (64, 8)
    assert (solve_rows(64, 16, 1 << 22).rows, solve_rows(64, 16, 1 << 22).num_warps) == (128, 8)
    assert (solve_rows(4096, 16, 1 << 20).rows, solve_rows(4096, 16, 1 << 20).num_warps) == (8, 8)
    assert solve_rows(128, 16, 20).rows == 32  # no more rows than indices


def test_long_gather_rows_are_moved_in_4_KiB_parts_over_4_warps():
    """A direct gather's slab of 16-byte elements over 4 KiB: one entry a program, 4 KiB parts
    of 4 warps (the embeddings and KV pages ran 0.4-1.8 % faster so on the H100 than in 32 KiB
    programs of 8 warps: benchmarks/row_gather_probe.json); up to 4 KiB, narrower elements, and
    slabs whose last part would be under half a part stay whole (`solve_rows`)."""
    parts = solve.solve_row_parts(8192, 16)
    assert (parts.rows, parts.num_warps, parts.slab_step) == (1, 4, 256)
    assert solve.solve_row_parts(7168, 16).slab_step == 256  # a last part of 3 KiB
    assert solve.solve_row_parts(4096, 16) is None and solve.solve_row_parts(128, 16) is None
    assert solve.solve_row_parts(4112, 16) is None  # its second part would move 16 bytes
    assert solve.solve_row_parts(8200, 8) is None  # 8-byte elements: not measured


def test_only_direct_gathers_of_one_long_slab_are_planned_in_parts():
    """The direct candidate of an embedding or a paged KV cache moves parts; its inspector-
    executor and shuffle candidates, grouped (MoE) gathers, gathers along an inner axis and
    rows of at most 4 KiB keep their programs."""
    from legalsat.api import optimize
    from legalsat.testing.planner_suite import gather, view

    def plans(req):
        return {p["strategy"]: p for p in optimize({**req, "options": {"max_plans": 8}})["plans"]}

    emb = plans(gather("emb", view("bfloat16", (1000, 4096)), 0, 3000))["direct"]
    assert emb["pieces"][0]["tile"] == [1, 256] and emb["grid"] == [3000 * 2] and emb["num_warps"] == 4
    paged = gather("kv", view("bfloat16", (4096, 8, 128)), 0, 256)
    paged["op"]["index"].update(distribution="paged", page_size=16, unique=True)
    kv = plans(paged)
    assert kv["direct"]["pieces"][0]["tile"] == [1, 256] and kv["direct"]["grid"] == [256 * 8]
    assert len(kv["inspector_executor"]["pieces"][0]["tile"]) == 1
    short = plans(gather("short", view("bfloat16", (1000, 2048)), 0, 3000))["direct"]
    assert short["pieces"][0]["tile"] == [8]
    warp_local = gather("wl", view("float32", (5000, 2048)), 0, 1000)
    warp_local["op"]["index"]["distribution"] = "warp_local"
    assert len(plans(warp_local)["shuffle"]["pieces"][0]["tile"]) == 1
    moe = gather("moe", view("bfloat16", (300, 4096)), 0, 600)
    moe["op"]["index"]["groups"] = 8
    assert all(len(p["pieces"][0]["tile"]) == 1 for p in plans(moe).values())
    inner = plans(gather("cols", view("bfloat16", (20, 8192)), 1, 3000))["direct"]
    assert inner["pieces"][0]["tile"][0] > 1  # index-major: a block of entries a program
    odd = plans(gather("odd", view("bfloat16", (1000, 4100)), 0, 3000))["direct"]  # 8200-byte rows: 8-byte words
    assert len(odd["pieces"][0]["tile"]) == 1
    pitched = gather("pitched", view("bfloat16", (1000, 2048)), 0, 3000)
    pitched["op"]["src"]["shape"], pitched["op"]["src"]["strides"] = [1000, 16, 256], [8192, 512, 1]
    gapped = plans(pitched)["direct"]  # 16 runs of 512 B, 1 KiB apart: not one contiguous run
    assert len(gapped["pieces"][0]["tile"]) == 1
