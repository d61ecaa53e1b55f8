"""What an emitter returns (a Python module's text and the launches that run it) and the
index arithmetic the emitters share.

Emitted kernels are fully specialized: extents, strides, offsets and tiles of the plan are
literals in the source, so Triton's axis analysis sees every contiguous run (16-byte
vectors where the plan's alignment allows) and `k.source` reads as the plan it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import prod

from legalsat.kernels.words import WordPiece
from legalsat.terms.integers import cdiv

HEADER_TL = "import triton\nimport triton.language as tl\n"
HEADER_GLUON = (HEADER_TL + "from triton.experimental import gluon\n"
                "from triton.experimental.gluon import language as gl\n"
                "from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma\n")
HEADER_GLUON_WGMMA = HEADER_GLUON + ("from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma, "
                                     "warpgroup_mma_wait\n")


@dataclass(frozen=True)
class DescriptorSpec:
    """A host TMA descriptor over one side's word view, outermost first (as Triton takes it):
    `shape` and `strides` in words, `block` the box; `swizzle` in bytes (Gluon layouts)."""

    side: str  # src | dst
    offset: int  # words from the tensor's base
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    block: tuple[int, ...]
    swizzle: int = 0


@dataclass(frozen=True)
class Launch:
    """One kernel launch. `args` name what the client passes: src, dst (word views), index,
    out, group, desc:NAME (a DescriptorSpec), buf:NAME (a scratch buffer), src:aligned and
    src:skew (the source's word view from the 16-byte boundary at or before it, and the words
    from there to it: `clients.triton.aligned_words`). `grid` is a
    program count, or "persistent" (the client sizes it to the GPU)."""

    kernel: str
    grid: int | str
    num_warps: int
    args: tuple[str, ...]
    tiles: int = 0  # tiles a persistent launch walks
    blocks_per_sm: int = 1
    zero: tuple[str, ...] = ()  # scratch buffers cleared before this launch
    word: int = 0  # bytes per word of its src/dst/out views (pieces of one plan may differ;
    # 0: the launch takes none, e.g. an inspector pass over the indices)


@dataclass(frozen=True)
class TileOutput:
    """What a tile kernel writes: the tiles tensor (`shape` = grid + tile, of the source's
    words, or the tensor core's `float32` / `int32` accumulators), how the kernel read each
    stage, and the int32 words of each tile's raw stage copy (0: none)."""

    shape: tuple[int, ...]
    element: str  # words | float32 | int32
    read: str
    dump_words: int = 0
    wgmma_input: str | None = None  # the element type the probe's wgmma reads, when it runs one


@dataclass(frozen=True)
class Emitted:
    """Source of one plan's kernels and how to run them, in order."""

    strategy: str
    variant: str  # tl | gluon
    source: str
    launches: tuple[Launch, ...]
    descriptors: dict[str, DescriptorSpec] = field(default_factory=dict)
    buffers: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (dtype, count)
    tile: TileOutput | None = None  # load_tile kernels


def decompose(var: str, extents: list[tuple[str, int]], indent: str = "    ") -> list[str]:
    """Lines splitting the linear index `var` into one index per (name, extent), the last
    fastest; the first takes the quotient whole (no modulo)."""
    lines, rest = [], var if var.isidentifier() else f"({var})"
    for k, (name, n) in enumerate(reversed(extents)):
        if k == len(extents) - 1:
            lines.append(f"{indent}{name} = {rest}")
        elif n == 1:
            lines.append(f"{indent}{name} = 0")
        else:
            lines.append(f"{indent}{name} = {rest} % {n}")
            lines.append(f"{indent}r{k} = {rest} // {n}")
            rest = f"r{k}"
    return lines


def bcast(axis: int, rank: int) -> str:
    """Indexing that places a 1-D block on `axis` of a rank-`rank` block."""
    if rank == 1:
        return ""
    return "[" + ", ".join(":" if k == axis else "None" for k in range(rank)) + "]"


@dataclass(frozen=True)
class TileIndex:
    """Source lines forming `so`, `do` (word offsets) and `mask` (or None) for one tile of
    a piece, with the tiled dims laid out in `axes` order (the last is the fastest), and the
    condition (`interior`; "" when unmasked or no tile lies wholly inside) under which the
    tile lies wholly inside, so its accesses need no mask."""

    lines: tuple[str, ...]
    masked: bool
    tiles: int
    interior: str = ""


def tile_index(p: WordPiece, tile: tuple[int, ...], axes: list[int], pid: str = "pid",
               indent: str = "    ", order: list[int] | None = None) -> TileIndex:
    """Offsets of tile `pid` of piece `p` (tile extent per dim; dims in `axes` are block
    axes, the others advance one index per tile). Masks only the dims the tile does not
    divide. `order`: the dims in the order consecutive programs walk their tiles, the last
    fastest (default: the piece's own)."""
    counts = [(f"t{k}", cdiv(d.extent, t)) for k, (d, t) in enumerate(zip(p.dims, tile))]
    lines = decompose(pid, [counts[k] for k in (order or range(len(counts)))], indent)
    src = [str(p.src_offset)] if p.src_offset else []
    dst = [str(p.dst_offset)] if p.dst_offset else []
    masks, inside = [], []
    rank = len(axes)
    for k, d in enumerate(p.dims):
        if k in axes:
            ax = axes.index(k)
            lines.append(f"{indent}a{k} = t{k} * {tile[k]} + tl.arange(0, {tile[k]})")
            term = f"a{k}{bcast(ax, rank)}"
            if d.extent % tile[k]:
                masks.append(f"({term} < {d.extent})")
                inside.append(f"(t{k} < {d.extent // tile[k]})" if d.extent >= tile[k] else "")
        else:
            term = f"t{k}"
        if d.src:
            src.append(term if d.src == 1 else f"{term} * {d.src}")
        elif k in axes:  # a broadcast dim (stride 0) still spans the block: the load's pointers take its shape
            src.append(f"{term} * 0")
        if d.dst:
            dst.append(term if d.dst == 1 else f"{term} * {d.dst}")
    lines.append(f"{indent}so = {' + '.join(src) or '0'}")
    lines.append(f"{indent}do = {' + '.join(dst) or '0'}")
    if masks:
        lines.append(f"{indent}mask = {' & '.join(masks)}")
    total = prod(n for _, n in counts)
    return TileIndex(tuple(lines), bool(masks), total, " & ".join(inside) if all(inside) else "")


def wide_aranges(text: str, bits: int) -> str:
    """A kernel's source with every `tl.arange` taken to int64 where its offsets need 64 bits
    (`bits`): a block index of int32 times a stride, or a tile index that is a plain 0 (a dim
    one tile spans), kept the product in int32 and wrapped past 2^31 words (a read at a
    negative offset), whatever the program id's width."""
    return _ARANGE.sub(r"tl.arange(\1).to(tl.int64)", text) if bits == 64 else text


_ARANGE = re.compile(r"tl\.arange\((0, [^(),]+)\)")


# a tl kernel's line binding its program id to a name (`program_id`'s, and the inspector's)
PROGRAM_ID_LINE = re.compile(r"^    (\w+) = tl\.program_id\(0\)(?:\.to\(tl\.int64\))?$", re.M)
_TOP_LEVEL = re.compile(r"^(?=\S)", re.M)


def state_program_ranges(source: str, launches: tuple[Launch, ...] | list[Launch]) -> str:
    """`source` with each tl kernel that binds its program id to a name told that id's range,
    [0, the largest grid its launches give) (`tl.assume`; kernels of a persistent launch are
    left as they are). Offsets built from a tile index the compiler cannot bound are signed
    and may wrap, so their per-element `%` and `//` take sign corrections; bounded, they fold
    (on the H100: the gather along an inner axis 11.6 -> 10.7 us, the 1023 x 4097 bf16
    transpose 7.2 -> 6.5 us from CUDA graphs, the copies of 64 MB and more within 0.5 % either
    way: benchmarks/bound_probe.json; the skewed 50257 x 4096 bf16 transpose, walking its
    destination rows fastest, 13 % slower with its PTX 1.8x as long where its quotient tile
    index went unbounded: benchmarks/order_probe_unbounded.json against order_probe_after.json).
    Triton's interpreter checks each assumption, so a launch wider than its kernel was told
    fails there, in the tests, not silently on a GPU."""
    grids: dict[str, int | None] = {}
    for ln in launches:
        known = grids.get(ln.kernel, 0)
        grids[ln.kernel] = max(known, ln.grid) if isinstance(ln.grid, int) and known is not None else None
    for kernel, grid in grids.items():
        head = source.find(f"def {kernel}(")
        if head < 0 or not grid:
            continue
        nxt = _TOP_LEVEL.search(source, head + 1)  # the kernel's own lines: up to the next unindented one
        m = PROGRAM_ID_LINE.search(source, head, nxt.start() if nxt else len(source))
        if m is None:
            continue
        name = m.group(1)
        stated = f"\n    tl.assume({name} >= 0)\n    tl.assume({name} < {grid})"
        if not source.startswith(stated, m.end()):  # once
            source = source[:m.end()] + stated + source[m.end():]
    return source


# the eviction priority of the moved data's loads in the tl copy and gather kernels: kept last
# in L2, as Inductor keeps its transposes' loads (and its gathers' index loads). On the H100: the kernel
# benchmark's first plans took 0.6-1.9 % less time (median 1.4 %) on all 22 workloads whose
# same-size copy takes 60 us or more, against the run before without it, where copy_ moved by -0.5 to +0.4 %
# (benchmarks/kernel_results.json against kernel_results_planner25.json); in interleaved rounds
# (tools/hint_sweep.py --loads ,evict_last; benchmarks/hint_sweep_evict_last.json) AoS->SoA
# 16M x 8 fp32 1.2-1.3 % faster, 16-token KV pages 0.6-1.1 %, the 7 KiB embedding 0.4-1.3 %; the
# 1023 x 4097 bf16 transpose, whose 8 MB stay in L2 when replayed, 1.4-1.8 % slower in device
# time (benchmark: 6.55 -> 6.90 us); `evict_first` had cost up to 10 %
DATA_LOAD_HINT = 'eviction_policy="evict_last"'
# the loads that hint goes on: those of the source's data (index, inspector and bookkeeping
# loads keep their own, and so do the shifted loads, which read through a row pointer of their
# own: `shifted_copy_kernel`, not measured with the hint)
DATA_LOAD_CALL = "tl.load(src"


def with_call_kwarg(line: str, call: str, kwarg: str) -> str:
    """`line` with `kwarg` as the last argument of its first `call` (balanced parens)."""
    start = line.index(call) + len(call)
    depth = 1
    for k in range(start, len(line)):
        depth += {"(": 1, ")": -1}.get(line[k], 0)
        if depth == 0:
            return f"{line[:k]}, {kwarg}{line[k:]}"
    raise ValueError(f"unbalanced call on {line!r}")


def hint_data_loads(source: str, hint: str = DATA_LOAD_HINT) -> str:
    """`source` with `hint` on every load of the moved data (`DATA_LOAD_CALL`), once; what is
    moved and where stays the same (a hint only orders the cache's evictions)."""
    if not hint:
        return source
    return "\n".join(with_call_kwarg(line, "tl.load(", hint) if DATA_LOAD_CALL in line and hint not in line else line
                     for line in source.split("\n"))


def without_data_load_hint(source: str) -> str:
    """`source` as emitted before its data loads took `DATA_LOAD_HINT` (what the probes that
    put other hints or qualifiers on those loads start from)."""
    return source.replace(f", {DATA_LOAD_HINT}", "")


def program_id(bits: int, indent: str = "    ", lang: str = "tl", name: str = "pid") -> str:
    """The line binding `name` to the program id, 64-bit where the piece's offsets need it
    (`lang`: tl or gl)."""
    return f"{indent}{name} = {lang}.program_id(0)" + (f".to({lang}.int64)" if bits == 64 else "")


def blocked_layout(shape: list[int], word: int, num_warps: int) -> str:
    """A Gluon BlockedLayout for `shape` (last axis fastest), 16-byte vectors along it,
    threads then warps filling the fastest axes first (the remainder replicates on axis 0)."""
    rank = len(shape)
    spt = [1] * rank
    spt[-1] = min(max(16 // word, 1), shape[-1])
    tpw, wpc = [1] * rank, [1] * rank
    left_t, left_w = 32, num_warps
    for ax in reversed(range(rank)):
        room = max(shape[ax] // spt[ax], 1)
        t = min(left_t, room)
        tpw[ax], left_t = t, left_t // t
        room //= t
        w = min(left_w, max(room, 1))
        wpc[ax], left_w = w, left_w // w
    tpw[0] *= left_t
    wpc[0] *= left_w
    order = list(reversed(range(rank)))
    return f"gl.BlockedLayout({spt}, {tpw}, {wpc}, {order})"
