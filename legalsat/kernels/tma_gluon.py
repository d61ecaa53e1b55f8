"""`tma` on sm90 in Gluon: the plan's protocol, explicitly.

A persistent kernel (one program per SM slot, walking tiles pid, pid + nprog, ...) keeps
`stages` boxes in flight: each stage is a shared buffer in the descriptor's NVMMA layout
(the plan's swizzle) and an mbarrier armed with expect-tx of the plan's box bytes. A
straight copy stores a landed box straight from its stage with a TMA store; a transposing
copy loads the stage into registers (16-byte vectors along the source's contiguous dim),
permutes them, converts them to 16-byte vectors along the destination's contiguous dim,
writes the destination box into one of the protocol's store buffers, fences the generic
writes for the async proxy, and TMA-stores it. Before a stage (or store buffer) is
refilled, the TMA store that read it is waited for with `store_wait` (the WAR edge of the
protocol).

Gluon does not run in the interpreter: its tl twin is `legalsat.kernels.tma`; this one is
compiled for sm90 in CI and run on the GPU machine.
"""

from __future__ import annotations

from legalsat.kernels.source import Launch, blocked_layout
from legalsat.kernels.tma import TmaPiece, coords, permute_lines, tile_lines
from legalsat.kernels.words import plan_error
from legalsat.schemas.plan import PieceOut
from legalsat.schemas.protocol import ProtocolIn
from legalsat.terms.smem import tma_pipeline_bytes


def _ops(proto: ProtocolIn):
    yield from proto.setup
    for role in proto.roles:
        for block in role.blocks:
            yield from block.ops
    yield from proto.teardown


def _expect_bytes(raw: PieceOut, field: str) -> int | None:
    """The expect-tx byte count the plan's protocol arms a stage with (None: no protocol)."""
    if raw.async_ is None:
        return None
    counts = {op.bytes for op in _ops(raw.async_.protocol) if op.op == "expect_tx" and op.bytes}
    if len(counts) > 1:
        raise plan_error(f"{field}.async.protocol", f"the protocol arms stages with different byte counts "
                         f"{sorted(counts)}")
    return counts.pop() if counts else None


def _buffers(raw: PieceOut) -> dict[str, int]:
    """Buffer name -> count of the plan's protocol (in0: the stages; out: store buffers)."""
    return {b.name: b.count for b in raw.async_.protocol.buffers} if raw.async_ else {}


def gluon_kernel(name: str, t: TmaPiece, stages: int, num_warps: int, out_buffers: int = 1) -> str:
    """Source of the persistent pipelined TMA copy of one piece."""
    perm = t.perm()
    box_bytes = t.box_bytes()
    ind2, ind3 = "        ", "            "
    lines = [f"@gluon.jit\ndef {name}(load_desc, store_desc):",
             f"    STAGES: gl.constexpr = {stages}",
             f"    stage = gl.allocate_shared_memory(load_desc.dtype, [STAGES] + {list(t.load.block)}, load_desc.layout)",
             "    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())"]
    if perm:
        lines.append(f"    outb = gl.allocate_shared_memory(store_desc.dtype, [{out_buffers}] + {list(t.store.block)}, "
                     "store_desc.layout)")
    lines += ["    for b0 in gl.static_range(STAGES):", "        mbarrier.init(bars.index(b0), count=1)",
              "    pid = gl.program_id(0)", "    nprog = gl.num_programs(0)",
              f"    mine = ({t.tiles} - pid + nprog - 1) // nprog",
              "    for p0 in gl.static_range(STAGES - 1):", "        if p0 < mine:"]
    lines += tile_lines(t, "pid + p0 * nprog", ind3)
    lines += [f"{ind3}mbarrier.expect(bars.index(p0), {box_bytes})",
              f"{ind3}tma.async_copy_global_to_shared(load_desc, {coords(t, t.src_dims)}, bars.index(p0), stage.index(p0))",
              "    for i in range(mine):", "        s = i % STAGES",
              "        mbarrier.wait(bars.index(s), (i // STAGES) & 1)"]
    lines += tile_lines(t, "pid + i * nprog", ind2)
    dst = coords(t, t.dst_dims)
    if perm:
        # 16-byte vectors along the source rows out of the stage, 16-byte vectors along the
        # destination rows into the store buffer: the permuted registers are redistributed
        # between the two by the compiler's layout conversion (a permute alone would leave
        # each thread writing one element into each of several destination rows)
        lines += [f"{ind2}x = stage.index(s).load({blocked_layout(list(t.load.block), t.word, num_warps)})",
                  *permute_lines(t, "x", ind2, "gl"),
                  f"{ind2}x = gl.convert_layout(x, {blocked_layout(list(t.store.block), t.word, num_warps)})",
                  f"{ind2}tma.store_wait({out_buffers - 1})",  # the store that last read this buffer is done
                  f"{ind2}gl.thread_barrier()",  # ... for every warp: only the issuing thread waited
                  f"{ind2}outb.index(i % {out_buffers}).store(x)", f"{ind2}fence_async_shared()",
                  f"{ind2}tma.async_copy_shared_to_global(store_desc, {dst}, outb.index(i % {out_buffers}))",
                  f"{ind2}gl.thread_barrier()"]  # every warp has read stage s before it refills
    else:
        lines += [f"{ind2}tma.async_copy_shared_to_global(store_desc, {dst}, stage.index(s))",
                  f"{ind2}tma.store_wait(1)",  # the store from the stage refilled next is done
                  f"{ind2}gl.thread_barrier()"]  # ... as every warp sees it
    lines += [f"{ind2}j = i + STAGES - 1", f"{ind2}if j < mine:", f"{ind3}sj = j % STAGES"]
    lines += tile_lines(t, "pid + j * nprog", ind3)
    lines += [f"{ind3}mbarrier.expect(bars.index(sj), {box_bytes})",
              f"{ind3}tma.async_copy_global_to_shared(load_desc, {coords(t, t.src_dims)}, bars.index(sj), stage.index(sj))",
              "    tma.store_wait(0)", "    for b1 in gl.static_range(STAGES):",
              "        mbarrier.invalidate(bars.index(b1))"]
    return "\n".join(lines) + "\n"


# the least bytes of a Gluon stage buffer: TMA lands a box at a 128-byte aligned shared-memory
# address, and the pipeline's stages lie back to back (32-byte fp64 boxes faulted with a
# misaligned address on the H100; the tl kernel, whose buffers Triton places, ran them exact)
GLUON_MIN_BOX_BYTES = 128
# a transposed box of 4- or 8-byte words needs this many along both transposed dims: Triton
# 3.6's LLVM lowering of the permute fails below it for some (fp32 [4, 8] to [4, 32] and fp64
# [2, 4] to [4, 16] boxes of a 4096 x 4096 transpose, compiled for sm90)
GLUON_MIN_PERMUTED = 8


def gluon_box(t: TmaPiece) -> bool:
    """Whether the piece's boxes have a Gluon pipeline (otherwise it runs the tl kernel): not
    1-D boxes (Triton 3.6's coalesced-encoding pass fails on them, compiled for sm90), not
    boxes under GLUON_MIN_BOX_BYTES, not thin transposed boxes of wide words
    (GLUON_MIN_PERMUTED)."""
    if len(t.load.block) < 2 or t.box_bytes() < GLUON_MIN_BOX_BYTES:
        return False
    if t.perm() is not None and t.word >= 4:
        return min(t.tile[t.src_dims[0]], t.tile[t.dst_dims[0]]) >= GLUON_MIN_PERMUTED
    return True


def emit_tma_gluon(pieces: list[tuple[int, TmaPiece, PieceOut]],
                   smem_budget: int) -> tuple[list[str], list[Launch], dict]:
    """One persistent Gluon kernel per TMA piece (its boxes `gluon_box`), with the plan's
    stages and expect-tx bytes, within the plan's shared-memory budget (per block)."""
    texts, launches, descs = [], [], {}
    for i, t, raw in pieces:
        field = f"pieces[{i}]"
        want = _expect_bytes(raw, field)
        if want is not None and want != t.box_bytes():
            raise plan_error(f"{field}.async.protocol", f"the protocol expects {want} bytes per stage but "
                             f"the load box holds {t.box_bytes()}")
        bufs = _buffers(raw)
        stages = bufs.get("in0") or raw.num_stages or (raw.smem.stages if raw.smem else 2)
        outs = max(1, bufs.get("out", 1))
        # a transpose also holds its store boxes and the register permute's layout-conversion
        # scratch (one box: compiled for sm90)
        smem = tma_pipeline_bytes(stages, t.box_bytes(), outs + 1 if t.perm() else 0)
        if smem > smem_budget:
            raise plan_error(f"{field}.num_stages", f"{stages} stages of {t.box_bytes()} bytes need {smem} bytes "
                             f"of shared memory, over the plan's budget of {smem_budget}",
                             "send the plan as the planner returned it")
        num_warps = raw.num_warps
        texts.append(gluon_kernel(f"tma_gluon_{i}", t, stages, num_warps, outs))
        descs[f"load{i}"], descs[f"store{i}"] = t.load, t.store
        launches.append(Launch(f"tma_gluon_{i}", "persistent", num_warps, (f"desc:load{i}", f"desc:store{i}"),
                               tiles=t.tiles, blocks_per_sm=max(1, min(4, smem_budget // (smem + 1024))),
                               word=t.word))
    return texts, launches, descs
