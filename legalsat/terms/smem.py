"""Shared-memory access terms: one warp instruction (raw), and tiles read by named patterns.

Raw: a warp-wide load or store of `access_bytes` per lane at per-lane byte offsets (None for
an inactive lane). Structured: a tile in shared memory (dtype, shape, row pitch, swizzle as
TMA writes it) accessed by a named warp pattern; `legalsat.analyses.smem_layout` reduces it
to raw instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from math import prod

import numpy as np

from legalsat.terms.descriptor import Swizzle
from legalsat.terms.dtypes import DType

# what a TMA pipeline's shared memory holds beside its boxes: one stage's mbarrier, aligned
# (the planner's budget and the Gluon kernel's own check count the same)
TMA_STAGE_BARRIER_BYTES = 64


def tma_pipeline_bytes(stages, box_bytes: int, store_boxes: int = 0):
    """The shared memory of a TMA pipeline: `stages` boxes of `box_bytes`, each with its
    mbarrier, and `store_boxes` more boxes (a transpose's store buffers and scratch). The
    planner's budget (its z3 form too: `stages` may be a z3 term), its explanations and the
    Gluon kernel's own check all count it so."""
    return stages * (box_bytes + TMA_STAGE_BARRIER_BYTES) + store_boxes * box_bytes


# The inspector-executor's scans (legalsat.kernels.inspector) take int32 tiles of at most
# INSPECTOR_STEP_ELEMENTS a step, at 4 bytes of shared memory an element (compiled for sm90:
# tests/kernels/test_resources.py); the plain inspector's prefix sum scans
# INSPECTOR_BUCKET_SCAN buckets a step. The planner sizes the step, the kernels follow it.
INSPECTOR_STEP_ELEMENTS = 8192
INSPECTOR_BUCKET_SCAN = 1024
SCAN_BYTES_PER_ELEMENT = 4


class MemOp(StrEnum):
    LOAD = "load"
    STORE = "store"


# The TMA swizzle modes a shared-memory tile can have (TMA writes it so): the 16-byte chunk
# index within each span is XORed with the 128-byte row index (mod span/16).
TILE_SWIZZLES = (Swizzle.NONE, Swizzle.B32, Swizzle.B64, Swizzle.B128)


class WarpPattern(StrEnum):
    """How a warp walks a tile. `rows`: consecutive lanes take consecutive vectors along
    the rows; `cols`: consecutive lanes take the same vector column of consecutive rows;
    `ldmatrix` / `ldmatrix_trans`: each 8-lane group gives the 16-byte row addresses of one
    8x8 (16-bit) matrix of a 16x16 block (x4), the transposed form reading the same rows."""

    ROWS = "rows"
    COLS = "cols"
    LDMATRIX = "ldmatrix"
    LDMATRIX_TRANS = "ldmatrix_trans"


@dataclass(frozen=True)
class SharedAccess:
    """One warp-wide shared-memory instruction.

    Invariants: len(addresses) == the target's lanes; every active offset is a non-negative
    multiple of access_bytes; access_bytes in (4, 8, 16).
    """

    op: MemOp
    access_bytes: int
    addresses: tuple[int | None, ...]


@dataclass(frozen=True)
class SmemTile:
    """A 2-D tile in shared memory, row-major, at a 1024-byte-aligned base (as TMA needs).

    `row_pitch_bytes` >= cols * element size; padding is the difference; `swizzle` is one of
    TILE_SWIZZLES.
    """

    dtype: DType
    rows: int
    cols: int
    row_pitch_bytes: int
    swizzle: Swizzle = Swizzle.NONE


@dataclass(frozen=True)
class TileAccess:
    """A tile walked by a warp pattern with `vector` elements per lane per instruction."""

    tile: SmemTile
    pattern: WarpPattern
    vector: int
    op: MemOp = MemOp.LOAD


@dataclass(frozen=True)
class LayoutDim:
    """One dim of a shared-memory stage, as a TMA descriptor dim lands it: `box` elements per
    box at `stride` elements apart, `boxes` boxes at `box_stride` elements apart. `parts` maps
    tile dims onto it: a tile index i lands at position p = sum(i[k] * mult for k, mult)
    (several tile dims share a stage dim when the walk coalesced them)."""

    parts: tuple[tuple[int, int], ...]
    box: int
    boxes: int
    stride: int
    box_stride: int

    @property
    def extent(self) -> int:
        return self.box * self.boxes


@dataclass(frozen=True)
class StageLayout:
    """Where each element of a tile lands in its shared-memory stage (a 1024-byte-aligned
    buffer): `dims` innermost first, in elements of `element_bytes`; the swizzle permutes 16-byte
    chunks of the resulting byte offsets as TMA writes them. Tile dims in no dim's `parts` have
    stride 0 (broadcast dims, and dims the tile does not span)."""

    dims: tuple[LayoutDim, ...]
    element_bytes: int
    swizzle: Swizzle = Swizzle.NONE

    def offset(self, index: tuple[int, ...]) -> int:
        """Byte offset of tile element `index` (outermost first) before the swizzle."""
        out = 0
        for d in self.dims:
            p = sum(index[k] * mult for k, mult in d.parts)
            out += (p % d.box) * d.stride + (p // d.box) * d.box_stride
        return out * self.element_bytes

    def offsets(self, index: np.ndarray) -> np.ndarray:
        """`offset` of every tile index in `index` (shape [..., rank]), elementwise."""
        out = np.zeros(index.shape[:-1], dtype=np.int64)
        for d in self.dims:
            p = sum(index[..., k] * mult for k, mult in d.parts)
            out += (p % d.box) * d.stride + (p // d.box) * d.box_stride
        return out * self.element_bytes

    def address(self, index: tuple[int, ...]) -> int:
        """Byte address of tile element `index` in the stage, swizzled as TMA writes it."""
        return self.swizzle.apply(self.offset(index))

    def addresses(self, index: np.ndarray) -> np.ndarray:
        """`address` of every tile index in `index` (shape [..., rank]), elementwise."""
        return self.swizzle.apply(self.offsets(index))

    @property
    def bytes(self) -> int:
        """Bytes of the stage: the boxes fill it densely."""
        return prod(d.extent for d in self.dims) * self.element_bytes
