"""The JSON form of asynchronous copy protocols: what `legalsat verify-pipeline`,
`POST /v1/verify/pipeline` and `legalsat.verify_pipeline` read, and what TMA plans carry
(`plans[].async.protocol`, which verify-pipeline accepts as it is).

Shorthands: a barrier or buffer reference may be a plain name ("full" = element i mod
count); a block's `count` / `start` may be an integer, "N" (the trip count) or
{"n": a, "c": b} for a*N + b.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, ValidationError, field_validator

from legalsat.diagnostics import Code, Diagnostic, InputError
from legalsat.protocols.model import (
    FIELD_OPS,
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
from legalsat.schemas.base import ErrorOut, Out, Strict, json_input, shown_int
from legalsat.schemas.validation import details_from_validation, naming_other_input, value_error

if TYPE_CHECKING:  # the verifier (networkx) stays out of what plans and kernels import
    from legalsat.protocols.verify import ProtocolVerdict

Name = Annotated[str, Field(min_length=1, max_length=64)]
SmallInt = Annotated[StrictInt, Field(ge=-4096, le=4096)]
MAX_OPS, MAX_ROLES, MAX_SLOTS, MAX_TRIP = 256, 8, 64, 4096


class AffineIn(Strict):
    """a*N + c for the trip count N."""

    n: Annotated[StrictInt, Field(ge=0, le=1)] = Field(0, description="coefficient of the trip count N (0 or 1)")
    c: SmallInt = Field(0, description="constant term")


class SlotIn(Strict):
    """An element of a barrier or buffer array: (i + shift) mod count, a fixed element, or all."""

    name: Name = Field(description="the array's name")
    shift: SmallInt = Field(0, description="element (i + shift) mod count of iteration i")
    fixed: Annotated[StrictInt, Field(ge=0)] | None = Field(None, description="this element, whatever i")
    all: StrictBool = Field(False, description="every element (init / invalidate)")


class ParityIn(Strict):
    """The phase parity a wait expects: ((i + shift) // period) mod 2, xor flip; or fixed."""

    shift: SmallInt = Field(0, description="iteration offset")
    flip: StrictBool = Field(False, description="invert the parity (a producer waiting for an empty stage)")
    fixed: Annotated[StrictInt, Field(ge=0, le=1)] | None = Field(None, description="this parity (0 or 1), whatever i")
    period: Annotated[StrictInt, Field(ge=1, le=MAX_SLOTS)] | None = Field(
        None, description="iterations per phase (default: the waited barrier array's count)")


class GuardIn(Strict):
    """Run the operation only when i_ge <= i < i_lt."""

    i_ge: AffineIn | None = Field(None, description="lower bound of i (inclusive)")
    i_lt: AffineIn | None = Field(None, description="upper bound of i (exclusive)")


Count = Annotated[StrictInt, Field(ge=-MAX_TRIP, le=MAX_TRIP)] | Literal["N"] | AffineIn
# The verifier's work, bounded before it runs: each run (one trip count) unrolls the protocol
# into operations whose happens-before sets and read/write pairs grow with the square of their
# number, so the bound is on the sum over the trip counts checked of (operations per run)^2.
# 2.5e8: at most 0.5 s of verification on the 2-core development machine at 0.94-1.00 of the
# bound (`python -m benchmarks.bench_protocol_verify --bound`, benchmarks/RESULTS.md).
MAX_VERIFY_WORK = 250_000_000
MAX_TRIP_COUNTS = 4096  # trip counts checked when none is declared (legalsat.protocols.verify.trip_count_range)


class OpIn(Strict):
    """One operation of a role's block (or of setup / teardown)."""

    op: Literal[tuple(k.value for k in OpKind)] = Field(  # type: ignore[valid-type]
        description="the operation: init, expect_tx, arrive, tma_load, wait, consume, release, generic_write, "
                    "fence_proxy_async, tma_store, commit_group, wait_group, invalidate")
    bar: Name | SlotIn | None = Field(None, description="the mbarrier element it acts on")
    buffer: Name | SlotIn | None = Field(None, description="the shared-memory buffer element it reads or writes; "
                                         "for release, the one it hands back (a label: the verifier orders the "
                                         "refill through the barrier)")
    bytes: Annotated[StrictInt, Field(ge=0, le=1 << 32)] = Field(
        0, description="bytes announced (expect_tx) or moved (tma_load, tma_store)")
    phase: ParityIn | None = Field(None, description="the parity a wait expects")
    count: Annotated[StrictInt, Field(ge=0, le=1 << 16)] | None = Field(
        None, description="arrivals (init, arrive) or groups that may stay pending (wait_group)")
    arrive: StrictBool = Field(True, description="expect_tx also arrives (mbarrier.arrive.expect_tx)")
    desc: str | None = Field(None, description="the TMA descriptor a copy uses (a name)")
    when: GuardIn | None = Field(None, description="run only in these iterations")


class BlockIn(Strict):
    """`ops` run for i = start .. start + count - 1."""

    ops: Annotated[list[OpIn], Field(max_length=MAX_OPS)] = Field(description="the operations of one iteration")
    count: Count = Field("N", description="iterations: an integer, \"N\" or {n, c}")
    start: Count = Field(0, description="first i: an integer, \"N\" or {n, c}")

    @field_validator("count")
    @classmethod
    def _count_not_negative(cls, v: object) -> object:
        # a literal count below 0 is no number of iterations (N + c below 0 runs none: N varies)
        if type(v) is int and v < 0:
            # the schema's range for an integer count is the one start shares (-4096..4096): say the count's own
            raise value_error(f"count is {v}: a block runs 0 or more iterations",
                              'give a count of 0 or more: an integer, "N" (the trip count) or {"n", "c"} for n*N + c')
        return v


class RoleIn(Strict):
    """A group of warps running its own program (a producer, a consumer, or the only role)."""

    name: Name = Field(description="the role's name (not setup / teardown)")
    blocks: Annotated[list[BlockIn], Field(min_length=1, max_length=16)] = Field(description="its loops, in order")


class ArrayIn(Strict):
    """An array of mbarriers or shared-memory buffers, one element per pipeline stage."""

    name: Name = Field(description="the array's name")
    count: Annotated[StrictInt, Field(ge=1, le=MAX_SLOTS)] = Field(1, description="elements (stages)")
    arrivals: Annotated[StrictInt, Field(ge=1, le=1024)] = Field(1, description="barriers: arrivals per phase")
    bytes: Annotated[StrictInt, Field(ge=0, le=1 << 32)] = Field(0, description="buffers: bytes per element")


class ProtocolIn(Strict):
    """A pipelined kernel's asynchronous schedule (see legalsat.protocols.model)."""

    name: str = Field("protocol", description="a name for reports")
    iterations: Annotated[StrictInt, Field(ge=0, le=MAX_TRIP)] | None = Field(
        None, description="the trip count N, or null for every N (the verifier checks every N up to a bound "
                          "covering all stage and phase combinations)")
    barriers: Annotated[list[ArrayIn], Field(max_length=32)] = Field([], description="mbarrier arrays")
    buffers: Annotated[list[ArrayIn], Field(max_length=32)] = Field([], description="shared-memory buffer arrays")
    setup: Annotated[list[OpIn], Field(max_length=MAX_OPS)] = Field(
        [], description="run once before the roles (init), followed by a CTA barrier")
    roles: Annotated[list[RoleIn], Field(min_length=1, max_length=MAX_ROLES)] = Field(description="the roles")
    teardown: Annotated[list[OpIn], Field(max_length=MAX_OPS)] = Field(
        [], description="run once after every role finished (invalidate)")


class ProtocolViolationOut(Out):
    """One hazard: the rule, where it happens (role, operation, iteration, trip count), why, and the fix."""

    rule: str = Field(description="the hazard's stable code: deadlock, tx_mismatch, phase_reuse, ...")
    role: str = Field(description="the role (or setup / teardown) of the operation")
    op_index: int = Field(description="index into the role's operations, block after block")
    iteration: int = Field(description="the iteration i where it happens")
    message: str = Field(description="what goes wrong")
    fix: str = Field(description="what to change")
    op: str = Field(description="the operation's kind")
    trip_count: int = Field(description="the trip count N of the run that shows it")


class PipelineVerdictOut(Out):
    """ok exactly when there are no violations; `trip_counts` lists the N checked. On the
    command line, a line that cannot be judged answers ok false with `error` set and `line` its
    line number."""

    ok: bool = Field(description="no hazard at any trip count checked")
    violations: list[ProtocolViolationOut] = Field(description="each hazard's first occurrence per (rule, role, op)")
    trip_counts: list[int] = Field([], description="the trip counts N the verifier executed")
    error: ErrorOut | None = Field(None, description="the input could not be judged: set on the command line's JSON Lines "
                                "answers only (null over HTTP, where such input is a 422)")


# Which fields each operation needs.
_NEEDS = {
    "init": ("bar",), "expect_tx": ("bar",), "arrive": ("bar",), "tma_load": ("bar", "buffer"),
    "wait": ("bar", "phase"), "consume": ("buffer",), "release": ("bar",),
    "generic_write": ("buffer",), "fence_proxy_async": (), "tma_store": ("buffer",),
    "commit_group": (), "wait_group": (), "invalidate": ("bar",),
}
_HOUSEKEEPING = {"init", "invalidate", "arrive"}
# an mbarrier's arrival count and a phase's transaction count: at most 2^20 - 1 (PTX mbarrier)
MAX_MBARRIER_COUNT = (1 << 20) - 1


class _Builder:
    """ProtocolIn -> Protocol, collecting every cross-reference problem with its field path."""

    def __init__(self, m: ProtocolIn):
        self.m = m
        self.bars = {a.name: a for a in m.barriers}
        self.bufs = {a.name: a for a in m.buffers}
        self.problems: list[Diagnostic] = []

    def bad(self, field: str, message: str, fix: str) -> None:
        self.problems.append(Code.INVALID_INPUT.at(message, fix, field=field))

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
                            f"element {shown_int(ref.fixed)} does not exist", "use a smaller fixed index")
        given = [name for name, on in (("all", ref.all), ("fixed", ref.fixed is not None), ("shift", ref.shift != 0))
                 if on]
        if len(given) > 1:  # each names the element on its own: together one would be ignored
            self.bad(where, f"{kind} {ref.name!r} gives {' and '.join(given)}: each names the element on its own",
                     "give one of them: all (init / invalidate), fixed (one element), or shift ((i + shift) mod count)")
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
        for f, takes in FIELD_OPS.items():  # given (not defaulted, not null) to an op that ignores it
            if f in o.model_fields_set and getattr(o, f) is not None and kind not in takes:
                self.bad(f"{where}.{f}", f"{o.op} takes no {f} (it would be ignored)",
                         f"leave {f} out (it is for {', '.join(sorted(k.value for k in takes))})")
        if kind in (OpKind.INIT, OpKind.ARRIVE) and o.count is not None and not 1 <= o.count <= MAX_MBARRIER_COUNT:
            self.bad(f"{where}.count", f"{o.op} count is {o.count}; an mbarrier's arrival count is 1 to "
                                       f"{MAX_MBARRIER_COUNT}", "give a count of at least 1 (or leave it out: "
                                                                 "init takes the array's arrivals, arrive 1)")
        if kind in (OpKind.EXPECT_TX, OpKind.TMA_LOAD, OpKind.TMA_STORE) and o.bytes > MAX_MBARRIER_COUNT:
            self.bad(f"{where}.bytes", f"{o.op} bytes is {o.bytes}; a barrier phase's transaction count is at "
                                       f"most {MAX_MBARRIER_COUNT} bytes (and shared memory far less)",
                     "announce and move at most what one stage holds")
        if ph is not None and ph.fixed is not None and ({"shift", "flip", "period"} & ph.model_fields_set):
            self.bad(f"{where}.phase", "phase gives fixed and " + " and ".join(
                sorted({"shift", "flip", "period"} & ph.model_fields_set)) + ": fixed names the parity on its own",
                     "give fixed (a parity whatever i) or shift / flip / period, not both")
        for f in ("bar", "buffer"):
            ref = getattr(o, f)
            if getattr(ref, "all", False) and kind not in (OpKind.INIT, OpKind.INVALIDATE):
                self.bad(f"{where}.{f}.all", f"{o.op} acts on one element; all (every element) is for init and "
                                             "invalidate", "name the element: shift or fixed")
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
        seen: dict[str, str] = {}  # one namespace: a reference names a barrier or a buffer, never both
        for kind, arrays in (("barriers", m.barriers), ("buffers", m.buffers)):
            for k, a in enumerate(arrays):
                if a.name in seen:
                    self.bad(f"{kind}[{k}].name", f"the name {a.name!r} is declared twice ({seen[a.name]} and "
                                                  f"{kind}[{k}])", "give every barrier and buffer array its own name")
                seen.setdefault(a.name, f"{kind}[{k}]")
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
        if not self.problems:
            self.check_size(proto)
        if self.problems:
            raise InputError(self.problems)
        return proto

    def check_size(self, proto: Protocol) -> None:
        """The verifier runs the protocol unrolled at every trip count it checks, at a cost
        that grows with the square of each run's operations: refuse a protocol whose trip
        counts are too many to enumerate (MAX_TRIP_COUNTS) or whose runs add up to more than
        MAX_VERIFY_WORK, naming the block that unrolls the most, before any run starts."""
        from legalsat.protocols.verify import trip_count_range

        trips = trip_count_range(proto)
        if len(trips) > MAX_TRIP_COUNTS:
            counts = sorted({a.count for a in (*proto.barriers, *proto.buffers)})
            self.bad("iterations", f"every behaviour of the protocol shows within {len(trips)} trip counts (its stage "
                     f"counts {counts} repeat together, then the largest shift or constant of its guards and blocks); "
                     f"the verifier checks at most {MAX_TRIP_COUNTS}",
                     "declare the trip count to check (iterations), or give the barrier and buffer arrays stage "
                     "counts with a small common multiple")
            return
        work, (total, n, sizes) = verify_work(proto, trips)
        if work > MAX_VERIFY_WORK:
            self.bad(max(sizes, key=lambda s: s[0])[1], f"the protocol unrolls into {total} operations at trip "
                     f"count {n} and is checked at {len(trips)} trip count(s): verifying it is "
                     f"{work / MAX_VERIFY_WORK:.1f}x the work the verifier does at most (the sum over trip counts "
                     f"of the squared operations per run, {MAX_VERIFY_WORK:.3g})", "verify a smaller trip count "
                     "(iterations), or fewer iterations per block: the pipeline's behaviour repeats with its stage "
                     "period; setup and teardown count at every trip count, an operation on a whole array once "
                     "per element")


def verify_work(proto: Protocol, trips: range) -> tuple[int, tuple[int, int, list[tuple[int, str]]]]:
    """The verifier's work on `proto` over `trips` (the sum of each run's unrolled operations,
    setup and teardown included, an operation on every element of an array counted once per
    element, squared; guards ignored, so an upper bound) and its largest run: (operations,
    trip count, (operations, field) per block, setup and teardown)."""
    arrays = {a.name: a.count for a in (*proto.barriers, *proto.buffers)}

    def weight(op) -> int:  # an init / invalidate of every element is one operation per element
        slot = op.bar or op.buffer
        return arrays.get(slot.name, 1) if slot is not None and slot.all_slots else 1

    # setup and teardown run once a trip count: a teardown of 128 whole-array invalidates
    # over 63 barriers, checked at 4,034 trip counts, ran past its deadline uncounted
    fixed = [(sum(weight(o) for o in ops), side) for side, ops in (("setup", proto.setup),
                                                                  ("teardown", proto.teardown)) if ops]
    work, worst = 0, (0, 0, [])
    for n in trips:
        sizes = [(max(0, b.count.at(n)) * sum(weight(o) for o in b.ops), f"roles[{ri}].blocks[{bi}].count")
                 for ri, r in enumerate(proto.roles) for bi, b in enumerate(r.blocks)] + fixed
        total = sum(k for k, _ in sizes)
        work += total * total
        worst = max(worst, (total, n, sizes), key=lambda w: w[0])
    return work, worst


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
    if isinstance(obj, ProtocolIn):
        model = obj
    else:
        obj = json_input(obj)
        try:
            model = ProtocolIn.model_validate(obj)
        except ValidationError as e:
            raise naming_other_input(InputError(details_from_validation(e, known_fields=ProtocolIn)), obj, "protocol",
                                     'a protocol is {"barriers", "buffers", "roles": [...]}') from None
    return _Builder(model).build()


def protocol_model(proto: Protocol) -> ProtocolIn:
    """The JSON form of a protocol (what plans carry; parse_protocol inverts it), written
    compactly: fields at their defaults are left unset (serialize with exclude_unset)."""
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

    return ProtocolIn.model_validate({
        "name": proto.name, "iterations": proto.iterations,
        "barriers": [{"name": b.name, "count": b.count, "arrivals": b.arrivals} for b in proto.barriers],
        "buffers": [{"name": b.name, "count": b.count, "bytes": b.bytes} for b in proto.buffers],
        "setup": [op(o) for o in proto.setup],
        "roles": [{"name": r.name, "blocks": [{"count": aff(b.count), "start": aff(b.start),
                                                "ops": [op(o) for o in b.ops]} for b in r.blocks]}
                  for r in proto.roles],
        "teardown": [op(o) for o in proto.teardown],
    })


def verdict_model(verdict: ProtocolVerdict) -> PipelineVerdictOut:
    """The verifier's verdict as the published model."""
    return PipelineVerdictOut(ok=verdict.ok, trip_counts=list(verdict.trip_counts), violations=[
        ProtocolViolationOut(rule=v.id, role=v.role, op_index=v.op_index, iteration=v.iteration, message=v.message,
                             fix=v.fix, op=v.op, trip_count=v.trip_count) for v in verdict.violations])


def error_line(err: InputError) -> dict:
    """The verdict-shaped JSON Lines answer of a line that could not be judged (the command
    adds its `line`)."""
    return {"ok": False, "violations": [], "trip_counts": [], "error": err.headline.to_error()}
