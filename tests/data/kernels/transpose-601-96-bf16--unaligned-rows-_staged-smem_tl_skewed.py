import triton
import triton.language as tl


@triton.jit
def staged_copy_0(src, dst):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 13)
    t0 = pid % 13
    r0 = pid // 13
    t1 = r0
    b0 = t0 * 48
    ai = t1 * 128 + tl.arange(0, 128)
    j = tl.arange(0, 64)
    bj = b0 - 16 + j
    so = 0 + bj[:, None] * 96 + ai[None, :]
    row = 0 + ai * 601
    skew = row % 16
    idx = tl.minimum(j[:, None] + 16 - skew[None, :], 63)
    do = (row // 16 * 16)[None, :] + b0 + j[:, None]
    if (t0 >= 1) & (t0 <= 11):
        x = tl.load(src + so, mask=(ai < 96)[None, :], eviction_policy="evict_last")
        y = tl.gather(x, idx, axis=0)
        tl.store(dst + do, y, mask=(j < 48)[:, None] & (ai < 96)[None, :])
    else:
        x = tl.load(src + so, mask=((bj >= 0) & (bj < 601))[:, None] & (ai < 96)[None, :], eviction_policy="evict_last")
        y = tl.gather(x, idx, axis=0)
        bs = b0 - skew[None, :] + j[:, None]
        tl.store(dst + do, y, mask=(j < 48)[:, None] & (bs >= 0) & (bs < 601) & (ai < 96)[None, :])
