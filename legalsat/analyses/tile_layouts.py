"""Shared-memory tile layouts the planner can choose, judged by the bank-conflict model.

A staged transpose writes its tile along rows (16-byte vectors, the source's contiguous
direction) and reads it across rows (ldmatrix.trans for 16-bit elements, else 4-byte vectors
of consecutive rows: the destination's direction); a loaded operand tile is read by its consumer's pattern. Every candidate layout
(TMA swizzle modes, row padding) is evaluated with `legalsat.analyses.smem_layout`, the
model verified against Nsight Compute, never by rule of thumb.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from legalsat.analyses.smem_layout import analyze_tile_access
from legalsat.diagnostics import InputError
from legalsat.targets import Target
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.dtypes import WORD_DTYPES
from legalsat.terms.integers import cdiv
from legalsat.terms.smem import TILE_SWIZZLES, MemOp, SmemTile, TileAccess, WarpPattern


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


@functools.cache
def staged_layouts(eb: int, target: Target, rows: int = 64, row_bytes: int = 128) -> tuple[TileLayout, ...]:
    """Every candidate layout of a `rows` x `row_bytes` staged-transpose tile of `eb`-byte
    elements, best (fewest ways, then least padding) first. eb in (1, 2, 4, 8)."""
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


_CONSUMER = {"rows": (WarpPattern.ROWS, 16), "cols": (WarpPattern.COLS, 4),
             "wgmma_a": (WarpPattern.LDMATRIX, 16), "wgmma_b": (WarpPattern.LDMATRIX_TRANS, 16)}


@functools.cache
def consumer_layouts(eb: int, rows: int, row_bytes: int, consumer: str,
                     target: Target) -> tuple[TileLayout, ...]:
    """Swizzle modes for a loaded tile (TMA writes it), judged by its consumer's reads.
    wgmma operands are judged by their ldmatrix-shaped 16-byte row reads. Best first;
    only swizzles whose span fits the row (`row_bytes`) are offered."""
    dt = WORD_DTYPES[min(eb, 8)]
    pattern, width = _CONSUMER[consumer]
    vector = max(1, width * 8 // dt.storage_bits)
    out = []
    for swizzle in TILE_SWIZZLES:
        span = swizzle.span_bytes
        if span > row_bytes or (span and row_bytes % span):
            continue
        pitch = row_bytes if not span else max(row_bytes, 128)
        if span and pitch % 128:
            continue
        tile = SmemTile(dt, rows, row_bytes // dt.storage_bits * 8, pitch, swizzle)
        try:
            r = _ways(tile, pattern, vector, MemOp.LOAD, target)
        except ValueError:  # the pattern does not fit this tile shape: judge by rows
            r = _ways(tile, WarpPattern.ROWS, 128 // dt.storage_bits, MemOp.LOAD, target)
        out.append(TileLayout(swizzle, 0, 1.0, r))
    return tuple(sorted(out, key=lambda t: (t.ways, -len(t.swizzle))))
