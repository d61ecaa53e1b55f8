"""The wgmma shared-memory matrix descriptor: which stage layouts it can address, and with what
fields (PTX ISA, "Matrix Descriptor Format"; CuTe's canonical GMMA layouts, in
cute/atom/mma_traits_sm90_gmma.hpp, `make_gmma_desc`).

In units of 16-byte chunks (T elements each), a descriptor describes, per instruction:

    K-major,  interleave : ((8,m),2)     : ((1,SBO),LBO)        (mn, k-chunk)
    K-major,  swizzle W  : ((8,m),2)     : ((W,SBO),1)          W = 2, 4, 8 for 32B, 64B, 128B
    MN-major, interleave : ((1,m),(8,k)) : ((-,SBO),(1,LBO))    (mn-chunk, k)
    MN-major, swizzle W  : ((W,m),(8,k)) : ((1,LBO),(W,SBO))

the swizzle then applying to the absolute address, as TMA applies it when it writes. A layout
is addressable when every element of the operand slice sits where the formula puts it; the
fields are read off the layout and then checked element by element.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from legalsat.terms.descriptor import Swizzle
from legalsat.terms.movement import Major

# descriptor bits 62-63
LAYOUT_TYPE = {Swizzle.NONE: 0, Swizzle.B128: 1, Swizzle.B64: 2, Swizzle.B32: 3}
# the element types the tensor core reads from shared memory (f16, bf16, tf32 from fp32 words,
# e4m3, e5m2, s8, u8)
ELEMENTS = frozenset({"float16", "bfloat16", "float32", "float32_ftz", "tfloat32", "tfloat32_ftz",
                      "float8_e4m3fn", "float8_e5m2", "int8", "uint8"})
K_BITS = 256  # one instruction's K extent, in bits: 16 x 16-bit, 8 x tf32, 32 x 8-bit
INTEGER_ELEMENTS = frozenset({"int8", "uint8"})
# the widths of the element types the tensor core reads: words of another width (fp64, int64,
# complex64) hold no wgmma operand under any name
READ_BITS = frozenset({8, 16, 32})


def instruction_ns(element: str) -> tuple[int, ...]:
    """The n of wgmma's m64nNk shapes for `element` (PTX ISA; CuTe's MMA_64xNx32_S32S8S8 atoms):
    multiples of 8 up to 256, except for 8-bit integers: 8, 16, 24, then multiples of 16."""
    if element in INTEGER_ELEMENTS:
        return (8, 16, 24, *range(32, 257, 16))
    return tuple(range(8, 257, 8))
FIELD_LIMIT = 1 << 18  # LBO / SBO / start: 14 bits of 16-byte units


@dataclass(frozen=True)
class Fields:
    layout_type: int
    lbo_bytes: int
    sbo_bytes: int


def canonical_offset(major: Major, swizzle: Swizzle, eb: int, lbo: int, sbo: int, mn, k):
    """Byte offset (before the swizzle) the descriptor gives element (mn, k) of a slice; mn
    and k may be integers or integer arrays (elementwise)."""
    t = 16 // eb
    w = swizzle.span_bytes // 16
    if major is Major.K:
        chunk, kin = k // t, k % t
        if not w:
            return (mn % 8) * 16 + (mn // 8) * sbo + chunk * lbo + kin * eb
        return (mn % 8) * w * 16 + (mn // 8) * sbo + chunk * 16 + kin * eb
    chunk, mnin = mn // t, mn % t
    if not w:
        return mnin * eb + chunk * sbo + (k % 8) * 16 + (k // 8) * lbo
    return mnin * eb + (chunk % w) * 16 + (chunk // w) * lbo + (k % 8) * w * 16 + (k // 8) * sbo


def operand_fields(rel: np.ndarray, major: Major, swizzle: Swizzle, eb: int) -> Fields | None:
    """The descriptor fields of one instruction's operand slice, or None when no descriptor
    addresses it. `rel[mn, k]`: the byte offset (before the swizzle) of element (mn, k) of the
    slice from its first element, for the rows one instruction reads (a multiple of 8) by one
    k-slice. Every element is checked."""
    mn_extent, k_width = rel.shape
    if swizzle not in LAYOUT_TYPE or mn_extent % 8:
        return None
    t, w = 16 // eb, swizzle.span_bytes // 16
    if major is Major.K:
        sbo = int(rel[8, 0]) if mn_extent > 8 else 0
        lbo = int(rel[0, t]) if not w else 16
    elif w:
        lbo = int(rel[t * w, 0]) if mn_extent > t * w else 16
        sbo = int(rel[0, 8])
    else:
        sbo, lbo = (int(rel[t, 0]) if mn_extent > t else 0), int(rel[0, 8])
    if min(lbo, sbo) < 0 or max(lbo, sbo) >= FIELD_LIMIT or lbo % 16 or sbo % 16:
        return None
    mn, k = np.meshgrid(np.arange(mn_extent), np.arange(k_width), indexing="ij")
    if not np.array_equal(rel, canonical_offset(major, swizzle, eb, lbo, sbo, mn, k)):
        return None
    return Fields(LAYOUT_TYPE[swizzle], lbo, sbo)


def base_offset(start_offset: int, swizzle: Swizzle) -> int:
    """The descriptor's matrix base offset of a slice starting `start_offset` bytes into a
    1024-byte-aligned stage. PTX: 0 where the swizzle pattern starts on its repeat boundary
    (8 rows of the span: 1024, 512, 256 bytes for 128B, 64B, 32B; CuTe writes 0 for the
    slices of its stages, which all start so), else the pattern's 128-byte row phase within
    its repeat: (address >> 7) & 7 for 128B, the bits of it below the repeat for 64B and 32B."""
    repeat = 8 * swizzle.span_bytes
    return (start_offset % repeat) >> 7 if repeat else 0
