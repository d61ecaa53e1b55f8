"""Staged tiles at a ragged edge and into rows off a sector: the plain tile's programs inside
the tensor run unmasked (a mask along an odd extent made every access one element wide), the
tile into rows on 16 bytes but off a 32-byte sector is skewed by the plan's `skewed_stores`,
and both are bit-exact; replayed against the H100's record (benchmarks/sector_pitch_probe.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legalsat.api import optimize
from legalsat.diagnostics import InputError
from legalsat.kernels import emit
from tests.kernels.client import interpreted, require_client, skewed_response, sm90_access_counts
from tools.sector_pitch_probe import name, request

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((ROOT / "benchmarks" / "sector_pitch_probe.json").read_text())


def _staged(resp: dict) -> dict:
    return next(p for p in resp["plans"] if p["strategy"] == "staged_smem")


def test_a_ragged_plain_tile_stores_whole_vectors_inside():
    """12345 x 2048 fp16 into a 12352-element pitch (rows on a sector, 12345 not a multiple of
    the 128-row tile): every program was masked and every store one element wide (132.6 us on
    the H100 against 41.5 unmasked inside, a 38.4 us copy)."""
    require_client()
    counts = sm90_access_counts(request("float16", 12345, 2048, 12352))
    assert counts["st_v4"] > 0 and counts["ld_v4"] > 0, counts


def test_a_plain_tile_whose_accesses_are_one_element_is_not_split():
    """1023 x 4097 bf16 (both pitches off 16 bytes, the destination in L2): one-element loads
    and stores either way, so the tile keeps one masked body."""
    source = emit(_staged(optimize(request("bfloat16", 1023, 4097, 1023)))).source
    assert "mask=mask" in source and "if (t" not in source


@pytest.mark.parametrize("pitch,skewed", [(50257, True), (50264, True), (50272, False), (50304, False)])
def test_rows_off_a_sector_are_skewed_where_the_destination_exceeds_l2(pitch, skewed):
    """50257 x 4096 bf16 (a destination larger than L2): rows off 16 bytes (50257) and rows on
    16 bytes but off a sector (50264) get the skewed 64 x 128 tile; rows on a sector do not."""
    staged = _staged(optimize(request("bfloat16", 50257, 4096, pitch)))
    piece = staged["pieces"][0]
    assert bool(piece.get("skewed_stores")) == skewed
    assert ("tl.gather" in emit(staged).source) == skewed
    if skewed:
        assert piece["tile"] == [64, 128] and piece["store_vector_bytes"] == 16


@pytest.mark.parametrize("dtype,shape,src,dst,tile", [
    ("float32", [8192, 4096, 4], [16384, 4, 1], [4, 32772, 1], [16, 128]),  # 16-byte elements: never skewed
    ("float64", [8192, 4096, 2], [8192, 2, 1], [2, 16386, 1], [16, 128]),
    ("bfloat16", [40, 2000000], [2000000, 1], [1, 56], [64, 256]),  # a 128-byte run longer than its dim
    ("float32", [20, 3000000], [3000000, 1], [1, 20], [32, 256]),
])
def test_rows_off_a_sector_the_skewed_tile_cannot_skew_keep_the_aligned_tile(dtype, shape, src, dst, tile):
    """Such pieces took the skewed tile's shape (16 x 8, 4 warps for the 16-byte elements) and
    ran it plain: the solver now skews only what the plan and the kernels skew, and gives the
    aligned 32 KiB tile its 32 warps (`transpose_warps`)."""
    piece = _staged(optimize({"op": {"kind": "copy", "src": {"dtype": dtype, "shape": shape, "strides": src},
                                     "dst": {"dtype": dtype, "shape": shape, "strides": dst}},
                              "options": {"max_plans": 8}}))["pieces"][0]
    assert piece["tile"] == tile and piece["num_warps"] == 32 and "skewed_stores" not in piece


def test_rows_off_a_sector_that_fit_l2_are_not_skewed():
    """601 x 96 bf16 into a 616-element pitch (1,232 bytes: on 16, off 32): the plain tile."""
    piece = _staged(optimize(request("bfloat16", 601, 96, 616)))["pieces"][0]
    assert "skewed_stores" not in piece


def test_the_skewed_tile_into_rows_off_a_sector_is_bit_exact():
    """The skewed tile into rows on 16 bytes but off a sector (601 x 96 bf16 into a 616-element
    pitch), run in the interpreter over the whole poisoned destination (the gaps between rows
    included)."""
    require_client()
    resp = skewed_response(optimize(request("bfloat16", 601, 96, 616)), skewed_stores=True)
    k = interpreted(resp, {"torch_op": "copy"}, seed=3)  # asserts bit-exact
    assert "tl.gather" in k.source


def test_skewed_stores_on_a_piece_that_cannot_skew_is_named():
    """A plan edited to skew rows that start on a sector: the field, not a traceback."""
    resp = skewed_response(optimize(request("bfloat16", 601, 96, 640)), skewed_stores=True)
    with pytest.raises(InputError) as e:
        emit(resp["plans"][0])
    assert e.value.headline.field == "pieces[0].skewed_stores"


def _recorded(workload: str) -> dict[str, float]:
    return {r["kernel"].split(" [")[0]: r["copy_ratio"] for r in RECORD["kernels"] if r["workload"] == workload}


@pytest.mark.parametrize("dtype,rows,cols,pitch", [("bfloat16", 50257, 4096, 50264), ("bfloat16", 20000, 4096, 20008),
                                                   ("float16", 30000, 2048, 30008), ("float32", 5001, 4096, 5004),
                                                   ("float32", 16385, 2048, 16388)])
def test_the_recorded_skew_beat_the_plain_tile_and_is_what_the_planner_gives(dtype, rows, cols, pitch):
    """Replays the H100 run: each skewed tile the planner gives rows off a sector ran faster
    than the plain tile of a sector-aligned pitch, and the planner still gives that tile."""
    workload = name(dtype, rows, cols, pitch)
    rec = _recorded(workload)
    assert rec["planned"] > rec["plain tile"], rec
    planned = next(r["kernel"] for r in RECORD["kernels"] if r["workload"] == workload and r["kernel"].startswith("planned"))
    piece = _staged(optimize(request(dtype, rows, cols, pitch)))["pieces"][0]
    assert planned == f"planned {piece['tile']} skewed" and piece.get("skewed_stores")


def test_the_recorded_unmasked_inside_beat_every_program_masked():
    """Replays the H100 run: wherever the plain tile had a ragged edge, running its inside
    unmasked was faster (0.23 -> 0.81 of the copy for the 50264 pitch, 0.29 -> 0.93 for 12352)."""
    ragged = {r["workload"] for r in RECORD["kernels"] if r["kernel"].startswith("plain tile, every program masked")}
    faster = [w for w in ragged if _recorded(w)["plain tile"] > 1.2 * _recorded(w)["plain tile, every program masked"]]
    assert len(faster) >= 5, faster
