"""Models for bank-conflict analysis: `legalsat bank-conflicts`,
`POST /v1/analyze/bank-conflicts` and `legalsat.analyze_bank_conflicts`.

Two input forms, told apart by their fields: raw (`addresses`: one byte offset per lane)
and structured (`tile` + `pattern`), which reduces to raw instructions.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, StrictInt, ValidationError

from legalsat.analyses.bank_conflicts import BankReport
from legalsat.analyses.smem_layout import TileReport
from legalsat.diagnostics import Code, InputError, shown
from legalsat.schemas.base import ErrorOut, Out, Strict, json_input
from legalsat.schemas.validation import details_from_validation, input_kind, naming_other_input
from legalsat.targets import Target, resolve_target
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.dtypes import ELEMENT_TYPES
from legalsat.terms.smem import TILE_SWIZZLES, MemOp, SharedAccess, SmemTile, TileAccess, WarpPattern

Offset = Annotated[StrictInt, Field(ge=0, lt=1 << 32)]


def _no_float(v: object) -> object:
    """Literal[4, 8, 16] alone takes 16.0 (it compares by equality)."""
    if isinstance(v, float):
        raise ValueError(f"access_bytes is {shown(v)}, not an integer: 4, 8 or 16")
    return v


SmemDType = Literal[tuple(n for n, d in ELEMENT_TYPES.items() if not d.packed)]  # type: ignore[valid-type]


class RawAccessIn(Strict):
    """One warp instruction: per-lane byte offsets (null = inactive lane)."""

    model_config = ConfigDict(json_schema_extra={
        "examples": [{"target": "sm90", "access_bytes": 16, "op": "load",
                      "addresses": [16 * i for i in range(32)]}]})

    target: str | None = None
    access_bytes: Annotated[Literal[4, 8, 16], BeforeValidator(_no_float)]
    op: Literal["load", "store"]
    addresses: Annotated[list[Offset | None], Field(min_length=1, max_length=64)]


class TileIn(Strict):
    dtype: SmemDType
    shape: Annotated[list[Annotated[StrictInt, Field(ge=1, le=4096)]], Field(min_length=2, max_length=2)]
    row_pitch_bytes: Annotated[StrictInt, Field(ge=1, le=1 << 20)] | None = None
    padding_bytes: Annotated[StrictInt, Field(ge=0, le=1 << 16)] = 0
    swizzle: Literal[tuple(s.value for s in TILE_SWIZZLES)] = "none"  # type: ignore[valid-type]


class TileAccessIn(Strict):
    """A tile in shared memory walked by a named warp pattern."""

    model_config = ConfigDict(json_schema_extra={
        "examples": [{"target": "sm90", "op": "load", "pattern": "cols", "vector": 8,
                      "tile": {"dtype": "bfloat16", "shape": [64, 64], "swizzle": "128B"}}]})

    target: str | None = None
    op: Literal["load", "store"] = "load"
    tile: TileIn
    pattern: Literal["rows", "cols", "ldmatrix", "ldmatrix_trans"]
    vector: Annotated[StrictInt, Field(ge=1, le=16)]


class PhaseOut(Out):
    """A group of lanes the hardware serves together, and the passes it took."""

    lanes: list[int] = Field(description="the active lanes of the phase")
    wavefronts: int = Field(description="passes (the most distinct words any bank delivers)")


class AccessOut(Out):
    """One warp instruction of a tile walk."""

    instruction: int = Field(description="its position in the walk")
    wavefronts: int = Field(description="passes it takes")
    ideal_wavefronts: int = Field(description="passes a conflict-free access with the same lanes takes")
    conflict_ways: float = Field(description="wavefronts / ideal_wavefronts")


class BankReportOut(Out):
    """wavefronts / ideal_wavefronts = conflict_ways. Structured input adds `accesses`, the
    per-instruction breakdown. On the command line, a line that cannot be judged answers null
    counts (never a count a caller could read as an access's) with `error` set and `line` its
    line number."""

    wavefronts: int | None = Field(description="passes of the whole access (all instructions); null only on a "
                                   "command-line line that could not be judged")
    ideal_wavefronts: int | None = Field(description="passes a conflict-free access takes; null as wavefronts")
    conflict_ways: float | None = Field(description="wavefronts / ideal_wavefronts (1.0: conflict-free); null as "
                                        "wavefronts")
    phases: list[PhaseOut] = Field(description="raw input: the instruction's phases")
    accesses: list[AccessOut] | None = Field(None, description="structured input: per instruction")
    error: ErrorOut | None = Field(None, description="the input could not be judged: set on the command line's JSON Lines "
                                "answers only (null over HTTP, where such input is a 422)")


_HINTS = {
    "access_bytes": "use 4, 8 or 16",
    "op": 'use "load" or "store"',
    "addresses": "give one byte offset per lane (32 on sm90, 64 on gfx942), null for an inactive lane",
    "pattern": 'use "rows", "cols", "ldmatrix" or "ldmatrix_trans"',
    "tile": 'give {"dtype", "shape": [rows, cols], "row_pitch_bytes"?, "padding_bytes"?, "swizzle"?}',
}


def parse_bank_request(obj: object, default_target: str) -> tuple[SharedAccess | TileAccess, Target]:
    """Parse a raw or structured request (dict or JSON text); raises InputError."""
    obj = json_input(obj, "the request")
    if isinstance(obj, (RawAccessIn, TileAccessIn)):
        model = obj
    elif not isinstance(obj, dict):
        raise Code.INVALID_INPUT.error("a bank-conflict request is a JSON object",
                                       'send {"access_bytes", "op", "addresses"} or {"tile", "pattern", "vector"}')
    else:
        cls = TileAccessIn if "tile" in obj or "pattern" in obj else RawAccessIn
        if input_kind(obj) is None and \
                not set(obj) & (set(RawAccessIn.model_fields) | set(TileAccessIn.model_fields)) - {"target", "op"}:
            # nothing tells the form (nor another command's input): both named, not the raw form's first missing field
            raise Code.INVALID_INPUT.error(
                "the request has none of a bank-conflict request's fields",
                'send {"access_bytes", "op", "addresses"} (one warp instruction) or {"tile", "pattern", "vector"} '
                "(a tile walked by a warp pattern)")
        try:
            model = cls.model_validate(obj)
        except ValidationError as e:
            # both forms known: a field of the other one, sent with this one's, is said to be that
            raise naming_other_input(InputError(details_from_validation(e, _HINTS, TileAccessIn | RawAccessIn)), obj, "bank",
                                     'a bank-conflict request is {"access_bytes", "op", "addresses"} or '
                                     '{"tile", "pattern", "vector"}') from None
    target = resolve_target(default_target if model.target is None else model.target)  # "" is no target
    if isinstance(model, RawAccessIn):
        return _raw_term(model, target), target
    t = model.tile
    d = ELEMENT_TYPES[t.dtype]
    rows, cols = t.shape
    row = cols * d.storage_bits // 8
    if t.row_pitch_bytes is not None and t.padding_bytes and t.row_pitch_bytes != row + t.padding_bytes:
        # two pitches, one of them would be ignored (the pipeline verifier refuses such fields too)
        raise Code.INVALID_INPUT.error(
            f"tile gives row_pitch_bytes {t.row_pitch_bytes} and padding_bytes {t.padding_bytes}: rows of {row} "
            f"bytes padded so are {row + t.padding_bytes} bytes apart, not {t.row_pitch_bytes}",
            "give one of them (row_pitch_bytes: the bytes from one row's start to the next's; padding_bytes: "
            "the bytes after each row)", field="tile.padding_bytes")
    pitch = t.row_pitch_bytes if t.row_pitch_bytes is not None else row + t.padding_bytes
    tile = SmemTile(d, rows, cols, pitch, Swizzle(t.swizzle))
    return TileAccess(tile, WarpPattern(model.pattern), model.vector, MemOp(model.op)), target


def _raw_term(model: RawAccessIn, target: Target) -> SharedAccess:
    lanes = target.banks.lanes
    problems = []
    if len(model.addresses) != lanes:
        problems.append(Code.INVALID_INPUT.at(
            f"addresses has {len(model.addresses)} entries; a {target.name} "
            f"{'wave' if lanes == 64 else 'warp'} has {lanes} lanes",
            f"give exactly {lanes} offsets (null for inactive lanes)", field="addresses"))
    smem = target.smem_per_block_bytes
    for i, a in enumerate(model.addresses):
        if a is not None and a + model.access_bytes > smem:
            problems.append(Code.INVALID_INPUT.at(
                f"addresses[{i}] = {a}: the access ends past the {smem} bytes of shared memory a block has on "
                f"{target.name}", f"give an offset below {smem - model.access_bytes + 1}", field=f"addresses[{i}]"))
        elif a is not None and a % model.access_bytes:
            problems.append(Code.INVALID_INPUT.at(
                f"addresses[{i}] = {a} is not aligned to the {model.access_bytes}-byte "
                "access (the hardware faults on misaligned shared-memory accesses)",
                f"use a multiple of {model.access_bytes}", field=f"addresses[{i}]"))
    if problems:
        raise InputError(problems)
    return SharedAccess(MemOp(model.op), model.access_bytes, tuple(model.addresses))


def report_model(report: BankReport | TileReport) -> BankReportOut:
    """A bank model report (one instruction, or a tile walk) as the published model."""
    if isinstance(report, BankReport):
        return BankReportOut(wavefronts=report.wavefronts, ideal_wavefronts=report.ideal_wavefronts,
                             conflict_ways=report.conflict_ways,
                             phases=[PhaseOut(lanes=list(p.lanes), wavefronts=p.wavefronts) for p in report.phases])
    return BankReportOut(wavefronts=report.wavefronts, ideal_wavefronts=report.ideal_wavefronts,
                         conflict_ways=report.conflict_ways, phases=[],
                         accesses=[AccessOut(instruction=i, wavefronts=r.wavefronts,
                                             ideal_wavefronts=r.ideal_wavefronts, conflict_ways=r.conflict_ways)
                                   for i, r in enumerate(report.instructions)])


def error_line(err: InputError) -> dict:
    """The report-shaped JSON Lines answer of a line that could not be judged (the command adds
    its `line`): null counts (zero wavefronts read as an access with no conflicts)."""
    return {"wavefronts": None, "ideal_wavefronts": None, "conflict_ways": None, "phases": [],
            "error": err.headline.to_error()}
