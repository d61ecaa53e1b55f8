"""tools/peer_tile_probe.py re-emits a staged plan with other tiles and warps: each variant's
grid is its tile walk, its kernel stays bit-exact (interpreter), and the byte shapes it tries
become element extents within the dims."""

from __future__ import annotations

import copy

import pytest

from legalsat.testing.workloads import small_cases
from tests.kernels.client import interpreted, require_client
from tools.peer_tile_probe import WARP_COUNTS, byte_tiles, tiles, tried_tiles, variant

CASES = [w for w in small_cases() if w.name in ("transpose 257×96 bf16", "BHSD→BHDS 2×3×40×32 bf16",
                                                 "transpose 33×47 uint8")]


def staged(w) -> tuple[dict, dict, int, int]:
    from legalsat.api import optimize
    from legalsat.kernels.words import piece_transposed_dims

    resp = optimize(w.request())
    plan = next(p for p in resp["plans"] if p["strategy"] == "staged_smem")
    a, b = piece_transposed_dims(plan["pieces"][0])
    return resp, plan, a, b


@pytest.mark.parametrize("w", CASES, ids=[w.name for w in CASES])
def test_every_tried_tile_walks_the_piece_and_stays_bit_exact(w):
    require_client()
    resp, plan, a, b = staged(w)
    piece = plan["pieces"][0]
    tried = [(ta, tb, 4) for ta, tb in tiles(piece, a, b)][:2] + byte_tiles(piece, a, b)[:3]
    assert tried
    planned = copy.deepcopy(plan)
    for ta, tb, warps in tried:
        v = variant(plan, a, b, ta, tb, warps)
        vp = v["pieces"][0]
        assert vp["tile"][a] == ta and vp["tile"][b] == tb and vp["num_warps"] == warps
        assert plan == planned  # the planned plan is left as it was
        k = interpreted({**resp, "plans": [v]}, w.__dict__, seed=3)
        assert vp["grid"] == [k.emitted.launches[0].grid]  # the programs the emitted kernel launches


def test_byte_shapes_become_element_extents_within_the_dims():
    def piece(eb, extents):
        return {"element_bytes": eb, "dims": [{"extent": n} for n in extents]}

    # 128 x 64 bytes of uint8 are 128 x 64 elements; of fp32 32 x 16; a dim of 8 is taken whole
    assert byte_tiles(piece(1, [8192, 8192]), 0, 1)[0] == (128, 64, 8)
    assert byte_tiles(piece(4, [4096, 4096]), 0, 1)[0] == (32, 16, 8)
    assert {t[1] for t in byte_tiles(piece(4, [1 << 24, 8]), 0, 1)} == {8}
    # shapes that meet in the same extents are tried once
    small = byte_tiles(piece(2, [40, 3]), 0, 1)
    assert len(small) == len(set(small))


def test_the_warps_mode_keeps_the_planned_tile_and_varies_its_warps():
    _, plan, a, b = staged(CASES[0])
    piece = plan["pieces"][0]
    planned = (piece["tile"][a], piece["tile"][b], piece["num_warps"])
    tried = tried_tiles("warps", piece, a, b, planned)
    assert tried[0] == planned and tried[1:] == [(planned[0], planned[1], w) for w in WARP_COUNTS]
    assert tried_tiles("shapes", piece, a, b, planned)[0] == planned
