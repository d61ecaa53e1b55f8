"""From an extracted formulation to plan fields: one builder per movement kind.

    common   descriptors checked by the legality model, the verified TMA pipeline
    copy     direct / tma / staged_smem / shuffle pieces of a copy
    gather   rows per program, inspector-executor and window parameters
    tile     TMA (or direct) staging of a tile for its consumer

A builder raises `Infeasible` with catalogue reasons (unsat core, legality violations) when
the candidate cannot be realized, and returns a prover: a plan whose proof fails is never
returned (legalsat.planner.optimize).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from legalsat.planner.build.copy import build_copy, fields_us, prove_copy_plan
from legalsat.planner.build.gather import bucket_passes_us, build_gather
from legalsat.planner.build.tile import build_load_tile
from legalsat.planner.formulation import Candidate
from legalsat.planner.plan import (
    AsyncPipeline,
    Descriptor,
    GatherPlan,
    Piece,
    Proof,
    SmemLayout,
    TileLoadPlan,
)
from legalsat.planner.request import PlanRequest
from legalsat.terms.movement import Copy, Gather, moved_elements


@dataclass(frozen=True)
class Built:
    """A candidate's solved fields (the plan-level ones repeat its core piece's) and its prover."""

    tile: tuple[int, ...]
    grid: tuple[int, ...]
    num_warps: int
    pieces: tuple[Piece, ...]
    prove: Callable[[], Proof]
    num_stages: int = 1
    vector_bytes: int | None = None
    descriptors: tuple[Descriptor, ...] = ()
    smem: SmemLayout | None = None
    pipeline: AsyncPipeline | None = None
    gather: GatherPlan | None = None
    tile_load: TileLoadPlan | None = None
    estimated_us: float | None = None  # the builder's estimate, where it knows better than the e-graph's


def build(req: PlanRequest, cand: Candidate) -> Built:
    """The fields of `cand` for `req` (raises Infeasible)."""
    form, m = cand.form, req.movement
    if isinstance(m, Copy):
        pieces, walks = build_copy(form, req.smem_bytes, req.target)
        core = pieces[0]
        us = fields_us(pieces, cand.cost / 1e6, 2 * moved_elements(m) * m.src.esize, req.target)
        return Built(core.tile, core.grid, core.num_warps, tuple(pieces),
                     functools.partial(prove_copy_plan, m, form, walks), core.num_stages or 1, core.vector_bytes,
                     tuple(d for p in pieces for d in (p.descriptors or ())), core.smem, core.pipeline,
                     estimated_us=us)
    if isinstance(m, Gather):
        gather, pieces, f, prover = build_gather(form, m, req.smem_bytes)
        us = None
        if gather.inspector is not None:  # the e-graph charges the entries' passes, not the buckets'
            us = cand.cost / 1e6 + bucket_passes_us(gather.inspector.buckets, req.target.cost)
        return Built(pieces[0].tile, pieces[0].grid, f.num_warps, tuple(pieces), prover,
                     vector_bytes=f.vector_bytes, gather=gather, estimated_us=us)
    fields, tile_load, us, prover = build_load_tile(form, m, req.smem_bytes, req.target)
    return Built(prove=prover, tile_load=tile_load, estimated_us=us, **fields)
