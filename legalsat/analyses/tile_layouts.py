"""Shared-memory tile layouts the planner can choose, judged by the bank-conflict model.

A staged transpose writes its tile along rows (16-byte vectors, the source's contiguous
direction) and reads it across rows (ldmatrix.trans for 16-bit elements, else 4-byte vectors
of consecutive rows: the destination's direction); a loaded operand tile is read by its consumer's pattern. Every candidate layout
(TMA swizzle modes, row padding) is evaluated with `legalsat.analyses.smem_layout`, the
model verified against Nsight Compute, never by rule of thumb; a loaded tile's stage layout
(boxes, swizzle) by the addresses its consumer's warps read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from legalsat.analyses.bank_conflicts import analyze_access
from legalsat.analyses.smem_layout import analyze_tile_access
from legalsat.diagnostics import InputError
from legalsat.targets import Target
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.dtypes import WORD_DTYPES
from legalsat.terms.integers import cdiv
from legalsat.terms.movement import Consumer, Major, TileMatrix
from legalsat.terms.smem import (
    TILE_SWIZZLES,
    MemOp,
    SharedAccess,
    SmemTile,
    StageLayout,
    TileAccess,
    WarpPattern,
)


@dataclass(frozen=True)
class TileLayout:
    """One candidate layout and the conflict ways of the accesses that use it (1.0 = none)."""

    swizzle: Swizzle
    pad_bytes: int
    write_ways: float
    read_ways: float

    @property
    def ways(self) -> float:
        return max(self.write_ways, self.read_ways)


def _ways(tile: SmemTile, pattern: WarpPattern, vector: int, op: MemOp, target: Target) -> float:
    return analyze_tile_access(TileAccess(tile, pattern, vector, op), target).conflict_ways


def _transposed_read(eb: int, target: Target) -> tuple[WarpPattern, int]:
    """How a warp reads a staged tile across its rows: 16-bit elements with ldmatrix.trans
    (NVIDIA), anything else as 4-byte vectors down consecutive rows."""
    if eb == 2 and target.banks.lanes == 32:
        return WarpPattern.LDMATRIX_TRANS, 8
    return WarpPattern.COLS, max(1, 4 // eb)


# rows of a staged tile whose walk repeats: every row pitch is a multiple of 16 bytes, so 64
# rows move an address by a multiple of 1024 bytes (whole bank rows, and whole 8-row swizzle
# periods), and every walk's instructions (32 lanes down rows, 16-row ldmatrix blocks, rows of
# vectors) fall within 64-row bands; a taller tile's walk is translated copies of the first
# band's, with the same ways
REPEAT_ROWS = 64


def staged_layouts(eb: int, target: Target, rows: int = 64, row_bytes: int = 128) -> tuple[TileLayout, ...]:
    """Every candidate layout of a `rows` x `row_bytes` staged-transpose tile of `eb`-byte
    elements, best (fewest ways, then least padding) first. eb in (1, 2, 4, 8)."""
    if rows > REPEAT_ROWS and rows % REPEAT_ROWS == 0:
        rows = REPEAT_ROWS
    return _staged_layouts(eb, target, rows, row_bytes)


@functools.cache
def _staged_layouts(eb: int, target: Target, rows: int, row_bytes: int) -> tuple[TileLayout, ...]:
    dt = WORD_DTYPES[eb]
    cols = row_bytes // eb
    out = []
    choices = [(s, 0) for s in TILE_SWIZZLES if row_bytes >= s.span_bytes]
    choices += [(Swizzle.NONE, p) for p in (16, 32)]  # pads keep the 16-byte row writes aligned
    for swizzle, pad in choices:
        tile = SmemTile(dt, rows, cols, row_bytes + pad, swizzle)
        try:
            w = _ways(tile, WarpPattern.ROWS, 16 // eb, MemOp.STORE, target)
            try:
                r = _ways(tile, *_transposed_read(eb, target), MemOp.LOAD, target)
            except InputError:  # too few rows for ldmatrix blocks: 4-byte column reads
                r = _ways(tile, WarpPattern.COLS, max(1, 4 // eb), MemOp.LOAD, target)
        except InputError:
            continue  # this layout cannot hold the tile (e.g. a swizzle wider than its rows)
        out.append(TileLayout(swizzle, pad, w, r))
    return tuple(sorted(out, key=lambda t: (t.ways, t.pad_bytes, t.swizzle != "none")))


@functools.cache
def best_staged_ways(eb: int, target: Target) -> int:
    """Conflict ways (rounded up) of the best staged-transpose layout for `eb`-byte elements."""
    best = staged_layouts(eb, target)
    return max(1, cdiv(int(best[0].ways * 1000), 1000)) if best else 4


def stage_read_ways(layout: StageLayout, matrix: TileMatrix, consumer: Consumer, major: Major | None,
                    target: Target, samples: int = 8) -> float:
    """Bank-conflict ways of a consumer's reads of a loaded tile (the worst of the first
    `samples` warp instructions), on the stage layout as TMA wrote it:

    - wgmma_a / wgmma_b: the 8-row x 16-byte core matrices the tensor core reads, four per warp
      instruction (as ldmatrix.x4 reads them), along the operand's contiguous dim;
    - rows: consecutive lanes read consecutive 16-byte vectors along the tile's last dim;
    - cols: consecutive lanes read the same 16-byte vector of consecutive rows (a column block,
      as a warp reading the tile across its rows vectorizes it);

    both 4-byte words when the last dim is not contiguous in the stage or spans under 16 bytes.

    `matrix`: the tile read as (rows, cols)."""
    eb = layout.element_bytes
    cols = matrix.cols

    lanes = target.banks.lanes
    ins, lane = np.meshgrid(np.arange(samples), np.arange(lanes), indexing="ij")  # (instruction, lane)
    if consumer in (Consumer.WGMMA_A, Consumer.WGMMA_B):
        t = max(1, 16 // eb)
        # (mn, k) of the operand; the contiguous one advances by 16-byte chunks
        q, r = np.divmod(lane % 32, 8)
        strided, chunk = r + 8 * (q % 2) + 16 * (ins % 4), (q // 2 + 2 * (ins // 4)) * t
        k, mn = (chunk, strided) if major is Major.K else (strided, chunk)
        rows_, cols_ = (mn, k) if consumer is Consumer.WGMMA_A else (k, mn)
        vec = 16
        addrs = layout.addresses(matrix.indices(rows_, cols_))
    else:
        contiguous = bool(layout.dims) and any(k == matrix.col_dim and mult == 1 for k, mult in layout.dims[0].parts)
        vec = 16 if contiguous and cols * eb >= 16 else 4
        per = max(1, vec // eb)
        if consumer is Consumer.ROWS:
            rows_, cols_ = np.divmod((ins * lanes + lane) * per, max(cols, 1))
        else:  # lane i: row i, the same vector of columns
            rows_, cols_ = ins * lanes + lane, np.zeros_like(lane)
        addrs = layout.addresses(matrix.indices(rows_, cols_))
        addrs = addrs - addrs % vec
    return max(analyze_access(SharedAccess(MemOp.LOAD, vec, tuple(int(a) for a in row)), target).conflict_ways
               for row in addrs)
