"""Why each plan ranks where it does (`options.explain`), in words a kernel engineer reads.

    explain(req, plans, not_returned, bound) -> the plans, each with its `explain` lines

The first line is the plan's headline: what dominates its estimate. Then the estimate taken
apart (the target's launch time, and the bytes moved at the bandwidth the cost model gives
this plan: the efficiency it implies, next to the target's table for its access width), the
memory-side facts the estimate rests on (access widths, 32-byte sector use of the contiguous
runs, shared-memory bank-conflict ways, TMA boxes and stages, the inspector's passes,
launches), its rank against the others, and for each solved field the constraint that is
tight at the solution (the one that stopped it from growing).

Invariant: every number is read from the plan, its pieces or the target's cost facts; no
figure is recomputed with a model of its own.
"""

from __future__ import annotations

import dataclasses
import math

from legalsat.planner.build.copy import fields_cost
from legalsat.planner.build.gather import bucket_passes_us
from legalsat.planner.build.tile import WalkCost, walk_cost
from legalsat.planner.plan import GatherPlan, Piece, Plan
from legalsat.planner.rank import (
    FIXED_LATENCY,
    LAUNCH_BOUND,
    launch_bound,
    launch_key_us,
    longest_program_bytes,
    longest_program_us,
)
from legalsat.planner.request import PlanRequest
from legalsat.planner.rules.strategies import GROUP_SORT_EFFICIENCY, GROUP_SORT_LAUNCHES, INSPECTOR_LAUNCHES
from legalsat.planner.solve import (
    INDEX_MAJOR_BLOCK_BYTES,
    INDEX_MAJOR_ENTRIES,
    INDEX_MAJOR_WARPS,
    SHORT_ROW_BYTES,
    SHORT_ROWS_WARPS,
    SLAB_PART_BYTES,
    SLAB_PART_WARPS,
    linear_warps,
    rows_block_bytes,
    rows_warps,
    transpose_warps,
    warps_for,
)
from legalsat.terms.integers import cdiv
from legalsat.terms.movement import Gather, MovementKind, interleave_form
from legalsat.terms.smem import tma_pipeline_bytes
from legalsat.terms.strategy import Strategy

SECTOR = 32  # bytes of a DRAM/L2 sector: a warp's access moves whole sectors


def explain(req: PlanRequest, plans: tuple[Plan, ...] | list[Plan], not_returned: int,
            bound: list[bool]) -> tuple[Plan, ...]:
    """`plans` (best first) with their explanations; `not_returned`: candidates left out by
    options.max_plans; `bound`: which were ranked as launch-bound (`rank.rank_plans`)."""
    return tuple(dataclasses.replace(p, explain=_lines(req, p, i, len(plans), plans[0], not_returned, bound[i],
                                                        bound[0]))
                 for i, p in enumerate(plans))


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _width_eff(req: PlanRequest, width: int) -> int:
    table = dict(req.target.cost.by_width)
    return table.get(width, table[max(w for w in table if w <= max(width, min(table)))])


def parted_rows(gather: GatherPlan, piece: Piece) -> bool:
    """Whether a gather piece's 2-D tile (entries, slab elements) is one entry's slab in parts
    (`solve_row_parts`: the slab lies within its entry's stride in the output, and a program
    moves less than all of it) rather than an index-major block (entries along the output's
    contiguous run, `solve_index_major`; with one entry and the whole slab a program, the two
    are the same)."""
    tile = piece.tile
    return (len(tile) == 2 and tile[0] == 1 and gather.out_index_stride_bytes >= gather.slab_bytes
            and tile[1] * piece.element_bytes < gather.slab_bytes)


def _runs(piece: Piece, gather: GatherPlan | None = None) -> tuple[int, int]:
    """Bytes of the contiguous run a program accesses on each side. A copy: the unit-stride
    dim's extent, cut to the tile's extent along it where the tile spans the piece's dims. A
    row gather (tile: rows per program): each entry's slab, whole, on both sides; in parts
    (tile: 1 entry, slab elements), cut to its part. An index-major gather (tile: entries, slab
    step): an entry's element on the source side, the program's entries on the output side
    (they are its contiguous run)."""
    eb = piece.element_bytes
    if gather is not None and parted_rows(gather, piece):
        src, dst = _runs(dataclasses.replace(piece, tile=(1,)), gather)
        return min(src, piece.tile[1] * eb), min(dst, piece.tile[1] * eb)
    if gather is not None and len(piece.tile) == 2:
        return eb, min(gather.index_count, piece.tile[0]) * eb
    # a copy's tile spans its dims (cut the run to it); a row gather's tile counts entries
    tiled = gather is None and len(piece.tile) == len(piece.dims)

    def run(stride_of) -> int:  # noqa: ANN001
        unit = [min(d.extent, piece.tile[k]) if tiled else d.extent for k, d in enumerate(piece.dims)
                if stride_of(d) == 1]
        return (unit[0] if unit else 1) * eb
    return run(lambda d: d.src_stride), run(lambda d: d.dst_stride)


def _sector_use(src_run: int, dst_run: int) -> str:
    """What runs of these lengths make of 32-byte sectors (a run that starts on a sector)."""
    runs = f"contiguous runs {src_run} B (src) and {dst_run} B (dst)"
    worst = min(src_run, dst_run, key=lambda r: r / (SECTOR * math.ceil(r / SECTOR)))
    if worst % SECTOR == 0:
        return f"{runs}: whole 32-byte sectors"
    touched = SECTOR * math.ceil(worst / SECTOR)
    return f"{runs}: a {worst}-byte run uses {worst} of the {touched} bytes of the sectors it touches (at best)"


def _lines(req: PlanRequest, p: Plan, rank: int, of: int, first: Plan, not_planned: int, bound: bool,
           first_bound: bool) -> tuple[str, ...]:
    c = req.target.cost
    us = p.cost.estimated_us
    launches = len(p.pieces) + (len(p.gather.inspector.passes) if p.gather and p.gather.inspector else 0)
    # what the estimate charges for them: INSPECTOR_LAUNCHES for an inspector-executor (its
    # short passes), one for every other plan (the cost rules price a core and its tail
    # pieces as one movement)
    inspector = p.gather is not None and p.gather.inspector is not None
    charged = INSPECTOR_LAUNCHES if inspector else 1
    launch_us = charged * c.launch_ns / 1000
    sort_us = _group_sort_us(req, p)
    buckets_us = bucket_passes_us(p.gather.inspector.buckets, c) if inspector else 0.0
    bw_us = max(us - launch_us - sort_us - buckets_us, 0.0)
    # the efficiency the estimate implies: bytes moved over (time x the target's copy bandwidth)
    eff = p.cost.bytes_moved / (bw_us * 1e-6 * c.copy_bandwidth_gbps * 1e9) if bw_us > 0 else None
    core = p.pieces[0] if p.pieces else None
    facts: list[str] = []
    elementwise = None  # the side a direct plan reads or writes element by element, if one
    if core is not None:
        loads, stores = core.vector_bytes, core.store_vector_bytes or core.vector_bytes
        if core.shifted_loads:  # the estimate's access width is the source's own alignment
            eb = core.element_bytes
            facts.append(f"{loads}-byte loads and stores: the misaligned source rows are read as the aligned "
                         f"16-byte vectors that hold them and shifted into place in registers; the estimate "
                         f"takes {eb}-byte accesses ({_width_eff(req, eb) / 10:.0f}% of copy bandwidth in the "
                         "target's table), the H100 ran such a copy at the copy limit")
        else:
            facts.append(f"{loads}-byte loads, {stores}-byte stores (the target's table: {loads}-byte accesses run "
                         f"at {_width_eff(req, loads) / 10:.0f}% of copy bandwidth)")
        if core.skewed_stores:
            facts.append("the destination rows start off a 32-byte sector and the destination exceeds L2: each "
                         "row's segment is stored from a sector of its own (the tile loads a sector's worth of extra "
                         "source rows and shifts each column by its row's offset), so no sector is written in part")
        if core.dims:
            src_run, dst_run = _runs(core, p.gather)
            inner = core.dims[-1]  # a direct piece walks its dims in order, the last innermost
            scattered = [side for side, st in (("src", inner.src_stride), ("dst", inner.dst_stride)) if st != 1]
            if p.strategy == Strategy.DIRECT and scattered and len(scattered) < 2 and core.element_bytes < SECTOR:
                elementwise = scattered[0]
                facts.append(f"the {scattered[0]} side is accessed element by element across its rows: each "
                             f"{core.element_bytes}-byte access uses {core.element_bytes}/{SECTOR} of a 32-byte sector "
                             f"(the target's element-wise efficiency for {core.element_bytes}-byte "
                             f"elements: {c.scatter_share(core.element_bytes) / 10:.0f}%)")
            elif p.strategy == Strategy.SHUFFLE and (form := interleave_form(
                    ((d.extent, d.src_stride, d.dst_stride) for d in core.dims), core.element_bytes)) is not None:
                planar, dense = ("src", "dst") if form.to_interleaved else ("dst", "src")
                facts.append(f"interleave form: {form.channels} {planar} planes and the {dense} side's interleaved "
                             f"channels (each element's {form.channels} channels together, a dense run); each "
                             "thread moves whole 16-byte vectors of both and regroups them in its own registers")
            else:
                facts.append(_sector_use(src_run, dst_run))
    if p.smem is not None:
        s = p.smem
        ways = [f"{w:g}-way {k}" for k, w in (("writes", s.write_conflict_ways), ("reads", s.read_conflict_ways))
                if w is not None]
        conflict = ("bank conflicts not modelled" if not ways else "conflict-free" if all(
            w in (None, 1.0) for w in (s.write_conflict_ways, s.read_conflict_ways)) else "bank-conflicted")
        # the headline's words for it ("bank conflicts shared memory" read as a typo)
        smem_words = {"bank conflicts not modelled": "shared memory (bank conflicts not modelled)"}.get(
            conflict, f"{conflict} shared memory")
        facts.append(f"shared memory: {_fmt_bytes(s.bytes_per_stage)} x {s.stages} stage(s), swizzle {s.swizzle.value}, "
                     f"{s.padding_bytes} B row padding; {conflict}" + (f" ({', '.join(ways)})" if ways else ""))
    if p.descriptors:
        d = p.descriptors[0]
        facts.append(f"TMA: {len(p.descriptors)} descriptor(s), box {list(d.tma.box_dim)} (innermost first, in "
                     f"{d.tma.dtype.name} elements), {p.num_stages} stage(s)")
    if p.gather is not None:
        g = p.gather
        parts = cdiv(g.slab_bytes, core.tile[1] * core.element_bytes) if core and parted_rows(g, core) else 1
        facts.append(f"gather: {g.index_count} entries of {g.slab_bytes} B, "
                     + (f"each in {parts} parts, a program each" if parts > 1 else f"{g.rows_per_program} per program"))
        if g.inspector is not None:
            facts.append(f"inspector: {len(g.inspector.passes)} passes ({', '.join(g.inspector.passes)}) over "
                         f"{_fmt_bytes(g.inspector.index_bytes)} of (index, position) pairs")
    facts.append(f"launches: {launches} kernel(s) of {c.launch_ns / 1000:g} us each"
                 + (f" (the estimate charges {charged}: " + ("the inspector's passes are short kernels)" if inspector
                    else "the cost rules price the pieces as one movement)") if charged != launches else ""))

    fc = fields_cost(core, req.target) if core is not None and p.kind == MovementKind.COPY else None
    programs_bound = False
    if fc is not None:
        if fc.share < 1000:
            facts.append(f"its fields: {fc.why} (the target's measured table: {fc.share / 10:.0f}% of the strategy's "
                         "share of copy bandwidth)")
        programs_bound = launch_us + fc.programs_us >= us - 1e-3 and fc.programs_us > 0
        if fc.programs_us > 0:
            facts.append(f"programs: {fc.programs:,} over {req.target.sm_count} SMs, at least {c.program_ns} ns each on "
                         f"an SM past the launch's first wave: {fc.programs_us:.2f} us at the least")
    walk = _walk_cost(req, p)
    if walk is not None:  # a tile load: its own model (legalsat.planner.build.tile.walk_cost)
        if walk.fixed_us >= max(walk.bandwidth_us, walk.latency_us):
            headline = f"fixed-cost-bound: the walk's fixed part is {walk.fixed_us:.2f} of its {us:.2f} us"
        elif walk.latency_us > walk.bandwidth_us:
            headline = (f"latency-bound: {math.prod(p.tile_load.grid)} tiles over {req.target.sm_count} SMs, one "
                        f"TMA round trip per {p.num_stages} tiles in flight")
        else:
            headline = (f"bandwidth-bound: each tile read once at {walk.efficiency / 10:.0f}% of copy bandwidth "
                        f"({walk.fact})")
            if p.smem is not None and p.strategy == Strategy.TMA:
                headline += f", {smem_words}"
    elif sort_us and sort_us >= max(launch_us, bw_us):
        headline = (f"sort-dominated: sorting the slots by group ({GROUP_SORT_LAUNCHES} launches) is {sort_us:.2f} "
                    f"of its {us:.2f} us")
    elif programs_bound and fc.programs_us > launch_us:
        headline = (f"program-bound: {fc.programs:,} programs (tiles or boxes) over {req.target.sm_count} SMs at "
                    f"{c.program_ns} ns each are {fc.programs_us:.2f} of its {us:.2f} us: a larger options.smem_bytes "
                    "takes fewer, larger ones")
    elif eff is None or launch_us >= bw_us:  # "launch-bound" is the ranking's word (rank.launch_bound)
        word = "launch-bound" if launch_bound(p, c) else "launch-dominated"
        headline = f"{word}: {charged} launch(es) are {launch_us:.2f} of its {us:.2f} us"
    else:
        what = facts[0].split(" (")[0] if core is not None else "its accesses"
        if elementwise is not None:
            what += f", the {elementwise} side element by element"
        if p.smem is not None and p.strategy in (Strategy.STAGED_SMEM, Strategy.TMA):
            what += f", {smem_words}"
        if p.gather is not None and p.gather.inspector is not None:
            what += f", after {len(p.gather.inspector.passes)} inspector passes"
        if sort_us:
            what += f", after sorting the slots by group ({sort_us:.2f} us)"
        # the share is the accesses' own; the plan's TB/s also pays its launch
        headline = f"bandwidth-bound at {_share(eff)} of copy bandwidth past its launch: {what}"
    if bound and p.pieces:
        most = _fmt_bytes(longest_program_bytes(p))  # each side's bytes (the whole movement's are a sum)
        facts.append(f"largest program: {most} read and {most} written alone at {c.program_gbps} GB/s adds "
                     f"{longest_program_us(p, c):.2f} us to its launch")
    rule = f"plans within {LAUNCH_BOUND:g} x one launch rank by estimate + largest program"
    if bound and not launch_bound(p, c):
        rule += " (and this one, estimated below what such a plan is ranked by)"
    if rank == 0:
        standing = f"ranked 1 of {of}" + (
            f" (options.max_plans {req.options.max_plans}: {not_planned} more candidate(s) not returned)" if not_planned
            else " (the only plan)" if of == 1 else "")
        if bound and of > 1:
            standing += f": {rule}, {launch_key_us(p, c):.3f} us"
    elif bound and first_bound:
        key, first_key = launch_key_us(p, c), launch_key_us(first, c)
        standing = f"ranked {rank + 1} of {of}: {rule}, {key:.3f} us against the first plan's {first_key:.3f}"
        if p.strategy in FIXED_LATENCY and first.strategy not in FIXED_LATENCY:
            standing += ("; TMA pipelines and warp shuffles come after the pointer kernels (their set-up "
                         "and exchange rounds are a fixed latency)")
        elif round(key, 3) == round(first_key, 3):
            standing += " (a tie: the order the e-graph offered the strategies decides)"
    else:
        best_us = first.cost.estimated_us
        standing = f"ranked {rank + 1} of {of}: +{us - best_us:.2f} us ({us / best_us - 1:.0%}) over the best" \
            if best_us else f"ranked {rank + 1} of {of}"
    if walk is not None:
        read = (f"{_fmt_bytes(walk.read_bytes)} read once at {c.copy_bandwidth_gbps} GB/s x {walk.efficiency / 10:.0f}%"
                f" = {walk.bandwidth_us:.2f} us")
        if walk.latency_us > walk.bandwidth_us:
            read = f"{walk.latency_us:.2f} us of TMA round trips (more than the {read})"
        estimate = (f"estimated {us:.2f} us = the walk's fixed part {walk.fixed_us:.2f} us (launch, pipeline fill, "
                    f"tail) + {read}; the tiles go to shared memory, not back to global memory")
    elif eff is not None:
        keys = _fmt_bytes(p.gather.index_count * c.sort_bytes_per_slot) if sort_us else ""
        sort = (f" + sorting the slots by group {sort_us:.2f} us ({GROUP_SORT_LAUNCHES} launches, {keys} of keys "
                f"and values read and {keys} written at {GROUP_SORT_EFFICIENCY / 10:.0f}%)" if sort_us else "")
        # bytes_moved counts both sides: said as a sum, where the lines above give each side's
        if buckets_us:
            sort += (f" + the inspector's passes over its {p.gather.inspector.buckets} buckets {buckets_us:.2f} us "
                     "(zeroed, and one program's prefix sum)")
        estimate = (f"estimated {us:.2f} us = launches {launch_us:.2f} us{sort} + {_fmt_bytes(p.cost.bytes_moved)} "
                    f"moved (read + written) at {c.copy_bandwidth_gbps} GB/s x {_share(eff)}")
    else:
        estimate = f"estimated {us:.2f} us"
    lines = [headline, standing, estimate + f" ({c.source})", *facts]
    lines += [f"limit: {t}" for t in _limits(req, p)]
    lines += [f"needs {r.side} stride {r.old_stride_bytes} -> {r.new_stride_bytes} bytes (allow_padding)"
              for r in p.relayout]
    return tuple(lines)


def _share(x: float) -> str:
    """A share as a percentage with the digits it needs (0.3%, not 0%)."""
    return f"{x:.0%}" if x >= 0.095 else f"{x:.2g}" if x < 1e-4 else f"{100 * x:.2g}%"


def _group_sort_us(req: PlanRequest, p: Plan) -> float:
    """What a direct gather's estimate charges to sort grouped (MoE) slots by group first (the
    `gather-sorted-by-group` rule: GROUP_SORT_LAUNCHES launches and `sort_bytes_per_slot` bytes
    a slot read and written at GROUP_SORT_EFFICIENCY of the copy bandwidth); 0 for other plans."""
    m = req.movement
    if p.strategy != Strategy.DIRECT or p.gather is None or not isinstance(m, Gather) or not m.index.groups:
        return 0.0
    c = req.target.cost
    moved = 2 * p.gather.index_count * c.sort_bytes_per_slot  # read and written
    return (GROUP_SORT_LAUNCHES * c.launch_ns + moved * 1000 / (GROUP_SORT_EFFICIENCY * c.copy_bandwidth_gbps)) / 1000


def _walk_cost(req: PlanRequest, p: Plan) -> WalkCost | None:
    """A tile load's estimate in its parts, as the planner made it (None for other plans)."""
    if p.tile_load is None or p.smem is None:
        return None
    return walk_cost(req.target, p.strategy, math.prod(p.tile_load.grid), p.smem.bytes_per_stage, p.num_stages,
                     p.vector_bytes)


def _limits(req: PlanRequest, p: Plan) -> list[str]:
    """For each solved field of the core piece, the constraint that is tight at its value."""
    out: list[str] = []
    core = p.pieces[0] if p.pieces else None
    if core is None or not core.dims:
        return out
    eb = core.element_bytes
    extents = [d.extent for d in core.dims]
    tile = list(core.tile)
    row_gather = p.gather is not None and len(core.tile) == 1
    if p.gather is not None and parted_rows(p.gather, core):  # solve_row_parts
        parts = cdiv(p.gather.slab_bytes, tile[1] * eb)
        out.append(f"slab part {tile[1]} x {eb} B: one entry a program, its {p.gather.slab_bytes}-byte slab in "
                   f"{parts} parts of at most {SLAB_PART_BYTES} B (slabs of 16-byte elements over that are split), "
                   f"{SLAB_PART_WARPS} warps")
        return out
    if p.gather is not None and not row_gather:  # index-major: (entries, slab elements) a program
        out.append(f"entries {tile[0]} x slab step {tile[1]}: at most {INDEX_MAJOR_ENTRIES} entries and "
                   f"{_fmt_bytes(INDEX_MAJOR_BLOCK_BYTES)} per program, {INDEX_MAJOR_WARPS} warps")
        return out
    if row_gather:  # a gather's program takes rows (index entries) of one slab each
        g = p.gather
        rows_bytes = g.rows_per_program * g.slab_bytes
        why = (f"the {g.index_count} entries" if g.rows_per_program >= g.index_count else
               f"{g.rows_per_program} x {g.slab_bytes} B = {_fmt_bytes(rows_bytes)} per program (at most "
               f"{_fmt_bytes(rows_block_bytes(g.slab_bytes))} for {g.slab_bytes}-byte rows, or one slab)")
        out.append(f"rows_per_program {g.rows_per_program}: {why}")
        tile = [g.rows_per_program * g.slab_bytes // max(eb, 1)]
    elif len(tile) == 1 and len(extents) != 1 or p.strategy == Strategy.DIRECT and len(tile) == 1:
        elems = math.prod(extents)
        block = tile[0]
        if block >= elems:
            why = f"the piece's {elems} elements (a power of two covering them)"
        else:
            why = f"at most {_fmt_bytes(block * eb)} per program ({block} elements of {eb} B)"
        out.append(f"block {block}: {why}")
    elif len(tile) == len(extents) and p.tile_load is None:  # a tile load's tile is the request's own
        for k, (t, n) in enumerate(zip(tile, extents)):
            if t == 1:
                continue
            if t >= n:
                why = f"the extent {n}" + (" (a power of two covering it)" if t > n else "")
            elif p.descriptors and t == 256:
                why = "a TMA box dim holds at most 256 elements"
            elif p.smem is not None and p.smem.swizzle.value != "none" and k == len(tile) - 1 and \
                    t * eb == int(p.smem.swizzle.value.split("B")[0]):
                why = f"the {p.smem.swizzle.value} swizzle span ({t} x {eb} B)"
            elif p.smem is not None:
                why = f"the tile's bytes: {_fmt_bytes(math.prod(tile) * eb)} per stage"
            else:
                why = "the tile's bytes per program"
            out.append(f"tile dim {k} = {t} of {n} {eb}-byte elements: {why}")
    if p.smem is not None and p.smem.stages > 1:
        store = p.smem.store_buffer_bytes or 0
        deeper = p.smem.stages + 1  # a TMA pipeline's stages hold mbarriers too, as solved
        more = (tma_pipeline_bytes(deeper, p.smem.bytes_per_stage) if p.descriptors
                else deeper * p.smem.bytes_per_stage) + store
        why = (f"one more would need {_fmt_bytes(more)} of the {_fmt_bytes(p.smem_budget_bytes)} shared-memory budget"
               if more > p.smem_budget_bytes else "the pipeline's depth cap (more stages do not add bandwidth)")
        # the stage's own bytes (the shared-memory line's), the store buffer named beside them
        beside = f" + a {_fmt_bytes(store)} store buffer" if store else ""
        out.append(f"stages {p.smem.stages} of {_fmt_bytes(p.smem.bytes_per_stage)}{beside}: {why}")
    tile_bytes = math.prod(tile) * eb
    if row_gather and p.gather.slab_bytes <= SHORT_ROW_BYTES:  # solve_rows' short rows
        if p.num_warps == rows_warps(p.gather.slab_bytes, tile_bytes):
            out.append(f"num_warps {p.num_warps}: by the program's {_fmt_bytes(tile_bytes)} (32 bytes a thread, "
                       f"at most {SHORT_ROWS_WARPS} warps)")
        return out
    # the warps rules of legalsat.planner.solve (TMA plans and skewed tiles choose otherwise)
    if p.strategy == Strategy.DIRECT and len(tile) == 1 and p.gather is None:
        if p.num_warps == linear_warps(tile_bytes, eb):
            out.append(f"num_warps {p.num_warps}: by the block's {_fmt_bytes(tile_bytes)} (one 16-byte vector a "
                       "thread, at most 8 warps for elements under 16 bytes, 16 for 16-byte words)")
    elif p.num_warps == (transpose_warps if p.strategy == Strategy.STAGED_SMEM else warps_for)(tile_bytes):
        out.append(f"num_warps {p.num_warps}: by the tile's {_fmt_bytes(tile_bytes)} (4 warps up to 8 KiB, 8 beyond"
                   + (", 32 for a 32 KiB staged tile, 16 for a 64 KiB one)" if p.strategy == Strategy.STAGED_SMEM
                      else ")"))
    return out
