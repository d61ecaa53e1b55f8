import triton
import triton.language as tl


@triton.jit
def direct_copy_0(src, dst):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 401)
    i = pid * 128 + tl.arange(0, 128)
    i0 = i
    so = i
    do = i
    if pid < 400:
        x = tl.load(src + so, eviction_policy="evict_last")
        tl.store(dst + do, x)
    else:
        mask = i < 51212
        x = tl.load(src + so, mask=mask, eviction_policy="evict_last")
        tl.store(dst + do, x, mask=mask)


@triton.jit
def direct_copy_1(src, dst):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 1)
    i = pid * 1 + tl.arange(0, 1)
    so = 102424 + i
    do = 102424 + i
    x = tl.load(src + so, eviction_policy="evict_last")
    tl.store(dst + do, x)
