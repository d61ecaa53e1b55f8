"""Gather plans: rows (index entries) per program, the slab one index moves, and the
inspector / executor / window parameters of the strategy."""

from __future__ import annotations

import functools
from math import prod

from legalsat.diagnostics import Code
from legalsat.planner.build.common import region_dims
from legalsat.planner.formulation import Formulation
from legalsat.planner.plan import Executor, GatherPlan, Inspector, Piece
from legalsat.planner.prove import Walk, prove_gather
from legalsat.planner.solve import Infeasible, solve_index_major, solve_row_parts, solve_rows
from legalsat.targets.base import CostFacts
from legalsat.terms.integers import cdiv, pow2_at_least, pow2_at_most
from legalsat.terms.movement import Distribution, Gather
from legalsat.terms.smem import INSPECTOR_BUCKET_SCAN, INSPECTOR_STEP_ELEMENTS, SCAN_BYTES_PER_ELEMENT
from legalsat.terms.strategy import Strategy

# the kernels' passes over the indices (legalsat.kernels.inspector)
BUCKET_PASSES = ("histogram", "prefix_sum", "scatter")
GROUP_PASSES = ("histogram", "column_scan", "offsets", "scatter")


def inspector_step(buckets: int, grouped: bool, smem_budget: int) -> int:
    """Elements of one inspector step: as many as fit the shared-memory budget, up to
    INSPECTOR_STEP_ELEMENTS; a grouped step holds at least one row of every group."""
    fit = min(INSPECTOR_STEP_ELEMENTS, smem_budget // SCAN_BYTES_PER_ELEMENT)
    need = pow2_at_least(buckets) if grouped else INSPECTOR_BUCKET_SCAN
    if fit < need:
        what = f"a step over all {buckets} groups" if grouped else f"its prefix sum of {need} buckets"
        raise Infeasible([Code.SMEM_BUDGET.at(
            f"the inspector's scans take {need * SCAN_BYTES_PER_ELEMENT} bytes of shared memory ({what}); "
            f"the budget is {smem_budget}",
            "raise options.smem_bytes, or use the plan's direct candidate")])
    return pow2_at_most(fit) if grouped else need


def bucket_passes_us(buckets: int, facts: CostFacts) -> float:
    """What an inspector's passes over its buckets add to the estimate: its histogram and
    starts zeroed (4 bytes a bucket each, at the copy bandwidth) and the prefix sum, one
    program reading and writing every bucket (at `program_gbps`, one program's bandwidth: a
    lower bound, the scan's steps depend on each other). A paged gather's buckets are the
    pages, however few entries it has: the e-graph's estimate, which charges the entries'
    passes, said 9 us for 100 entries over 2^28 pages."""
    zeroed = 2 * 4 * buckets / (facts.copy_bandwidth_gbps * 1e3)
    return zeroed + 2 * 4 * buckets / (facts.program_gbps * 1e3)


WINDOW_ROWS = 32  # a warp's rows: what a window-local (shuffle) gather promises


def build_gather(form: Formulation, m: Gather, smem_budget: int):
    """(GatherPlan, pieces, plan-level fields, prover) of a gather candidate; its kernels'
    shared memory fits `smem_budget` (Infeasible otherwise)."""
    slab = form.regions[0]
    slab_bytes = sum(r.bytes for r in form.regions)
    out_index_stride = m.unit * prod(m.out_shape[m.axis + 1:]) * m.src.esize
    # a gather along an inner axis: consecutive entries are the output's contiguous run (and
    # one piece holds the slab)
    index_major = len(form.regions) == 1 and all(d * slab.eb > out_index_stride for n, _, d in slab.dims if n > 1)
    src_index_stride = m.unit * m.src.strides[m.axis] * m.src.esize
    # a direct gather whose slab is one contiguous run on both sides, no longer than its entry's
    # stride on either (an axis-0 gather's rows, a KV cache's pages), may move it in parts; the
    # shuffle's windows and the executor's entries take whole slabs
    row_like = (len(form.regions) == 1 and not m.index.groups and form.strategy is Strategy.DIRECT
                and len(slab.dims) == 1 and slab.dims[0][1:] == (1, 1)
                and slab_bytes <= min(out_index_stride, src_index_stride))
    parts = solve_row_parts(slab_bytes, slab.eb) if row_like else None
    f = solve_index_major(m.index.count, slab.eb, slab.elems) if index_major else \
        parts or solve_rows(slab_bytes, slab.eb, m.index.count)
    walks = [Walk(r, linear=max(r.elems, 1)) for r in form.regions]
    es = m.src.esize
    rows = m.src.shape[m.axis] // m.unit
    inspector = executor = window = None
    if form.strategy is Strategy.INSPECTOR_EXECUTOR:
        buckets = m.index.groups or (rows if m.index.distribution is Distribution.PAGED
                                     else max(1, cdiv(m.index.count, 128)))
        step = inspector_step(buckets, bool(m.index.groups), smem_budget)
        inspector = Inspector(buckets, GROUP_PASSES if m.index.groups else BUCKET_PASSES, 8 * m.index.count, step)
        executor = Executor(f.rows, "expert" if m.index.groups else "bucket")
    if form.strategy is Strategy.SHUFFLE:
        window = WINDOW_ROWS
    # where index i's slab starts: i * stride on each side (the pieces are relative to it)
    gather = GatherPlan(m.index.count, m.index.distribution.value, m.unit, slab_bytes, f.rows, m.axis, rows,
                        src_index_stride, out_index_stride,
                        m.out_shape, m.index.groups, inspector, executor, window)
    grid = cdiv(m.index.count, f.rows)
    tile: tuple[int, ...] = (f.rows,)
    if f.slab_step:  # a program moves `rows` entries of one step of the slab: (entries, slab elements)
        tile, grid = (f.rows, f.slab_step), grid * cdiv(max(slab.elems, 1), f.slab_step)
    # the slab one index moves, relative to where the index's slab starts on each side
    pieces = [Piece(r.src_offset, r.dst_offset, r.eb, region_dims(r), form.strategy, tile, (grid,),
                    f.num_warps, min(r.eb, 16)) for r in form.regions]
    prover = functools.partial(prove_gather, m.src.shape, m.src.strides, m.axis, m.unit, m.index.count, es, walks)
    return gather, pieces, f, prover
