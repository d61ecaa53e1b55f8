"""Plans edited after planning where the edit once passed `build_kernel` and the kernel then
wrote elsewhere than the request's element map (or past `out`): a tile load's broadcast dims
and absent extents, a TMA piece whose descriptors leave a dim unwalked, gather pieces whose
words do not divide the index strides. Each is refused, naming the field; the planner's own
plans of the same requests still build."""

from __future__ import annotations

import copy

import pytest

from legalsat.testing.tile_workloads import tile_workloads
from legalsat.testing.workloads import small_cases
from tests.kernels.client import refused, require_client

TILES = dict(tile_workloads())
CASES = {w.name: w for w in small_cases()}


@pytest.fixture(scope="module")
def broadcast_tile() -> dict:
    from legalsat.api import optimize

    return optimize(TILES["broadcast overhang [3,16] uint8 tile 2x16"])


@pytest.mark.parametrize("broadcast", [[0, 1], [1], []])
def test_a_tile_loads_broadcast_dims_are_the_requests(broadcast_tile, broadcast):
    require_client()
    from legalsat.clients.triton import build_kernel

    build_kernel(broadcast_tile, variant="tl")  # as planned: builds
    assert broadcast_tile["plans"][0]["tile_load"]["broadcast"] == [0]
    resp = copy.deepcopy(broadcast_tile)
    resp["plans"][0]["tile_load"]["broadcast"] = broadcast
    # [0, 1]: the walked dim 1 too, whose stores then ran 15 bytes past out's 64; []: dim 0 unwalked, unwritten
    refused(resp, "tile_load", variant="tl")
    if broadcast != []:  # a bare plan (no request): a dim both walked and broadcast is refused too
        refused(resp["plans"][0], "tile_load.broadcast", variant="tl")


def test_a_tile_load_without_extents_must_not_overhang(broadcast_tile):
    require_client()
    resp = copy.deepcopy(broadcast_tile)
    resp["plans"][0]["tile_load"]["extents"] = None  # read as the grid of whole tiles: 4 x 16, not 3 x 16
    assert "[4, 16]" in refused(resp, "tile_load.extents", variant="tl").headline.message


def test_a_tma_piece_walks_every_dim_of_its_piece():
    require_client()
    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    resp = optimize(CASES["BHSD→BHDS 2×3×40×32 bf16"].request())
    i = next(k for k, p in enumerate(resp["plans"]) if p["strategy"] == "tma")
    build_kernel(resp, plan_index=i, variant="tl")
    edited = copy.deepcopy(resp)
    plan = edited["plans"][i]
    for d in plan["pieces"][0]["descriptors"]:  # rank 2: the batch dim of 6 left to no descriptor
        d["rank"], d["global_dim"], d["global_strides"] = 2, d["global_dim"][:2], d["global_strides"][:1]
        d["box_dim"], d["element_strides"] = d["box_dim"][:2], d["element_strides"][:2]
    plan["descriptors"] = plan["pieces"][0]["descriptors"]
    assert "walks no dim" in refused(edited, "pieces[0].descriptors", plan_index=i, variant="tl").headline.message
    assert "walks no dim" in refused(plan, "pieces[0].descriptors", variant="tl").headline.message


def test_gather_pieces_step_by_whole_words_of_the_index_strides():
    require_client()
    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    resp = optimize(CASES["gather 74 B rows 333 of 999"].request())
    build_kernel(resp)
    edited = copy.deepcopy(resp)
    plan = edited["plans"][0]
    a, b = copy.deepcopy(plan["pieces"][0]), copy.deepcopy(plan["pieces"][0])
    # 72 bytes as 4-byte words and 2 more: the same slab, but an entry's 74 bytes are no whole words
    a.update(element_bytes=4, dims=[{"extent": 18, "src_stride": 1, "dst_stride": 1}])
    b.update(element_bytes=2, dims=[{"extent": 1, "src_stride": 1, "dst_stride": 1}], src_offset_bytes=72,
             dst_offset_bytes=72)
    plan["pieces"] = [a, b]
    assert "between words" in refused(edited, "pieces[0].element_bytes").headline.message
    assert "between words" in refused(plan, "pieces[0].element_bytes").headline.message


def test_a_row_gathers_window_is_a_block():
    require_client()
    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    resp = optimize(CASES["gather warp-local 1000 of 700 fp32 rows"].request())
    i = next(k for k, p in enumerate(resp["plans"]) if p["strategy"] == "shuffle")
    build_kernel(resp, plan_index=i)
    edited = copy.deepcopy(resp)
    edited["plans"][i]["gather"]["window_rows"] = 3  # was accepted, then failed at the first call naming no field
    refused(edited, "gather.window_rows", plan_index=i)


def test_a_gather_response_whose_pieces_reach_past_out_names_the_pieces():
    require_client()
    from legalsat.api import optimize

    resp = optimize(CASES["gather 74 B rows 333 of 999"].request())
    edited = copy.deepcopy(resp)
    edited["plans"][0]["pieces"][0]["dims"][0]["extent"] += 1  # out_shape is the request's: it was blamed
    refused(edited, "pieces")


def test_a_relayout_that_overlaps_the_view_names_the_relayout():
    require_client()
    from legalsat.api import optimize

    resp = optimize(CASES["copy into padded pitch 33×70 bf16"].request())
    edited = copy.deepcopy(resp)
    # the destination's 2-byte dim relaid to 16 bytes: its elements would overlap (it was blamed on the term)
    edited["plans"][0]["relayout"] = [{"side": "dst", "old_stride_bytes": 2, "new_stride_bytes": 16}]
    refused(edited, "relayout[0]")
