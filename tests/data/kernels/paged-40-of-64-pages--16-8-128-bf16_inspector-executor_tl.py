import triton
import triton.language as tl


@triton.jit
def inspect_histogram(index, hist):
    j = tl.program_id(0) * 1024 + tl.arange(0, 1024)
    m = j < 40
    idx = tl.load(index + j, mask=m, other=0).to(tl.int64)
    b = tl.minimum(tl.maximum(idx, 0) // 1, 63).to(tl.int32)
    tl.atomic_add(hist + b, 1, mask=m)


@triton.jit
def inspect_prefix_sum(hist, start):
    carry = tl.zeros((), dtype=tl.int32)
    for c in range(0, 64, 1024):
        k = c + tl.arange(0, 1024)
        h = tl.load(hist + k, mask=k < 64, other=0)
        incl = tl.cumsum(h, 0)
        tl.store(start + k, carry + incl - h, mask=k < 64)
        carry += tl.sum(h, 0)


@triton.jit
def inspect_scatter(index, start, sorted_index, sorted_pos):
    j = tl.program_id(0) * 1024 + tl.arange(0, 1024)
    m = j < 40
    idx = tl.load(index + j, mask=m, other=0)
    b = tl.minimum(tl.maximum(idx.to(tl.int64), 0) // 1, 63).to(tl.int32)
    pos = tl.atomic_add(start + b, 1, mask=m)
    tl.store(sorted_index + pos, idx.to(tl.int64), mask=m)
    tl.store(sorted_pos + pos, j, mask=m)


@triton.jit
def execute_rows_0(src, index, sorted_pos, out):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 40)
    k = pid * 1 + tl.arange(0, 1)
    iv = tl.load(index + k)
    ok = (iv >= 0) & (iv < 64)
    idx = iv.to(tl.int32)
    j = tl.load(sorted_pos + k).to(tl.int32)
    e = tl.arange(0, 4096)
    ss = e
    sd = e
    mask = ok[:, None]
    x = tl.load(src + idx[:, None] * 4096 + ss[None, :], mask=mask, eviction_policy="evict_last")
    tl.store(out + j[:, None] * 4096 + sd[None, :], x, mask=mask)
