import triton
import triton.language as tl


@triton.jit
def direct_copy_0(src, dst):
    pid = tl.program_id(0)
    i = pid * 2048 + tl.arange(0, 2048)
    i0 = i
    so = i0
    do = i0
    if pid < 25:
        x = tl.load(src + so)
        tl.store(dst + do, x)
    else:
        mask = i < 51212
        x = tl.load(src + so, mask=mask)
        tl.store(dst + do, x, mask=mask)


@triton.jit
def direct_copy_1(src, dst):
    pid = tl.program_id(0)
    i = pid * 1 + tl.arange(0, 1)
    so = 102424
    do = 102424
    x = tl.load(src + so)
    tl.store(dst + do, x)
