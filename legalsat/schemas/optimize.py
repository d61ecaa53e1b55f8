"""Optimize requests: one pydantic model for HTTP, the command line and the Python API.

    {"target": "sm90", "op": {"kind": "copy", "src": VIEW, "dst": VIEW}, "options": {...}}
    {"target": "sm90", "term": "(copy (view ...) (view ...))", "options": {...}}

`parse_request` turns either form into a `PlanRequest` (validated terms + options) or raises
InputError naming the field and how to fix it.
"""

from __future__ import annotations

from dataclasses import replace
from math import prod
from typing import Annotated, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    WithJsonSchema,
)

from legalsat.analyses.overlap import overlaps
from legalsat.analyses.wgmma import ELEMENTS, INTEGER_ELEMENTS, instruction_ns
from legalsat.diagnostics import Code, Diagnostic, InputError
from legalsat.planner.request import PlanOptions, PlanRequest
from legalsat.schemas.base import Strict, json_input, shown_int
from legalsat.schemas.validation import (
    details_from_validation,
    dtype_did_you_mean,
    json_kind,
    naming_other_input,
    shown,
    value_error,
)
from legalsat.targets import TARGET_NAMES, resolve_target
from legalsat.terms.dtypes import ELEMENT_TYPES
from legalsat.terms.integers import cdiv, span
from legalsat.terms.movement import (
    MAX_BYTES,
    MAX_GROUPS,
    MAX_RANK,
    MAX_TILE_RANK,
    Consumer,
    ConsumerSpec,
    Copy,
    Distribution,
    Gather,
    IndexSpec,
    LoadTile,
    Major,
    Movement,
    View,
    settle_unit_strides,
)
from legalsat.terms.sexpr import MAX_TERM_CHARS, check_term_length, op_from_sexp, op_to_sexp

Pos = Annotated[StrictInt, Field(ge=1, le=(1 << 62))]
NonNeg = Annotated[StrictInt, Field(ge=0, le=(1 << 62))]
MOVABLE_DTYPES = tuple(n for n, d in ELEMENT_TYPES.items() if not d.packed)
MAX_TILE_ELEMENTS = 1 << 24  # far past any shared memory; keeps sizes well inside i64 arithmetic


def _dims_schema(least: int, most: int = MAX_RANK, bounded: bool = True) -> dict:
    """The published bounds of a view's shape or strides (`least`: an entry's minimum, `most`:
    the dims a view of its kind takes; `bounded`: below 2^40, as every extent and every stride
    but an extent-1 dim's is, which the schema cannot tie to its extent)."""
    items = {"type": "integer", "minimum": least} | ({"exclusiveMaximum": MAX_BYTES} if bounded else {})
    return {"minItems": 1, "maxItems": most, "items": items}


MAX_REQUEST_ID = 128  # characters of a request_id


class ViewIn(Strict):
    """A strided tensor: shape and strides outermost first, in elements."""

    # the published bounds (json_schema_extra) are what the checks below enforce, with their own messages
    dtype: str = Field(description=f"element type: {', '.join(MOVABLE_DTYPES)}",
                       json_schema_extra={"enum": list(MOVABLE_DTYPES)})
    shape: list[StrictInt] = Field(description=f"extents, outermost first (each >= 1; 1..{MAX_RANK} dims: merge "
                                               "contiguous dims and drop extent-1 dims of a longer view)",
                                   json_schema_extra=_dims_schema(1))
    strides: list[StrictInt] = Field(description="strides in elements, outermost first (>= 0, below 2^40 but "
                                                 "along an extent-1 dim, where any is taken: only index 0 is read)",
                                     json_schema_extra=_dims_schema(0, bounded=False))
    base_align: Pos = Field(16, description="largest power of two dividing the base address, bytes; a value below "
                            "the element's size (1 for an unknown alignment) is planned as the element's size: "
                            "a tensor's elements lie on their own size, and the client refuses one that does not")


class TileSourceIn(ViewIn):
    """A tile load's source: a strided tensor of any rank a tensor library uses (up to 16 dims;
    unit and broadcast dims included)."""

    shape: list[StrictInt] = Field(description=f"extents, outermost first (each >= 1; 1..{MAX_TILE_RANK} dims)",
                                   json_schema_extra=_dims_schema(1, MAX_TILE_RANK))
    strides: list[StrictInt] = Field(description="strides in elements, outermost first (>= 0, below 2^40 but "
                                                 "along an extent-1 dim, where any is taken: only index 0 is read)",
                                     json_schema_extra=_dims_schema(0, MAX_TILE_RANK, bounded=False))


class CopyOp(Strict):
    kind: Literal["copy"]
    src: ViewIn
    dst: ViewIn


ConsumerName = Literal[tuple(c.value for c in Consumer)]  # type: ignore[valid-type]


class ConsumerIn(Strict):
    """What reads the tile out of shared memory, in detail."""

    kind: ConsumerName = Field(description="wgmma_a / wgmma_b (a tensor-core operand), rows or cols (a warp "
                               "reading rows, or columns, of the tile)")
    major: Literal["k", "mn"] | None = Field(None, description="wgmma operands: the dim contiguous in shared "
                                             "memory (default: the source's, from its strides)")
    instruction: Annotated[list[StrictInt], Field(min_length=3, max_length=3)] | None = Field(
        None, description="wgmma operands: the instruction shape [m, n, k] (m 64; n a multiple of 8 up to 256; "
                          "k * element bits = 256)")
    element: str | None = Field(None, description="the element type the consumer reads, of the view's width "
                                "(e.g. float8_e4m3fn over uint8, tfloat32 over float32); default the view's",
                                json_schema_extra={"enum": [*(n for n, d in ELEMENT_TYPES.items()
                                                              if not d.packed), None]})


def _consumer_object(value: object) -> object:
    """A consumer's name is shorthand for the object naming only its kind (so errors in the
    object's fields name those fields)."""
    if isinstance(value, str):
        return {"kind": value}
    if not isinstance(value, dict):  # "expected a JSON object" hid the usual form, a name
        raise value_error(f"op.consumer is {shown(value)}, neither a consumer name nor a consumer object",
                          f"give a name ({', '.join(map(repr, ConsumerName.__args__))}) or the detailed object "
                          '{"kind": ..., "major": ...}')
    return value


Consumer_ = Annotated[ConsumerIn, BeforeValidator(_consumer_object), WithJsonSchema(
    {"anyOf": [{"type": "string", "enum": [c.value for c in Consumer]}, ConsumerIn.model_json_schema()]})]


class LoadTileOp(Strict):
    kind: Literal["load_tile"]
    src: TileSourceIn
    tile: list[StrictInt] = Field(description="tile extents, outermost first; one per src dim; may exceed the "
                                  "src extent (the overhang reads as zero)",
                                  json_schema_extra={"minItems": 1, "maxItems": MAX_TILE_RANK, "items": {
                                      "type": "integer", "minimum": 1, "maximum": MAX_TILE_ELEMENTS}})
    consumer: Consumer_ = Field(description="what reads the tile: a name, or the detailed form")


class IndexIn(Strict):
    count: StrictInt = Field(description="number of index entries (>= 1)", json_schema_extra={"minimum": 1})
    distribution: Literal[tuple(d.value for d in Distribution)] = "random"  # type: ignore[valid-type]
    page_size: Pos | None = Field(None, description="positions along the axis one index selects")
    unique: StrictBool = False
    groups: Pos | None = Field(None, description=f"buckets (experts) the indices are routed to (MoE; at most "
                               f"{MAX_GROUPS})", json_schema_extra={"maximum": MAX_GROUPS})


class GatherOp(Strict):
    kind: Literal["gather"]
    src: ViewIn
    axis: NonNeg = Field(description="the dim the index selects along (< the source's rank)",
                         json_schema_extra={"maximum": MAX_RANK - 1})
    index: IndexIn


class Options(Strict):
    """The request's options; defaults are the planner's own (PlanOptions)."""

    allow_padding: StrictBool = Field(PlanOptions.allow_padding,
                                      description="may a plan change a row pitch / allocation")
    max_plans: Annotated[StrictInt, Field(ge=1, le=16)] = PlanOptions.max_plans
    timeout_ms: Annotated[StrictInt, Field(ge=1, le=600_000)] = PlanOptions.timeout_ms
    node_limit: Annotated[StrictInt, Field(ge=16, le=10_000_000)] = PlanOptions.node_limit
    smem_bytes: Pos | None = Field(PlanOptions.smem_bytes, description="shared memory per block, bytes (default: "
                                   "the target's whole budget; at most that budget, 232448 on sm90)",
                                   json_schema_extra=lambda schema: schema["anyOf"][0].update(
                                       maximum=max(resolve_target(t).smem_per_block_bytes for t in TARGET_NAMES)))
    explain: StrictBool = PlanOptions.explain
    keep_egraph: StrictBool = PlanOptions.keep_egraph


class OptimizeRequest(Strict):
    """One planning request: an `op` object or a `term` s-expression (exactly one)."""

    # what the API docs' "Try it out" sends: the README's transpose
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "target": "sm90",
        "op": {"kind": "copy",
               "src": {"dtype": "bfloat16", "shape": [8192, 8192], "strides": [8192, 1], "base_align": 16},
               "dst": {"dtype": "bfloat16", "shape": [8192, 8192], "strides": [1, 8192], "base_align": 16}},
        "options": {"max_plans": 3}}]})

    target: str = Field("sm90", description=f"hardware target: {', '.join(TARGET_NAMES)} (over HTTP the default is "
                        "the server's LEGALSAT_TARGET)", json_schema_extra={"enum": list(TARGET_NAMES)})
    op: Annotated[CopyOp | LoadTileOp | GatherOp, Field(discriminator="kind")] | None = None
    term: Annotated[str, Field(max_length=MAX_TERM_CHARS)] | None = Field(
        None, description="the movement as an s-expression")
    options: Options = Options()
    request_id: Annotated[str, Field(max_length=MAX_REQUEST_ID)] | None = None


def _bad(field: str | None, message: str, fix: str) -> InputError:
    return Code.INVALID_INPUT.error(message, fix, field)


def _view(v: ViewIn, field: str, max_rank: int = MAX_RANK) -> View:
    if v.dtype not in ELEMENT_TYPES:
        raise _bad(f"{field}.dtype", f"{field}.dtype: unknown dtype {shown(v.dtype)}"
                   + dtype_did_you_mean(v.dtype, list(MOVABLE_DTYPES)), f"use one of: {', '.join(MOVABLE_DTYPES)}")
    if ELEMENT_TYPES[v.dtype].packed:
        raise _bad(f"{field}.dtype", f"{field}.dtype: {v.dtype} is a packed sub-byte format; "
                   "the planner moves whole bytes", "describe the data as uint8 (bytes) instead")
    if not 1 <= len(v.shape) <= max_rank:
        raise _bad(f"{field}.shape", f"{field}.shape has {len(v.shape)} dims; 1 to {max_rank} are supported",
                   f"merge contiguous dims and drop extent-1 dims before sending, or send a view of at most "
                   f"{max_rank} dims" if v.shape
                   else "give one extent per dim, outermost first (a single element is shape [1], strides [1])")
    if len(v.strides) != len(v.shape):
        raise _bad(f"{field}.strides", f"{field}.strides has {len(v.strides)} entries but shape has "
                   f"{len(v.shape)}", "give one stride (in elements) per dim, outermost first")
    for k, n in enumerate(v.shape):
        if n < 1:
            raise _bad(f"{field}.shape[{k}]", f"{field}.shape[{k}] is {shown_int(n)}; extents must be >= 1",
                       "a movement of an empty tensor has nothing to plan: skip it" if n == 0 else
                       "give the dim's extent, a count of elements (>= 1)")
    for name, values in (("shape", v.shape), ("strides", v.strides)):
        for k, x in enumerate(values):  # one value past the memory bound: named before any product
            if x >= MAX_BYTES and not (name == "strides" and v.shape[k] == 1):  # an extent-1 dim's: below
                raise _bad(f"{field}.{name}[{k}]", f"{field}.{name}[{k}] is {shown_int(x)}, 2^40 (1 TiB) or more: no GPU's "
                           "memory holds a tensor that large", "check the shape and strides (strides are in "
                           "elements, not bytes)")
    for k, s in enumerate(v.strides):
        if s < 0:
            raise _bad(f"{field}.strides[{k}]", f"{field}.strides[{k}] is {shown_int(s)}; strides must be >= 0",
                       "describe a flipped dim by its positive stride and move the base")
    if v.base_align & (v.base_align - 1):
        raise _bad(f"{field}.base_align", f"{field}.base_align is {v.base_align}; it must be a power of two",
                   "give the largest power of two that divides the base address (e.g. 16)")
    esize = ELEMENT_TYPES[v.dtype].storage_bits // 8
    strides = _free_unit_strides(v.shape, v.strides, esize)
    nbytes = span(v.shape, strides) * esize
    if nbytes >= MAX_BYTES or prod(v.shape) * esize >= MAX_BYTES:
        raise _bad(f"{field}.shape", f"{field} spans {max(nbytes, prod(v.shape) * esize)} bytes, 2^40 (1 TiB) or more: "
                   "no GPU's memory holds a tensor that large",
                   "check the shape and strides (strides are in elements, not bytes); a ragged descriptor's "
                   "virtual dims (extents near 2^31 that rely on address wrap-around) are not a tensor to walk: "
                   "plan the tensor behind it, and check the descriptor itself at /v1/descriptors/validate")
    return View(ELEMENT_TYPES[v.dtype], tuple(v.shape), strides, min(v.base_align, 1 << 12))


def _free_unit_strides(shape: list[int], strides: list[int], esize: int) -> tuple[int, ...]:
    """`strides`, with the stride of an extent-1 dim that is past 2^40 (only index 0 is ever
    read: any stride addresses the same element, and torch gives such dims the next dim's
    whole size) taken as the view's span rounded up to 16 bytes, which keeps the planner's
    arithmetic inside i64."""
    if all(s < MAX_BYTES or n > 1 for n, s in zip(shape, strides)):
        return tuple(strides)
    words = max(1, 16 // esize)
    pitch = cdiv(span(shape, [0 if n == 1 else s for n, s in zip(shape, strides)]), words) * words
    return tuple(pitch if n == 1 and s >= MAX_BYTES else s for n, s in zip(shape, strides))




def _load_tile(op: LoadTileOp, src: View) -> LoadTile:
    if len(op.tile) != src.rank:
        raise _bad("op.tile", f"op.tile has {len(op.tile)} dims but op.src has {src.rank}",
                   "give one tile extent per src dim (1 for dims the tile does not span)")
    for k, t in enumerate(op.tile):
        if not 1 <= t <= MAX_TILE_ELEMENTS:
            raise _bad(f"op.tile[{k}]", f"op.tile[{k}] is {t}; tile extents are 1 to {MAX_TILE_ELEMENTS}",
                       "give the elements of the tile along this dim (1 for a dim the tile does not span)")
    if prod(op.tile) > MAX_TILE_ELEMENTS:
        raise _bad("op.tile", f"the tile holds {prod(op.tile)} elements; no shared memory holds more than "
                   f"{MAX_TILE_ELEMENTS}", "load a smaller tile")
    walked = prod(cdiv(n, t) for n, t in zip(src.shape, op.tile)) * prod(op.tile) * src.esize
    if walked >= MAX_BYTES:  # every tile is loaded whole: an overhanging edge tile moves its fill too
        raise _bad("op.tile", f"walking the tensor in tiles of {list(op.tile)} loads {walked} bytes (edge tiles "
                   "whole, their overhang zero-filled), 2^40 (1 TiB) or more",
                   "give tile extents that fit the tensor's extents (the overhang is loaded too)")
    c = op.consumer
    kind = Consumer(c.kind)
    element = None
    if c.element is not None:
        element = ELEMENT_TYPES.get(c.element)
        if element is None or element.packed:
            raise _bad("op.consumer.element", f"op.consumer.element: unknown element type {c.element!r}",
                       f"use one of: {', '.join(MOVABLE_DTYPES)}")
        if element.storage_bits != src.dtype.storage_bits:
            raise _bad("op.consumer.element", f"op.consumer.element {c.element} is {element.storage_bits} bits "
                       f"wide but op.src.dtype {src.dtype.name} is {src.dtype.storage_bits}",
                       "name a type of the view's width (the consumer reads the same bits)")
    wgmma = kind in (Consumer.WGMMA_A, Consumer.WGMMA_B)
    # an element type wgmma does not read is no request error: the tile is loaded in the layout
    # asked for (CuTe's TMA tests land fp64 tiles in wgmma's shared-memory atoms) and the answer
    # warns `wgmma_unreadable` (planner/build/tile.py)
    if not wgmma and (c.major is not None or c.instruction is not None):
        raise _bad("op.consumer", f"major and instruction describe wgmma operands, not a {kind.value} consumer",
                   "drop them, or use wgmma_a / wgmma_b")
    instruction = tuple(c.instruction) if c.instruction is not None else None
    read = element or src.dtype
    if instruction is not None and read.name in ELEMENTS:  # of another type: the plan's warning says why
        bits, ns = read.storage_bits, instruction_ns(read.name)
        m, n, k = instruction
        if m != 64 or n not in ns or k * bits != 256:
            integer = read.name in INTEGER_ELEMENTS
            kind_of = "8-bit integer" if integer else f"{bits}-bit"
            which = "8, 16, 24 or a multiple of 16 up to 256" if integer else "a multiple of 8 up to 256"
            raise _bad("op.consumer.instruction", f"op.consumer.instruction {list(instruction)} is not a wgmma "
                       f"shape for {kind_of} elements", f"use [64, n, {256 // bits}] with n {which}")
    major = Major(c.major) if c.major is not None else None
    tile = tuple(op.tile)
    return LoadTile(settle_unit_strides(src, tile), tile, ConsumerSpec(kind, major, instruction, element))


def _movement(op: CopyOp | LoadTileOp | GatherOp) -> Movement:
    if isinstance(op, LoadTileOp):
        return _load_tile(op, _view(op.src, "op.src", MAX_TILE_RANK))
    src = _view(op.src, "op.src")
    if isinstance(op, CopyOp):
        dst = _view(op.dst, "op.dst")
        if dst.shape != src.shape:
            raise _bad("op.dst.shape", f"op.dst.shape {list(dst.shape)} differs from op.src.shape "
                       f"{list(src.shape)}", "a copy maps every index of src to the same index of dst: "
                       "give both views the same shape (permute the strides, not the shape)")
        if dst.dtype != src.dtype:
            raise _bad("op.dst.dtype", f"op.dst.dtype {dst.dtype.name} differs from op.src.dtype "
                       f"{src.dtype.name}", "a copy moves bits: use the same dtype (a cast is not a copy)")
        if overlaps(dst.shape, dst.strides):
            raise _bad("op.dst.strides", f"op.dst strides {list(dst.strides)} map two indices to one "
                       "address: the copy would race", "give the destination non-overlapping strides")
        return Copy(src, dst)
    if op.axis >= src.rank:
        raise _bad("op.axis", f"op.axis is {op.axis} but op.src has {src.rank} dims",
                   f"use an axis between 0 and {src.rank - 1}")
    ix = op.index
    if ix.groups is not None and ix.groups > MAX_GROUPS:
        raise _bad("op.index.groups", f"op.index.groups is {shown_int(ix.groups)}; a gather routes to at most "
                   f"{MAX_GROUPS} groups", f"give the number of experts (at most {MAX_GROUPS})")
    if ix.count < 1:
        raise _bad("op.index.count", f"op.index.count is {ix.count}; a gather needs at least one index",
                   "skip empty gathers, or send count >= 1")
    page = ix.page_size
    if page is not None and src.shape[op.axis] % page:
        raise _bad("op.index.page_size", f"op.index.page_size {page} does not divide the axis extent "
                   f"{src.shape[op.axis]}", "the gathered axis must hold whole pages")
    if ix.distribution == "paged" and page is None:
        raise _bad("op.index.page_size", "a paged gather needs op.index.page_size",
                   "give the page size in positions along the axis (e.g. 16 tokens)")
    out_elems = prod(src.shape) // src.shape[op.axis] * ix.count * (page or 1)
    if out_elems * src.esize >= MAX_BYTES:
        raise _bad("op.index.count", "the gather's output would exceed 2^40 bytes (1 TiB): no GPU's memory holds "
                   "it", "gather fewer rows")
    if ix.unique and ix.count * (page or 1) > src.shape[op.axis]:
        raise _bad("op.index.unique", f"{ix.count} unique indices cannot fit an axis of "
                   f"{src.shape[op.axis] // (page or 1)} entries", "drop unique, or lower count")
    return Gather(src, op.axis, IndexSpec(ix.count, Distribution(ix.distribution), page, ix.unique, ix.groups))


_HINTS = {"target": f"use one of: {', '.join(TARGET_NAMES)}",
          "op": 'give "kind": "copy" | "load_tile" | "gather" with its fields (see the JSON Schema)'}


_SHAPE = 'an optimize request is {"target": ..., "op": {...}} or {"term": "(copy ...)"}'


def check_request_shape(obj: dict) -> None:
    """What the service checks of a request before it queues it, in time that does not grow
    with the request: its top-level fields are the schema's, and a term is not longer than
    MAX_TERM_CHARS (the rest is checked in a worker). InputError naming the field otherwise."""
    unknown = [key for key in obj if key not in OptimizeRequest.model_fields]
    if unknown:  # said as the schema's own validation says it
        err = InputError(details_from_validation([{"type": "extra_forbidden", "loc": (unknown[0],)}], known_fields=OptimizeRequest))
        raise naming_other_input(err, obj, "optimize", _SHAPE)
    term = obj.get("term")
    if isinstance(term, str):
        check_term_length(term)


def check_request_id(value: object) -> str | None:
    """A request's `request_id` as the schema takes it (None, or a string of at most
    MAX_REQUEST_ID characters); InputError naming `request_id` otherwise. What a cache hit
    must still check: the rest of a cached request was validated when it was planned."""
    if value is None or (isinstance(value, str) and len(value) <= MAX_REQUEST_ID):
        return value
    what = f"a string of {len(value)} characters" if isinstance(value, str) else json_kind(value)
    raise _bad("request_id", f"request_id is {what}", f"send a string of at most {MAX_REQUEST_ID} characters, "
               "or leave it out")


def parse_request(obj: object) -> PlanRequest:
    """Validate a request (dict, JSON text or bytes) into a PlanRequest; raises InputError."""
    obj = json_input(obj, "the request")
    if isinstance(obj, OptimizeRequest):
        return _parse(obj)
    if not isinstance(obj, dict):
        raise _bad(None, "a request must be a JSON object", 'send {"target": ..., "op": {...}}')
    # what the service checks before it queues a request, first and in its order: a request
    # with several problems is named by the same one here and over HTTP
    check_request_shape(obj)
    check_request_id(obj.get("request_id"))
    if obj.get("term") is None:
        return _parse(obj)
    if obj.get("op") is not None:
        raise _bad("term", "the request gives both op and term", "send only one of them")
    obj = {**obj, "op": op_from_sexp(obj["term"])}
    del obj["term"]
    try:
        req = _parse(obj)
    except InputError as e:  # a term request has no op: its problems are the term's, the op path said in words
        raise InputError([d.in_term() for d in e.details]) from None
    return replace(req, warnings=tuple(w.in_term() for w in req.warnings), from_term=True)


def _parse(obj: object) -> PlanRequest:
    """`parse_request` of a dict (its term already read) or an OptimizeRequest."""
    if isinstance(obj, OptimizeRequest):
        req = obj
    else:
        try:
            req = OptimizeRequest.model_validate(obj)
        except ValidationError as e:
            raise InputError(details_from_validation(e, _HINTS, OptimizeRequest, tags=("copy", "load_tile", "gather"))) from None
    if req.op is None:
        raise _bad("op", "the request has neither op nor term", 'send "op": {...} or "term": "(copy ...)"')
    target = resolve_target(req.target)
    movement = _movement(req.op)
    options = PlanOptions(**req.options.model_dump())
    if options.smem_bytes is not None and options.smem_bytes > target.smem_per_block_bytes:
        raise _bad("options.smem_bytes", f"options.smem_bytes is {shown_int(options.smem_bytes)}; a block on "
                   f"{target.name} has at most {target.smem_per_block_bytes} bytes of shared memory",
                   f"give at most {target.smem_per_block_bytes}, or leave it out for the target's whole budget")
    if isinstance(movement, LoadTile) and movement.consumer.is_wgmma and not target.wgmma:
        with_wgmma = ", ".join(n for n in TARGET_NAMES if resolve_target(n).wgmma)
        raise _bad("op.consumer", f"op.consumer is {movement.consumer.kind.value}, a warpgroup MMA operand; "
                   f"{target.name} has no wgmma (it is {with_wgmma} only)",
                   f"load the tile for a rows or cols consumer on {target.name}, or plan it for {with_wgmma}")
    views = [("op.src", movement.src)] + ([("op.dst", movement.dst)] if isinstance(movement, Copy) else [])
    warnings = tuple(w for field, v in views if (w := strides_in_bytes(v, field)) is not None)
    return PlanRequest(target, movement, options, op_to_sexp(req.op.model_dump()), req.request_id, warnings)


def strides_in_bytes(v: View, field: str) -> Diagnostic | None:
    """A warning when a view's strides look like byte counts: no dim it spans has stride 1,
    every stride is a multiple of the element size (> 1 byte; the extent-1 dims' too: torch
    gives a column slice's [4096, 1] strides [128, 1], which are no bytes), and read as bytes
    the view has a contiguous dim (a strided column, [4096] of stride 128, is as likely in
    elements: its byte reading is no more regular). Such a view is valid (a strided slice), so
    it is planned as given; the warning names the likely mistake."""
    spanned = [s for n, s in zip(v.shape, v.strides) if n > 1]
    es = v.esize
    # broadcast dims (stride 0) read one element whatever the unit: only nonzero strides tell
    if es <= 1 or not any(spanned) or v.has_contiguous_dim or any(s % es for s in v.strides if s):
        return None
    if es not in spanned:  # read as bytes, no spanned dim would be contiguous either
        return None
    elems = [s // es for s in v.strides]
    return Code.STRIDES_IN_BYTES.at(f"{field}.strides {list(v.strides)}: no dim is contiguous and every stride is a "
                                    f"multiple of the {es}-byte element size; if they are bytes, the view in "
                                    f"elements is {elems}", field=f"{field}.strides")
