import triton
import triton.language as tl


@triton.jit
def staged_copy_0(src, dst):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 1)
    t1 = 0
    t0 = pid
    a0 = t0 * 64 + tl.arange(0, 64)
    a1 = t1 * 128 + tl.arange(0, 128)
    so = a0[:, None] * 72 + a1[None, :]
    do = a0[:, None] + a1[None, :] * 40
    mask = (a0[:, None] < 40) & (a1[None, :] < 72)
    x = tl.load(src + so, mask=mask, eviction_policy="evict_last")
    tl.store(dst + do, x, mask=mask)
