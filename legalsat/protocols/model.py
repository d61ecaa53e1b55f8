"""Asynchronous copy protocols: the schedule a pipelined TMA kernel runs.

A protocol declares arrays of mbarriers and shared-memory buffers (one element per pipeline
stage) and, per role (producer / consumer warps, or a single role), a program of blocks:
loops over an iteration counter `i`. Operations address array elements by stage,
`(i + shift) mod count`, and wait on phase parities, `((i + shift) // count) mod 2`, so one
description covers every trip count N. `setup` runs once before the roles (followed by a
CTA-wide barrier, as kernels do after mbarrier.init); `teardown` after all roles finish.

Semantics follow the PTX ISA: a barrier phase completes when its pending arrivals reach
zero and its transaction count is zero; `wait(bar, parity)` returns once the phase of that
parity has completed (a fresh barrier counts the phase before phase 0 as complete, so
waiting on parity 1 returns at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class OpKind(StrEnum):
    INIT = "init"
    EXPECT_TX = "expect_tx"
    ARRIVE = "arrive"
    TMA_LOAD = "tma_load"
    WAIT = "wait"
    CONSUME = "consume"
    RELEASE = "release"
    GENERIC_WRITE = "generic_write"
    FENCE_PROXY_ASYNC = "fence_proxy_async"
    TMA_STORE = "tma_store"
    COMMIT_GROUP = "commit_group"
    WAIT_GROUP = "wait_group"
    INVALIDATE = "invalidate"


BARRIER_OPS = frozenset({OpKind.INIT, OpKind.EXPECT_TX, OpKind.ARRIVE, OpKind.TMA_LOAD,
                         OpKind.WAIT, OpKind.RELEASE, OpKind.INVALIDATE})
# release names the buffer it hands back as a label (synth writes it): the refill is ordered through its barrier
BUFFER_OPS = frozenset({OpKind.TMA_LOAD, OpKind.CONSUME, OpKind.RELEASE, OpKind.GENERIC_WRITE,
                        OpKind.TMA_STORE})
# the operations that read each field of an operation (a field given to another is a mistake)
FIELD_OPS: dict[str, frozenset[OpKind]] = {
    "bar": BARRIER_OPS, "buffer": BUFFER_OPS, "phase": frozenset({OpKind.WAIT}),
    "bytes": frozenset({OpKind.EXPECT_TX, OpKind.TMA_LOAD, OpKind.TMA_STORE}),
    "count": frozenset({OpKind.INIT, OpKind.ARRIVE, OpKind.WAIT_GROUP}),
    "arrive": frozenset({OpKind.EXPECT_TX}), "desc": frozenset({OpKind.TMA_LOAD, OpKind.TMA_STORE})}


@dataclass(frozen=True)
class Affine:
    """a*N + c for the trip count N (clamped at 0 where it is a count or a start)."""

    n: int = 0
    c: int = 0

    def at(self, trip: int) -> int:
        return self.n * trip + self.c


@dataclass(frozen=True)
class Slot:
    """An element of a barrier or buffer array: `(i + shift) mod count`, or `fixed`, or every
    element (`all_slots`, for init / invalidate)."""

    name: str
    shift: int = 0
    fixed: int | None = None
    all_slots: bool = False


@dataclass(frozen=True)
class Parity:
    """The phase parity a wait expects: `((i + shift) // period) mod 2`, xor `flip`; or `fixed`.
    `period` defaults to the size of the waited barrier array (the stage count)."""

    shift: int = 0
    flip: bool = False
    fixed: int | None = None
    period: int | None = None


@dataclass(frozen=True)
class Guard:
    """Execute only when i_ge <= i < i_lt (each an Affine in N; None = unbounded)."""

    i_ge: Affine | None = None
    i_lt: Affine | None = None


@dataclass(frozen=True)
class Op:
    """One operation. Fields used per kind: bar (init, expect_tx, arrive, tma_load, wait,
    release, invalidate), buffer (tma_load, consume, release, generic_write, tma_store),
    bytes (expect_tx, tma_load, tma_store), phase (wait), count (init: arrivals; arrive:
    arrivals; wait_group: groups allowed to stay pending), arrive (expect_tx also arrives,
    as mbarrier.arrive.expect_tx and Gluon's mbarrier.expect do)."""

    kind: OpKind
    bar: Slot | None = None
    buffer: Slot | None = None
    bytes: int = 0
    phase: Parity | None = None
    count: int = 1
    arrive: bool = True
    desc: str | None = None
    when: Guard | None = None


@dataclass(frozen=True)
class Block:
    """`ops` run for i = start, start+1, ..., start+count-1 (count and start clamped at 0)."""

    ops: tuple[Op, ...]
    count: Affine
    start: Affine = Affine()


@dataclass(frozen=True)
class Role:
    name: str
    blocks: tuple[Block, ...]

    def ops(self) -> tuple[Op, ...]:
        """The role's operations, block after block: `op_index` in reports indexes this."""
        return tuple(op for b in self.blocks for op in b.ops)


@dataclass(frozen=True)
class BarrierArray:
    name: str
    count: int = 1  # elements (stages)
    arrivals: int = 1  # default arrival count for init


@dataclass(frozen=True)
class BufferArray:
    name: str
    count: int = 1
    bytes: int = 0  # per element


@dataclass(frozen=True)
class Protocol:
    """A pipelined kernel's asynchronous schedule. `iterations`: the trip count N, or None
    for "any": the verifier then checks every N up to a bound covering every stage/phase
    combination (see legalsat.protocols.verify)."""

    name: str
    barriers: tuple[BarrierArray, ...]
    buffers: tuple[BufferArray, ...]
    roles: tuple[Role, ...]
    setup: tuple[Op, ...] = ()
    teardown: tuple[Op, ...] = ()
    iterations: int | None = None
