"""Models for TMA descriptor validation: `legalsat validate-descriptor`,
`POST /v1/descriptors/validate` and `legalsat.validate_descriptor`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StrictInt, ValidationError

from legalsat.analyses.tma_legality import Verdict
from legalsat.diagnostics import Code, InputError
from legalsat.schemas.base import ErrorOut, Out, Strict, json_input
from legalsat.schemas.validation import details_from_validation, naming_other_input
from legalsat.targets import TARGET_NAMES, TARGETS
from legalsat.terms.descriptor import (
    UINT32_MAX,
    UINT64_MAX,
    Interleave,
    L2Promotion,
    OobFill,
    Swizzle,
    TmaDescriptor,
)
from legalsat.terms.dtypes import DTYPE_NAMES

UInt32 = Annotated[StrictInt, Field(ge=0, le=UINT32_MAX)]
UInt64 = Annotated[StrictInt, Field(ge=0, le=UINT64_MAX)]
DTypeName = Literal[DTYPE_NAMES]  # type: ignore[valid-type]
# The driver reads `rank` entries from each array; longer lists than this are never useful.
MAX_LIST = 64
# the most dimensions a descriptor of any target has (TmaFacts.max_rank)
MAX_TMA_RANK = max(t.tma.max_rank for t in TARGETS.values() if t.tma is not None)

_EXAMPLE = {
    "dtype": "bfloat16", "rank": 2, "global_address": 140737488355328,
    "global_dim": [4096, 1024], "global_strides": [8192], "box_dim": [64, 64],
    "element_strides": [1, 1], "interleave": "none", "swizzle": "128B",
    "l2_promotion": "128B", "oob_fill": "none",
}


class DescriptorIn(Strict):
    """The arguments of one `cuTensorMapEncodeTiled` call, innermost dimension first.

    `global_strides` are in bytes with rank-1 entries. `rank` may be omitted (it is then
    len(global_dim)); `element_strides` may be omitted (all ones). `role` is what a plan does
    with the descriptor: a plan's `descriptors[i]` is accepted as it stands.
    """

    model_config = ConfigDict(json_schema_extra={"examples": [_EXAMPLE]})

    dtype: DTypeName
    rank: UInt32 | None = None
    global_address: UInt64
    global_dim: Annotated[list[UInt64], Field(max_length=MAX_LIST)]
    global_strides: Annotated[list[UInt64], Field(max_length=MAX_LIST)]
    box_dim: Annotated[list[UInt32], Field(max_length=MAX_LIST)]
    element_strides: Annotated[list[UInt32], Field(max_length=MAX_LIST)] | None = None
    interleave: Literal[tuple(m.value for m in Interleave)] = "none"  # type: ignore[valid-type]
    swizzle: Literal[tuple(m.value for m in Swizzle)] = "none"  # type: ignore[valid-type]
    l2_promotion: Literal[tuple(m.value for m in L2Promotion)] = "none"  # type: ignore[valid-type]
    oob_fill: Literal[tuple(m.value for m in OobFill)] = "none"  # type: ignore[valid-type]
    role: Literal["load", "store"] | None = Field(
        None, description="what a plan does with the descriptor (load: global -> shared; store: shared -> "
        "global); not an argument of the driver call, so it does not change the verdict")

    def to_term(self) -> TmaDescriptor:
        """The core descriptor; raises InputError when list lengths disagree with the rank."""
        rank = len(self.global_dim) if self.rank is None else self.rank
        if self.rank is not None and self.rank != len(self.global_dim) and not 1 <= self.rank <= MAX_TMA_RANK:
            # a rank no descriptor has is the mistake, not the lists that disagree with it
            raise Code.INVALID_INPUT.error(f"rank is {self.rank} but global_dim has {len(self.global_dim)} entries; "
                                           f"TMA descriptors have 1 to {MAX_TMA_RANK} dimensions",
                                           f"give rank {len(self.global_dim)} (one per global_dim entry), or omit it",
                                           "rank")
        # omitted, one per dim of the rank (now at most a list's length): a box_dim of the wrong
        # length is the one field named
        es = [1] * rank if self.element_strides is None else self.element_strides
        problems = []
        for name, got, want in (("global_dim", len(self.global_dim), rank),
                                ("global_strides", len(self.global_strides), max(rank - 1, 0)),
                                ("box_dim", len(self.box_dim), rank),
                                ("element_strides", len(es), rank)):
            if got != want:
                problems.append(Code.INVALID_INPUT.at(
                    f"{name} has {got} entries but rank {rank} needs {want}"
                    + (" (strides are given for the rank-1 outer dimensions only; the innermost "
                       "stride is the element size)" if name == "global_strides" else ""),
                    f"give {name} exactly {want} entries, innermost dimension first", field=name))
        if problems:
            raise InputError(problems)
        return TmaDescriptor.from_fields(
            dtype=self.dtype, rank=rank, global_address=self.global_address,
            global_dim=self.global_dim, global_strides=self.global_strides, box_dim=self.box_dim,
            element_strides=es, interleave=self.interleave, swizzle=self.swizzle,
            l2_promotion=self.l2_promotion, oob_fill=self.oob_fill)


class ViolationOut(Out):
    """One broken legality rule."""

    rule: str = Field(description="stable rule id, e.g. box_dim.inner_bytes (the catalogue: `legalsat codes`)")
    field: str | None = Field(description="the input field the rule is about")
    index: int | None = Field(description="position in a list field, null for scalars")
    message: str = Field(description="what is wrong, with the descriptor's numbers")
    fix: str = Field(description="what to change")


class VerdictOut(Out):
    """Legal exactly when `violations` is empty. On the command line, a line that cannot be
    judged answers legal false with its problems as violations (each rule the catalogue code of
    the problem, e.g. invalid_json), `error` holding the headline and `line` its line number."""

    legal: bool = Field(description="cuTensorMapEncodeTiled accepts the descriptor")
    violations: list[ViolationOut] = Field(description="every broken rule, in rule order")
    error: ErrorOut | None = Field(None, description="the input could not be judged: set on the command line's JSON Lines "
                                "answers only (null over HTTP, where such input is a 422)")


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


def _target_hint(target: str) -> str:
    """Not a descriptor field: every entry point takes the target beside the descriptor."""
    return (f"give the target beside the descriptor, not in it: validate_descriptor(d, target={target!r}) in "
            f"Python, the query parameter ?target={target} over HTTP, legalsat validate-descriptor --target "
            f"{target} on the command line")


def parse_descriptor(obj: object) -> TmaDescriptor:
    """Parse a descriptor from JSON text, a dict or a DescriptorIn; raises InputError
    naming every bad field."""
    if isinstance(obj, DescriptorIn):
        return obj.to_term()
    obj = json_input(obj)
    try:
        model = DescriptorIn.model_validate(obj)
    except ValidationError as e:
        given = obj.get("target") if isinstance(obj, dict) else None  # the user's own, where it is a target name
        hints = {**_HINTS, "target": _target_hint(given if given in TARGET_NAMES else "sm90")}
        raise naming_other_input(InputError(details_from_validation(e, hints, DescriptorIn)), obj, "descriptor",
                                 'a descriptor is {"dtype", "global_address", "global_dim", "global_strides", '
                                 '"box_dim", ...}') from None
    return model.to_term()


def verdict_model(verdict: Verdict) -> VerdictOut:
    """The legality model's verdict as the published model."""
    return VerdictOut(legal=verdict.legal, violations=[
        ViolationOut(rule=v.id, field=v.field, index=v.index, message=v.message, fix=v.fix)
        for v in verdict.violations])


def error_line(err: InputError) -> dict:
    """The verdict-shaped JSON Lines answer of a line that could not be judged (the command
    adds its `line`)."""
    return {"legal": False,
            "violations": [{"rule": d.code.id, "field": d.field, "index": None, "message": d.message,
                            "fix": d.fix} for d in err.details],
            "error": err.headline.to_error()}
