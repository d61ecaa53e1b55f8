"""Element types legalsat speaks about, with the facts every analysis needs.

One table, keyed by the public dtype name (the spelling used in requests and plans).
The CUDA enum value is the `CUtensorMapDataType` the driver takes, so the legality model
and the driver probe share one source of truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class DType:
    """One element type.

    Invariants: `storage_bits` is the footprint of one element in memory including the gaps
    of packed formats (16U4_ALIGN16B stores 16 four-bit values in 16 bytes, so 8 bits each);
    `value_bits` is the information content; `cu_tensor_map` is the driver's enum value;
    `moves_as` names the driver type a TMA descriptor moves it as (None: itself; element types
    the driver has no enum for, such as fp8 and int8, move as unsigned words of their width).
    """

    name: str
    value_bits: int
    storage_bits: int
    is_float: bool
    packed: bool
    cu_tensor_map: int
    moves_as: str | None = None

    @property
    def tma_name(self) -> str:
        """The `cuTensorMapEncodeTiled` data type of a descriptor over this element type."""
        return self.moves_as or self.name

    @property
    def size_bytes(self) -> Fraction:
        """Bytes one element occupies in memory (a fraction for packed 4-bit types)."""
        return Fraction(self.storage_bits, 8)

    def bytes_for(self, count: int) -> Fraction:
        """Bytes that `count` consecutive elements occupy."""
        return Fraction(count * self.storage_bits, 8)


_TABLE = (
    DType("uint8", 8, 8, False, False, 0),
    DType("uint16", 16, 16, False, False, 1),
    DType("uint32", 32, 32, False, False, 2),
    DType("int32", 32, 32, False, False, 3),
    DType("uint64", 64, 64, False, False, 4),
    DType("int64", 64, 64, False, False, 5),
    DType("float16", 16, 16, True, False, 6),
    DType("float32", 32, 32, True, False, 7),
    DType("float64", 64, 64, True, False, 8),
    DType("bfloat16", 16, 16, True, False, 9),
    DType("float32_ftz", 32, 32, True, False, 10),
    DType("tfloat32", 32, 32, True, False, 11),
    DType("tfloat32_ftz", 32, 32, True, False, 12),
    # sm100 packed sub-byte formats: 16 values per packet, packets aligned as named.
    DType("16u4_align8b", 4, 4, False, True, 13),
    DType("16u4_align16b", 4, 8, False, True, 14),
    DType("16u6_align16b", 6, 8, False, True, 15),
)

# Element types a movement may name beyond the driver's: the planner moves them as bytes or
# words (bit copies), and a descriptor over them uses `moves_as`.
_MOVED_AS_WORDS = (
    DType("int8", 8, 8, False, False, 0, "uint8"),
    DType("bool", 8, 8, False, False, 0, "uint8"),
    DType("float8_e4m3fn", 8, 8, True, False, 0, "uint8"),
    DType("float8_e5m2", 8, 8, True, False, 0, "uint8"),
    DType("int16", 16, 16, False, False, 1, "uint16"),
)

DTYPES: dict[str, DType] = {d.name: d for d in _TABLE}  # the driver's data types (descriptors)
DTYPE_NAMES: tuple[str, ...] = tuple(d.name for d in _TABLE)
ELEMENT_TYPES: dict[str, DType] = {**DTYPES, **{d.name: d for d in _MOVED_AS_WORDS}}  # what views may hold


def dtype(name: str) -> DType:
    """Look up a dtype by its public name; raises KeyError naming the valid spellings."""
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r}; use one of: {', '.join(DTYPE_NAMES)}") from None


# The unsigned integer type of each word width: what kernels move and shared-memory models
# reason about, whatever the request's dtype (moves are bit copies).
WORD_DTYPES: dict[int, DType] = {1: DTYPES["uint8"], 2: DTYPES["uint16"], 4: DTYPES["uint32"], 8: DTYPES["uint64"]}
