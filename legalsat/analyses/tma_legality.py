"""TMA descriptor legality: which `cuTensorMapEncodeTiled` calls a target's driver accepts.

Every rule is a small function registered with `@rule`; `check_descriptor` runs all of them
and returns every violation (not just the first), each with the field, the index and a fix.
The bounds come from the target's `TmaFacts`, so the same rules serve a driver-verified
target (sm90) and a documentation-only one (sm100).

Invariant: a descriptor is legal exactly when no rule reports a violation. On sm90 this
verdict agrees with the driver on every descriptor of the replayed corpus
(tests/data/tma_sm90_driver_corpus.jsonl.gz).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import gcd, prod

from legalsat.diagnostics import Code, Diagnostic
from legalsat.targets import Target, TmaFacts
from legalsat.terms.descriptor import Interleave, OobFill, Swizzle, TmaDescriptor
from legalsat.terms.integers import cdiv

# What a rule's check appends for each violation it finds: (index in the rule's list field or
# None, message, fix); `check_descriptor` makes them Diagnostics of the rule's code.
Found = tuple[int | None, str, str]
RuleFn = Callable[[TmaDescriptor, TmaFacts, list[Found]], None]


@dataclass(frozen=True)
class Rule:
    """A legality rule: its catalogue code (stable id, field, summary) and its check."""

    code: Code
    check: RuleFn

    @property
    def name(self) -> str:
        return self.code.id


RULES: list[Rule] = []


def rule(code: Code) -> Callable[[RuleFn], RuleFn]:
    """Register a rule; the order of registration is the order violations are reported."""

    def register(fn: RuleFn) -> RuleFn:
        RULES.append(Rule(code, fn))
        return fn

    return register


@dataclass(frozen=True)
class Verdict:
    """Legal exactly when there are no violations (the invariant every rule keeps)."""

    violations: tuple[Diagnostic, ...] = ()

    @property
    def legal(self) -> bool:
        return not self.violations

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(v.id for v in self.violations)


def _elem(d: TmaDescriptor) -> str:
    """'2-byte bfloat16' / '4-bit 16u4_align8b' for messages."""
    bits = d.dtype.storage_bits
    return f"{bits // 8}-byte {d.dtype.name}" if bits % 8 == 0 else f"{bits}-bit {d.dtype.name}"


def _elems_for_bytes(d: TmaDescriptor, nbytes: int) -> int:
    return nbytes * 8 // d.dtype.storage_bits


# --- rank ---------------------------------------------------------------------------------

@rule(Code.RANK_RANGE)
def _rank_range(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if not 1 <= d.rank <= f.max_rank:
        out.append((None,
                 f"rank is {d.rank}; TMA descriptors have 1 to {f.max_rank} dimensions",
                 f"merge contiguous dimensions (or split the copy) to reach rank <= {f.max_rank}"))


@rule(Code.RANK_INTERLEAVE_MIN)
def _rank_interleave(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if d.interleave is not Interleave.NONE and 1 <= d.rank < f.min_rank_interleaved:
        out.append((None,
                 f"interleave {d.interleave.value} needs rank >= {f.min_rank_interleaved} "
                 f"(e.g. NC/8HWC8), got rank {d.rank}",
                 'use interleave "none", or describe the tensor with its C/8 (or C/16) '
                 "dimension split out"))


# --- dtype ----------------------------------------------------------------------------------

@rule(Code.DTYPE_SUPPORTED)
def _dtype_supported(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if d.dtype.name not in f.dtypes:
        out.append((None,
                 f"dtype {d.dtype.name} is not supported by this target's TMA "
                 "(packed sub-byte types are sm100 formats)",
                 "use target sm100, or copy the packed data as uint8 / uint16 elements"))


# --- global address -------------------------------------------------------------------------

def _address_align(d: TmaDescriptor) -> int:
    if d.interleave is Interleave.B32 or d.dtype.name in ("16u4_align16b", "16u6_align16b"):
        return 32
    return 16


@rule(Code.GLOBAL_ADDRESS_ALIGN)
def _address_aligned(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    align = _address_align(d)
    if d.global_address % align:
        why = "interleave 32B" if d.interleave is Interleave.B32 else (
            d.dtype.name if align == 32 else "TMA")
        out.append((None,
                 f"global_address {d.global_address:#x} is {d.global_address % align} bytes past a "
                 f"{align}-byte boundary; {why} needs {align}-byte alignment",
                 f"allocate with at least {align}-byte alignment, or start the view at "
                 f"{d.global_address - d.global_address % align:#x} and offset the box coordinates"))


@rule(Code.GLOBAL_ADDRESS_RANGE)
def _address_range(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if f.address_limit is not None and d.global_address >= f.address_limit:
        bits = f.address_limit.bit_length() - 1
        out.append((None,
                 f"global_address {d.global_address:#x} is outside the {bits}-bit GPU virtual "
                 "address space",
                 f"pass a device pointer (below 2^{bits}); this value looks like a host pointer, "
                 "a tagged pointer or an overflowed offset"))


# --- global dims ----------------------------------------------------------------------------

def _split_fix(i: int, n: int, most: int) -> str:
    """How to fit a dim of `n` > `most` elements: two dims whose extents multiply to n, where
    n's power-of-two part gives them (a tensor sized in powers of two), else parts of the tensor."""
    inner = gcd(n, 1 << (most.bit_length() - 1))
    if n // inner <= most:
        return (f"split dimension {i} into two dimensions: {n} = {n // inner} x {inner}, dimension {i} of {inner} "
                f"elements and a new one of {n // inner} whose stride is {inner} times dimension {i}'s")
    return (f"split the tensor along dimension {i} into parts of at most {most} elements, a descriptor each "
            f"({n} has no two factors of at most {most} from its power-of-two part)")


@rule(Code.GLOBAL_DIM_RANGE)
def _dim_range(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    for i, n in enumerate(d.global_dim):
        if not 1 <= n <= f.max_global_dim:
            out.append((i,
                     f"global_dim[{i}] is {n}; each dimension holds 1 to 2^32 elements",
                     "drop empty tensors before building a descriptor" if n <= 0 else _split_fix(i, n, f.max_global_dim)))


@rule(Code.GLOBAL_DIM_PACKED_MULTIPLE)
def _dim_packed(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if not d.dtype.packed or not d.global_dim:
        return
    need = 2 if d.dtype.name == "16u4_align8b" else 128
    if d.global_dim[0] % need:
        out.append((0,
                 f"global_dim[0] is {d.global_dim[0]}; {d.dtype.name} needs a multiple of {need} "
                 "values in the innermost dimension",
                 f"pad the innermost dimension to {cdiv(d.global_dim[0], need) * need} values"))


# --- global strides -------------------------------------------------------------------------

def _stride_align(d: TmaDescriptor) -> int:
    return _address_align(d)


@rule(Code.GLOBAL_STRIDES_ALIGN)
def _stride_aligned(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    align = _stride_align(d)
    for i, s in enumerate(d.global_strides):
        if s % align:
            up = cdiv(s, align) * align
            out.append((i,
                     f"global_strides[{i}] is {s} bytes, not a multiple of {align}",
                     f"pad the row pitch to {up} bytes (allocate with a padded leading dimension), "
                     "or use a pointer-based copy for this tensor"))


@rule(Code.GLOBAL_STRIDES_RANGE)
def _stride_range(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    for i, s in enumerate(d.global_strides):
        if s >= f.global_stride_limit:
            out.append((i,
                     f"global_strides[{i}] is {s} bytes; TMA strides must be below 2^40 (1 TiB)",
                     "describe the tensor from a closer base, or split it into several descriptors"))


# --- box --------------------------------------------------------------------------------------

@rule(Code.BOX_DIM_RANGE)
def _box_range(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    for i, b in enumerate(d.box_dim):
        if not 1 <= b <= f.max_box_dim:
            out.append((i,
                     f"box_dim[{i}] is {b}; a box dimension holds 1 to {f.max_box_dim} elements",
                     "use box_dim >= 1" if b == 0 else
                     f"split dimension {i} into two (e.g. {b} = {_split_hint(b, f.max_box_dim)}) "
                     f"or issue several copies of <= {f.max_box_dim}"))


def _split_hint(n: int, cap: int) -> str:
    """'a x b' with both factors <= cap when n has such a split, else a copy count."""
    if n <= cap * cap:
        for a in range(cdiv(n, cap), int(n ** 0.5) + 1):
            if n % a == 0:
                return f"{a} x {n // a}"
    return f"{cdiv(n, cap)} copies of <= {cap}"


@rule(Code.BOX_DIM_INNER_BYTES)
def _box_inner(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if not d.box_dim:
        return
    if d.interleave is not Interleave.NONE and not f.inner_16b_with_interleave:
        return
    bits = d.box_dim[0] * d.dtype.storage_bits
    if bits % 128:
        unit = _elems_for_bytes(d, 16)
        up = cdiv(d.box_dim[0], unit) * unit
        out.append((0,
                 f"inner box is {bits / 8:g} bytes (box_dim[0]={d.box_dim[0]} x {_elem(d)}); "
                 "TMA moves whole 16-byte units",
                 f"use box_dim[0] as a multiple of {unit} for {d.dtype.name} (e.g. {up})"))


@rule(Code.BOX_DIM_PACKED_INNER)
def _box_packed(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if d.dtype.name in ("16u4_align16b", "16u6_align16b") and d.box_dim and d.box_dim[0] != 128:
        out.append((0,
                 f"box_dim[0] is {d.box_dim[0]}; {d.dtype.name} boxes are exactly 128 values wide",
                 "use box_dim[0] = 128"))


@rule(Code.BOX_DIM_SWIZZLE_SPAN)
def _box_swizzle(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if d.interleave is not Interleave.NONE or d.swizzle is Swizzle.NONE or not d.box_dim:
        return
    span = d.swizzle.span_bytes
    nbytes = d.box_dim[0] * d.dtype.storage_bits / 8
    if nbytes > span:
        fits = _elems_for_bytes(d, span)
        wider = {32: "64B", 64: "128B"}.get(span)
        fix = f"use box_dim[0] <= {fits} for {d.dtype.name}"
        fix += f", or swizzle {wider}" if wider and nbytes <= 128 else \
            ", and cover the row with several boxes (box_dim[0] <= span)"
        out.append((0,
                 f"inner box is {nbytes:g} bytes but swizzle {d.swizzle.value} spans {span} bytes",
                 fix))


@rule(Code.BOX_DIM_FOOTPRINT)
def _box_footprint(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if f.box_footprint_limit is None or not d.box_dim or not 1 <= d.rank <= f.max_rank:
        return
    if not all(1 <= e <= f.max_element_stride for e in d.element_strides):
        return  # the element-stride rule reports this; the driver checks it first
    # The driver counts box_dim[i] // element_strides[i] per dimension (integer division, so a
    # dimension with box < stride counts 0 and the bound is not reached).
    counts = [b // e for b, e in zip(d.box_dim, d.element_strides, strict=True)]
    nbytes = prod(counts) * d.dtype.storage_bits // 8
    if nbytes > f.box_footprint_limit:
        # Shrink an outer dimension: shrinking box_dim[0] would break the 16-byte inner rule.
        dims = [i for i in range(len(counts)) if counts[i] > 1 and (i > 0 or len(counts) == 1)]
        big = max(dims or [0], key=lambda i: counts[i])
        others = nbytes // counts[big] if counts[big] else nbytes
        allowed = f.box_footprint_limit // max(others, 1)
        out.append((big,
                 f"the box moves {nbytes} bytes per copy ({' x '.join(map(str, counts))} x "
                 f"{_elem(d)}); this target accepts at most {f.box_footprint_limit} bytes "
                 "(the shared memory of one SM)",
                 f"shrink the box (e.g. box_dim[{big}] <= {max(allowed, 1) * d.element_strides[big]})"
                 " or split the tile into several copies"))


# --- element strides --------------------------------------------------------------------------

@rule(Code.ELEMENT_STRIDES_RANGE)
def _es_range(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    for i, e in enumerate(d.element_strides):
        if not 1 <= e <= f.max_element_stride:
            out.append((i,
                     f"element_strides[{i}] is {e}; traversal strides are 1 to {f.max_element_stride}",
                     "use 1 for a dense box" if e == 0 else
                     f"fold the stride into the tensor (view dimension {i} with a {e}x larger "
                     "global stride) and use element stride 1"))


# --- swizzle / interleave ---------------------------------------------------------------------

@rule(Code.SWIZZLE_SUPPORTED)
def _swizzle_supported(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if d.swizzle.value not in f.swizzles:
        out.append((None,
                 f"swizzle {d.swizzle.value} is not supported on this target "
                 "(the 128B_atom_* modes are sm100 features)",
                 'use swizzle "128B" (16-byte atoms) on this target'))


@rule(Code.SWIZZLE_INTERLEAVE_32B)
def _swizzle_interleave(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if f.interleave_32b_needs_swizzle_32b and d.interleave is Interleave.B32 \
            and d.swizzle is not Swizzle.B32:
        out.append((None,
                 f"interleave 32B is documented to require swizzle 32B, got {d.swizzle.value}",
                 'use swizzle "32B" with interleave "32B"'))


_PACKED_SWIZZLES = {
    "16u6_align16b": {"none", "128B", "128B_atom_32B", "128B_atom_64B"},
    "16u4_align16b": {"none", "128B", "128B_atom_32B"},
}


@rule(Code.SWIZZLE_PACKED)
def _swizzle_packed(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    allowed = _PACKED_SWIZZLES.get(d.dtype.name)
    if allowed is not None and d.swizzle.value not in allowed:
        out.append((None,
                 f"{d.dtype.name} does not support swizzle {d.swizzle.value}",
                 f"use one of: {', '.join(sorted(allowed))}"))


@rule(Code.INTERLEAVE_PACKED)
def _interleave_packed(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if d.dtype.name == "16u6_align16b" and d.interleave is not Interleave.NONE:
        out.append((None,
                 f"16u6_align16b cannot be interleaved (got {d.interleave.value})",
                 'use interleave "none"'))


# --- oob fill -----------------------------------------------------------------------------------

@rule(Code.OOB_FILL_FLOAT_ONLY)
def _oob(d: TmaDescriptor, f: TmaFacts, out: list[Found]) -> None:
    if d.oob_fill is OobFill.NAN_REQUEST_ZERO_FMA and (not d.dtype.is_float or d.dtype.packed):
        out.append((None,
                 f"oob_fill nan_request_zero_fma needs a floating-point dtype, got {d.dtype.name}",
                 'use oob_fill "none" (out-of-bounds elements read as zero)'))


# --- entry point ----------------------------------------------------------------------------------

_CHECKS = tuple((r.check, r.code) for r in RULES)


class NoTma(ValueError):
    """The target has no tensor-memory accelerator."""


def check_descriptor(desc: TmaDescriptor, target: Target) -> Verdict:
    """Every rule's violations for `desc` on `target`, in rule order.

    Invariant: `desc` satisfies TmaDescriptor's structural invariants (list lengths match
    rank, integers fit the driver's C types): the parsers guarantee it. Raises NoTma for a
    target without TMA (e.g. gfx942); callers resolve targets with `resolve_target(...,
    need_tma=True)` first.
    """
    facts = target.tma
    if facts is None:
        raise NoTma(f"target {target.name} has no TMA unit; TMA descriptors apply to sm90 and sm100")
    found: list[Found] = []
    out: list[Diagnostic] = []
    for check, code in _CHECKS:
        check(desc, facts, found)
        if found:
            out.extend(code.at(message, fix, index=index) for index, message, fix in found)
            found.clear()
    return Verdict(tuple(out))
