"""The JSON form of asynchronous copy protocols: `legalsat verify-pipeline`,
`POST /v1/verify/pipeline` and `legalsat.verify_pipeline`.

Shorthands: a barrier or buffer reference may be a plain name ("full" = element i mod
count); a block's `count` / `start` may be an integer, "N" (the trip count) or
{"n": a, "c": b} for a*N + b.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from legalsat.errors import ErrorDetail, InputError
from legalsat.extract.protocol_verify import verify_protocol
from legalsat.schemas.validation import details_from_validation
from legalsat.terms.protocol import (
    Affine,
    BarrierArray,
    Block,
    BufferArray,
    Guard,
    Op,
    OpKind,
    Parity,
    Protocol,
    Role,
    Slot,
)

Name = Annotated[str, Field(min_length=1, max_length=64)]
SmallInt = Annotated[StrictInt, Field(ge=-4096, le=4096)]
MAX_OPS, MAX_ROLES, MAX_SLOTS, MAX_TRIP = 256, 8, 64, 4096


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class AffineIn(_Strict):
    n: Annotated[StrictInt, Field(ge=0, le=1)] = 0
    c: SmallInt = 0


class SlotIn(_Strict):
    name: Name
    shift: SmallInt = 0
    fixed: Annotated[StrictInt, Field(ge=0)] | None = None
    all: StrictBool = False


class ParityIn(_Strict):
    shift: SmallInt = 0
    flip: StrictBool = False
    fixed: Literal[0, 1] | None = None
    period: Annotated[StrictInt, Field(ge=1, le=MAX_SLOTS)] | None = None


class GuardIn(_Strict):
    i_ge: AffineIn | None = None
    i_lt: AffineIn | None = None


Count = StrictInt | Literal["N"] | AffineIn


class OpIn(_Strict):
    op: Literal[tuple(k.value for k in OpKind)]  # type: ignore[valid-type]
    bar: Name | SlotIn | None = None
    buffer: Name | SlotIn | None = None
    bytes: Annotated[StrictInt, Field(ge=0, le=1 << 32)] = 0
    phase: ParityIn | None = None
    count: Annotated[StrictInt, Field(ge=0, le=1 << 16)] | None = None
    arrive: StrictBool = True
    desc: str | None = None
    when: GuardIn | None = None


class BlockIn(_Strict):
    ops: Annotated[list[OpIn], Field(max_length=MAX_OPS)]
    count: Count = "N"
    start: Count = 0


class RoleIn(_Strict):
    name: Name
    blocks: Annotated[list[BlockIn], Field(min_length=1, max_length=16)]


class ArrayIn(_Strict):
    name: Name
    count: Annotated[StrictInt, Field(ge=1, le=MAX_SLOTS)] = 1
    arrivals: Annotated[StrictInt, Field(ge=1, le=1024)] = 1
    bytes: Annotated[StrictInt, Field(ge=0, le=1 << 32)] = 0


class ProtocolIn(_Strict):
    """A pipelined kernel's asynchronous schedule (see legalsat.terms.protocol)."""

    name: str = "protocol"
    iterations: Annotated[StrictInt, Field(ge=0, le=MAX_TRIP)] | None = None
    barriers: Annotated[list[ArrayIn], Field(max_length=32)] = []
    buffers: Annotated[list[ArrayIn], Field(max_length=32)] = []
    setup: Annotated[list[OpIn], Field(max_length=MAX_OPS)] = []
    roles: Annotated[list[RoleIn], Field(min_length=1, max_length=MAX_ROLES)]
    teardown: Annotated[list[OpIn], Field(max_length=MAX_OPS)] = []


class ProtocolViolationOut(BaseModel):
    rule: str
    role: str
    op_index: int
    iteration: int
    message: str
    op: str
    trip_count: int


class PipelineVerdictOut(BaseModel):
    """ok exactly when there are no violations; `trip_counts` lists the N checked."""

    ok: bool
    violations: list[ProtocolViolationOut]
    trip_counts: list[int] = []
    error: dict | None = None


# Which fields each operation needs.
_NEEDS = {
    "init": ("bar",), "expect_tx": ("bar",), "arrive": ("bar",), "tma_load": ("bar", "buffer"),
    "wait": ("bar", "phase"), "consume": ("buffer",), "release": ("bar",),
    "generic_write": ("buffer",), "fence_proxy_async": (), "tma_store": ("buffer",),
    "commit_group": (), "wait_group": (), "invalidate": ("bar",),
}
_HOUSEKEEPING = {"init", "invalidate", "arrive"}


class _Builder:
    """ProtocolIn -> Protocol, collecting every cross-reference problem with its field path."""

    def __init__(self, m: ProtocolIn):
        self.m = m
        self.bars = {a.name: a for a in m.barriers}
        self.bufs = {a.name: a for a in m.buffers}
        self.problems: list[ErrorDetail] = []

    def bad(self, field: str, message: str, fix: str) -> None:
        self.problems.append(ErrorDetail("invalid_input", message, fix, field))

    def slot(self, ref, table: dict, kind: str, where: str) -> Slot | None:
        if ref is None:
            return None
        if isinstance(ref, str):
            ref = SlotIn(name=ref)
        if ref.name not in table:
            self.bad(where, f"{kind} {ref.name!r} is not declared",
                     f"declare it under \"{kind}s\" or use one of: {', '.join(table) or '(none)'}")
            return None
        if ref.fixed is not None and ref.fixed >= table[ref.name].count:
            self.bad(where, f"{kind} {ref.name!r} has {table[ref.name].count} element(s); fixed "
                            f"element {ref.fixed} does not exist", "use a smaller fixed index")
        return Slot(ref.name, ref.shift, ref.fixed, ref.all)

    def op(self, o: OpIn, where: str, housekeeping: bool = False) -> Op:
        if housekeeping and o.op not in _HOUSEKEEPING:
            self.bad(f"{where}.op", f"{o.op} cannot run in setup/teardown (they run once, "
                                    "outside the roles)", "move it into a role")
        for f in _NEEDS[o.op]:
            if getattr(o, f) is None:
                self.bad(f"{where}.{f}", f"{o.op} needs a {f}", f"add \"{f}\" to the operation")
        ph = o.phase
        g = o.when
        kind = OpKind(o.op)
        default_count = 0 if kind is OpKind.WAIT_GROUP else (
            self.bars[_name(o.bar)].arrivals if kind is OpKind.INIT and _name(o.bar) in self.bars else 1)
        return Op(kind,
                  bar=self.slot(o.bar, self.bars, "barrier", f"{where}.bar"),
                  buffer=self.slot(o.buffer, self.bufs, "buffer", f"{where}.buffer"),
                  bytes=o.bytes,
                  phase=Parity(ph.shift, ph.flip, ph.fixed, ph.period) if ph else None,
                  count=o.count if o.count is not None else default_count,
                  arrive=o.arrive, desc=o.desc,
                  when=Guard(_affine(g.i_ge), _affine(g.i_lt)) if g else None)

    def build(self) -> Protocol:
        m = self.m
        roles = []
        names = set()
        for ri, r in enumerate(m.roles):
            if r.name in names or r.name in ("setup", "teardown"):
                self.bad(f"roles[{ri}].name", f"role name {r.name!r} is taken",
                         "give every role a distinct name other than setup/teardown")
            names.add(r.name)
            blocks = []
            for bi, b in enumerate(r.blocks):
                ops = tuple(self.op(o, f"roles[{ri}].blocks[{bi}].ops[{oi}]") for oi, o in enumerate(b.ops))
                blocks.append(Block(ops, _affine(b.count), _affine(b.start)))
            roles.append(Role(r.name, tuple(blocks)))
        proto = Protocol(
            m.name, tuple(BarrierArray(a.name, a.count, a.arrivals) for a in m.barriers),
            tuple(BufferArray(a.name, a.count, a.bytes) for a in m.buffers), tuple(roles),
            setup=tuple(self.op(o, f"setup[{k}]", True) for k, o in enumerate(m.setup)),
            teardown=tuple(self.op(o, f"teardown[{k}]", True) for k, o in enumerate(m.teardown)),
            iterations=m.iterations)
        if self.problems:
            raise InputError(self.problems)
        return proto


def _name(ref) -> str | None:
    return ref if isinstance(ref, str) or ref is None else ref.name


def _affine(x) -> Affine | None:
    if x is None:
        return None
    if isinstance(x, int):
        return Affine(0, x)
    if x == "N":
        return Affine(1, 0)
    return Affine(x.n, x.c)


def parse_protocol(obj: object) -> Protocol:
    """Parse a protocol from JSON text, a dict or a ProtocolIn; raises InputError naming
    every bad field (paths like roles[1].blocks[0].ops[2].bar)."""
    try:
        if isinstance(obj, ProtocolIn):
            model = obj
        elif isinstance(obj, (str, bytes)):
            model = ProtocolIn.model_validate_json(obj)
        else:
            model = ProtocolIn.model_validate(obj)
    except ValidationError as e:
        raise InputError(details_from_validation(e, known_fields=list(ProtocolIn.model_fields))) from None
    return _Builder(model).build()


def protocol_to_dict(proto: Protocol) -> dict:
    """The JSON form of a protocol (what plans carry); parse_protocol inverts it."""
    def slot(s: Slot | None):
        if s is None:
            return None
        d = {"name": s.name}
        if s.shift:
            d["shift"] = s.shift
        if s.fixed is not None:
            d["fixed"] = s.fixed
        if s.all_slots:
            d["all"] = True
        return d

    def aff(a: Affine | None):
        return None if a is None else {"n": a.n, "c": a.c}

    def op(o: Op) -> dict:
        d = {"op": o.kind.value}
        for key, val in (("bar", slot(o.bar)), ("buffer", slot(o.buffer))):
            if val is not None:
                d[key] = val
        if o.bytes:
            d["bytes"] = o.bytes
        if o.phase is not None:
            d["phase"] = {k: v for k, v in (("shift", o.phase.shift), ("flip", o.phase.flip),
                                              ("fixed", o.phase.fixed), ("period", o.phase.period))
                          if v not in (None, 0, False)}
        if o.kind in (OpKind.INIT, OpKind.ARRIVE, OpKind.WAIT_GROUP):
            d["count"] = o.count
        if o.kind is OpKind.EXPECT_TX and not o.arrive:
            d["arrive"] = False
        if o.desc:
            d["desc"] = o.desc
        if o.when is not None:
            d["when"] = {k: v for k, v in (("i_ge", aff(o.when.i_ge)), ("i_lt", aff(o.when.i_lt)))
                         if v is not None}
        return d

    return {
        "name": proto.name, "iterations": proto.iterations,
        "barriers": [{"name": b.name, "count": b.count, "arrivals": b.arrivals} for b in proto.barriers],
        "buffers": [{"name": b.name, "count": b.count, "bytes": b.bytes} for b in proto.buffers],
        "setup": [op(o) for o in proto.setup],
        "roles": [{"name": r.name, "blocks": [{"count": aff(b.count), "start": aff(b.start),
                                                "ops": [op(o) for o in b.ops]} for b in r.blocks]}
                  for r in proto.roles],
        "teardown": [op(o) for o in proto.teardown],
    }


def error_verdict(err: InputError) -> dict:
    return {"ok": False, "violations": [], "trip_counts": [], "error": err.to_dict()["error"]}


def verify_pipeline(protocol: object) -> PipelineVerdictOut:
    """Python API: verify a protocol given as JSON text, a dict or a ProtocolIn.

    Bad input comes back as a verdict with `error` set (ok false); nothing raises.
    """
    try:
        proto = parse_protocol(protocol)
    except InputError as e:
        return PipelineVerdictOut.model_validate(error_verdict(e))
    return PipelineVerdictOut.model_validate(verify_protocol(proto).to_dict())


def verdict_json(line: object) -> bytes:
    """One protocol (JSON line, dict or ProtocolIn) in, one verdict line out (raises
    InputError for bad input)."""
    return json.dumps(verify_protocol(parse_protocol(line)).to_dict(),
                      separators=(",", ":")).encode()
