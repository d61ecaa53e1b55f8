"""Data-movement requests: the terms the planner optimizes.

Shapes and strides are outermost first and in elements (as PyTorch gives them). A view's
`base_align` is the largest power of two dividing its base address, in bytes. Every term is
a frozen dataclass with tuple fields, so terms hash, compare and cross process boundaries.

Element maps (what a plan must reproduce exactly):
- Copy:      dst[i] = src[i] for every logical index i of the common shape.
- LoadTile:  the tile walks the whole source: for every tile position T (ceil(shape / tile)
             per dim, edge tiles included), element i of the tile holds src[T*tile + i] when
             that index is inside the tensor and zero (TMA's fill) otherwise; the plan states
             where in its shared-memory stage each element lands.
- Gather:    out[j, ...] = src[index[j], ...] along `axis`; with `page_size` p the index picks
             pages: out[j*p + t, ...] = src[index[j]*p + t, ...]. `out` is contiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from math import prod

import numpy as np

from legalsat.terms.dtypes import DType
from legalsat.terms.integers import cdiv, span

MAX_RANK = 8
MAX_TILE_RANK = 16  # tile loads take views of any rank a tensor library uses
MAX_BYTES = 1 << 40  # 1 TiB: past any GPU's memory; keeps the planner's integer arithmetic inside i64


class Consumer(StrEnum):
    """Who reads a loaded tile out of shared memory. `code`: its number in the planner's
    egglog terms (`(Tile code ...)`)."""

    WGMMA_A = "wgmma_a"
    WGMMA_B = "wgmma_b"
    ROWS = "rows"
    COLS = "cols"

    @property
    def code(self) -> int:
        return list(Consumer).index(self)


class Major(StrEnum):
    """Which dim of a matrix operand is contiguous in shared memory (wgmma's terms): K-major
    (the reduction dim) or MN-major (the row / column dim of the output)."""

    K = "k"
    MN = "mn"


@dataclass(frozen=True)
class ConsumerSpec:
    """What reads a loaded tile. wgmma operands name their major-ness (None: the source's own,
    derived from its strides), the instruction shape (m, n, k) and the element type the
    tensor core reads (None: the view's); the operand is the tile read as a matrix
    (`LoadTile.matrix`): (M, K) for wgmma_a, (K, N) for wgmma_b."""

    kind: Consumer
    major: Major | None = None
    instruction: tuple[int, int, int] | None = None
    element: DType | None = None

    @property
    def is_wgmma(self) -> bool:
        return self.kind in (Consumer.WGMMA_A, Consumer.WGMMA_B)


class Distribution(StrEnum):
    """What is known about a gather's index values. `code`: its number in the planner's
    egglog terms (`(Gath count code ...)`); `clusters`: entries close in value come together
    (what makes inspecting them pay off)."""

    RANDOM = "random"
    SORTED = "sorted"
    CLUSTERED = "clustered"
    PAGED = "paged"
    WARP_LOCAL = "warp_local"

    @property
    def code(self) -> int:
        return list(Distribution).index(self)

    @property
    def clusters(self) -> bool:
        return self in (Distribution.CLUSTERED, Distribution.PAGED)


class MovementKind(StrEnum):
    """What a request (and every plan for it) moves."""

    COPY = "copy"
    GATHER = "gather"
    LOAD_TILE = "load_tile"


@dataclass(frozen=True)
class View:
    """A strided tensor in global memory. Invariant: len(shape) == len(strides) <= MAX_RANK,
    every extent >= 1, every stride >= 0, base_align a power of two."""

    dtype: DType
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    base_align: int = 16

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def esize(self) -> int:
        """Bytes per element (packed sub-byte dtypes are not movable by the planner)."""
        return self.dtype.storage_bits // 8

    @property
    def has_contiguous_dim(self) -> bool:
        """Whether a dim of more than one element has stride 1 (a view of one element counts:
        it has nothing to move apart)."""
        return all(n == 1 for n in self.shape) or any(s == 1 and n > 1 for n, s in zip(self.shape, self.strides))

    @property
    def contiguous_dims(self) -> tuple[int, ...]:
        """The dims of stride 1 with more than one element; of a view of one element, its last
        dim where that has stride 1 (as `settle_unit_strides` gives a tile load's)."""
        dims = tuple(k for k, (n, s) in enumerate(zip(self.shape, self.strides)) if s == 1 and n > 1)
        if not dims and all(n == 1 for n in self.shape) and self.strides[-1] == 1:
            return (self.rank - 1,)
        return dims

    def span_elems(self) -> int:
        """One past the largest element offset the view touches."""
        return span(self.shape, self.strides)


@dataclass(frozen=True)
class Copy:
    """dst[i] = src[i]; src and dst have the same shape and dtype."""

    src: View
    dst: View

    kind = MovementKind.COPY


@dataclass(frozen=True)
class TileMatrix:
    """A tile seen as a rows x cols matrix: `col_dim` gives the column, `row_dims` (outermost
    first) the row, flattened row-major; the tile's other dims stay at index 0."""

    tile: tuple[int, ...]
    row_dims: tuple[int, ...]
    col_dim: int

    @property
    def rows(self) -> int:
        return prod(self.tile[k] for k in self.row_dims)

    @property
    def cols(self) -> int:
        return self.tile[self.col_dim]

    def index(self, r: int, c: int) -> tuple[int, ...]:
        """The tile index of matrix element (r, c); r and c wrap modulo the extents."""
        out = [0] * len(self.tile)
        out[self.col_dim] = c % self.cols
        r %= self.rows
        for k in reversed(self.row_dims):
            r, out[k] = divmod(r, self.tile[k])
        return tuple(out)

    def indices(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """`index` of every (r, c) pair, elementwise: shape r.shape + (rank,)."""
        out = np.zeros((*np.shape(r), len(self.tile)), dtype=np.int64)
        out[..., self.col_dim] = c % self.cols
        r = r % self.rows
        for k in reversed(self.row_dims):
            r, out[..., k] = np.divmod(r, self.tile[k])
        return out


def settle_unit_strides(src: View, tile: tuple[int, ...]) -> View:
    """`src` with each extent-1 dim that the tile spans (tile > 1 along it) and whose stride
    is 0 or no multiple of 16 bytes given the view's span, rounded up to 16 bytes, instead.
    Such a dim's stride multiplies only index 0 (its other tile positions are the zero-filled
    overhang), so every stride addresses the same elements; the new one is what a TMA
    descriptor takes (a row vector [1, 509] fp16 given with its 1,018-byte row pitch gets
    1,024) and sits outside every spanned dim. Other dims, and strides TMA takes, stay as
    given. A view of one element has its last dim contiguous (stride 1: TMA's dim 0, which has
    no stride), whatever stride it was given: a [1] bf16 vector took an 8-element stride and
    lost TMA for `inner_contiguous`."""
    es = src.esize
    inner = src.rank - 1 if all(n == 1 for n in src.shape) else None
    free = [k for k, (n, t, s) in enumerate(zip(src.shape, tile, src.strides))
            if n == 1 and t > 1 and (s == 0 or s * es % 16) and k != inner]
    if not free and (inner is None or src.strides[inner] == 1):
        return src
    words = max(1, 16 // es)  # elements per 16 bytes (es divides 16)
    pitch = cdiv(span(src.shape, src.strides), words) * words
    strides = tuple(1 if k == inner else pitch if k in free else s for k, s in enumerate(src.strides))
    return View(src.dtype, src.shape, strides, src.base_align)


@dataclass(frozen=True)
class LoadTile:
    """Bring every `tile`-shaped block of `src` into shared memory for `consumer`. Tile
    extents may exceed the tensor's (the overhang reads as zero)."""

    src: View
    tile: tuple[int, ...]
    consumer: ConsumerSpec

    def tiles(self) -> tuple[int, ...]:
        """Tile positions per dim: ceil(shape / tile)."""
        return tuple(cdiv(n, t) for n, t in zip(self.src.shape, self.tile))

    def matrix(self) -> TileMatrix:
        """The tile read as a matrix: its last dim with extent > 1 the columns, the other dims
        flattened row-major into the rows (as a compiler reshapes a [2, 32, 64] block into a
        64 x 64 operand)."""
        big = [k for k, t in enumerate(self.tile) if t > 1]
        col = big[-1] if big else len(self.tile) - 1
        return TileMatrix(self.tile, tuple(k for k in big if k != col), col)

    kind = MovementKind.LOAD_TILE


# the most buckets a gather routes to: MoE layers have up to a few hundred experts; the client
# keeps a count and an offset per bucket on the device, and a plan's inspector scans them all
MAX_GROUPS = 1 << 16


@dataclass(frozen=True)
class IndexSpec:
    """The index of a gather: how many entries, and what is known of their values.
    `groups`: the number of buckets (experts) indices are routed to (MoE), if any."""

    count: int
    distribution: Distribution = Distribution.RANDOM
    page_size: int | None = None
    unique: bool = False
    groups: int | None = None


@dataclass(frozen=True)
class Gather:
    """out[j, ...] = src[index[j], ...] along `axis` (pages of `page_size` when given)."""

    src: View
    axis: int
    index: IndexSpec

    kind = MovementKind.GATHER

    @property
    def unit(self) -> int:
        """Consecutive positions along `axis` that one index selects (a page, or 1)."""
        return self.index.page_size or 1

    @property
    def out_shape(self) -> tuple[int, ...]:
        s = list(self.src.shape)
        s[self.axis] = self.index.count * self.unit
        return tuple(s)


Movement = Copy | LoadTile | Gather


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides (outermost first) of a dense tensor of `shape`."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def relaid_out(shape, strides, esize: int, old_bytes: int, new_bytes: int) -> tuple[int, ...] | None:
    """`strides` (elements) with a plan's relayout applied: the innermost dim of more than one
    element whose pitch is `old_bytes` takes `new_bytes`; None when no dim has that pitch. The
    planner proves its plan against this view, and the client checks the caller's tensor by it."""
    k = max((k for k, (n, s) in enumerate(zip(shape, strides)) if n > 1 and s * esize == old_bytes), default=None)
    if k is None:
        return None
    out = list(strides)
    out[k] = new_bytes // esize
    return tuple(out)


def coalesced(shape, *strides) -> tuple[list[int], ...]:
    """The same (offset, ...) set of a strided index space with unit dims dropped and each
    pair of neighbouring dims merged where the outer one continues the inner on every side
    (stride_outer == stride_inner * extent_inner): a bijection of index spaces that keeps
    every offset, so a proof or a plan about the coalesced form is one about the request,
    with fewer dims to reason about."""
    dims = [(n, *(st[k] for st in strides)) for k, n in enumerate(shape) if n != 1] or [(1,) + (0,) * len(strides)]
    out = [dims[0]]
    for n, *st in dims[1:]:
        m, *prev = out[-1]
        if all(p == s * n for p, s in zip(prev, st)):
            out[-1] = (m * n, *st)
        else:
            out.append((n, *st))
    return tuple([d[i] for d in out] for i in range(len(strides) + 1))


def moved_elements(m: Movement) -> int:
    """Elements a movement writes: the whole destination of a copy, the gathered rows of a
    gather, every tile of a tile load (overhanging edge tiles included)."""
    if isinstance(m, Gather):
        return m.index.count * m.unit * (m.src.numel // m.src.shape[m.axis])
    if isinstance(m, LoadTile):
        return prod(m.tiles()) * prod(m.tile)
    return m.src.numel


# what a skewed staged tile aligns each destination row's segment to (a DRAM/L2 sector)
SKEW_SECTOR_BYTES = 32


def misaligned_pitch(stride: int, element_bytes: int) -> bool:
    """Whether rows `stride` elements apart start off 16 bytes from each other (a 50257-element
    bf16 pitch): no 16-byte store vector fits every row's start. The planner (the stores it
    promises a staged tile) and the kernels (whether they skew the tile) share this reading."""
    return (stride * element_bytes) % 16 != 0


def sector_misaligned_pitch(stride: int, element_bytes: int) -> bool:
    """Whether rows `stride` elements apart start off a 32-byte sector from each other: a tile's
    row segments then begin and end inside sectors, each written in part by two programs. A
    destination larger than L2 is written faster skewed (each row's segment moved onto a sector
    of its own) for pitches on 16 bytes too (`misaligned_pitch` is the narrower rule): on the
    H100 the 50257-row bf16 transpose into a 50264-element pitch ran at 0.935 of a same-size copy
    skewed against 0.807 plain, into a 20008-element pitch 0.926 against 0.811, fp16 rows of 30008
    elements 0.925 against 0.827, fp32 rows of 5004 and 16388 elements 0.924 and 0.932 against
    0.918 and 0.922 (`python -m tools.sector_pitch_probe`, benchmarks/sector_pitch_probe.json).
    The planner (the tile it skews) and the kernels (what `skewed_stores` may be set on) share
    this reading."""
    return (stride * element_bytes) % SKEW_SECTOR_BYTES != 0


def sector_skewable(run_bytes: int, extent: int, tile: int, src_run_bytes: int) -> bool:
    """Whether a staged tile whose destination rows are misaligned is skewed: its elements are
    at most 8 bytes, its destination run (`tile` elements, `run_bytes`) spans more than one whole
    sector, the dim (`extent`) is longer than the tile, and its source runs (`src_run_bytes`) fill
    a sector (shorter ones ran
    faster plain on the H100: the 50257 x 4096 bf16 transpose's 64 x 2 and 64 x 4 tiles 976.6
    and 521.2 us against 1305.6 and 653.7 skewed, its 64 x 16 tile 492.6 against 335.7;
    benchmarks/budget_heldout_results*.json). The planner (the stores it promises) and the
    kernels (the tile they emit) share this one reading."""
    return (run_bytes <= 8 * tile and run_bytes > SKEW_SECTOR_BYTES and run_bytes % SKEW_SECTOR_BYTES == 0
            and extent > tile and src_run_bytes >= SKEW_SECTOR_BYTES)


def transposed_pair(dims) -> tuple[int, int] | None:
    """(a, b) over dims given as (extent, src stride, dst stride): the first dim contiguous in
    src only and the first contiguous in dst only, or None when the copy does not transpose.
    The planner and the kernels share this one reading of "transposes"."""
    dims = list(dims)
    a = next((k for k, (n, s, d) in enumerate(dims) if n > 1 and s == 1 and d != 1), None)
    b = next((k for k, (n, s, d) in enumerate(dims) if n > 1 and d == 1 and s != 1), None)
    return (a, b) if a is not None and b is not None else None


# the widest small side a register transpose holds whole (the shuffle rule's bound: a warp's
# registers hold it, one 16-byte vector a lane)
SHUFFLE_SMALL_BYTES = 64
# the most channels an interleave regroups: a thread holds a 16-byte vector per channel and per
# group of pixels, loaded and regrouped (8 channels, two groups: 128 registers of 4 bytes)
INTERLEAVE_MAX_CHANNELS = 8


@dataclass(frozen=True)
class Interleave:
    """A transpose between a planar side (each of `channels` planes a contiguous run of
    pixels, dim `pixel`) and an interleaved side (each pixel's `channels` elements contiguous,
    pixels `channels` apart: NCHW <-> NHWC, SoA <-> AoS). `to_interleaved`: the destination is
    the interleaved side."""

    pixel: int
    channel: int
    channels: int
    to_interleaved: bool


def interleave_form(dims, element_bytes: int) -> Interleave | None:
    """The `Interleave` reading of a copy over dims given as (extent, src stride, dst stride),
    or None: it transposes (`transposed_pair`), one side is dense (the pixel dim's stride there
    is the channel count) and there are 2 to INTERLEAVE_MAX_CHANNELS channels of at most
    SHUFFLE_SMALL_BYTES together. The planner (the shuffle plan's tile and estimate) and the
    kernels (the interleave kernel) share this one reading."""
    dims = list(dims)
    tr = transposed_pair(dims)
    if tr is None:
        return None
    a, b = tr  # a: contiguous in src only, b: contiguous in dst only
    (na, _, da), (nb, sb, _) = dims[a], dims[b]
    forms = []
    if da == nb:  # the destination holds each pixel's channels together
        forms.append(Interleave(a, b, nb, True))
    if sb == na:  # the source does
        forms.append(Interleave(b, a, na, False))
    forms = [f for f in forms
             if 2 <= f.channels <= INTERLEAVE_MAX_CHANNELS and f.channels * element_bytes <= SHUFFLE_SMALL_BYTES]
    # both sides dense (a small 2-D transpose): the odd count, which the estimate prices, else the fewer
    return min(forms, key=lambda f: (f.channels % 2 == 0, f.channels), default=None)
