import triton
import triton.language as tl


@triton.jit
def staged_copy_0(src, dst):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 60)
    t1 = pid % 6
    r0 = pid // 6
    t0 = r0
    a0 = t0 * 64 + tl.arange(0, 64)
    a1 = t1 * 16 + tl.arange(0, 16)
    so = a0[:, None] * 96 + a1[None, :]
    do = a0[:, None] + a1[None, :] * 601
    mask = (a0[:, None] < 601)
    if (t0 < 9):
        x = tl.load(src + so, eviction_policy="evict_last")
        tl.store(dst + do, x)
    else:
        x = tl.load(src + so, mask=mask, eviction_policy="evict_last")
        tl.store(dst + do, x, mask=mask)
