"""Models for bank-conflict analysis: `legalsat bank-conflicts`,
`POST /v1/analyze/bank-conflicts` and `legalsat.analyze_bank_conflicts`.

Two input forms, told apart by their fields: raw (`addresses`: one byte offset per lane)
and structured (`tile` + `pattern`), which reduces to raw instructions.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from legalsat.analyses.bank_conflicts import analyze_access
from legalsat.analyses.smem_layout import analyze_tile_access
from legalsat.analyses.targets import Target, UnknownTarget, get_target
from legalsat.errors import ErrorDetail, InputError
from legalsat.schemas.validation import details_from_validation
from legalsat.terms.dtypes import DTYPES
from legalsat.terms.smem import MemOp, SharedAccess, SmemTile, TileAccess, TileSwizzle, WarpPattern

Offset = Annotated[StrictInt, Field(ge=0, lt=1 << 32)]
SmemDType = Literal[tuple(n for n, d in DTYPES.items() if not d.packed)]  # type: ignore[valid-type]


class RawAccessIn(BaseModel):
    """One warp instruction: per-lane byte offsets (null = inactive lane)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, json_schema_extra={
        "examples": [{"target": "sm90", "access_bytes": 16, "op": "load",
                      "addresses": [16 * i for i in range(32)]}]})

    target: str | None = None
    access_bytes: Literal[4, 8, 16]
    op: Literal["load", "store"]
    addresses: Annotated[list[Offset | None], Field(min_length=1, max_length=64)]


class TileIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    dtype: SmemDType
    shape: Annotated[list[Annotated[StrictInt, Field(ge=1, le=4096)]], Field(min_length=2, max_length=2)]
    row_pitch_bytes: Annotated[StrictInt, Field(ge=1, le=1 << 20)] | None = None
    padding_bytes: Annotated[StrictInt, Field(ge=0, le=1 << 16)] = 0
    swizzle: Literal["none", "32B", "64B", "128B"] = "none"


class TileAccessIn(BaseModel):
    """A tile in shared memory walked by a named warp pattern."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, json_schema_extra={
        "examples": [{"target": "sm90", "op": "load", "pattern": "cols", "vector": 8,
                      "tile": {"dtype": "bfloat16", "shape": [64, 64], "swizzle": "128B"}}]})

    target: str | None = None
    op: Literal["load", "store"] = "load"
    tile: TileIn
    pattern: Literal["rows", "cols", "ldmatrix", "ldmatrix_trans"]
    vector: Annotated[StrictInt, Field(ge=1, le=16)]


class PhaseOut(BaseModel):
    lanes: list[int]
    wavefronts: int


class AccessOut(BaseModel):
    instruction: int
    wavefronts: int
    ideal_wavefronts: int
    conflict_ways: float


class BankReportOut(BaseModel):
    """wavefronts / ideal_wavefronts = conflict_ways. Structured input adds `accesses`, the
    per-instruction breakdown; invalid input has `error` set and zero counts."""

    wavefronts: int
    ideal_wavefronts: int
    conflict_ways: float
    phases: list[PhaseOut]
    accesses: list[AccessOut] | None = None
    error: dict | None = None


_HINTS = {
    "access_bytes": "use 4, 8 or 16",
    "op": 'use "load" or "store"',
    "addresses": "give one byte offset per lane (32 on sm90, 64 on gfx942), null for an inactive lane",
    "pattern": 'use "rows", "cols", "ldmatrix" or "ldmatrix_trans"',
    "tile": 'give {"dtype", "shape": [rows, cols], "row_pitch_bytes"?, "padding_bytes"?, "swizzle"?}',
}


def resolve_bank_target(name: str) -> Target:
    try:
        return get_target(name)
    except UnknownTarget as e:
        raise InputError([ErrorDetail("unknown_target", str(e), "use sm90, sm100 or gfx942",
                                      "target")]) from None


def parse_bank_request(obj: object, default_target: str) -> tuple[SharedAccess | TileAccess, Target]:
    """Parse a raw or structured request (dict or JSON text); raises InputError."""
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except (ValueError, UnicodeDecodeError) as e:
            raise InputError([ErrorDetail("invalid_input", f"invalid JSON: {e}",
                                          "send one well-formed JSON object per line")]) from None
    if isinstance(obj, (RawAccessIn, TileAccessIn)):
        model = obj
    elif not isinstance(obj, dict):
        raise InputError([ErrorDetail("invalid_input", "a bank-conflict request is a JSON object",
                                      'send {"access_bytes", "op", "addresses"} or '
                                      '{"tile", "pattern", "vector"}')])
    else:
        cls = TileAccessIn if "tile" in obj or "pattern" in obj else RawAccessIn
        try:
            model = cls.model_validate(obj)
        except ValidationError as e:
            raise InputError(details_from_validation(e, _HINTS, list(cls.model_fields))) from None
    target = resolve_bank_target(model.target or default_target)
    if isinstance(model, RawAccessIn):
        return _raw_term(model, target), target
    t = model.tile
    d = DTYPES[t.dtype]
    rows, cols = t.shape
    pitch = t.row_pitch_bytes if t.row_pitch_bytes is not None else cols * d.storage_bits // 8 + t.padding_bytes
    tile = SmemTile(d, rows, cols, pitch, TileSwizzle(t.swizzle))
    return TileAccess(tile, WarpPattern(model.pattern), model.vector, MemOp(model.op)), target


def _raw_term(model: RawAccessIn, target: Target) -> SharedAccess:
    lanes = target.banks.lanes
    problems = []
    if len(model.addresses) != lanes:
        problems.append(ErrorDetail(
            "invalid_input", f"addresses has {len(model.addresses)} entries; a {target.name} "
            f"{'wave' if lanes == 64 else 'warp'} has {lanes} lanes",
            f"give exactly {lanes} offsets (null for inactive lanes)", "addresses"))
    for i, a in enumerate(model.addresses):
        if a is not None and a % model.access_bytes:
            problems.append(ErrorDetail(
                "invalid_input", f"addresses[{i}] = {a} is not aligned to the {model.access_bytes}-byte "
                "access (the hardware faults on misaligned shared-memory accesses)",
                f"use a multiple of {model.access_bytes}", f"addresses[{i}]"))
    if problems:
        raise InputError(problems)
    return SharedAccess(MemOp(model.op), model.access_bytes, tuple(model.addresses))


def bank_report(term: SharedAccess | TileAccess, target: Target) -> dict:
    """The report dict (BankReportOut's shape) for a parsed request."""
    if isinstance(term, SharedAccess):
        return analyze_access(term, target).to_dict()
    return analyze_tile_access(term, target).to_dict()


def error_report(err: InputError) -> dict:
    return {"wavefronts": 0, "ideal_wavefronts": 0, "conflict_ways": 0.0, "phases": [],
            "error": err.to_dict()["error"]}


def analyze_bank_conflicts(request: object, target: str = "sm90") -> BankReportOut:
    """Python API: the wavefront report for one raw or structured request.

    `target` is the default when the request names none. Bad input comes back as a report
    with `error` set; nothing raises.
    """
    try:
        term, tgt = parse_bank_request(request, target)
        return BankReportOut.model_validate(bank_report(term, tgt))
    except InputError as e:
        return BankReportOut.model_validate(error_report(e))
