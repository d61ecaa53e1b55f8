"""Structured shared-memory accesses: a tile walked by a warp pattern, reduced to raw
warp instructions, so the bank model has one source of truth (the raw form).

Invariant: `analyze_tile_access(x)` equals the sum of `analyze_access` over
`reduce_tile_access(x)`, instruction by instruction (property-tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from legalsat.analyses.bank_conflicts import BankReport, analyze_access
from legalsat.diagnostics import Code, InputError
from legalsat.targets import Target
from legalsat.terms.integers import cdiv
from legalsat.terms.smem import SharedAccess, TileAccess, WarpPattern


def _problem(msg: str, fix: str, field: str) -> InputError:
    return Code.INVALID_INPUT.error(msg, fix, field)


def _either(values: list[int]) -> str:
    """'1 or 2', '2, 4 or 8'."""
    return ", ".join(map(str, values[:-1])) + " or " + str(values[-1]) if len(values) > 1 else str(values[0])


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
                       f"use vector {_either([w // ebits for w in (32, 64, 128) if w >= ebits])} for {t.dtype.name}",
                       "vector")
    # the vector against the row first: a row the vector does not divide cannot be fixed by padding
    if t.cols % x.vector:
        raise _problem(f"{t.cols} column{'s do' if t.cols != 1 else ' does'} not split into vectors of {x.vector}",
                       f"use a vector that divides {t.cols}", "vector")
    row_bytes = t.cols * ebits // 8
    if t.row_pitch_bytes < row_bytes:
        raise _problem(f"row_pitch_bytes {t.row_pitch_bytes} is less than a row "
                       f"({t.cols} x {t.dtype.name} = {row_bytes} bytes)",
                       f"use row_pitch_bytes >= {row_bytes}", "tile.row_pitch_bytes")
    width = width_bits // 8
    if t.row_pitch_bytes % width:
        raise _problem(f"the row pitch, {t.row_pitch_bytes} bytes (row_pitch_bytes, or a row plus padding_bytes), "
                       f"is not a multiple of the {width}-byte access, so some lanes would be misaligned",
                       f"pad rows to a multiple of {width} bytes (padding_bytes or row_pitch_bytes)",
                       "tile.row_pitch_bytes")
    if x.pattern in (WarpPattern.LDMATRIX, WarpPattern.LDMATRIX_TRANS):
        if width != 16:
            raise _problem("ldmatrix reads 16-byte rows", f"use vector {128 // ebits}",
                           "vector")
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


def _units(x: TileAccess, target: Target) -> tuple[int, np.ndarray]:
    """(access width, every lane's byte address of the walk in order, -1 padding the last
    instruction) as an int64 array of shape (instructions, lanes); raises like
    `reduce_tile_access`."""
    lanes = target.banks.lanes
    width = _check(x, lanes)
    t = x.tile
    # the tile within one block's shared memory, as the raw form's offsets are (any row pitch
    # goes: the swizzle is a function of the address, Swizzle.apply)
    footprint = (t.rows - 1) * t.row_pitch_bytes + t.cols * t.dtype.storage_bits // 8
    if footprint > target.smem_per_block_bytes:
        raise _problem(f"the tile takes {footprint} bytes of shared memory ({t.rows} rows at a {t.row_pitch_bytes}-byte "
                       f"pitch); a block has {target.smem_per_block_bytes} on {target.name}",
                       "analyze a tile that fits (the pattern repeats: a few rows of it say the same)", "tile")
    ebytes = t.dtype.storage_bits // 8
    vec_per_row = t.cols // x.vector
    # the count first, from the shape: enumerating a tile past the limit is what the limit avoids
    planned = t.rows * vec_per_row if x.pattern in (WarpPattern.ROWS, WarpPattern.COLS) else \
        cdiv(t.rows, 16) * cdiv(t.cols * ebytes, 32) * 32
    if cdiv(planned, lanes) > MAX_INSTRUCTIONS:
        raise _problem(f"walking this tile takes {cdiv(planned, lanes)} warp instructions; the limit is "
                       f"{MAX_INSTRUCTIONS}", "analyze a smaller tile (the pattern repeats)", "tile")
    if x.pattern in (WarpPattern.ROWS, WarpPattern.COLS):
        r, c = np.meshgrid(np.arange(t.rows), np.arange(vec_per_row),
                           indexing="ij" if x.pattern is WarpPattern.ROWS else "xy")
        units = r.ravel() * t.row_pitch_bytes + c.ravel() * width
    else:
        rb, cb, lane = np.meshgrid(np.arange(0, t.rows, 16), np.arange(0, t.cols * ebytes, 32), np.arange(32),
                                   indexing="ij")
        m, r = np.divmod(lane, 8)
        units = ((rb + (m % 2) * 8 + r) * t.row_pitch_bytes + cb + (m // 2) * 16).ravel()
    units = t.swizzle.apply(units.astype(np.int64))
    count = cdiv(len(units), lanes)
    if count > MAX_INSTRUCTIONS:
        raise _problem(f"walking this tile takes {count} warp instructions; the limit is "
                       f"{MAX_INSTRUCTIONS}", "analyze a smaller tile (the pattern repeats)", "tile")
    out = np.full(count * lanes, -1, dtype=np.int64)
    out[:len(units)] = units
    return width, out.reshape(count, lanes)


def reduce_tile_access(x: TileAccess, target: Target) -> list[SharedAccess]:
    """The warp instructions that walk the whole tile with the pattern, in order.

    Raises InputError when the combination cannot be issued (misaligned vector, ldmatrix on
    a tile that is not made of 16x16 blocks, ...) or would take more than MAX_INSTRUCTIONS.
    """
    width, units = _units(x, target)
    return [SharedAccess(x.op, width, tuple(None if a < 0 else int(a) for a in row)) for row in units]


def analyze_tile_access(x: TileAccess, target: Target) -> TileReport:
    """Per-instruction bank reports for the tile walk (see reduce_tile_access). Instructions
    whose addresses differ by whole bank rows (banks x bank bytes) are analysed once."""
    width, units = _units(x, target)
    row = target.banks.banks * target.banks.bank_bytes
    active = units >= 0
    none = np.iinfo(np.int64).max
    base = np.where(active, units, none).min(axis=1, keepdims=True)
    base = np.where(base == none, 0, base) // row * row
    shapes, inverse = np.unique(np.where(active, units - base, -1), axis=0, return_inverse=True)
    reports = [analyze_access(SharedAccess(x.op, width, tuple(None if a < 0 else int(a) for a in r)), target)
               for r in shapes]
    return TileReport(tuple(reports[i] for i in np.ravel(inverse)))

