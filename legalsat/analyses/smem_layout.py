"""Structured shared-memory accesses: a tile walked by a warp pattern, reduced to raw
warp instructions, so the bank model has one source of truth (the raw form).

Invariant: `analyze_tile_access(x)` equals the sum of `analyze_access` over
`reduce_tile_access(x)`, instruction by instruction (property-tested).
"""

from __future__ import annotations

from dataclasses import dataclass

from legalsat.analyses.bank_conflicts import BankReport, analyze_access
from legalsat.diagnostics import Code, InputError
from legalsat.targets import Target
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.integers import cdiv
from legalsat.terms.smem import SharedAccess, TileAccess, WarpPattern


def swizzle_offset(offset: int, swizzle: Swizzle) -> int:
    """Where TMA puts logical byte `offset` of a 1024-byte-aligned tile in shared memory.

    The 16-byte chunk index inside each span (bits 4 .. 4+log2(span/16)) is XORed with the
    same number of bits of the 128-byte row index (bits 7 ..).
    """
    span = swizzle.span_bytes
    if not span:
        return offset
    mask = span // 16 - 1
    return offset ^ (((offset >> 7) & mask) << 4)


def _problem(msg: str, fix: str, field: str) -> InputError:
    return Code.INVALID_INPUT.error(msg, fix, field)


def _check(x: TileAccess, lanes: int) -> int:
    """Validate the combination; return the access width in bytes."""
    t = x.tile
    ebits = t.dtype.storage_bits
    if t.dtype.packed:
        raise _problem(f"dtype {t.dtype.name} is a packed TMA format, not a shared-memory element",
                       "describe the tile as uint8 or uint16 elements", "tile.dtype")
    width_bits = x.vector * ebits
    if width_bits not in (32, 64, 128):
        raise _problem(f"vector of {x.vector} x {t.dtype.name} is {width_bits // 8} bytes per lane; "
                       "shared-memory accesses are 4, 8 or 16 bytes",
                       f"use vector {32 // ebits}, {64 // ebits} or {128 // ebits} for {t.dtype.name}",
                       "access.vector")
    row_bytes = t.cols * ebits // 8
    if t.row_pitch_bytes < row_bytes:
        raise _problem(f"row_pitch_bytes {t.row_pitch_bytes} is less than a row "
                       f"({t.cols} x {t.dtype.name} = {row_bytes} bytes)",
                       f"use row_pitch_bytes >= {row_bytes}", "tile.row_pitch_bytes")
    width = width_bits // 8
    if t.row_pitch_bytes % width:
        raise _problem(f"row_pitch_bytes {t.row_pitch_bytes} is not a multiple of the {width}-byte "
                       "access, so some lanes would be misaligned",
                       f"pad rows to a multiple of {width} bytes", "tile.row_pitch_bytes")
    if t.cols % x.vector:
        raise _problem(f"{t.cols} columns do not split into vectors of {x.vector}",
                       f"use a vector that divides {t.cols}", "access.vector")
    if t.swizzle is not Swizzle.NONE and t.row_pitch_bytes % 128:
        raise _problem(f"swizzle {t.swizzle.value} needs rows in whole 128-byte units, got a "
                       f"{t.row_pitch_bytes}-byte pitch",
                       'pad rows to a multiple of 128 bytes, or use swizzle "none"',
                       "tile.row_pitch_bytes")
    if x.pattern in (WarpPattern.LDMATRIX, WarpPattern.LDMATRIX_TRANS):
        if width != 16:
            raise _problem("ldmatrix reads 16-byte rows", f"use vector {128 // ebits}",
                           "access.vector")
        if t.rows % 16 or row_bytes % 32:
            raise _problem("ldmatrix x4 walks 16-row x 32-byte blocks; the tile is "
                           f"{t.rows} rows x {row_bytes} bytes",
                           "use a tile whose rows are a multiple of 16 and whose row bytes are a "
                           "multiple of 32", "tile")
        if lanes != 32:
            raise _problem("ldmatrix is an NVIDIA warp instruction", "use target sm90 or sm100",
                           "target")
    return width


@dataclass(frozen=True)
class TileReport:
    """Per-instruction reports and their totals."""

    instructions: tuple[BankReport, ...]

    @property
    def wavefronts(self) -> int:
        return sum(r.wavefronts for r in self.instructions)

    @property
    def ideal_wavefronts(self) -> int:
        return sum(r.ideal_wavefronts for r in self.instructions)

    @property
    def conflict_ways(self) -> float:
        return self.wavefronts / self.ideal_wavefronts if self.ideal_wavefronts else 1.0



MAX_INSTRUCTIONS = 4096


def reduce_tile_access(x: TileAccess, target: Target) -> list[SharedAccess]:
    """The warp instructions that walk the whole tile with the pattern, in order.

    Raises InputError when the combination cannot be issued (misaligned vector, ldmatrix on
    a tile that is not made of 16x16 blocks, ...) or would take more than MAX_INSTRUCTIONS.
    """
    lanes = target.banks.lanes
    width = _check(x, lanes)
    t = x.tile
    ebytes = t.dtype.storage_bits // 8
    vec_per_row = t.cols // x.vector

    def at(row: int, vcol: int) -> int:
        return swizzle_offset(row * t.row_pitch_bytes + vcol * width, t.swizzle)

    # the count first, from the shape: enumerating a tile past the limit is what the limit avoids
    planned = t.rows * vec_per_row if x.pattern in (WarpPattern.ROWS, WarpPattern.COLS) else \
        cdiv(t.rows, 16) * cdiv(t.cols * ebytes, 32) * 32
    if cdiv(planned, lanes) > MAX_INSTRUCTIONS:
        raise _problem(f"walking this tile takes {cdiv(planned, lanes)} warp instructions; the limit is "
                       f"{MAX_INSTRUCTIONS}", "analyze a smaller tile (the pattern repeats)", "tile")
    units: list[int]
    if x.pattern is WarpPattern.ROWS:
        units = [at(r, c) for r in range(t.rows) for c in range(vec_per_row)]
    elif x.pattern is WarpPattern.COLS:
        units = [at(r, c) for c in range(vec_per_row) for r in range(t.rows)]
    else:
        units = []
        for rb in range(0, t.rows, 16):
            for cb in range(0, t.cols * ebytes, 32):
                for lane in range(32):
                    m, r = divmod(lane, 8)
                    row = rb + (m % 2) * 8 + r
                    units.append(swizzle_offset(row * t.row_pitch_bytes + cb + (m // 2) * 16,
                                                t.swizzle))
    count = cdiv(len(units), lanes)
    if count > MAX_INSTRUCTIONS:
        raise _problem(f"walking this tile takes {count} warp instructions; the limit is "
                       f"{MAX_INSTRUCTIONS}", "analyze a smaller tile (the pattern repeats)", "tile")
    out = []
    for k in range(count):
        chunk = units[k * lanes:(k + 1) * lanes]
        chunk += [None] * (lanes - len(chunk))
        out.append(SharedAccess(x.op, width, tuple(chunk)))
    return out


def analyze_tile_access(x: TileAccess, target: Target) -> TileReport:
    """Per-instruction bank reports for the tile walk (see reduce_tile_access)."""
    return TileReport(tuple(analyze_access(a, target) for a in reduce_tile_access(x, target)))
