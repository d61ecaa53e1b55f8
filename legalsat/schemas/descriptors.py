"""Models for TMA descriptor validation: `legalsat validate-descriptor`,
`POST /v1/descriptors/validate` and `legalsat.validate_descriptor`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from legalsat.analyses.targets import Target, UnknownTarget, get_target
from legalsat.analyses.tma_legality import check_descriptor
from legalsat.analyses.verdict import Verdict
from legalsat.errors import ErrorDetail, InputError
from legalsat.schemas.validation import details_from_validation
from legalsat.terms.descriptor import UINT32_MAX, UINT64_MAX, TmaDescriptor
from legalsat.terms.dtypes import DTYPE_NAMES

UInt32 = Annotated[StrictInt, Field(ge=0, le=UINT32_MAX)]
UInt64 = Annotated[StrictInt, Field(ge=0, le=UINT64_MAX)]
DTypeName = Literal[DTYPE_NAMES]  # type: ignore[valid-type]
# The driver reads `rank` entries from each array; longer lists than this are never useful.
MAX_LIST = 64

_EXAMPLE = {
    "dtype": "bfloat16", "rank": 2, "global_address": 140737488355328,
    "global_dim": [4096, 1024], "global_strides": [8192], "box_dim": [64, 64],
    "element_strides": [1, 1], "interleave": "none", "swizzle": "128B",
    "l2_promotion": "128B", "oob_fill": "none",
}


class DescriptorIn(BaseModel):
    """The arguments of one `cuTensorMapEncodeTiled` call, innermost dimension first.

    `global_strides` are in bytes with rank-1 entries. `rank` may be omitted (it is then
    len(global_dim)); `element_strides` may be omitted (all ones).
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True,
                              json_schema_extra={"examples": [_EXAMPLE]})

    dtype: DTypeName
    rank: UInt32 | None = None
    global_address: UInt64
    global_dim: Annotated[list[UInt64], Field(max_length=MAX_LIST)]
    global_strides: Annotated[list[UInt64], Field(max_length=MAX_LIST)]
    box_dim: Annotated[list[UInt32], Field(max_length=MAX_LIST)]
    element_strides: Annotated[list[UInt32], Field(max_length=MAX_LIST)] | None = None
    interleave: Literal["none", "16B", "32B"] = "none"
    swizzle: Literal["none", "32B", "64B", "128B", "128B_atom_32B", "128B_atom_32B_flip_8B",
                     "128B_atom_64B"] = "none"
    l2_promotion: Literal["none", "64B", "128B", "256B"] = "none"
    oob_fill: Literal["none", "nan_request_zero_fma"] = "none"

    def to_term(self) -> TmaDescriptor:
        """The core descriptor; raises InputError when list lengths disagree with the rank."""
        rank = len(self.global_dim) if self.rank is None else self.rank
        es = [1] * len(self.box_dim) if self.element_strides is None else self.element_strides
        problems = []
        for name, got, want in (("global_dim", len(self.global_dim), rank),
                                ("global_strides", len(self.global_strides), max(rank - 1, 0)),
                                ("box_dim", len(self.box_dim), rank),
                                ("element_strides", len(es), rank)):
            if got != want:
                problems.append(ErrorDetail(
                    "invalid_input",
                    f"{name} has {got} entries but rank {rank} needs {want}"
                    + (" (strides are given for the rank-1 outer dimensions only; the innermost "
                       "stride is the element size)" if name == "global_strides" else ""),
                    f"give {name} exactly {want} entries, innermost dimension first", name))
        if problems:
            raise InputError(problems)
        return TmaDescriptor.from_fields(
            dtype=self.dtype, rank=rank, global_address=self.global_address,
            global_dim=self.global_dim, global_strides=self.global_strides, box_dim=self.box_dim,
            element_strides=es, interleave=self.interleave, swizzle=self.swizzle,
            l2_promotion=self.l2_promotion, oob_fill=self.oob_fill)


class ViolationOut(BaseModel):
    rule: str = Field(description="stable rule id, e.g. box_dim.inner_bytes")
    field: str | None = Field(description="the input field the rule is about")
    index: int | None = Field(description="position in a list field, null for scalars")
    message: str
    fix: str


class ErrorOut(BaseModel):
    code: str
    message: str
    fix: str
    field: str | None = None


class VerdictOut(BaseModel):
    """Legal exactly when `violations` is empty. Invalid input: legal is false, the problems
    are listed as violations with rule "input.invalid", and `error` holds the headline."""

    legal: bool
    violations: list[ViolationOut]
    error: ErrorOut | None = None


_HINTS = {
    "dtype": "use one of: " + ", ".join(DTYPE_NAMES),
    "global_address": "give the base address in bytes as a JSON integer in [0, 2^64)",
    "global_dim": "give one element count per dimension, innermost first, each in [0, 2^64)",
    "global_strides": "give rank-1 byte strides (outer dimensions), each in [0, 2^64)",
    "box_dim": "give one box extent per dimension, innermost first, each in [0, 2^32)",
    "element_strides": "give one traversal stride per dimension, each in [0, 2^32), or omit it",
    "rank": "give the number of dimensions, or omit it to use len(global_dim)",
    "interleave": 'use one of: "none", "16B", "32B"',
    "swizzle": 'use one of: "none", "32B", "64B", "128B", "128B_atom_32B", '
               '"128B_atom_32B_flip_8B", "128B_atom_64B"',
    "l2_promotion": 'use one of: "none", "64B", "128B", "256B"',
    "oob_fill": 'use one of: "none", "nan_request_zero_fma"',
}


_FIELDS = list(DescriptorIn.model_fields)


def parse_descriptor(obj: object) -> TmaDescriptor:
    """Parse a descriptor from JSON text, a dict or a DescriptorIn; raises InputError
    naming every bad field."""
    if isinstance(obj, DescriptorIn):
        return obj.to_term()
    try:
        if isinstance(obj, (str, bytes)):
            model = DescriptorIn.model_validate_json(obj)
        else:
            model = DescriptorIn.model_validate(obj)
    except ValidationError as e:
        raise InputError(details_from_validation(e, _HINTS, _FIELDS)) from None
    return model.to_term()


def resolve_tma_target(name: str) -> Target:
    """The target for descriptor validation; raises InputError for unknown or TMA-less ones."""
    try:
        target = get_target(name)
    except UnknownTarget as e:
        raise InputError([ErrorDetail("unknown_target", str(e), "pass --target sm90 (or sm100)",
                                      "target")]) from None
    if target.tma is None:
        raise InputError([ErrorDetail("no_tma", f"target {name} has no TMA unit",
                                      "use --target sm90 or sm100 for TMA descriptors", "target")])
    return target


def error_verdict(err: InputError) -> dict:
    """The verdict-shaped object for input that could not be judged."""
    return {
        "legal": False,
        "violations": [{"rule": "input.invalid", "field": d.field, "index": None,
                        "message": d.message, "fix": d.fix} for d in err.details],
        "error": err.headline.to_dict(),
    }


def validate_descriptor(descriptor: object, target: str = "sm90") -> VerdictOut:
    """Python API: the verdict for one descriptor (dict, JSON text or DescriptorIn).

    Never raises for bad descriptor input: it comes back as a verdict with `error` set.
    Raises InputError only for an unknown target.
    """
    tgt = resolve_tma_target(target)
    try:
        desc = parse_descriptor(descriptor)
    except InputError as e:
        return VerdictOut.model_validate(error_verdict(e))
    verdict: Verdict = check_descriptor(desc, tgt)
    return VerdictOut.model_validate(verdict.to_dict())

