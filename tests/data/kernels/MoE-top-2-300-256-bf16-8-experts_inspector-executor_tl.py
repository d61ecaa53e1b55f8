import triton
import triton.language as tl


@triton.jit
def inspect_group_histogram(group, block_hist, block_below):
    b = tl.program_id(0)
    tl.assume(b >= 0)
    tl.assume(b < 3)
    j = b * 256 + tl.arange(0, 256)
    g = tl.load(group + j, mask=j < 600, other=0).to(tl.int32)
    h = tl.histogram(g, 8, mask=j < 600)
    k = b * 8 + tl.arange(0, 8)
    tl.store(block_hist + k, h)
    tl.store(block_below + k, tl.cumsum(h, 0) - h)


@triton.jit
def inspect_group_column_scan(block_hist, block_before, totals):
    grp = tl.program_id(0) * 8 + tl.arange(0, 8)[None, :]
    carry = tl.zeros((8,), dtype=tl.int32)
    for c in range(0, 3, 4):
        blk = c + tl.arange(0, 4)[:, None]
        h = tl.load(block_hist + blk * 8 + grp, mask=blk < 3, other=0)
        tl.store(block_before + blk * 8 + grp, carry[None, :] + tl.cumsum(h, 0) - h, mask=blk < 3)
        carry += tl.sum(h, 0)
    tl.store(totals + tl.program_id(0) * 8 + tl.arange(0, 8), carry)


@triton.jit
def inspect_group_offsets(totals, offsets):
    k = tl.arange(0, 8)
    t = tl.load(totals + k)
    tl.store(offsets + k, tl.cumsum(t, 0) - t, mask=k < 8)
    tl.store(offsets + 8, tl.sum(t, 0))


@triton.jit
def inspect_group_scatter(group, index, offsets, block_before, block_below, order, sorted_index):
    b = tl.program_id(0)
    tl.assume(b >= 0)
    tl.assume(b < 3)
    j = b * 256 + tl.arange(0, 256)
    g = tl.load(group + j, mask=j < 600, other=8).to(tl.int32)
    key = tl.sort(g * 256 + tl.arange(0, 256))
    gs = key // 256
    m = gs < 8
    js = b * 256 + key % 256
    at = b * 8 + gs
    pos = (tl.load(offsets + gs, mask=m, other=0) + tl.load(block_before + at, mask=m, other=0)
           + tl.arange(0, 256) - tl.load(block_below + at, mask=m, other=0))
    tl.store(order + pos, js, mask=m)
    tl.store(sorted_index + pos, tl.load(index + js, mask=m, other=0).to(tl.int64), mask=m)


@triton.jit
def execute_rows_0(src, index, out):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 10)
    k = pid * 64 + tl.arange(0, 64)
    iv = tl.load(index + k, mask=k < 600, other=0)
    ok = (iv >= 0) & (iv < 300) & (k < 600)
    idx = iv.to(tl.int32)
    j = k
    e = tl.arange(0, 64)
    ss = e
    sd = e
    mask = ok[:, None]
    x = tl.load(src + idx[:, None] * 64 + ss[None, :], mask=mask, eviction_policy="evict_last")
    tl.store(out + j[:, None] * 64 + sd[None, :], x, mask=mask)
