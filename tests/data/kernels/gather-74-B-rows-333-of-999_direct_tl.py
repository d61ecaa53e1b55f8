import triton
import triton.language as tl


@triton.jit
def gather_rows_0(src, index, out):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 6)
    k = pid * 64 + tl.arange(0, 64)
    iv = tl.load(index + k, mask=k < 333, other=0)
    ok = (iv >= 0) & (iv < 999) & (k < 333)
    idx = iv.to(tl.int32)
    j = k
    e = tl.arange(0, 64)
    ss = e
    sd = e
    mask = ok[:, None] & (e < 37)[None, :]
    x = tl.load(src + idx[:, None] * 37 + ss[None, :], mask=mask, eviction_policy="evict_last")
    tl.store(out + j[:, None] * 37 + sd[None, :], x, mask=mask)
