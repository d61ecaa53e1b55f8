"""Tile-load plans: the walk the e-graph chose (dims coalesced, unit and broadcast dims out)
becomes a TMA descriptor (dims past rank 5 that the tile does not span folded into one, as
CuTe folds them), boxes that tile each tile exactly (z3 picks the swizzle, the boxes and the
stages under the shared-memory budget), the stage layout those boxes land in, the consumer's
verdict on it (the bank model; for wgmma operands the matrix-descriptor fields, checked
element by element), the verified load pipeline, and an estimate per tile.

A direct plan loads the same tiles with pointer loads into the same kind of stage layout.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from legalsat.analyses.tile_layouts import stage_read_ways
from legalsat.analyses.wgmma import ELEMENTS, K_BITS, READ_BITS, base_offset, instruction_ns, operand_fields
from legalsat.diagnostics import Code, Diagnostic
from legalsat.planner.build.common import checked, pipeline, placeholder_address
from legalsat.planner.formulation import Formulation
from legalsat.planner.plan import Dim, KSlice, Piece, SmemLayout, TileBox, TileLoadPlan, WgmmaOperand
from legalsat.planner.prove import prove_tile_walk
from legalsat.planner.rules.program import tile_walk_order
from legalsat.planner.solve import FieldProblem, Infeasible, z3
from legalsat.protocols.synth import TmaPipelineSpec, fit_stages
from legalsat.targets import Target
from legalsat.terms.descriptor import Swizzle, TmaDescriptor
from legalsat.terms.integers import cdiv, gcd_all, lowbit
from legalsat.terms.movement import Consumer, LoadTile, Major
from legalsat.terms.smem import LayoutDim, StageLayout
from legalsat.terms.strategy import Strategy

MAX_BOX = 256
MAX_DESCRIPTOR_RANK = 5
SWIZZLE_ROWS = 8  # the rows of one swizzle atom (the pattern repeats every 8 x 16-byte chunks)
TMA_SMEM_ALIGN = 128  # a TMA copy's shared-memory destination is 128-byte aligned


@dataclass(frozen=True)
class WalkDim:
    """One dim of the extracted walk (a descriptor dim): tensor extent, tile extent, src
    stride; the request dims it walks (outermost first), how a tile index lands at a position
    along it (`parts`), and how tile positions give its coordinate (`coords`)."""

    extent: int
    tile: int
    stride: int
    parts: tuple[tuple[int, int], ...]
    coords: tuple[tuple[int, int], ...]


def walk_dims(m: LoadTile, form: Formulation) -> list[WalkDim]:
    """The formulation's dims (outermost first) matched to the request dims they merged."""
    shape, tile, strides = m.src.shape, m.tile, m.src.strides
    order = [k for k in tile_walk_order(m)
             if not (shape[k] == 1 and tile[k] == 1) and not (form.broadcast and shape[k] > 1 and strides[k] == 0)]
    out, i = [], 0
    for g, n, s in form.tile_dims:
        for j in range(i + 1, len(order) + 1):
            members = order[i:j]
            inner = members[1:]
            if (math.prod(shape[k] for k in members) == g and strides[members[-1]] == s
                    and tile[members[0]] * math.prod(shape[k] for k in inner) == n
                    and all(tile[k] == shape[k] for k in inner)):
                break
        else:
            raise AssertionError(f"walk dim {(g, n, s)} matches no run of request dims {order[i:]}")
        mults, acc = [], 1
        for k in reversed(members):
            mults.append((k, acc))
            acc *= shape[k]
        out.append(WalkDim(g, n, s, tuple(reversed(mults)), ((members[0], n),)))
        i = j
    if i != len(order):
        raise AssertionError(f"request dims {order[i:]} are in no walk dim")
    return out


def descriptor_dims(dims: list[WalkDim], es: int) -> tuple[list[WalkDim], tuple[int, ...]]:
    """Descriptor dims, innermost first: the walk's, with dims past rank 5 that the tile does
    not span folded into one (stride: the gcd of theirs; extent: their span in that stride;
    coordinate: sum of tile position x stride / gcd). Returns (dims, folded request dims)."""
    inner_first = list(reversed(dims))
    if len(inner_first) <= MAX_DESCRIPTOR_RANK:
        return inner_first, ()
    keep = [0] + [j for j in range(1, len(inner_first)) if inner_first[j].tile > 1]
    small = [j for j in range(1, len(inner_first)) if inner_first[j].tile == 1]
    while len(keep) < MAX_DESCRIPTOR_RANK - 1 and small:
        keep.append(small.pop(0))
    fold = [inner_first[j] for j in small]
    stride = gcd_all(d.stride for d in fold)
    extent = 1 + sum((d.extent - 1) * d.stride // stride for d in fold)
    members = tuple(k for d in fold for k, _ in d.coords)
    folded = WalkDim(extent, 1, stride, (), tuple((k, d.stride // stride) for d in fold for k, _ in d.coords))
    return [inner_first[j] for j in sorted(keep)] + [folded], members


@dataclass(frozen=True)
class Choice:
    """One way to land the tile: swizzle, box per descriptor dim, the layout, and its verdicts."""

    swizzle: Swizzle
    box: tuple[int, ...]
    layout: StageLayout
    read_ways: float
    wgmma: WgmmaOperand | None
    note: Diagnostic | None  # why the consumer's wgmma cannot read this layout
    row_major: bool = True  # the boxes stack in the tile's row-major order
    pow2: bool = True  # every box dim a power of two (what Triton's descriptors take)


def stage_layout(dims: list[WalkDim], box: tuple[int, ...], es: int, swizzle: Swizzle) -> StageLayout:
    """Boxes land densely, each row-major over the descriptor dims (innermost contiguous);
    boxes along the innermost dim are the slowest (CuTe's tiling of a GMMA atom: the chunks of
    the contiguous dim outermost, the rows continuous across boxes)."""
    boxes = [d.tile // b for d, b in zip(dims, box)]
    box_elems = math.prod(box)
    strides, acc = [], 1
    for b in box:
        strides.append(acc)
        acc *= b
    box_strides = [0] * len(dims)
    acc = box_elems
    for j in [*range(1, len(dims)), 0]:
        box_strides[j] = acc
        acc *= boxes[j]
    return StageLayout(tuple(LayoutDim(d.parts, b, n, s, bs) for d, b, n, s, bs in
                             zip(dims, box, boxes, strides, box_strides)), es, swizzle)


def wgmma_operand(m: LoadTile, layout: StageLayout) -> tuple[WgmmaOperand | None, Diagnostic | None]:
    """The matrix-descriptor fields of every k-slice of a wgmma operand tile, or why none (a
    `wgmma_unreadable` warning naming the request field behind it)."""

    def unreadable(field: str, message: str, fix: str) -> tuple[None, Diagnostic]:
        return None, Code.WGMMA_UNREADABLE.at(message, fix, field=field)

    spec = m.consumer
    mat = m.matrix()
    is_a = spec.kind is Consumer.WGMMA_A
    element = spec.element or m.src.dtype
    eb = layout.element_bytes
    if element.name not in ELEMENTS:
        named = "op.consumer.element" if spec.element is not None else "op.src.dtype"
        if element.storage_bits not in READ_BITS:  # no readable type has these words' width
            return unreadable(named, f"the tensor core reads 8-, 16- and 32-bit operands (f16, bf16, tf32, e4m3, "
                              f"e5m2, s8, u8), not {element.storage_bits}-bit {element.name}: the tile is loaded "
                              "in the layout asked for, but no wgmma reads it", "convert the operand to a type "
                              "wgmma reads, or load the tile for a rows or cols consumer")
        return unreadable("op.consumer.element", f"the tensor core reads f16, bf16, tf32, e4m3, e5m2, s8 and u8 "
                          f"operands, not {element.name}", "set consumer.element to the type the instruction reads "
                          "(the bits may be one moved as raw words), or convert the operand to one")
    contiguous = {k for k, mult in layout.dims[0].parts if mult == 1} if layout.dims else set()
    col_major = Major.K if is_a else Major.MN  # which operand dim the matrix's columns are
    if mat.col_dim in contiguous:
        major = col_major
    elif mat.row_dims and mat.row_dims[-1] in contiguous:
        major = Major.MN if col_major is Major.K else Major.K
    else:
        return unreadable("op.src.strides", "neither matrix dim is contiguous in shared memory: wgmma cannot read "
                          "the tile", "load the operand from a view whose rows or columns are contiguous")
    if spec.major is not None and spec.major is not major:
        return unreadable("op.consumer.major", f"the tile lands {major.value}-major (a tile load keeps the source's "
                          f"order: its contiguous dim stays contiguous) but the consumer asked for "
                          f"{spec.major.value}-major", f"ask for {major.value}-major (or leave major out: the "
                          "strides give it), or transpose the tile in shared memory before the wgmma")
    if major is Major.MN and element.storage_bits != 16:
        return unreadable("op.src.strides", f"wgmma reads {element.name} operands K-major only; this tile lands "
                          "MN-major", "store the operand K-major in global memory, or transpose the tile in shared "
                          "memory before the wgmma (as FlashAttention-3 does for fp8 V)")
    landed = {k for d in layout.dims for k, _ in d.parts}
    once = [k for k, (n, s, t) in enumerate(zip(m.src.shape, m.src.strides, m.tile)) if s == 0 and n > 1 and t > 1
            and k not in landed]
    if once:  # a broadcast dim loaded once: the stage holds one copy, the matrix reads each as rows of its own
        k = once[0]
        return unreadable(f"op.src.strides[{k}]", f"op.src dim {k} is a broadcast (stride 0): the plan loads what "
                          f"its {m.tile[k]} tile indices repeat once, so the stage holds one copy, where the "
                          f"operand's {mat.rows} x {mat.cols} matrix reads every copy as rows (or columns) of its "
                          "own: no wgmma descriptor addresses the ones the stage does not hold",
                          "materialise the broadcast before loading (e.g. expand(...).contiguous()), or load the "
                          "operand from a view that repeats the row in memory")
    k_width = K_BITS // (8 * eb)
    mn_extent, k_extent = (mat.rows, mat.cols) if is_a else (mat.cols, mat.rows)
    if mn_extent % 8 or k_extent % k_width:
        return unreadable("op.tile", f"a wgmma operand is whole 8-row groups by whole {k_width}-element k-slices; "
                          f"the tile is {mn_extent} x {k_extent}", f"load a tile whose M or N extent is a multiple "
                          f"of 8 and whose K extent is a multiple of {k_width}")
    per = instruction_block(mn_extent, is_a, spec.instruction, element.name)  # the rows (M) or columns (N) one reads
    if mn_extent % per:
        return unreadable("op.tile", f"wgmma_a reads M in 64-row blocks; the tile has {mn_extent} rows"
                          + (" (the instruction would read past it, into the next stage)" if mn_extent < per else "")
                          if is_a else
                          f"wgmma_b reads N in blocks of the instruction's n ({per}); the tile has {mn_extent} "
                          "columns", f"load a tile of whole {per}-{'row' if is_a else 'column'} blocks, or name "
                          "the instruction (consumer.instruction) whose blocks it holds")
    mn, k = np.meshgrid(np.arange(mn_extent), np.arange(k_extent), indexing="ij")
    off = layout.offsets(mat.indices(mn, k) if is_a else mat.indices(k, mn))
    grid = off.reshape(mn_extent // per, per, k_extent // k_width, k_width)  # (block, mn, slice, k)
    starts = grid[:, 0, :, 0]
    fields = operand_fields(grid[0, :, 0, :] - starts[0, 0], major, layout.swizzle, eb)
    if fields is None:
        return unreadable("op.tile", f"no wgmma descriptor addresses the {layout.swizzle.value} layout of the "
                          "tile", "load a tile whose contiguous extent is whole swizzle spans (128 bytes)")
    canonical = grid[0, :, 0, :] - starts[0, 0]
    if ((grid - starts[:, None, :, None]) != canonical[None, :, None, :]).any():
        return unreadable("op.tile", "the k-slices (or 64-row blocks) of the tile are not laid out alike: one "
                          "descriptor per slice cannot address them", "load a tile of power-of-two extents")
    step = int(starts[1, 0] - starts[0, 0]) if len(starts) > 1 else 0
    if ((starts - starts[0]) != np.arange(len(starts))[:, None] * step).any():
        return unreadable("op.tile", f"the {per}-{'row blocks of M' if is_a else 'column blocks of N'} are not "
                          "evenly spaced", "load a tile of power-of-two extents")
    slices = tuple(KSlice(s * k_width, int(st), base_offset(int(st), layout.swizzle)) for s, st in enumerate(starts[0]))
    return WgmmaOperand(major, fields.layout_type, layout.swizzle, fields.lbo_bytes, fields.sbo_bytes,
                        slices, per, step, element.name), None


def instruction_block(mn_extent: int, is_a: bool, instruction: tuple[int, int, int] | None, element: str) -> int:
    """The rows of M (wgmma_a: 64, whatever the tile holds: every wgmma shape is m64nNkK, so a
    tile of fewer rows has the instruction read past it) or columns of N (wgmma_b: the
    instruction's n, else the widest n of the element's wgmma shapes that divides N: N itself
    when it is one) that one wgmma instruction reads. N is a multiple of 8, and 8 is an n of
    every element type."""
    if is_a:
        return 64
    if instruction is not None:
        return instruction[1]
    return next((n for n in reversed(instruction_ns(element)) if mn_extent % n == 0), mn_extent)


def boxes_land(box_elems: int, boxes: int, es: int) -> bool:
    """Whether a stage of `boxes` TMA boxes of `box_elems` elements (`es` bytes each) lands:
    one box, or boxes of whole TMA_SMEM_ALIGN bytes, so that each next box's shared memory
    starts 128-byte aligned, as TMA writes it."""
    return boxes <= 1 or (box_elems * es) % TMA_SMEM_ALIGN == 0


def _choices(m: LoadTile, dims: list[WalkDim], es: int, target: Target, strategy: Strategy) -> list[Choice]:
    """Every way the tile's inner extent allows to land it (each swizzle with an inner box of
    its span; unswizzled with the widest box; for a wgmma operand, unswizzled 16-byte boxes: the
    interleaved core-matrix layout), the other boxes as large as they divide the tile (powers
    of two, or the whole extent, at most 256), up to the first dim that takes several and one
    outside it, or each dim on its own; with the consumer's verdict on each layout. Boxes of
    fewer than 8 rows are unswizzled; TMA plans whose boxes would land off 128-byte alignment
    are left out, and so are those of more than MAX_TMA_BOXES boxes (Infeasible, `tile_boxes`,
    when no other is left); a direct plan of more lands the tile as one box."""
    inner_bytes = dims[0].tile * es
    inner = [(sw, sw.span_bytes // es) for sw in (Swizzle.B128, Swizzle.B64, Swizzle.B32)
             if inner_bytes % sw.span_bytes == 0]
    widest = lowbit(dims[0].tile, MAX_BOX)
    if strategy is not Strategy.TMA or widest * es >= 16:
        inner.append((Swizzle.NONE, widest))
    if m.consumer.is_wgmma and inner_bytes % 16 == 0 and (Swizzle.NONE, 16 // es) not in inner:
        inner.append((Swizzle.NONE, 16 // es))
    outer_choices: dict[tuple[int, ...], tuple[bool, bool]] = {}
    for exact in (False, True):
        for row_major in (True, False):
            outer_choices.setdefault(tuple(_outer_boxes(dims, row_major, exact)), (row_major, not exact))
    out, fewest_over = [], 0
    for outer, (row_major, pow2) in outer_choices.items():
        inners = inner
        if math.prod(outer) < SWIZZLE_ROWS:  # a swizzle atom is 8 rows: boxes of fewer go unswizzled,
            inners = [(sw, b) for sw, b in inner if sw is Swizzle.NONE]  # as Triton and CuTe lay them out
            if not inners and (strategy is not Strategy.TMA or widest * es >= 16):
                inners = [(Swizzle.NONE, widest)]
        for sw, b0 in inners:
            box, pow2_boxes = (b0, *outer), pow2
            boxes = math.prod(d.tile // b for d, b in zip(dims, box))
            if strategy is Strategy.TMA and not boxes_land(math.prod(box), boxes, es):
                continue  # a box would land off the 128-byte alignment TMA writes to
            if strategy is Strategy.TMA and boxes > MAX_TMA_BOXES:  # one copy per box, each a protocol line
                fewest_over = min(fewest_over or boxes, boxes)
                continue
            if boxes > MAX_TMA_BOXES:
                # pointer loads take boxes of any extent: a tile of odd extents (a uint8 [7, 33, 1001]
                # tile: 231,231 boxes of one byte, each listed in the plan) lands as one box, ranked
                # with the power-of-two boxes (the preference is Triton's descriptors', which take no others)
                sw, box, pow2_boxes = Swizzle.NONE, tuple(d.tile for d in dims), True
            layout = stage_layout(dims, box, es, sw)
            ways = stage_read_ways(layout, m.matrix(), m.consumer.kind, m.consumer.major, target)
            wg, note = wgmma_operand(m, layout) if m.consumer.is_wgmma else (None, None)
            out.append(Choice(sw, box, layout, ways, wg, note, row_major,
                              pow2_boxes or all(b & (b - 1) == 0 for b in box)))
    if not out and fewest_over:
        raise Infeasible([Code.TILE_BOXES.at(f"the tile takes at least {fewest_over} TMA boxes per stage (its "
                                             f"extents {[d.tile for d in dims]}, innermost first); a stage "
                                             f"issues at most {MAX_TMA_BOXES}")])
    return out


def _outer_boxes(dims: list[WalkDim], row_major: bool, exact: bool) -> list[int]:
    """The box of each dim past the innermost: the largest power of two dividing its tile
    extent (at most 256), or (`exact`) the whole extent where it is at most 256; `row_major`:
    once a dim takes several boxes, the dims outside it take one row per box, so the boxes
    stack in the tile's row-major order."""
    outer, split = [], False
    for d in dims[1:]:
        b = 1 if split else d.tile if exact and d.tile <= MAX_BOX else lowbit(d.tile, MAX_BOX)
        split = split or (row_major and b < d.tile)
        outer.append(b)
    return outer


def _over_budget(tile_bytes: int, smem: int) -> tuple[str, str]:
    """(message, fix) of a tile one stage of which does not fit the shared-memory budget."""
    return (f"one stage of the tile is {tile_bytes} bytes (+8 for its mbarrier); the budget is {smem}",
            "raise options.smem_bytes, or load a smaller tile (a tile that a cluster of n CTAs shares is n "
            "tiles of 1/n its size, one per CTA)")


def _pick(choices: list[Choice], tile_bytes: int, smem: int, wgmma: bool) -> tuple[Choice, int]:
    """z3 picks the swizzle and stages: no conflicts when a conflict-free layout exists; for a
    wgmma operand, an addressable layout first; then power-of-two boxes (Triton's descriptors
    take no others), boxes in the tile's row-major order, the widest swizzle and the most
    stages (up to 4) within the budget."""
    if choices and tile_bytes + 8 <= smem:  # closed form: the lexicographic order below, in Python
        def key(i: int) -> tuple:
            ch = choices[i]
            return (0 if ch.wgmma is not None or not wgmma else 1, round(ch.read_ways * 1000), 0 if ch.pow2 else 1,
                    0 if ch.row_major else 1, -ch.swizzle.span_bytes, i)
        return choices[min(range(len(choices)), key=key)], min(4, smem // (tile_bytes + 8))
    fp = FieldProblem("tile layout")  # unsat: z3's core names the budget
    c = z3.Int("choice")
    stages = z3.Int("stages")
    fp.opt.add(c >= 0, c < len(choices), stages >= 1, stages <= 4)
    fp.require("smem_budget", stages * (tile_bytes + 8) <= smem, *_over_budget(tile_bytes, smem), Code.SMEM_BUDGET)

    def table(values) -> z3.ArithRef:
        out = z3.IntVal(values[-1])
        for i in range(len(values) - 2, -1, -1):
            out = z3.If(c == i, z3.IntVal(values[i]), out)
        return out

    fp.opt.minimize(table([0 if ch.wgmma is not None or not wgmma else 1 for ch in choices]))
    fp.opt.minimize(table([round(ch.read_ways * 1000) for ch in choices]))
    fp.opt.minimize(table([0 if ch.pow2 else 1 for ch in choices]))
    fp.opt.minimize(table([0 if ch.row_major else 1 for ch in choices]))
    m = fp.solve([table([ch.swizzle.span_bytes for ch in choices]), stages])
    return choices[m[c].as_long()], m[stages].as_long()


def _boxes(tiles: tuple[int, ...], box: tuple[int, ...], layout: StageLayout, es: int) -> tuple[TileBox, ...]:
    """Every box of a tile, in stage order: origin per descriptor dim (innermost first) and
    stage offset."""
    counts = [t // b for t, b in zip(tiles, box)]
    out = []
    for flat in range(math.prod(counts)):
        idx, rest = [], flat
        for n in counts:
            rest, r = divmod(rest, n)
            idx.append(r)
        origin = tuple(i * b for i, b in zip(idx, box))
        off = sum(i * d.box_stride for i, d in zip(idx, layout.dims)) * es
        out.append(TileBox(origin, off))
    return tuple(sorted(out, key=lambda b: b.smem_offset_bytes))


@dataclass(frozen=True)
class WalkCost:
    """A tile walk's estimate in its parts: a fixed part (launch, pipeline fill, tail), then
    the larger of reading every tile once at `efficiency` permille of the copy bandwidth and,
    when each SM holds few tiles, one round trip per `stages` tiles in flight."""

    fixed_us: float
    read_bytes: int
    efficiency: int  # permille of the copy bandwidth
    fact: str  # where the efficiency comes from, in words
    bandwidth_us: float
    latency_us: float

    @property
    def total_us(self) -> float:
        return self.fixed_us + max(self.bandwidth_us, self.latency_us)


def walk_cost(target: Target, strategy: Strategy, tiles: int, tile_bytes: int, stages: int,
              vector_bytes: int) -> WalkCost:
    """The estimate of `tiles` tiles of `tile_bytes` each: a TMA walk reads at the target's
    `tile_tma` share with `stages` tiles in flight; a direct one moves each byte through
    registers on its way (twice the traffic: half its access width's share), one tile in flight."""
    c = target.cost
    if strategy is Strategy.TMA:
        efficiency, fact = c.tile_tma, "the target's TMA tile-load share"
    else:
        stages = 1
        efficiency = dict(c.by_width).get(min(16, vector_bytes), c.scatter) // 2
        fact = f"{min(16, vector_bytes)}-byte accesses' share, halved"
    read = tiles * tile_bytes
    return WalkCost(c.tile_walk_ns * 1e-3, read, efficiency, fact,
                    read * 1e-3 / (c.copy_bandwidth_gbps * efficiency / 1000),
                    cdiv(cdiv(tiles, target.sm_count), stages) * c.tma_latency_ns * 1e-3)


def vector_bytes(m: LoadTile, dims: list[WalkDim]) -> int:
    """The widest access along the contiguous dim a tile's rows allow (16 bytes at most)."""
    inner = dims[0].tile * m.src.esize if dims[0].stride == 1 else m.src.esize
    return min(16, inner & -inner, m.src.base_align)


# TMA boxes of one stage: each is a copy instruction of the stage's protocol (which holds 256
# operations a block) and of the kernel; the tiles of CuTe's and Triton's tests take at most 16
MAX_TMA_BOXES = 64


def _check_dim_range(m: LoadTile, dims: list[WalkDim], target: Target) -> None:
    """A walk dim past the descriptor's largest dim (2^32 elements), in the request's terms:
    the walk's dims are not split in two (a tile position's coordinate would then be a
    quotient and a remainder), so the request's own dims are what to change. Raises
    Infeasible naming the request dim."""
    for d in dims:
        if d.extent <= target.tma.max_global_dim:
            continue
        members = [k for k, _ in d.parts] or [k for k, _ in d.coords]
        k = members[0]
        merged = f"op.src dims {members} (contiguous, so merged) hold" if len(members) > 1 else f"op.src dim {k} holds"
        most = target.tma.max_global_dim // math.prod(m.src.shape[j] for j in members[1:])
        raise Infeasible([Code.GLOBAL_DIM_RANGE.at(
            f"{merged} {d.extent} elements; a TMA descriptor dim holds at most 2^32, and a tile walk's dims are "
            "not split",
            f"load op.src in parts of at most {most} along dim {k} (a request each: a slice's view of it), or use "
            "the plan's direct candidate", field=f"op.src.shape[{k}]")])


def build_load_tile(form: Formulation, m: LoadTile, smem: int, target: Target):
    """(plan-level fields, TileLoadPlan, estimated us, prover) of a tile-load candidate."""
    es = m.src.esize
    walk = walk_dims(m, form)
    strategy = form.strategy
    if strategy is Strategy.TMA:
        dims, folded = descriptor_dims(walk, es)
        if len(dims) > MAX_DESCRIPTOR_RANK:
            raise Infeasible([Code.RANK.at(f"{len(dims)} descriptor dims after folding; TMA takes at most 5")])
    else:
        dims, folded = list(reversed(walk)), ()
    if not dims:  # a single element
        dims = [WalkDim(1, 1, 1, (), ())]
    tile_bytes = math.prod(d.tile for d in dims) * es
    if tile_bytes + 8 > smem:  # before the layouts are analysed: a wgmma operand's takes every element
        raise Infeasible([Code.SMEM_BUDGET.at(*_over_budget(tile_bytes, smem))])
    choices = _choices(m, dims, es, target, strategy)
    if not choices:
        if (dims[0].tile * es) % 16 == 0:
            raise Infeasible([Code.SMEM_BOX_ALIGN.at(f"the tile's boxes hold {math.prod(d.tile for d in dims) * es} "
                                                     "bytes between them in pieces of under 128 bytes")])
        raise Infeasible([Code.INNER_BOX_16B.at(f"the tile's contiguous extent is {dims[0].tile * es} bytes; a TMA "
                                                "box needs whole 16-byte units")])
    choice, stages = _pick(choices, tile_bytes, smem, m.consumer.is_wgmma)
    broadcast = tuple(k for k in range(m.src.rank) if form.broadcast and m.src.shape[k] > 1 and m.src.strides[k] == 0)
    grid = m.tiles()
    boxes = _boxes(tuple(d.tile for d in dims), choice.box, choice.layout, es)
    descriptors, pipe = (), None
    if strategy is Strategy.TMA:
        _check_dim_range(m, dims, target)
        desc = checked(TmaDescriptor.from_fields(
            dtype=m.src.dtype.tma_name, rank=len(dims), global_address=placeholder_address(m.src.base_align),
            global_dim=[d.extent for d in dims], global_strides=[d.stride * es for d in dims[1:]],
            box_dim=list(choice.box), element_strides=[1] * len(dims), swizzle=choice.swizzle.value,
            l2_promotion="128B", oob_fill="none"), target, "load")
        descriptors = (desc,)
        box_bytes = math.prod(choice.box) * es
        pipe = pipeline(TmaPipelineSpec(load_bytes=(box_bytes * len(boxes),), smem_bytes=smem, stages=stages,
                                        boxes=len(boxes)))
    else:
        stages = min(stages, fit_stages(TmaPipelineSpec(load_bytes=(tile_bytes,), smem_bytes=smem)))
    tiles = math.prod(grid)
    vec = vector_bytes(m, dims)
    total_us = walk_cost(target, strategy, tiles, tile_bytes, stages, vec).total_us
    note = choice.note if m.consumer.is_wgmma and choice.wgmma is None else None
    plan = TileLoadPlan(grid, tuple(d.coords for d in dims), boxes, choice.layout, "zero", folded, broadcast,
                        m.consumer.kind.value, choice.read_ways, choice.wgmma, round(total_us / tiles, 4), note,
                        tuple(m.src.shape))
    prover = functools.partial(prove_tile_walk, m, [(d.extent, d.stride, d.coords) for d in dims], choice.box, boxes,
                               choice.layout)
    smem_layout = SmemLayout(tile_bytes, stages, choice.swizzle, 0, 1.0, choice.read_ways,
                             boxes_per_stage=len(boxes))
    # the walk as a piece: its dims (outermost first) with their source strides and the stage's
    # strides inside a box; a tile of the walk's tile extents per program
    piece = Piece(0, 0, es, tuple(Dim(d.extent, d.stride, ld.stride) for d, ld in
                                  zip(reversed(dims), reversed(choice.layout.dims))),
                  strategy, tuple(d.tile for d in reversed(dims)), (tiles,), 4, vec, None, stages,
                  descriptors or None, smem_layout, pipe)
    fields = dict(tile=m.tile, grid=(tiles,), num_warps=4, num_stages=stages, vector_bytes=vec,
                  descriptors=descriptors, smem=smem_layout, pipeline=pipe, pieces=(piece,))
    return fields, plan, total_us, prover
