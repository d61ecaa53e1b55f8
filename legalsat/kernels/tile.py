"""`load_tile` plans as kernels: every tile of the tensor loaded as the plan says and handed
out as its consumer read it.

A tile kernel writes the tiles into a dense `[*grid, *tile]` tensor (tile T's element i at
`out[T..., i...]`; the overhang of an edge tile reads as zero, as TMA fills it), so a
compiler engineer can check a plan against `torch` and time the walk:

- `tl` (TMA plans): one program per tile loads the plan's boxes through its descriptor and
  stores them; it runs in Triton's interpreter, so CI checks every plan bit-exact on the CPU.
  A direct plan's kernel loads the same boxes with masked pointer loads.
- `gluon` (TMA plans, sm90; `legalsat.kernels.tile_gluon`): the consumer probe. A persistent
  kernel runs the plan's pipeline (its stages, one mbarrier phase per tile with the summed
  expect-tx bytes of its boxes), then reads each stage as the consumer does: a wgmma against
  an identity operand for wgmma plans (exact in fp32 / int32 accumulation), row or column
  vectors otherwise; it also copies each stage's raw bytes out, so the plan's stage layout
  (box slots, swizzle) is checked byte for byte against where it says each element lands.

Pure Python: emitting needs neither torch nor triton.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from legalsat.kernels.source import DescriptorSpec, Launch, decompose, program_id, wide_aranges
from legalsat.kernels.tma import descriptor_spec
from legalsat.kernels.words import INT32_LIMIT, plan_error
from legalsat.schemas.plan import PlanOut, WgmmaOut
from legalsat.terms.integers import cdiv, pow2_at_least
from legalsat.terms.movement import contiguous_strides
from legalsat.terms.strategy import Strategy

OUTPUT_LIMIT = 1 << 31  # elements of the tiles tensor a kernel indexes (int64 offsets beyond)


@dataclass(frozen=True)
class WalkDim:
    """One dim of the walk (a descriptor dim of a TMA plan), innermost first: the tensor's
    extent and stride along it, the tile's extent, the box and boxes per tile; `parts` maps
    a position p along it to tile dims (i[k] = p // mult, modulo tile[k] but for the outermost
    part); `coords` gives a tile T's coordinate (sum of T[k] * mult)."""

    extent: int
    src_stride: int
    tile: int
    box: int
    boxes: int
    parts: tuple[tuple[int, int], ...]
    coords: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class TileWalk:
    """A load_tile plan as its kernels need it. `boxes`: (origin per walk dim, slot in the
    stage) of each box of a tile."""

    strategy: Strategy
    word: int
    tile: tuple[int, ...]
    grid: tuple[int, ...]
    dims: tuple[WalkDim, ...]
    boxes: tuple[tuple[tuple[int, ...], int], ...]
    swizzle: int
    stages: int
    broadcast: tuple[int, ...]
    consumer: str
    wgmma: WgmmaOut | None
    desc: DescriptorSpec | None
    expect_bytes: int
    extents: tuple[int, ...] | None = None  # the tensor's, per request dim (None: plans before planner/8)

    @property
    def tiles(self) -> int:
        return prod(self.grid)

    @property
    def index_bits(self) -> int:
        """32 when every source offset a tile forms fits int32 (its overhang past the extents
        included), else 64 (the tiles tensor is below OUTPUT_LIMIT elements: int32 offsets)."""
        hi = sum((d.extent + d.tile) * d.src_stride for d in self.dims)
        return 32 if hi <= INT32_LIMIT else 64

    @property
    def box(self) -> tuple[int, ...]:
        return tuple(d.box for d in self.dims)

    @property
    def box_rows(self) -> int:
        return prod(d.box for d in self.dims[1:])

    @property
    def box_bytes(self) -> int:
        return prod(self.box) * self.word

    @property
    def stage_bytes(self) -> int:
        """Bytes of one stage: every box of the tile."""
        return self.box_bytes * len(self.boxes)

    @property
    def stage_rows(self) -> int:
        """Rows of the stage read as one matrix: the tile's rows (all walk dims but the
        innermost, row-major) once per box along the innermost dim."""
        return prod(d.tile for d in self.dims[1:])

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (*self.grid, *self.tile)

    @property
    def tile_strides(self) -> tuple[int, ...]:
        return contiguous_strides(self.out_shape)[len(self.grid):]

    @property
    def grid_strides(self) -> tuple[int, ...]:
        return contiguous_strides(self.out_shape)[:len(self.grid)]


def _expect_bytes(plan: PlanOut) -> int | None:
    piece = plan.pieces[0]
    if piece.async_ is None:
        return None
    proto = piece.async_.protocol
    ops = [*proto.setup, *(op for role in proto.roles for b in role.blocks for op in b.ops), *proto.teardown]
    counts = {op.bytes for op in ops if op.op == "expect_tx" and op.bytes}
    if len(counts) != 1:
        raise plan_error("pieces[0].async.protocol", f"the protocol arms stages with {sorted(counts)} bytes; a "
                         "tile's boxes complete one stage on one phase")
    return counts.pop()


def tile_walk(plan: PlanOut) -> TileWalk:
    """The walk of a load_tile plan; raises InputError naming the field that does not hold
    together (the plan did not come from the planner, or was edited)."""
    tl = plan.tile_load
    if tl is None:
        raise plan_error("tile_load", "the load_tile plan has no tile_load fields", "plan the request again")
    if len(plan.pieces) != 1:
        raise plan_error("pieces", f"a load_tile plan has one piece (its walk); this one has {len(plan.pieces)}",
                         "plan the request with legalsat >= planner/4")
    piece = plan.pieces[0]
    word = piece.element_bytes
    if word not in (1, 2, 4, 8):
        raise plan_error("pieces[0].element_bytes", f"tiles move 1, 2, 4 or 8-byte elements, not {word}")
    lay = tl.layout
    n = len(lay.dims)
    if len(piece.dims) != n or len(tl.coords) != n:
        raise plan_error("tile_load.layout.dims", f"the stage has {n} dims, the walk {len(piece.dims)} and the "
                         f"coordinates {len(tl.coords)}")
    rank = len(plan.tile)
    if len(tl.grid) != rank:
        raise plan_error("tile_load.grid", f"the grid has {len(tl.grid)} dims; the tile has {rank}")
    dims, seen = [], set()
    for j, (ld, pd, co) in enumerate(zip(lay.dims, reversed(piece.dims), tl.coords)):
        for k, _ in [*ld.parts, *co]:
            if not 0 <= k < rank:
                raise plan_error(f"tile_load.layout.dims[{j}]", f"dim {k} is not a tile dim (rank {rank})")
        if ld.box < 1 or ld.boxes < 1:
            raise plan_error(f"tile_load.layout.dims[{j}]", "box and boxes must be at least 1")
        # the tile dims a stage dim merges are a mixed radix from 1 that its boxes cover exactly:
        # every stage position is one tile element (a box past it wrote past the tile's row in out)
        radix = 1
        for k, m in sorted(ld.parts, key=lambda km: (km[1], plan.tile[km[0]])):  # extent-1 dims first
            if m != radix or k in seen:
                raise plan_error(f"tile_load.layout.dims[{j}].parts", f"{ld.parts} is not the stage dim of tile dims "
                                 f"{list(plan.tile)}: multipliers run 1, then each times the extent before it, and "
                                 "each tile dim lands in one stage dim", "send the plan as the planner returned it")
            seen.add(k)
            radix *= plan.tile[k]
        if ld.box * ld.boxes != radix:
            raise plan_error(f"tile_load.layout.dims[{j}].box", f"{ld.boxes} box(es) of {ld.box} along it hold "
                             f"{ld.box * ld.boxes} positions; its tile dims span {radix}",
                             "send the plan as the planner returned it")
        dims.append(WalkDim(pd.extent, pd.src_stride, ld.box * ld.boxes, ld.box, ld.boxes,
                            tuple((k, m) for k, m in ld.parts), tuple((k, m) for k, m in co)))
    odd = [d.box for d in dims if d.box & (d.box - 1)]
    if odd and Strategy(plan.strategy) is Strategy.TMA:  # a direct plan's kernel walks the rows instead
        raise plan_error("tile_load.layout.dims", f"the plan's boxes are {[d.box for d in dims]} (innermost first); "
                         "Triton's tensors and descriptors take power-of-two extents only",
                         "build this plan's load from its descriptor in CUDA C++ or CuTe (the driver takes any box "
                         "up to 256), or ask for a tile whose extents are powers of two")
    box_bytes = prod(d.box for d in dims) * word
    boxes = []
    for b, bx in enumerate(tl.boxes):
        if len(bx.origin) != n or any(o % d.box or not 0 <= o < d.tile for o, d in zip(bx.origin, dims)):
            raise plan_error(f"tile_load.boxes[{b}].origin", f"{bx.origin} is not a box origin inside the tile")
        if bx.smem_offset_bytes % box_bytes:
            raise plan_error(f"tile_load.boxes[{b}].smem_offset_bytes", "boxes land at multiples of the box bytes")
        boxes.append((tuple(bx.origin), bx.smem_offset_bytes // box_bytes))
    nb = prod(d.boxes for d in dims)
    if sorted(s for _, s in boxes) != list(range(nb)) or len({o for o, _ in boxes}) != nb:
        raise plan_error("tile_load.boxes", f"the tile takes {nb} boxes, each in its own slot of the stage")
    strategy = Strategy(plan.strategy)
    desc = None
    expect = box_bytes * nb
    if strategy is Strategy.TMA:
        if not plan.descriptors:
            raise plan_error("descriptors", "a TMA plan carries its descriptor")
        desc = descriptor_spec(plan.descriptors[0], "src", 0, word, "descriptors[0]")
        if tuple(reversed(desc.block)) != tuple(d.box for d in dims):
            raise plan_error("descriptors[0].box_dim", f"the descriptor's box {list(reversed(desc.block))} is not the "
                             f"stage's {[d.box for d in dims]}")
        want = _expect_bytes(plan)
        if want is not None and want != expect:
            raise plan_error("pieces[0].async.protocol", f"the protocol expects {want} bytes per stage; the tile's "
                             f"{nb} boxes hold {expect}")
    elif strategy is not Strategy.DIRECT:
        raise plan_error("strategy", f"load_tile plans are tma or direct, not {strategy.value}")
    # a broadcast dim is loaded once and repeated in out: one the walk also reads would be
    # stored once per position along it over the walk's own (past out's end)
    if len(set(tl.broadcast)) != len(tl.broadcast) or any(not 0 <= k < rank or k in seen for k in tl.broadcast):
        raise plan_error("tile_load.broadcast", f"{list(tl.broadcast)} are not tile dims the walk leaves out (the "
                         f"walk's stage holds dims {sorted(seen)} of {rank})", "send the plan as the planner returned it")
    extents = None
    if tl.extents is not None:
        if len(tl.extents) != rank or any(not 0 < e <= g * t for e, g, t in zip(tl.extents, tl.grid, plan.tile)):
            raise plan_error("tile_load.extents", f"{tl.extents} are not the extents of a tensor that a grid of "
                             f"{tl.grid} tiles of {list(plan.tile)} covers")
        extents = tuple(tl.extents)
    walk = TileWalk(strategy, word, tuple(plan.tile), tuple(tl.grid), tuple(dims), tuple(boxes),
                    _swizzle_bytes(lay.swizzle), max(1, plan.num_stages), tuple(tl.broadcast), tl.consumer,
                    tl.wgmma, desc, expect, extents)
    if prod(walk.out_shape) >= OUTPUT_LIMIT:
        raise plan_error("tile_load.grid", f"the tiles hold {prod(walk.out_shape)} elements; a tile kernel writes "
                         f"fewer than {OUTPUT_LIMIT}", "plan a smaller tensor or time the walk in a bigger kernel")
    return walk


def _swizzle_bytes(name: str) -> int:
    return 0 if name == "none" else int(name.rstrip("B"))


# ---- index arithmetic shared by the emitters -----------------------------------------------

def tile_lines(w: TileWalk, var: str, suffix: str, indent: str) -> list[str]:
    """Tile position T{k}{suffix} of tile number `var` (row-major over the grid)."""
    return decompose(var, [(f"T{k}{suffix}", g) for k, g in enumerate(w.grid)], indent)


def coordinate(w: TileWalk, d: int, suffix: str, origin: int = 0) -> str:
    """The walk coordinate of a tile's box along walk dim d."""
    terms = [f"T{k}{suffix}" if m == 1 else f"T{k}{suffix} * {m}" for k, m in w.dims[d].coords]
    if origin:
        terms.append(str(origin))
    return " + ".join(terms) or "0"


def out_base(w: TileWalk, suffix: str) -> str:
    terms = [f"T{k}{suffix} * {s}" for k, s in enumerate(w.grid_strides) if w.grid[k] > 1]
    return " + ".join(terms) or "0"


def _position_terms(w: TileWalk, d: int, p: str) -> list[str]:
    """Offset terms in the tiles tensor of walk position `p` along walk dim d."""
    parts = w.dims[d].parts
    top = max((m for _, m in parts), default=0)
    ts = w.tile_strides
    out = []
    for k, m in parts:
        q = p if m == 1 else f"({p}) // {m}"
        if m != top:
            q = f"({q}) % {w.tile[k]}"
        out.append(q if ts[k] == 1 else f"({q}) * {ts[k]}")
    return out


def row_positions(w: TileWalk, var: str, radices: tuple[int, ...], origins: tuple[int, ...],
                  start: int = 0) -> list[tuple[int, str]]:
    """(walk dim, position expression) of walk dims 1.. at row `start + var` of a block whose
    rows run row-major over those dims (dim 1 fastest) with `radices`, from `origins`."""
    r = var if not start else f"({var} + {start})"
    out, div = [], 1
    last = len(w.dims) - 1
    for d in range(1, len(w.dims)):
        if radices[d] == 1:
            q = "0"
        else:
            q = r if div == 1 else f"{r} // {div}"
            if d < last:
                q = f"({q}) % {radices[d]}"
        div *= radices[d]
        if origins[d]:
            q = str(origins[d]) if q == "0" else f"{q} + {origins[d]}"
        out.append((d, q))
    return out


def offset_expr(w: TileWalk, var: str, terms_of: list[tuple[int, str]]) -> str:
    """The tiles-tensor offset of walk positions `terms_of`, as an expression over `var`."""
    terms = [t for d, p in terms_of for t in _position_terms(w, d, p)]
    expr = " + ".join(terms)
    return expr if var in expr else (f"{expr} + {var} * 0" if expr else f"{var} * 0")


def row_offset(w: TileWalk, var: str, radices: tuple[int, ...], origins: tuple[int, ...], start: int = 0) -> str:
    """The tiles-tensor offset contributed by walk dims 1.. at row `start + var` of a block."""
    return offset_expr(w, var, row_positions(w, var, radices, origins, start))


def col_offset(w: TileWalk, var: str, origin: int) -> str:
    """The tiles-tensor offset contributed by the innermost walk dim at column `origin + var`."""
    return offset_expr(w, var, [(0, f"{var} + {origin}" if origin else var)])


def broadcast_lines(w: TileWalk, indent: str) -> tuple[list[str], str, str, str | None]:
    """(loop header lines, offset expression, extra indent, in-bounds condition or None)
    repeating a store over the tile's broadcast dims (which the stage holds once). Where a
    broadcast dim's last tile overhangs the tensor, the condition says whether the position is
    inside it: the overhang reads zero, as TMA fills it along the other dims."""
    dims = [k for k in w.broadcast if w.tile[k] > 1]
    if not dims:
        return [], "", "", None
    n = prod(w.tile[k] for k in dims)
    lines = [f"{indent}for bi in range({n}):"]
    lines += decompose("bi", [(f"bc{k}", w.tile[k]) for k in dims], indent + "    ")
    off = " + ".join(f"bc{k} * {w.tile_strides[k]}" for k in dims)
    over = [k for k in dims if w.extents is not None and w.grid[k] * w.tile[k] > w.extents[k]]
    inside = " & ".join(f"(T{k} * {w.tile[k]} + bc{k} < {w.extents[k]})" for k in over) if over else None
    return lines, f" + {off}", "    ", inside


def box_offset(w: TileWalk, origin: tuple[int, ...]) -> str:
    """The tiles-tensor offsets of a box at `origin` read as a [rows, cols] block (`rr`, `cc`)."""
    return f"({row_offset(w, 'rr', w.box, origin)})[:, None] + ({col_offset(w, 'cc', origin[0])})[None, :]"


def store_lines(w: TileWalk, value: str, off: str, indent: str, lib: str = "tl", mask: str | None = None) -> list[str]:
    """Lines storing `value` at tiles-tensor offsets `off` of the current tile (`ob`), once per
    index of the tile's broadcast dims."""
    loop, boff, extra, inside = broadcast_lines(w, indent)
    m = f", mask={mask}" if mask else ""
    if inside is not None:
        value = f"{lib}.where({inside}, {value}, 0)"
    return [*loop, f"{indent}{extra}{lib}.store(out + ob{boff} + {off}, {value}{m})"]


# ---- tl: the interpreter twin (TMA) and the direct kernel ----------------------------------

def _tl_header(name: str, args: str, w: TileWalk, rows: int, cols: int, bits: int = 32) -> list[str]:
    """A tile program's opening: its tile's position (`T*`), where the tile goes in the tiles
    tensor (`ob`), and `rr` / `cc` ranging over a block of rows x cols; `bits` 64 for pointer
    walks past int32 (a descriptor's coordinates stay int32: Triton's block pointers take no
    other)."""
    return [f"@triton.jit\ndef {name}({args}):", program_id(bits, name="tid"),
            *tile_lines(w, "tid", "", "    "), f"    ob = {out_base(w, '')}",
            f"    rr = tl.arange(0, {rows})", f"    cc = tl.arange(0, {cols})"]


def tl_tma_kernel(name: str, w: TileWalk) -> str:
    """One program per tile: each box through the descriptor (zero beyond the tensor) into the
    tiles tensor."""
    lines = _tl_header(name, "desc, out", w, w.box_rows, w.box[0])
    box_outer = [d.box for d in reversed(w.dims)]
    for origin, _ in w.boxes:
        coords = [coordinate(w, d, "", origin[d]) for d in reversed(range(len(w.dims)))]
        lines.append(f"    x = desc.load([{', '.join(coords)}])")
        if len(box_outer) != 2:
            lines.append(f"    x = tl.reshape(x, [{w.box_rows}, {w.box[0]}])")
        lines.append(f"    off = {box_offset(w, origin)}")
        lines += store_lines(w, "x", "off", "    ")
    return "\n".join(lines) + "\n"


# a direct plan of at most this many boxes, all of power-of-two extents, loads them one by one
# (unrolled, as measured in benchmarks/tile_results.json); others walk the tile's rows in a loop
DIRECT_UNROLLED_BOXES = 16
# words a direct tile program holds per step of its walk over the tile's rows (16 a thread of
# its 4 warps and more: 4,096 spilled for an fp8 tile on sm90, ptxas)
DIRECT_CHUNK_WORDS = 2048
DIRECT_UNROLLED_STEPS = 8  # steps of that walk unrolled by the compiler (their loads overlap)


def _pow2_boxes(w: TileWalk) -> bool:
    return all(b & (b - 1) == 0 for b in w.box)


def tl_direct_kernel(name: str, w: TileWalk) -> str:
    """One program per tile, with masked pointer loads (zero past the tensor): box by box of
    the plan's stage layout, or for a tile of many boxes or boxes of no power-of-two extent
    (odd tile extents: 720 boxes of 8 bytes for a [24, 6, 1, 4, 5, 2] uint8 tile, a
    2,900-line kernel unrolled), a loop over the tile's rows (`_row_walk`)."""
    if len(w.boxes) > DIRECT_UNROLLED_BOXES or not _pow2_boxes(w):
        return _row_walk(name, w)
    lines = _tl_header(name, "src, out", w, w.box_rows, w.box[0], w.index_bits)
    for origin, _ in w.boxes:
        lines += _pointer_load(w, "rr", row_positions(w, "rr", w.box, origin), f"cc + {origin[0]}", [], "    ")
        lines.append(f"    off = {box_offset(w, origin)}")
        lines += store_lines(w, "x", "off", "    ")
    return wide_aranges("\n".join(lines) + "\n", w.index_bits)


def _pointer_load(w: TileWalk, var: str, rows: list[tuple[int, str]], cols: str, masks: list[str],
                  indent: str) -> list[str]:
    """Lines loading `x`: the tensor at the tile's walk positions `rows` ((walk dim,
    position over `var`) of dims 1..) by `cols` (the innermost dim's, over `cc`), zero past
    the tensor's extents and where `masks` are false."""
    src_r, masks = [], list(masks)
    for d, p in rows:
        dim = w.dims[d]
        pos = f"({var} * 0 + {coordinate(w, d, '')} + {p})"
        if dim.src_stride:
            src_r.append(f"{pos} * {dim.src_stride}")
        masks.append(f"({pos} < {dim.extent})[:, None]")
    d0 = w.dims[0]
    pos0 = f"({coordinate(w, 0, '')} + {cols})"
    src_c = f"{pos0} * {d0.src_stride}" if d0.src_stride else "cc * 0"
    masks.append(f"({pos0} < {d0.extent})[None, :]")
    return [f"{indent}so = ({' + '.join(src_r) or f'{var} * 0'})[:, None] + ({src_c})[None, :]",
            f"{indent}x = tl.load(src + so, mask={' & '.join(masks)}, other=0)"]


def _row_walk(name: str, w: TileWalk) -> str:
    """The tile's rows (walk dims 1.., row-major) in blocks of DIRECT_CHUNK_WORDS, each
    element stored where the tile holds it; the blocks are padded to powers of two and
    masked. The plan's boxes place the tile in shared memory, which this kernel does not
    write: it reads the tensor as the walk does."""
    rows, cols = w.stage_rows, w.dims[0].tile
    pc = pow2_at_least(cols)
    chunk = max(1, min(pow2_at_least(rows), DIRECT_CHUNK_WORDS // pc))
    lines = [*_tl_header(name, "src, out", w, chunk, pc, w.index_bits),
             # a few steps unrolled by the compiler (their loads overlap), more in a loop
             f"    for r0 in {'tl.static_range' if cdiv(rows, chunk) <= DIRECT_UNROLLED_STEPS else 'range'}"
             f"(0, {rows}, {chunk}):", "        r = r0 + rr"]
    positions = row_positions(w, "r", tuple(d.tile for d in w.dims), (0,) * len(w.dims))
    inside = [f"(r < {rows})[:, None]", f"(cc < {cols})[None, :]"]  # the tile's own positions
    lines += _pointer_load(w, "r", positions, "cc", inside, "        ")
    lines.append(f"        off = ({offset_expr(w, 'r', positions)})[:, None] + ({col_offset(w, 'cc', 0)})[None, :]")
    lines += store_lines(w, "x", "off", "        ", mask=" & ".join(inside))
    return wide_aranges("\n".join(lines) + "\n", w.index_bits)


def tl_warps(w: TileWalk) -> int:
    """Warps of a tl tile program: one per 2048 words of the box it holds in registers (64 a
    thread; each takes its own address), 4 to 8. A 256 x 64 box of 2-byte words took 255
    registers with 4 warps, 181 with 8, and spilled with 16 (sm90, ptxas)."""
    return min(8, max(4, pow2_at_least(cdiv(w.box_bytes // w.word, 2048))))


def emit_tile_tl(w: TileWalk) -> tuple[list[str], list[Launch], dict[str, DescriptorSpec]]:
    warps = tl_warps(w)
    if w.strategy is Strategy.TMA:
        return ([tl_tma_kernel("tile_load_tma", w)],
                [Launch("tile_load_tma", w.tiles, warps, ("desc:tile", "out"), word=w.word)], {"tile": w.desc})
    return ([tl_direct_kernel("tile_load_direct", w)],
            [Launch("tile_load_direct", w.tiles, warps, ("src", "out"), word=w.word)], {})


def tiles_bytes(w: TileWalk, out_bytes: int) -> int:
    return prod(w.out_shape) * out_bytes


def stage_words(w: TileWalk) -> int:
    """32-bit words of one stage (its raw copy per tile)."""
    return cdiv(w.stage_bytes, 4)
