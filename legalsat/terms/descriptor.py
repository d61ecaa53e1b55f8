"""The TMA tiled descriptor: exactly the arguments of `cuTensorMapEncodeTiled`.

Ordering is the driver's: innermost dimension first, `global_strides` in bytes with
rank-1 entries (the innermost stride is the element size and is not passed).
Enum spellings are legalsat's public ones; `.cu` gives the driver's integer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from legalsat.terms.dtypes import DType, dtype


class Interleave(StrEnum):
    NONE = "none"
    B16 = "16B"
    B32 = "32B"

    @property
    def cu(self) -> int:
        return _INTERLEAVE_CU[self]

    @property
    def bytes(self) -> int:
        """Interleave chunk in bytes (0 for none)."""
        return {Interleave.NONE: 0, Interleave.B16: 16, Interleave.B32: 32}[self]


class Swizzle(StrEnum):
    NONE = "none"
    B32 = "32B"
    B64 = "64B"
    B128 = "128B"
    B128_ATOM_32B = "128B_atom_32B"
    B128_ATOM_32B_FLIP_8B = "128B_atom_32B_flip_8B"
    B128_ATOM_64B = "128B_atom_64B"

    @property
    def cu(self) -> int:
        return _SWIZZLE_CU[self]

    @property
    def span_bytes(self) -> int:
        """Bytes one swizzle row spans (0 for none): the cap on the inner box. The one table
        of swizzle spans: shared-memory layouts, descriptors and kernels read it here."""
        return _SWIZZLE_SPAN[self]

    def apply(self, offset):
        """Where TMA puts logical byte `offset` (an int or an integer array) of a
        1024-byte-aligned tile in shared memory: the 16-byte chunk index inside each span (bits
        4 .. 4+log2(span/16)) XORed with as many bits of the 128-byte row index (bits 7 ..)."""
        span = self.span_bytes
        return offset ^ (((offset >> 7) & (span // 16 - 1)) << 4) if span else offset

    @classmethod
    def widest_within(cls, nbytes: int) -> Swizzle:
        """The widest of none/32B/64B/128B whose span `nbytes` fills (none below 32 bytes)."""
        return next((s for s in (cls.B128, cls.B64, cls.B32) if nbytes >= s.span_bytes), cls.NONE)


class L2Promotion(StrEnum):
    NONE = "none"
    B64 = "64B"
    B128 = "128B"
    B256 = "256B"

    @property
    def cu(self) -> int:
        return _L2_CU[self]


class OobFill(StrEnum):
    NONE = "none"
    NAN_REQUEST_ZERO_FMA = "nan_request_zero_fma"

    @property
    def cu(self) -> int:
        return 0 if self is OobFill.NONE else 1


_SWIZZLE_SPAN = {Swizzle.NONE: 0, Swizzle.B32: 32, Swizzle.B64: 64, Swizzle.B128: 128,
                 Swizzle.B128_ATOM_32B: 128, Swizzle.B128_ATOM_32B_FLIP_8B: 128, Swizzle.B128_ATOM_64B: 128}
_INTERLEAVE_CU = {v: i for i, v in enumerate(Interleave)}
# value -> member tables: a plain dict lookup is ~10x faster than calling the Enum class.
_INTERLEAVE = {m.value: m for m in Interleave}
_SWIZZLE = {m.value: m for m in Swizzle}
_L2 = {m.value: m for m in L2Promotion}
_OOB = {m.value: m for m in OobFill}
_SWIZZLE_CU = {v: i for i, v in enumerate(Swizzle)}
_L2_CU = {v: i for i, v in enumerate(L2Promotion)}

# The widths of the C types the driver takes: values outside them cannot be passed at all,
# so they are input errors rather than legality verdicts.
UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1


def store_row_overrun(row_bytes: int) -> int:
    """Bytes a TMA store writes past the end of a box row of `row_bytes`: the unit writes
    whole 16-byte chunks (measured on the H100: tools/tma_store_row_probe.py), so a row that is
    no multiple of 16 bytes gets the rest of its last chunk written, into whatever follows it."""
    return -row_bytes % 16


@dataclass(frozen=True)
class TmaDescriptor:
    """Arguments of one `cuTensorMapEncodeTiled` call, innermost dimension first.

    Invariants (enforced by the parsers, relied on by the legality rules):
    len(global_dim) == len(box_dim) == len(element_strides) == rank and
    len(global_strides) == max(rank - 1, 0); every integer fits the driver's C type
    (rank, box_dim, element_strides: uint32; the rest: uint64).
    """

    dtype: DType
    rank: int
    global_address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: Interleave = Interleave.NONE
    swizzle: Swizzle = Swizzle.NONE
    l2_promotion: L2Promotion = L2Promotion.NONE
    oob_fill: OobFill = OobFill.NONE

    @classmethod
    def from_fields(
        cls,
        *,
        dtype: str,
        rank: int,
        global_address: int,
        global_dim: list[int] | tuple[int, ...],
        global_strides: list[int] | tuple[int, ...],
        box_dim: list[int] | tuple[int, ...],
        element_strides: list[int] | tuple[int, ...],
        interleave: str = "none",
        swizzle: str = "none",
        l2_promotion: str = "none",
        oob_fill: str = "none",
    ) -> TmaDescriptor:
        """Build from public spellings (already type-checked by the caller's schema)."""
        return cls(
            dtype=_dtype(dtype),
            rank=rank,
            global_address=global_address,
            global_dim=tuple(global_dim),
            global_strides=tuple(global_strides),
            box_dim=tuple(box_dim),
            element_strides=tuple(element_strides),
            interleave=_INTERLEAVE[interleave],
            swizzle=_SWIZZLE[swizzle],
            l2_promotion=_L2[l2_promotion],
            oob_fill=_OOB[oob_fill],
        )



_dtype = dtype
