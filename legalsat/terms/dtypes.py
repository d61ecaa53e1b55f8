"""Element types legalsat speaks about, with the facts every analysis needs.

One table, keyed by the public dtype name (the spelling used in requests and plans).
The CUDA enum value is the `CUtensorMapDataType` the driver takes, so the legality model
and the driver probe share one source of truth.
"""

from __future__ import annotations

import re
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
    # the fp8 encodings of AMD's MI300 (gfx942): other values for the same bits, moved alike
    DType("float8_e4m3fnuz", 8, 8, True, False, 0, "uint8"),
    DType("float8_e5m2fnuz", 8, 8, True, False, 0, "uint8"),
    DType("int16", 16, 16, False, False, 1, "uint16"),
    # two float32 (real, imaginary) in 8 bytes; a complex128 (16 bytes) has no word of its width
    DType("complex64", 64, 64, True, False, 4, "uint64"),
)

DTYPES: dict[str, DType] = {d.name: d for d in _TABLE}  # the driver's data types (descriptors)
DTYPE_NAMES: tuple[str, ...] = tuple(d.name for d in _TABLE)
ELEMENT_TYPES: dict[str, DType] = {**DTYPES, **{d.name: d for d in _MOVED_AS_WORDS}}  # what views may hold


# Element types as torch, Triton, MLIR, NumPy and CUTLASS spell them (lower-cased, without a
# module prefix), where legalsat's name is another
DTYPE_SPELLINGS: dict[str, str] = {
    "bf16": "bfloat16", "fp16": "float16", "f16": "float16", "half": "float16", "fp32": "float32",
    "f32": "float32", "float": "float32", "fp64": "float64", "f64": "float64", "double": "float64",
    "tf32": "tfloat32", "i1": "bool", "int1": "bool", "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16",
    "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64", "char": "int8", "byte": "uint8",
    "short": "int16", "int": "int32", "long": "int64", "float8_e4m3": "float8_e4m3fn", "e4m3": "float8_e4m3fn",
    "fp8e4nv": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "fp8_e4m3fn": "float8_e4m3fn",
    "f8e4m3fn": "float8_e4m3fn", "float_e4m3_t": "float8_e4m3fn", "e5m2": "float8_e5m2", "fp8e5": "float8_e5m2",
    "fp8_e5m2": "float8_e5m2", "f8e5m2": "float8_e5m2", "float_e5m2_t": "float8_e5m2", "bfloat16_t": "bfloat16",
    "half_t": "float16", "tfloat32_t": "tfloat32", "fp8e4b8": "float8_e4m3fnuz", "f8e4m3fnuz": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz", "f8e5m2fnuz": "float8_e5m2fnuz", "cfloat": "complex64",
}
_MODULE_PREFIX = re.compile(r"^(?:torch|tl|triton\.language|np|numpy|jnp|cutlass|cute)\.")
# 1- to 7-bit element types (int4, uint4, fp4, float4_e2m1fn_x2, nvfp4, mxfp4, float6_e3m2fn, f4E2M1FN)
_SUB_BYTE = re.compile(r"^(?:u?int|[iuf]|float|fp|mxfp|nvfp|mxint)([1-7])(?![0-9])|e2m1|e3m2|e2m3")


def dtype_spelled(word: str) -> str | None:
    """legalsat's name of the element type `word` spells another way (bf16, torch.bfloat16,
    fp8e4nv, f8E4M3FN, BFloat16), or None when it names none."""
    w = _MODULE_PREFIX.sub("", word.strip().lower())
    if w in ELEMENT_TYPES:
        return w if w != word else None
    return DTYPE_SPELLINGS.get(w)


def sub_byte_bits(word: str) -> int | None:
    """The bits of the element type `word` names when it is narrower than a byte (int4, fp4,
    float4_e2m1fn_x2: 4; float6_e3m2fn: 6), which no view of whole elements describes (its bytes
    are uint8); None for any other word."""
    m = _SUB_BYTE.search(_MODULE_PREFIX.sub("", word.strip().lower()))
    if m is None:
        return None
    return int(m[1]) if m[1] else 4 if m[0] == "e2m1" else 6


def dtype(name: str) -> DType:
    """Look up a dtype by its public name; raises KeyError naming the valid spellings."""
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r}; use one of: {', '.join(DTYPE_NAMES)}") from None


# The unsigned integer type of each word width: what kernels move and shared-memory models
# reason about, whatever the request's dtype (moves are bit copies).
WORD_DTYPES: dict[int, DType] = {1: DTYPES["uint8"], 2: DTYPES["uint16"], 4: DTYPES["uint32"], 8: DTYPES["uint64"]}
