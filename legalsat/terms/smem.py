"""Shared-memory access terms: one warp instruction (raw), and tiles read by named patterns.

Raw: a warp-wide load or store of `access_bytes` per lane at per-lane byte offsets (None for
an inactive lane). Structured: a tile in shared memory (dtype, shape, row pitch, swizzle as
TMA writes it) accessed by a named warp pattern; `legalsat.analyses.smem_layout` reduces it
to raw instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from legalsat.terms.descriptor import Swizzle
from legalsat.terms.dtypes import DType


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
