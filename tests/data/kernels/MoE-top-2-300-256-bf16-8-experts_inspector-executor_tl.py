import triton
import triton.language as tl


@triton.jit
def inspect_group_histogram(group, block_hist):
    b = tl.program_id(0)
    j = b * 256 + tl.arange(0, 256)
    g = tl.load(group + j, mask=j < 600, other=8).to(tl.int32)
    onehot = (g[:, None] == tl.arange(0, 8)[None, :]).to(tl.int32)
    tl.store(block_hist + b * 8 + tl.arange(0, 8), tl.sum(onehot, 0))


@triton.jit
def inspect_group_prefix_sum(block_hist, block_start, offsets):
    blk = tl.arange(0, 4)[:, None]
    grp = tl.arange(0, 8)[None, :]
    h = tl.load(block_hist + blk * 8 + grp, mask=blk < 3, other=0)
    per_group = tl.sum(h, 0)
    group_start = tl.cumsum(per_group, 0) - per_group
    within = tl.cumsum(h, 0) - h
    tl.store(block_start + blk * 8 + grp, group_start[None, :] + within, mask=blk < 3)
    k = tl.arange(0, 8)
    tl.store(offsets + k, group_start, mask=k < 8)
    tl.store(offsets + 8, tl.sum(per_group, 0))


@triton.jit
def inspect_group_scatter(group, index, block_start, order, sorted_index):
    b = tl.program_id(0)
    j = b * 256 + tl.arange(0, 256)
    m = j < 600
    g = tl.load(group + j, mask=m, other=8).to(tl.int32)
    onehot = (g[:, None] == tl.arange(0, 8)[None, :]).to(tl.int32)
    rank = tl.sum((tl.cumsum(onehot, 0) - onehot) * onehot, 1)
    base = tl.load(block_start + b * 8 + g, mask=m, other=0)
    pos = base + rank
    tl.store(order + pos, j, mask=m)
    tl.store(sorted_index + pos, tl.load(index + j, mask=m, other=0).to(tl.int64), mask=m)


@triton.jit
def execute_rows_0(src, index, out):
    pid = tl.program_id(0).to(tl.int64)
    k = pid * 64 + tl.arange(0, 64)
    e = tl.arange(0, 64)
    ss = e
    sd = e
    idx = tl.load(index + k, mask=k < 600, other=0).to(tl.int64)
    j = k
    ok = (idx >= 0) & (idx < 300) & (k < 600)
    so = idx[:, None] * 64 + ss[None, :]
    do = j[:, None] * 64 + sd[None, :]
    mask = ok[:, None]
    x = tl.load(src + so, mask=mask)
    tl.store(out + do, x, mask=mask)
