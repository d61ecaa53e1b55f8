"""Synthesize the asynchronous protocol of a TMA plan, and verify it before returning it.

Loads complete by `mbarrier::complete_tx::bytes` with the exact bytes of every box loaded
into a stage; stores complete by bulk groups; stages are indexed `i mod S` with the phase
parity `(i div S) mod 2`; a generic shared-memory write that a TMA store reads is fenced
with fence.proxy.async. Two shapes:

- one role (a software pipeline, as in Triton's Gluon TMA tutorial): S-1 stages are loaded
  ahead; iteration i re-arms the stage consumed in iteration i-1, waits for stage i, reads it;
- two roles (warp specialization): a producer waits for the stage to be released ("empty"
  barrier, parity flipped so the first S waits pass), arms it and loads; the consumer waits
  for it ("full"), reads it and releases it.
"""

from __future__ import annotations

from dataclasses import dataclass

from legalsat.diagnostics import Code
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
from legalsat.protocols.verify import verify_protocol

MBARRIER_BYTES = 8


@dataclass(frozen=True)
class TmaPipelineSpec:
    """What a plan knows: the bytes copied into each operand's buffer per stage (one entry per
    operand descriptor), issued as `boxes` TMA copies of equal size (a tile split into several
    boxes completes on one phase), the bytes of the output tile stored per iteration (0: no
    TMA store), the shared-memory budget, and the pipeline shape."""

    load_bytes: tuple[int, ...]
    store_bytes: int = 0
    smem_bytes: int = 232448
    stages: int | None = None  # None: as many as fit, at most max_stages
    max_stages: int = 4
    store_buffers: int = 1
    roles: int = 1
    consumers: int = 1  # arrivals that release a stage (two-role shape)
    boxes: int = 1


def fit_stages(spec: TmaPipelineSpec) -> int:
    """The stage count: the requested one if it fits, else the most that fit (<= max_stages).

    Raises InputError naming the budget when not even the requested (or one) stage fits.
    """
    stage = sum(spec.load_bytes)
    barriers_per_stage = 2 if spec.roles == 2 else 1
    fixed = spec.store_bytes * spec.store_buffers
    room = spec.smem_bytes - fixed
    fit = room // (stage + barriers_per_stage * MBARRIER_BYTES) if stage > 0 else 0
    want = spec.stages if spec.stages is not None else min(fit, spec.max_stages)
    if want < 1 or want > fit:
        need = fixed + max(want, 1) * (stage + barriers_per_stage * MBARRIER_BYTES)
        raise Code.DOES_NOT_FIT.error(
            f"{max(want, 1)} stage(s) of {stage} bytes (+{fixed} bytes of store "
            f"staging) need {need} bytes of shared memory; the budget is {spec.smem_bytes}",
            f"use at most {fit} stage(s), smaller boxes, or a larger smem_bytes" if fit else
            "use smaller boxes (a smaller tile) or a larger smem_bytes", "stages")
    return want


def _loads(bar: Slot, shift: int, spec: TmaPipelineSpec, when: Guard | None) -> list[Op]:
    return [Op(OpKind.TMA_LOAD, bar=bar, buffer=Slot(f"in{k}", shift=shift), bytes=b // spec.boxes,
               desc=f"desc{k}", when=when) for k, b in enumerate(spec.load_bytes) for _ in range(spec.boxes)]


def _store_ops(spec: TmaPipelineSpec) -> list[Op]:
    if not spec.store_bytes:
        return []
    out = Slot("out")
    # The store that last read out[i mod B] was committed B groups ago: keep B-1 pending.
    return [Op(OpKind.WAIT_GROUP, count=spec.store_buffers - 1),
            Op(OpKind.GENERIC_WRITE, buffer=out),
            Op(OpKind.FENCE_PROXY_ASYNC),
            Op(OpKind.TMA_STORE, buffer=out, bytes=spec.store_bytes, desc="out_desc"),
            Op(OpKind.COMMIT_GROUP)]


def synthesize_tma_pipeline(spec: TmaPipelineSpec) -> Protocol:
    """The verified protocol for `spec` (trip count left open: verified for every N up to
    the bound of `trip_counts`). Raises InputError when it does not fit the budget."""
    if spec.boxes < 1 or not spec.load_bytes or any(b <= 0 or b % (16 * spec.boxes) for b in spec.load_bytes):
        raise Code.INVALID_INPUT.error(
            f"load_bytes {list(spec.load_bytes)}: each box is a positive "
            "multiple of 16 bytes (TMA moves 16-byte units)", "give the box bytes of each "
            "operand descriptor", "load_bytes")
    if spec.roles not in (1, 2):
        raise Code.INVALID_INPUT.error(f"roles is {spec.roles}",
                                       "use 1 (one pipelined role) or 2 (producer + consumer)", "roles")
    S = fit_stages(spec)
    total = sum(spec.load_bytes)
    N = Affine(1, 0)
    buffers = [BufferArray(f"in{k}", S, b) for k, b in enumerate(spec.load_bytes)]
    if spec.store_bytes:
        buffers.append(BufferArray("out", spec.store_buffers, spec.store_bytes))
    consume = [Op(OpKind.CONSUME, buffer=Slot(f"in{k}")) for k in range(len(spec.load_bytes))]
    tail = [Block((Op(OpKind.WAIT_GROUP, count=0),), Affine(0, 1))] if spec.store_bytes else []
    if spec.roles == 1:
        ahead = Guard(i_lt=Affine(1, -(S - 1)))
        main = Role("main", (
            Block(tuple([Op(OpKind.EXPECT_TX, bar=Slot("ready"), bytes=total, when=Guard(i_lt=N))]
                        + _loads(Slot("ready"), 0, spec, Guard(i_lt=N))), Affine(0, S - 1)),
            Block(tuple([Op(OpKind.EXPECT_TX, bar=Slot("ready", shift=S - 1), bytes=total, when=ahead)]
                        + _loads(Slot("ready", shift=S - 1), S - 1, spec, ahead)
                        + [Op(OpKind.WAIT, bar=Slot("ready"), phase=Parity())]
                        + consume + _store_ops(spec)), N),
            *tail))
        proto = Protocol(f"tma-pipeline-1role-{S}stage", (BarrierArray("ready", S, 1),),
                         tuple(buffers), (main,),
                         setup=(Op(OpKind.INIT, bar=Slot("ready", all_slots=True), count=1),),
                         teardown=(Op(OpKind.INVALIDATE, bar=Slot("ready", all_slots=True)),))
    else:
        producer = Role("producer", (Block(tuple(
            [Op(OpKind.WAIT, bar=Slot("empty"), phase=Parity(flip=True)),
             Op(OpKind.EXPECT_TX, bar=Slot("full"), bytes=total)]
            + _loads(Slot("full"), 0, spec, None)), N),))
        consumer = Role("consumer", (Block(tuple(
            [Op(OpKind.WAIT, bar=Slot("full"), phase=Parity())] + consume
            + [Op(OpKind.RELEASE, bar=Slot("empty"), buffer=Slot("in0"))] + _store_ops(spec)), N),
            *tail))
        everything = (Slot("full", all_slots=True), Slot("empty", all_slots=True))
        proto = Protocol(
            f"tma-pipeline-2role-{S}stage",
            (BarrierArray("full", S, 1), BarrierArray("empty", S, spec.consumers)),
            tuple(buffers), (producer, consumer),
            setup=(Op(OpKind.INIT, bar=everything[0], count=1),
                   Op(OpKind.INIT, bar=everything[1], count=spec.consumers)),
            teardown=tuple(Op(OpKind.INVALIDATE, bar=s) for s in everything))
    verdict = verify_protocol(proto)
    if not verdict.ok:  # a synthesis bug, never the caller's: fail loudly
        raise AssertionError(f"synthesized protocol {proto.name} failed verification: "
                             f"{[(v.id, v.role, v.op_index, v.message) for v in verdict.violations]}")
    return proto
