"""Copy plans: each region of the formulation becomes a piece of the candidate's strategy
(direct flat blocks, TMA boxes, staged or shuffled transpose tiles); the first region is the
core and must take the strategy, later ones (ragged tails) fall back to direct copies."""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd, prod

from legalsat.analyses.tile_layouts import staged_layouts
from legalsat.diagnostics import Code
from legalsat.planner.build.common import pipeline, region_descriptor, region_dims
from legalsat.planner.formulation import Formulation, Region
from legalsat.planner.plan import Piece, SmemLayout
from legalsat.planner.prove import Proof, Walk, prove_copy
from legalsat.planner.solve import Infeasible, solve_linear, solve_tma_box, solve_transpose_tile
from legalsat.protocols.synth import TmaPipelineSpec
from legalsat.targets import Target
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.integers import cdiv, gcd_all, lowbit, pow2_at_least
from legalsat.terms.movement import (
    Copy,
    Interleave,
    interleave_form,
    misaligned_pitch,
    relaid_out,
    sector_misaligned_pitch,
    sector_skewable,
    transposed_pair,
)
from legalsat.terms.strategy import Strategy

TRANSPOSE_SWIZZLE_SPAN = Swizzle.B128.span_bytes  # the widest TMA swizzle


# programs per SM a small piece is split into (its blocks or tiles shrink, down to a floor)
PROGRAMS_PER_SM = 2


def _piece(r: Region, strategy: Strategy, tile: tuple[int, ...], grid: int, num_warps: int,
           vector_bytes: int, **more) -> Piece:
    return Piece(r.src_offset, r.dst_offset, r.eb, region_dims(r), strategy, tile, (grid,), num_warps,
                 vector_bytes, **more)


def _straight_dim(r: Region) -> int | None:
    return next((k for k, (n, s, d) in enumerate(r.dims) if n > 1 and s == 1 and d == 1), None)


# A direct copy of 2-byte elements whose source rows start off 16 bytes while its
# destination's do not reads each row as the aligned 16-byte vectors that hold it and shifts it
# into place in registers (legalsat.kernels.direct), where its loads would otherwise be one
# element wide: on the H100 a column slice of a 4098-wide bf16 matrix from a 2-byte aligned base
# ran at 1.00 of a same-size copy against 0.96 with 2-byte loads (`python -m
# tools.shifted_load_probe`, benchmarks/shifted_load_probe.json). Each thread holds one vector
# and reads its neighbour's; a program moves SHIFT_BLOCK_BYTES (1 x 1024 bf16, 4 warps: within 0.3 %
# of the probe's fastest shape). Other element sizes are not shifted (`... dtypes`,
# benchmarks/shifted_load_dtypes.json, device time): 4- and 8-byte loads already ran at the copy
# limit (46.50 and 46.31 us plain, 46.43 and 46.17 shifted, copy_ 46.37 and 46.17), and the
# 1-byte shift, whose gather goes through shared memory, ran 63.52 us against 52.15 plain.
SHIFT_ELEMENT_BYTES = 2
SHIFT_MIN_RUN_BYTES = 128
SHIFT_BLOCK_BYTES = 2048


def shifted_loads(r: Region) -> bool:
    """True when `r`'s source rows are read as aligned vectors and shifted: elements of
    `SHIFT_ELEMENT_BYTES`, the innermost destination dim contiguous on both sides and at least
    `SHIFT_MIN_RUN_BYTES` long, every destination row starting on 16 bytes and the source's
    not (base, offset or pitch), unless the source is one contiguous run in the destination's
    order from a 16-byte aligned start (the flat copy then loads it as 16-byte vectors: a
    copy of 50257-wide rows into a padded pitch)."""
    big = sorted((k for k, (n, _, _) in enumerate(r.dims) if n > 1), key=lambda k: (r.dims[k][2], r.dims[k][1]))
    if r.eb != SHIFT_ELEMENT_BYTES or not big:
        return False
    inner = big[0]
    n, s, d = r.dims[inner]
    if s != 1 or d != 1 or n * r.eb < SHIFT_MIN_RUN_BYTES or _aligned(r, "dst", inner) < 16:
        return False
    run = 1
    for k in big:  # innermost first: is the source one run in this order?
        if r.dims[k][1] != run:
            break
        run *= r.dims[k][0]
    else:
        return lowbit(gcd(r.src_align, r.src_offset), 16) < 16
    return _aligned(r, "src", inner) < 16


def direct_piece(r: Region, target: Target) -> tuple[Piece, Walk]:
    shift = shifted_loads(r)
    more = {"max_block_bytes": SHIFT_BLOCK_BYTES} if shift else {}
    f = solve_linear(r, min_programs=PROGRAMS_PER_SM * target.sm_count, **more)
    vector = 16 if shift else f.vector_bytes  # shifted: 16-byte loads and stores (the source's through the shift)
    return (_piece(r, Strategy.DIRECT, (f.block,), f.grid, f.num_warps, vector, shifted_loads=shift),
            Walk(r, linear=f.block))


def tma_piece(r: Region, smem: int, target: Target) -> tuple[Piece, Walk]:
    if not r.dims:
        raise Infeasible([Code.RANK.at("a single element has no TMA box",
                                       "nothing to change: it is copied directly")])
    big = [k for k, d in enumerate(r.dims) if d[0] > 1] or [0]
    tr = transposed_pair(r.dims)
    inner = _straight_dim(r)
    if tr is None and inner is None:
        raise Infeasible([Code.INNER_CONTIGUOUS.at("no dim is contiguous in both src and dst, and the copy "
                                                   "is not a transpose", "use the direct plan")])
    if tr:
        a, b = tr
        src_order = (a, b) + tuple(k for k in big if k not in tr)
        dst_order = (b, a) + tuple(k for k in big if k not in tr)
    else:
        src_order = dst_order = (inner,) + tuple(k for k in big if k != inner)
    if len(src_order) > target.tma.max_rank:
        raise Infeasible([Code.RANK.at(f"the formulation has {len(src_order)} dims; TMA takes at most "
                                       f"{target.tma.max_rank}", "make more dims contiguous so they coalesce")])
    # A transpose permutes the landed box in registers and writes the store box back to
    # shared memory across its rows; unswizzled, those accesses are bank-conflicted (on the
    # H100 the bf16 transposes with 512-byte unswizzled boxes ran at 0.24-0.31 of copy, at
    # 0.80-0.94 capped and swizzled: benchmarks/RESULTS.md), so when both
    # transposed dims are long enough, both boxes are capped at the swizzle span and both
    # descriptors swizzle. A short source row (AoS -> SoA) keeps its long destination rows.
    cap = None
    if tr and min(r.dims[k][0] for k in tr) * r.eb >= TRANSPOSE_SWIZZLE_SPAN:
        cap = TRANSPOSE_SWIZZLE_SPAN
    word = min(r.eb, 8)
    # a transpose also holds the store box and, while the box is permuted in registers, a
    # layout-conversion scratch of one box (compiled Gluon kernels: 2 stages + 2 boxes)
    f = solve_tma_box(r, src_order, smem, word, store_buffers=2 if tr else 1, inner_cap_bytes=cap,
                      dst_inner=1 if tr else None)
    box_of = dict(zip(src_order, f.box))
    scale = r.eb // word
    elem_box = {k: (v // scale if k == src_order[0] else v) for k, v in box_of.items()}
    dst_box = tuple(elem_box[k] * (scale if k == dst_order[0] else 1) for k in dst_order)
    swizzles, ways = (Swizzle.NONE, Swizzle.NONE), (1.0, 1.0)
    if cap:
        swizzles = (Swizzle.widest_within(f.box[0] * word), Swizzle.widest_within(dst_box[0] * word))
    if tr:
        lays = [lay for lay in staged_layouts(word, target, rows=max(elem_box[tr[1]], 1),
                                              row_bytes=max(elem_box[tr[0]] * r.eb, 16))
                if lay.swizzle == swizzles[0] and lay.pad_bytes == 0]
        ways = (lays[0].write_ways, lays[0].read_ways) if lays else (None, None)
    descs = (region_descriptor(r, src_order, f.box, "src", r.src_align, target, swizzles[0]),
             region_descriptor(r, dst_order, dst_box, "dst", r.dst_align, target, swizzles[1]))
    pipe = pipeline(TmaPipelineSpec(load_bytes=(f.tile_bytes,), store_bytes=f.tile_bytes, smem_bytes=smem,
                                    stages=f.stages))
    tiles = tuple(elem_box.get(k, 1) for k in range(len(r.dims)))
    grid = prod(cdiv(n, t) for (n, _, _), t in zip(r.dims, tiles))
    # the store side: the box a TMA store reads from, and for a transpose the register
    # permute's layout-conversion scratch (what the solver reserved)
    smem_layout = SmemLayout(f.tile_bytes, f.stages, swizzles[0], 0, ways[0], ways[1],
                             store_buffer_bytes=f.tile_bytes * (2 if tr else 1))
    return (_piece(r, Strategy.TMA, tiles, grid, 4, 16, num_stages=f.stages, descriptors=descs, smem=smem_layout,
                   pipeline=pipe), Walk(r, tiles=tiles))


def transpose_piece(r: Region, strategy: Strategy, target: Target, smem_budget: int) -> tuple[Piece, Walk]:
    """A staged_smem or shuffle tile of a transposing region; a staged tile (with its row
    padding) fits `smem_budget`."""
    tr = transposed_pair(r.dims)
    if tr is None:
        raise Infeasible([Code.NOT_TRANSPOSING.at("the region is not a transpose")])
    a, b = tr
    small = strategy is Strategy.SHUFFLE
    if small and r.eb > 8:  # the e-class may hold narrower forms; this one is what extraction chose
        raise Infeasible([Code.SHUFFLE_WORD.at(f"{r.eb}-byte elements: a warp shuffle exchanges words of at "
                                               "most 8 bytes")])
    if small and (form := interleave_form(r.dims, r.eb)) is not None:
        if form.channels % 2 == 0:  # measured: benchmarks/interleave_probe.json (INTERLEAVE_WARPS)
            raise Infeasible([Code.SHUFFLE_EVEN_CHANNELS.at(
                f"{form.channels} interleaved channels of {r.eb} bytes (an even count)")])
        return interleave_piece(r, form, target)
    # a 1-byte tile with 256-byte runs on both sides takes 64 KiB: measured on the H100 (uint8
    # 8192^2, tools/staged_sweep.py) 256 x 256 runs at 2647 GB/s, 256 x 128 (32 KiB) at 2607
    # a misaligned destination that fits L2 is written plainly (its partly written sectors
    # merge there); a larger one is sector-skewed (legalsat.kernels.staged)
    skew = r.bytes > target.l2_bytes
    f = solve_transpose_tile(r, a, b, 2048 if small else 65536 if r.eb == 1 else 32768, small=small,
                             smem_budget=None if small else smem_budget, skew=skew,
                             min_programs=PROGRAMS_PER_SM * target.sm_count)
    misaligned_rows = misaligned_pitch(r.dims[a][2], r.eb)
    plain_stores = not small and not skew and misaligned_rows
    skewed = (not small and skew and sector_misaligned_pitch(r.dims[a][2], r.eb)
              and sector_skewable(f.tile_b * r.eb, r.dims[b][0], f.tile_b, f.tile_a * r.eb))
    tiles = tuple(f.tile_a if k == a else f.tile_b if k == b else 1 for k in range(len(r.dims)))
    grid = prod(cdiv(n, t) for (n, _, _), t in zip(r.dims, tiles))
    smem = None
    if not small:
        row_bytes = f.tile_a * r.eb
        lays = staged_layouts(min(r.eb, 8), target, rows=f.tile_b, row_bytes=row_bytes) if row_bytes >= 16 else ()
        # the best layout the budget holds: a padded one takes a row's padding more per row, a
        # swizzled one none (Triton's own layout conversion of the tile takes its bytes exactly)
        lay = next((lay for lay in lays if f.tile_b * (row_bytes + lay.pad_bytes) <= smem_budget),
                   lays[0] if lays else None)
        if lay is not None:
            smem = SmemLayout(f.tile_b * (row_bytes + lay.pad_bytes), 1, lay.swizzle, lay.pad_bytes,
                              lay.write_ways, lay.read_ways)
        else:
            smem = SmemLayout(f.tile_a * f.tile_b * r.eb, 1, Swizzle.NONE, 0, None, None)
        if smem.bytes_per_stage > smem_budget:
            raise Infeasible([Code.SMEM_BUDGET.at(f"the staged tile takes {smem.bytes_per_stage} bytes of shared "
                                                  f"memory (its row padding included); the budget is {smem_budget}",
                                                  "raise options.smem_bytes, or use the plan's direct candidate")])
    # a vector is as wide as the run allows and every address it starts at is aligned to: the
    # base, the piece's offset and each other dim's stride (a 16-byte vector from a 2-byte
    # aligned base faults); at least one element
    loads = max(r.eb, min(16, f.tile_a * r.eb, _aligned(r, "src", a)))
    if plain_stores:
        stores = r.eb
    elif skewed:
        # the skewed tile starts each destination row's segment on a sector of its own
        # (legalsat.kernels.staged): the rows' pitch and offsets do not limit its vectors, the
        # base's alignment does; stores of one element are the plain tile's (nothing to skew for)
        stores = max(r.eb, min(16, f.tile_b * r.eb, gcd(16, r.dst_align)))
        skewed = stores > r.eb
    else:
        stores = max(r.eb, min(16, f.tile_b * r.eb, _aligned(r, "dst", b)))
    return (_piece(r, strategy, tiles, grid, f.num_warps, loads, store_vector_bytes=stores, smem=smem,
                   skewed_stores=skewed),
            Walk(r, tiles=tiles))


# A shuffle plan of a transpose between planes and an odd number of interleaved channels
# (NCHW <-> NHWC with 3 channels: `terms.movement.interleave_form`) runs the interleave kernel
# (legalsat.kernels.interleave): each thread moves whole 16-byte vectors of pixels and regroups
# them in its own registers. A program takes INTERLEAVE_GROUPS_PER_THREAD vectors of pixels a
# thread, INTERLEAVE_WARPS warps (a few KiB a program, as the staged tiles of small sides). Even
# channel counts get no shuffle plan: the staged tile, which holds them whole (a power of two
# with no padding), ran as fast or faster (device time, `python -m tools.interleave_probe`: 4 uint8
# channels 3.13 / 3.38 us staged against 4.13 / 3.71 interleaved, NCHW -> NHWC / back; 6 fp16
# 4.44 / 4.48 against 5.64 / 4.97; 8 fp32 (AoS <-> SoA) 363.8 / 361.3 against 363.7 / 360.2).
INTERLEAVE_GROUPS_PER_THREAD = 2
INTERLEAVE_WARPS = 4


def interleave_piece(r: Region, f: Interleave, target: Target) -> tuple[Piece, Walk]:
    """The interleave kernel's piece: the channels whole (a power of two), a run of pixels of
    INTERLEAVE_GROUPS_PER_THREAD vectors a thread, halved while the programs would not give
    each SM PROGRAMS_PER_SM (down to one vector a thread; a shorter dim, to one vector), and
    fewer warps for a run of fewer than one vector a thread of INTERLEAVE_WARPS warps. Its
    vectors are as wide as both sides' group starts are aligned: a planar run starts where the
    base, offset and other strides allow; an interleaved group of whole vectors of pixels (its
    channels' bytes times a multiple of 16) where the base, offset and the strides of the dims
    beside the pair allow."""
    vec = 16 // r.eb
    pixels = r.dims[f.pixel][0]
    run = max(vec, min(vec * 32 * INTERLEAVE_WARPS * INTERLEAVE_GROUPS_PER_THREAD, pow2_at_least(pixels)))
    others = prod(n for k, (n, _, _) in enumerate(r.dims) if k not in (f.pixel, f.channel))
    while run > vec * 32 * INTERLEAVE_WARPS and others * cdiv(pixels, run) < PROGRAMS_PER_SM * target.sm_count:
        run //= 2
    # no more warps than a vector of pixels a thread: a block spread over more threads than it has
    # vectors is laid out with narrower accesses (and, in tl, through shared memory)
    warps = max(1, min(INTERLEAVE_WARPS, run // (vec * 32)))
    tiles = tuple(pow2_at_least(f.channels) if k == f.channel else run if k == f.pixel else 1
                  for k in range(len(r.dims)))
    grid = prod(cdiv(n, t) for (n, _, _), t in zip(r.dims, tiles))
    planar, interleaved = ("src", "dst") if f.to_interleaved else ("dst", "src")
    width = {planar: _aligned(r, planar, f.pixel), interleaved: _aligned(r, interleaved, f.pixel, f.channel)}
    loads, stores = (max(r.eb, min(16, width[side])) for side in ("src", "dst"))
    return (_piece(r, Strategy.SHUFFLE, tiles, grid, warps, loads, store_vector_bytes=stores),
            Walk(r, tiles=tiles))


@dataclass(frozen=True)
class FieldsCost:
    """What a copy's core piece's fields make of the e-graph's estimate (which assumes the
    strategy's full share): its bytes at `share` permille of that, and never less than
    `programs_us` (its waves of programs over the SMs past the first, at `CostFacts.program_ns`
    each). `why` says where the share comes from, in words."""

    share: int
    why: str
    programs: int
    programs_us: float


def _lookup(table: tuple[tuple[int, int], ...], x: int) -> int:
    """The permille of the first row whose key is at least `x` (1000 past the last)."""
    return next((v for k, v in table if x <= k), 1000)


def fields_cost(core: Piece, target: Target) -> FieldsCost | None:
    """A TMA or staged core piece's `FieldsCost` (None for other strategies): a transposing
    TMA box by the runs its store writes (`CostFacts.tma_dst_run`), a staged tile by its bytes
    (`CostFacts.staged_tile`). Measured on the H100 under options.smem_bytes from 1 KiB up
    (`benchmarks/bench_budget.py`, benchmarks/budget_results.json): 8 x 64 bf16 boxes (16-byte
    store runs) ran at 0.32 of the copy bandwidth where 64 x 64 ran at 0.91, 1 KiB staged tiles
    at 0.80-0.87 where 32 KiB ones ran at 0.94-1.00, and 8 x 8 boxes took 636 us for 128 MiB,
    80 ns per box per SM."""
    c = target.cost
    programs = prod(core.grid)
    # the launch's own time covers one wave of programs (launch-bound plans are ranked by
    # what their longest program adds: legalsat.planner.rank); each further wave adds its time
    floor = (cdiv(programs, target.sm_count) - 1) * c.program_ns * 1e-3
    eb = core.element_bytes
    if core.strategy is Strategy.TMA:
        tr = transposed_pair((d.extent, d.src_stride, d.dst_stride) for d in core.dims)
        if tr is None:
            return FieldsCost(1000, "straight boxes", programs, floor)
        run = min(core.tile[tr[1]], core.dims[tr[1]].extent) * eb
        share = _lookup(c.tma_dst_run, run)
        fits = prod(d.extent for d in core.dims) * eb <= target.l2_bytes
        if fits:
            share = (1000 + share) // 2
        why = f"the store box writes {run}-byte runs" + (" (the destination fits L2)" if fits and share < 1000 else "")
        return FieldsCost(share, why, programs, floor)
    if core.strategy is Strategy.STAGED_SMEM:
        # a tile under the table's first row takes its share: what bounds such tiles is their
        # number (`program_ns`), measured: 256- and 512-byte tiles ran at 0.29 and 0.57 of the
        # copy bandwidth, their programs' floor
        tile = prod(min(t, d.extent) for t, d in zip(core.tile, core.dims)) * eb
        return FieldsCost(_lookup(c.staged_tile, tile), f"a {tile}-byte tile", programs, floor)
    return None


def fields_us(pieces: list[Piece], egraph_us: float, moved_bytes: int, target: Target) -> float | None:
    """A copy plan's estimate once its fields are solved (None: the e-graph's stands): the
    core piece's share of the moved bytes taken at `fields_cost`'s share, and at least the
    launch plus the core's programs. Invariant: never below the e-graph's estimate."""
    core = pieces[0]
    fc = fields_cost(core, target)
    if fc is None:
        return None
    core_bytes = 2 * prod(d.extent for d in core.dims) * core.element_bytes
    frac = min(1.0, core_bytes / moved_bytes) if moved_bytes else 1.0
    launch = target.cost.launch_ns * 1e-3
    bytes_us = max(egraph_us - launch, 0.0) * (1 + frac * (1000 / fc.share - 1))
    return max(egraph_us, launch + bytes_us, launch + fc.programs_us)


def _aligned(r: Region, side: str, *within: int) -> int:
    """The largest power of two (at most 16) dividing every address a run on `side` starts at:
    its base alignment, the piece's offset and, in bytes, the strides of the dims other than
    those the run spans (`within`: its contiguous dim, or more)."""
    align, offset = (r.src_align, r.src_offset) if side == "src" else (r.dst_align, r.dst_offset)
    strides = [(s if side == "src" else d) * r.eb for k, (n, s, d) in enumerate(r.dims) if k not in within and n > 1]
    return lowbit(gcd_all((align, offset, *strides)), 16)


def build_copy(form: Formulation, smem: int, target: Target) -> tuple[list[Piece], list[Walk]]:
    """The pieces of a copy plan and how each is walked (for the proof)."""
    pieces, walks = [], []
    for i, r in enumerate(form.regions):
        try:
            if form.strategy is Strategy.DIRECT:
                piece, walk = direct_piece(r, target)
            elif form.strategy is Strategy.TMA:
                piece, walk = tma_piece(r, smem, target)
            else:
                piece, walk = transpose_piece(r, form.strategy, target, smem)
        except Infeasible:
            if i == 0:
                raise
            piece, walk = direct_piece(r, target)
        pieces.append(piece)
        walks.append(walk)
    return pieces, walks


def prove_copy_plan(m: Copy, form: Formulation, walks: list[Walk]) -> Proof:
    """The copy plan's proof, against the request with the plan's relayouts applied."""
    strides = {"src": m.src.strides, "dst": m.dst.strides}
    es = m.src.esize
    for rl in form.relayouts:  # the plan moves into the re-allocated layout
        new = relaid_out(m.src.shape, strides[rl.side], es, rl.old_bytes, rl.new_bytes)
        if new is None:
            raise Infeasible([Code.RELAYOUT.at()])
        strides[rl.side] = new
    return prove_copy(m.src.shape, list(strides["src"]), list(strides["dst"]), es, walks)
