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
from legalsat.kernels.words import WordPiece, index_strides
from legalsat.schemas.plan import GatherOut, PieceOut
from legalsat.terms.integers import cdiv, pow2_at_least
from legalsat.terms.smem import INSPECTOR_BUCKET_SCAN, INSPECTOR_STEP_ELEMENTS

INSPECT_BLOCK = 1024
COLUMN_SLICE = 16  # groups one column-scan program takes


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
    for c in range(0, {buckets}, {INSPECTOR_BUCKET_SCAN}):
        k = c + tl.arange(0, {INSPECTOR_BUCKET_SCAN})
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
    """Slots per block of a grouped gather (what one program sorts): 256 to 1024."""
    return min(1024, max(256, pow2_at_least(cdiv(count, 1024))))


def group_chunk(groups: int, rows: int, elems: int) -> int:
    """Rows (blocks) one step of the column scan takes: the step's tile, rows x its groups
    (int32; its scan is what takes shared memory), holds at most `elems` elements, so the
    passes' shared memory does not grow with the gather."""
    return max(1, min(pow2_at_least(rows), elems // pow2_at_least(groups)))


def group_inspector(count: int, groups: int, step_elements: int) -> tuple[str, list[Launch], dict]:
    """Stable counting sort of `count` slots by their group (0 <= group < groups):
    - histogram: per block of slots, its groups' counts and their exclusive prefix sum;
    - column scan: per slice of groups, each block's exclusive count over the blocks before
      it, in steps of `group_chunk` blocks, and each group's total (groups in parallel);
    - offsets: where each group starts (an exclusive scan of the totals);
    - scatter: each block sorts its slots by (group, slot) and writes slot s of the sorted
      block to offsets[g] + (blocks before, group g) + (s - block's slots of groups < g)."""
    block = group_block(count)
    nb = cdiv(count, block)
    gp = pow2_at_least(groups)
    cols = min(gp, COLUMN_SLICE)
    bstep = group_chunk(cols, nb, step_elements)
    src = f'''@triton.jit
def inspect_group_histogram(group, block_hist, block_below):
    b = tl.program_id(0)
    j = b * {block} + tl.arange(0, {block})
    g = tl.load(group + j, mask=j < {count}, other=0).to(tl.int32)
    h = tl.histogram(g, {gp}, mask=j < {count})
    k = b * {gp} + tl.arange(0, {gp})
    tl.store(block_hist + k, h)
    tl.store(block_below + k, tl.cumsum(h, 0) - h)


@triton.jit
def inspect_group_column_scan(block_hist, block_before, totals):
    grp = tl.program_id(0) * {cols} + tl.arange(0, {cols})[None, :]
    carry = tl.zeros(({cols},), dtype=tl.int32)
    for c in range(0, {nb}, {bstep}):
        blk = c + tl.arange(0, {bstep})[:, None]
        h = tl.load(block_hist + blk * {gp} + grp, mask=blk < {nb}, other=0)
        tl.store(block_before + blk * {gp} + grp, carry[None, :] + tl.cumsum(h, 0) - h, mask=blk < {nb})
        carry += tl.sum(h, 0)
    tl.store(totals + tl.program_id(0) * {cols} + tl.arange(0, {cols}), carry)


@triton.jit
def inspect_group_offsets(totals, offsets):
    k = tl.arange(0, {gp})
    t = tl.load(totals + k)
    tl.store(offsets + k, tl.cumsum(t, 0) - t, mask=k < {groups})
    tl.store(offsets + {groups}, tl.sum(t, 0))


@triton.jit
def inspect_group_scatter(group, index, offsets, block_before, block_below, order, sorted_index):
    b = tl.program_id(0)
    j = b * {block} + tl.arange(0, {block})
    g = tl.load(group + j, mask=j < {count}, other={gp}).to(tl.int32)
    key = tl.sort(g * {block} + tl.arange(0, {block}))
    gs = key // {block}
    m = gs < {gp}
    js = b * {block} + key % {block}
    at = b * {gp} + gs
    pos = (tl.load(offsets + gs, mask=m, other=0) + tl.load(block_before + at, mask=m, other=0)
           + tl.arange(0, {block}) - tl.load(block_below + at, mask=m, other=0))
    tl.store(order + pos, js, mask=m)
    tl.store(sorted_index + pos, tl.load(index + js, mask=m, other=0).to(tl.int64), mask=m)
'''
    launches = [Launch("inspect_group_histogram", nb, 4, ("group", "buf:block_hist", "buf:block_below")),
                Launch("inspect_group_column_scan", gp // cols, 4, ("buf:block_hist", "buf:block_before", "buf:totals")),
                Launch("inspect_group_offsets", 1, 4, ("buf:totals", "buf:offsets")),
                Launch("inspect_group_scatter", nb, 4,
                       ("group", "index", "buf:offsets", "buf:block_before", "buf:block_below", "buf:order",
                        "buf:sorted_index"))]
    buffers = {"block_hist": ("int32", nb * gp), "block_before": ("int32", nb * gp), "block_below": ("int32", nb * gp),
               "totals": ("int32", gp), "offsets": ("int32", groups + 1), "order": ("int32", count),
               "sorted_index": ("int64", count)}
    return src, launches, buffers


def emit_inspector_executor(pieces: list[tuple[int, WordPiece, PieceOut]], gather: GatherOut,
                            num_warps: int) -> tuple[list[str], list[Launch], dict]:
    """Inspector passes, then one executor kernel per slab piece."""
    count, bound = gather.index_count, gather.index_bound
    groups = gather.groups
    if groups:
        # plans made before the planner sized the step use the largest
        step = (gather.inspector and gather.inspector.step_elements) or INSPECTOR_STEP_ELEMENTS
        text, launches, buffers = group_inspector(count, groups, step)
    else:
        buckets = max(1, min(gather.inspector.buckets if gather.inspector else 1, bound))
        text, launches, buffers = bucket_inspector(count, bound, buckets)
    texts = [text]
    rows = gather.executor.tile_rows if gather.executor else gather.rows_per_program
    for i, p, _ in pieces:
        name = f"execute_rows_{i}"
        # plain gathers: entries in bucket order, each written to its own output row;
        # grouped: the output itself is in group order
        texts.append(gather_rows_kernel(name, p, rows, count, bound, *index_strides(gather, p, i),
                                        positions=None if groups else "sorted_pos"))
        args = ("src", "buf:sorted_index", "out") if groups else ("src", "buf:sorted_index", "buf:sorted_pos", "out")
        launches.append(Launch(name, cdiv(count, rows), num_warps, args, word=p.word))
    return texts, launches, buffers
