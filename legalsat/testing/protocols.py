"""Correct protocols for the verifier tests, and the bug kinds seeded into them."""

from __future__ import annotations

from dataclasses import replace

from legalsat.protocols.model import (
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
from legalsat.protocols.synth import TmaPipelineSpec, synthesize_tma_pipeline
from legalsat.schemas.protocol import protocol_model

K = OpKind


def protocol_json(proto: Protocol) -> dict:
    """The JSON form of a protocol (what verify-pipeline reads and plans carry)."""
    return protocol_model(proto).model_dump(exclude_unset=True)


def gluon_elementwise_add_tma(stages: int, a_bytes: int = 8192, b_bytes: int = 8192,
                              expect_bytes: int | None = None, parity_period: int | None = None) -> Protocol:
    """Triton's Gluon tutorial 04-tma.py, `elementwise_add_tma_kernel`, as a protocol:
    num_buffers stages of (a, b) loaded S-1 ahead on one mbarrier per stage (expect a+b
    bytes), read in order with phase (read_index // num_buffers) & 1, the sum stored through
    one c_smem buffer by TMA after store_wait(0), c_smem.store and fence_async_shared."""
    S = stages
    nbytes = a_bytes + b_bytes if expect_bytes is None else expect_bytes
    ahead = [Op(K.EXPECT_TX, bar=Slot("bars", shift=S - 1), bytes=nbytes),
             Op(K.TMA_LOAD, bar=Slot("bars", shift=S - 1), buffer=Slot("a_smem", shift=S - 1), bytes=a_bytes),
             Op(K.TMA_LOAD, bar=Slot("bars", shift=S - 1), buffer=Slot("b_smem", shift=S - 1), bytes=b_bytes)]
    read = [Op(K.WAIT, bar=Slot("bars"), phase=Parity(period=parity_period)),
            Op(K.CONSUME, buffer=Slot("a_smem")), Op(K.CONSUME, buffer=Slot("b_smem")),
            Op(K.WAIT_GROUP, count=0), Op(K.GENERIC_WRITE, buffer=Slot("c_smem", fixed=0)),
            Op(K.FENCE_PROXY_ASYNC), Op(K.TMA_STORE, buffer=Slot("c_smem", fixed=0), bytes=a_bytes),
            Op(K.COMMIT_GROUP)]
    prologue = Block(tuple(replace(op, bar=replace(op.bar, shift=0),
                                   buffer=replace(op.buffer, shift=0) if op.buffer else None)
                           for op in ahead), Affine(0, S - 1))
    main = Block(tuple(ahead + read), Affine(1, -(S - 1)))
    epilogue = Block(tuple(read), Affine(0, S - 1), start=Affine(1, -(S - 1)))
    finish = Block((Op(K.INVALIDATE, bar=Slot("bars", all_slots=True)), Op(K.WAIT_GROUP, count=0)),
                   Affine(0, 1))
    return Protocol(f"gluon-04-tma-elementwise-add-{S}", (BarrierArray("bars", S, 1),),
                    (BufferArray("a_smem", S, a_bytes), BufferArray("b_smem", S, b_bytes),
                     BufferArray("c_smem", 1, a_bytes)),
                    (Role("main", (prologue, main, epilogue, finish)),),
                    setup=(Op(K.INIT, bar=Slot("bars", all_slots=True), count=1),))


def warp_specialized(stages: int, box: int = 16384) -> Protocol:
    """A hand-written producer / consumer pipeline with full and empty barriers."""
    S = stages
    producer = Role("producer", (Block((
        Op(K.WAIT, bar=Slot("empty"), phase=Parity(flip=True)),
        Op(K.EXPECT_TX, bar=Slot("full"), bytes=box),
        Op(K.TMA_LOAD, bar=Slot("full"), buffer=Slot("tile"), bytes=box)), Affine(1, 0)),))
    consumer = Role("consumer", (Block((
        Op(K.WAIT, bar=Slot("full"), phase=Parity()),
        Op(K.CONSUME, buffer=Slot("tile")),
        Op(K.RELEASE, bar=Slot("empty"), buffer=Slot("tile"))), Affine(1, 0)),))
    return Protocol(f"warp-specialized-{S}", (BarrierArray("full", S, 1), BarrierArray("empty", S, 1)),
                    (BufferArray("tile", S, box),), (producer, consumer),
                    setup=(Op(K.INIT, bar=Slot("full", all_slots=True)),
                           Op(K.INIT, bar=Slot("empty", all_slots=True))),
                    teardown=(Op(K.INVALIDATE, bar=Slot("full", all_slots=True)),
                              Op(K.INVALIDATE, bar=Slot("empty", all_slots=True))))


def arrivals(roles: int, count: int, bar_counts: tuple[int, ...] = (64,)) -> dict:
    """`roles` roles of `count` iterations of 6 arrivals on the first of barrier arrays of
    `bar_counts` stages, as JSON: it checks nothing but unrolls into many operations, at every
    trip count up to 2 x the lcm of the stage counts (no iterations are declared)."""
    bars = [{"name": f"b{k}", "count": c, "arrivals": roles * 6} for k, c in enumerate(bar_counts)]
    return {"barriers": bars, "buffers": [],
            "roles": [{"name": f"r{r}", "blocks": [{"count": count, "ops": [{"op": "arrive", "bar": "b0"}] * 6}]}
                      for r in range(roles)]}


def racing_roles(roles: int, blocks: int, loads: int) -> dict:
    """`roles` roles that each load one shared stage `loads` times per block, over `blocks`
    blocks, and read it, with no release between them, as JSON: every load races every other
    role's reads (millions of racing pairs; thousands of violations, one per operation)."""
    step = [{"op": "expect_tx", "bar": "b", "bytes": 128}, {"op": "tma_load", "bar": "b", "buffer": "s", "bytes": 128},
            {"op": "wait", "bar": "b", "phase": {}}, {"op": "consume", "buffer": "s"}]
    return {"name": f"{roles} roles racing", "iterations": 1, "barriers": [{"name": "b", "count": 1, "arrivals": 1}],
            "buffers": [{"name": "s", "count": 1, "bytes": 128}], "setup": [{"op": "init", "bar": "b", "count": 1}],
            "roles": [{"name": f"r{r}", "blocks": [{"count": 1, "ops": step * loads} for _ in range(blocks)]}
                      for r in range(roles)]}


def store_epilogue(iterations: int) -> dict:
    """A store epilogue as JSON: each iteration writes one shared buffer, fences, stores it by
    TMA and waits for the store (correct; its runs pair every store with every write)."""
    ops = [{"op": "generic_write", "buffer": "out"}, {"op": "fence_proxy_async"},
           {"op": "tma_store", "buffer": "out", "bytes": 1024}, {"op": "commit_group"},
           {"op": "wait_group", "count": 0}]
    return {"name": f"store epilogue x {iterations}", "iterations": iterations, "barriers": [],
            "buffers": [{"name": "out", "count": 1, "bytes": 1024}],
            "roles": [{"name": "main", "blocks": [{"count": {"n": 1, "c": 0}, "ops": ops}]}]}


def correct_protocols() -> list[Protocol]:
    out = [gluon_elementwise_add_tma(s) for s in (1, 2, 3, 4)] + [warp_specialized(s) for s in (1, 2, 4)]
    for roles in (1, 2):
        for store in (0, 8192):
            for s in (1, 2, 3, 4):
                out.append(synthesize_tma_pipeline(TmaPipelineSpec(
                    (16384, 16384), store_bytes=store, stages=s, roles=roles, store_buffers=1 + (s % 2),
                    smem_bytes=1 << 20)))
    return out


# --- seeded bugs ---------------------------------------------------------------------------------
# Each seed edits the steady-state block(s) (those whose trip count grows with N) of a
# correct protocol so that exactly one kind of bug appears; None when the protocol has
# nothing to seed that bug into (e.g. no TMA store).

def _steady(p: Protocol, edit, role_name: str | None = None) -> Protocol | None:
    """Rewrite each steady-state block's op list with `edit(ops) -> new ops | None`."""
    changed, roles = False, []
    for role in p.roles:
        blocks = []
        for b in role.blocks:
            new = edit(list(b.ops)) if b.count.n == 1 and role_name in (None, role.name) else None
            if new is not None:
                changed = True
                b = replace(b, ops=tuple(new))
            blocks.append(b)
        roles.append(replace(role, blocks=tuple(blocks)))
    return replace(p, roles=tuple(roles)) if changed else None


def _drop(kind, first_only=False, pick=lambda op: True):
    def edit(ops):
        hits = [k for k, op in enumerate(ops) if op.kind is kind and pick(op)]
        if not hits:
            return None
        hits = hits[:1] if first_only else hits
        return [op for k, op in enumerate(ops) if k not in hits]
    return edit


def seed_deadlock(p: Protocol) -> Protocol | None:
    if len(p.roles) == 2:  # the consumer never releases: the producer waits on "empty" forever
        return _steady(p, _drop(K.RELEASE))

    def no_arrival(ops):  # nothing arms or fills the stage any more
        kept = [op for op in ops if op.kind not in (K.EXPECT_TX, K.TMA_LOAD)]
        return kept if len(kept) < len(ops) else None
    return _steady(p, no_arrival)


def seed_tx_mismatch(p: Protocol) -> Protocol | None:  # one bf16 element short
    def edit(ops):
        k = next((k for k, op in enumerate(ops) if op.kind is K.EXPECT_TX), None)
        if k is None:
            return None
        ops[k] = replace(ops[k], bytes=ops[k].bytes - 2)
        return ops
    return _steady(p, edit)


def seed_phase_reuse(p: Protocol) -> Protocol | None:  # the stage is armed and filled twice
    def edit(ops):
        group = [op for op in ops if op.kind in (K.EXPECT_TX, K.TMA_LOAD)]
        if not group:
            return None
        k = ops.index(group[-1]) + 1
        return ops[:k] + group + ops[k:]
    return _steady(p, edit)


def seed_use_before_complete(p: Protocol) -> Protocol | None:  # read without waiting for the copy
    return _steady(p, _drop(K.WAIT, pick=lambda op: not op.phase.flip))


def seed_overwrite_before_release(p: Protocol) -> Protocol | None:
    if len(p.roles) == 2:  # the producer stops waiting for the stage to be released
        return _steady(p, _drop(K.WAIT), "producer")

    def edit(ops):  # one role: refill the stage being read before it is read
        if not any(op.kind is K.TMA_LOAD and op.buffer.shift > 0 for op in ops):
            return None
        wait = next(k for k, op in enumerate(ops) if op.kind is K.WAIT)
        late = [op for op in ops if op.kind in (K.EXPECT_TX, K.TMA_LOAD)]
        rest = [op for op in ops if op.kind not in (K.EXPECT_TX, K.TMA_LOAD)]
        consumed = max(k for k, op in enumerate(rest) if op.kind is K.CONSUME)
        # consume stage i, then load into stage i+S-1 == i-1 ... shifted to stage i+S == i:
        moved = [replace(op, buffer=replace(op.buffer, shift=op.buffer.shift + 1)) if op.buffer else op
                 for op in late]
        del wait
        return rest[:consumed] + moved + rest[consumed:]
    return _steady(p, edit)


def seed_missing_proxy_fence(p: Protocol) -> Protocol | None:
    return _steady(p, _drop(K.FENCE_PROXY_ASYNC))


def seed_store_reuse_before_wait(p: Protocol) -> Protocol | None:
    return _steady(p, _drop(K.WAIT_GROUP))


def seed_use_after_invalidate(p: Protocol) -> Protocol | None:  # invalidated right after init
    first = p.barriers[0].name
    return replace(p, setup=p.setup + (Op(K.INVALIDATE, bar=Slot(first, all_slots=True)),))


SEEDS = {
    "deadlock": seed_deadlock,
    "tx_mismatch": seed_tx_mismatch,
    "phase_reuse": seed_phase_reuse,
    "use_before_complete": seed_use_before_complete,
    "overwrite_before_release": seed_overwrite_before_release,
    "missing_proxy_fence": seed_missing_proxy_fence,
    "store_reuse_before_wait": seed_store_reuse_before_wait,
    "use_after_invalidate": seed_use_after_invalidate,
}

__all__ = ["Guard", "SEEDS", "correct_protocols", "gluon_elementwise_add_tma", "warp_specialized"]
