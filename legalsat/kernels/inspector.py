"""`inspector_executor`: index inspection on the GPU, then a dense executor.

Inspector, three passes over the indices (the plan's `histogram`, `prefix_sum`,
`scatter`):
- plain gathers (paged, clustered): bucket = index // rows_per_bucket; an atomic
  histogram, one program's exclusive scan, an atomic scatter of (index, position) pairs
  into bucket order. The order inside a bucket does not matter: every pair lands once.
- grouped gathers (MoE, `groups`): a *stable* counting sort of the slots by group, so the
  result equals PyTorch's `argsort(stable=True)`: per-block histograms, one program's
  scan over (group, block), and a scatter that ranks each slot inside its block.
The executor is the row gather of `direct` over the reordered entries (`gather_rows_kernel`
with positions): for paged gathers whole pages per program, for MoE the tokens grouped by
expert.
"""

from __future__ import annotations

from legalsat.kernels.direct import gather_rows_kernel
from legalsat.kernels.source import Launch
from legalsat.kernels.words import WordPiece
from legalsat.schemas.plan import GatherOut, PieceOut
from legalsat.terms.integers import cdiv, pow2_at_least

INSPECT_BLOCK = 1024
SCAN_CHUNK = 1024




def bucket_inspector(count: int, bound: int, buckets: int) -> tuple[str, list[Launch], dict]:
    """Histogram / scan / scatter of plain indices into `buckets` ascending buckets."""
    per = cdiv(bound, buckets)
    nb = cdiv(count, INSPECT_BLOCK)
    src = f'''@triton.jit
def inspect_histogram(index, hist):
    j = tl.program_id(0) * {INSPECT_BLOCK} + tl.arange(0, {INSPECT_BLOCK})
    m = j < {count}
    idx = tl.load(index + j, mask=m, other=0).to(tl.int64)
    b = tl.minimum(tl.maximum(idx, 0) // {per}, {buckets - 1}).to(tl.int32)
    tl.atomic_add(hist + b, 1, mask=m)


@triton.jit
def inspect_prefix_sum(hist, start):
    carry = tl.zeros((), dtype=tl.int32)
    for c in range(0, {buckets}, {SCAN_CHUNK}):
        k = c + tl.arange(0, {SCAN_CHUNK})
        h = tl.load(hist + k, mask=k < {buckets}, other=0)
        incl = tl.cumsum(h, 0)
        tl.store(start + k, carry + incl - h, mask=k < {buckets})
        carry += tl.sum(h, 0)


@triton.jit
def inspect_scatter(index, start, sorted_index, sorted_pos):
    j = tl.program_id(0) * {INSPECT_BLOCK} + tl.arange(0, {INSPECT_BLOCK})
    m = j < {count}
    idx = tl.load(index + j, mask=m, other=0)
    b = tl.minimum(tl.maximum(idx.to(tl.int64), 0) // {per}, {buckets - 1}).to(tl.int32)
    pos = tl.atomic_add(start + b, 1, mask=m)
    tl.store(sorted_index + pos, idx.to(tl.int64), mask=m)
    tl.store(sorted_pos + pos, j, mask=m)
'''
    launches = [Launch("inspect_histogram", nb, 4, ("index", "buf:hist"), zero=("hist",)),
                Launch("inspect_prefix_sum", 1, 4, ("buf:hist", "buf:start")),
                Launch("inspect_scatter", nb, 4, ("index", "buf:start", "buf:sorted_index", "buf:sorted_pos"))]
    buffers = {"hist": ("int32", buckets), "start": ("int32", buckets),
               "sorted_index": ("int64", count), "sorted_pos": ("int32", count)}
    return src, launches, buffers


def group_block(count: int) -> int:
    """Slots per inspector block of a grouped gather: at most 1024 blocks to scan."""
    return max(256, pow2_at_least(cdiv(count, 1024)))


def group_inspector(count: int, groups: int) -> tuple[str, list[Launch], dict]:
    """Stable counting sort of `count` slots by their group (0 <= group < groups)."""
    block = group_block(count)
    nb = cdiv(count, block)
    gp, nbp = pow2_at_least(groups), pow2_at_least(nb)
    src = f'''@triton.jit
def inspect_group_histogram(group, block_hist):
    b = tl.program_id(0)
    j = b * {block} + tl.arange(0, {block})
    g = tl.load(group + j, mask=j < {count}, other={gp}).to(tl.int32)
    onehot = (g[:, None] == tl.arange(0, {gp})[None, :]).to(tl.int32)
    tl.store(block_hist + b * {gp} + tl.arange(0, {gp}), tl.sum(onehot, 0))


@triton.jit
def inspect_group_prefix_sum(block_hist, block_start, offsets):
    blk = tl.arange(0, {nbp})[:, None]
    grp = tl.arange(0, {gp})[None, :]
    h = tl.load(block_hist + blk * {gp} + grp, mask=blk < {nb}, other=0)
    per_group = tl.sum(h, 0)
    group_start = tl.cumsum(per_group, 0) - per_group
    within = tl.cumsum(h, 0) - h
    tl.store(block_start + blk * {gp} + grp, group_start[None, :] + within, mask=blk < {nb})
    k = tl.arange(0, {gp})
    tl.store(offsets + k, group_start, mask=k < {groups})
    tl.store(offsets + {groups}, tl.sum(per_group, 0))


@triton.jit
def inspect_group_scatter(group, index, block_start, order, sorted_index):
    b = tl.program_id(0)
    j = b * {block} + tl.arange(0, {block})
    m = j < {count}
    g = tl.load(group + j, mask=m, other={gp}).to(tl.int32)
    onehot = (g[:, None] == tl.arange(0, {gp})[None, :]).to(tl.int32)
    rank = tl.sum((tl.cumsum(onehot, 0) - onehot) * onehot, 1)
    base = tl.load(block_start + b * {gp} + g, mask=m, other=0)
    pos = base + rank
    tl.store(order + pos, j, mask=m)
    tl.store(sorted_index + pos, tl.load(index + j, mask=m, other=0).to(tl.int64), mask=m)
'''
    launches = [Launch("inspect_group_histogram", nb, 4, ("group", "buf:block_hist")),
                Launch("inspect_group_prefix_sum", 1, 8, ("buf:block_hist", "buf:block_start", "buf:offsets")),
                Launch("inspect_group_scatter", nb, 8,
                       ("group", "index", "buf:block_start", "buf:order", "buf:sorted_index"))]
    buffers = {"block_hist": ("int32", nb * gp), "block_start": ("int32", nb * gp),
               "offsets": ("int32", groups + 1), "order": ("int32", count), "sorted_index": ("int64", count)}
    return src, launches, buffers


def emit_inspector_executor(pieces: list[tuple[int, WordPiece, PieceOut]], gather: GatherOut,
                            num_warps: int) -> tuple[list[str], list[Launch], dict]:
    """Inspector passes, then one executor kernel per slab piece."""
    count, bound = gather.index_count, gather.index_bound
    groups = gather.groups
    if groups:
        text, launches, buffers = group_inspector(count, groups)
    else:
        buckets = max(1, min(gather.inspector.buckets if gather.inspector else 1, bound))
        text, launches, buffers = bucket_inspector(count, bound, buckets)
    texts = [text]
    rows = gather.executor.tile_rows if gather.executor else gather.rows_per_program
    for i, p, _ in pieces:
        name = f"execute_rows_{i}"
        # plain gathers: entries in bucket order, each written to its own output row;
        # grouped: the output itself is in group order
        texts.append(gather_rows_kernel(name, p, rows, count, bound, gather.src_index_stride_bytes // p.word,
                                        gather.out_index_stride_bytes // p.word,
                                        positions=None if groups else "sorted_pos"))
        args = ("src", "buf:sorted_index", "out") if groups else ("src", "buf:sorted_index", "buf:sorted_pos", "out")
        launches.append(Launch(name, cdiv(count, rows), num_warps, args, word=p.word))
    return texts, launches, buffers
