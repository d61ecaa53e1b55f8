"""The prover is tested to fail: each kind's real plan is proven, then its walk is broken
the three ways a planner bug would break it (a tile dropped, an offset shifted, a piece or
box duplicated) and every broken walk must be refused."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest

from legalsat.planner import stages
from legalsat.schemas.optimize import parse_request
from legalsat.terms.strategy import Strategy

V = {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]}
COPY = {"op": {"kind": "copy", "src": V, "dst": {**V, "strides": [1, 64]}}}
# a destination whose dims interleave (strides that do not nest): decoded from src; and with
# both sides interleaved: proven element by element
INTERLEAVED = {"op": {"kind": "copy",
                      "src": {"dtype": "uint8", "shape": [3, 7, 2, 3, 7], "strides": [294, 42, 21, 7, 1]},
                      "dst": {"dtype": "uint8", "shape": [3, 7, 2, 3, 7], "strides": [2, 100, 1, 64, 4096]}}}
BOTH_INTERLEAVED = {"op": {**INTERLEAVED["op"], "src": {**INTERLEAVED["op"]["src"], "strides": [64, 100, 1, 2, 4096]}}}
GATHER = {"op": {"kind": "gather", "src": {"dtype": "float32", "shape": [100, 24], "strides": [24, 1]}, "axis": 0,
                 "index": {"count": 40, "distribution": "random"}}}
TILE = {"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [300, 200], "strides": [200, 1]},
               "tile": [64, 128], "consumer": "rows"}}


def _prover(request: dict, strategy: Strategy) -> functools.partial:
    req = parse_request(request)
    with stages.saturate(req) as sat:
        cand = next(c for c in stages.extract(sat) if c.strategy is strategy)
    prover = stages.solve(req, cand).prove
    assert prover().ok  # the real plan is proven
    return prover


def _rerun(prover: functools.partial, index: int, value) -> bool:
    args = list(prover.args)
    args[index] = value
    return prover.func(*args, **prover.keywords).ok


def _shrunk(walk):
    (n, s, d), *rest = walk.piece.dims
    return replace(walk, piece=replace(walk.piece, dims=((n - 1, s, d), *rest)))


def _shifted(walk):
    return replace(walk, piece=replace(walk.piece, src_offset=walk.piece.src_offset + walk.piece.eb))


@pytest.mark.parametrize("request_, strategy", [(COPY, Strategy.TMA), (COPY, Strategy.STAGED_SMEM),
                                                (COPY, Strategy.DIRECT), (GATHER, Strategy.DIRECT),
                                                (INTERLEAVED, Strategy.DIRECT), (INTERLEAVED, Strategy.STAGED_SMEM),
                                                (BOTH_INTERLEAVED, Strategy.DIRECT)],
                         ids=["copy-tma", "copy-staged", "copy-direct", "gather-direct", "interleaved-direct",
                              "interleaved-staged", "both-interleaved-direct"])
def test_broken_copy_and_gather_walks_are_refused(request_, strategy):
    prover = _prover(request_, strategy)
    at = len(prover.args) - 1  # the walks are the last argument of prove_copy_plan and prove_gather
    walks = list(prover.args[at])
    assert not _rerun(prover, at, [_shrunk(walks[0]), *walks[1:]]), "a dropped row was proven"
    assert not _rerun(prover, at, [_shifted(walks[0]), *walks[1:]]), "a shifted offset was proven"
    assert not _rerun(prover, at, walks + [walks[0]]), "a duplicated piece was proven"


def test_broken_tile_walks_are_refused():
    prover = _prover(TILE, Strategy.TMA)
    m, dims, box, boxes, layout = prover.args[:5]
    boxes = list(boxes)
    assert len(boxes) >= 2
    at = 3
    assert not _rerun(prover, at, boxes[1:]), "a dropped box was proven"
    first = boxes[0]
    moved = replace(first, smem_offset_bytes=first.smem_offset_bytes + layout.element_bytes)
    assert not _rerun(prover, at, [moved, *boxes[1:]]), "a shifted box was proven"
    assert not _rerun(prover, at, boxes + [first]), "a duplicated box was proven"
    (extent, stride, parts), *rest = dims
    assert not _rerun(prover, 1, [(extent, stride + 1, parts), *rest]), "a wrong stride was proven"
