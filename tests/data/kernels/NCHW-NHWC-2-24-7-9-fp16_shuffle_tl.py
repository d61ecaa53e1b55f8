import triton
import triton.language as tl


@triton.jit
def shuffle_copy_0(src, dst):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 4)
    t2 = 0
    t1 = pid % 2
    r1 = pid // 2
    t0 = r1
    r = tl.arange(0, 4)[:, None]
    e = tl.arange(0, 256)[None, :]
    ia = t1 * 32 + e % 32
    ib = t2 * 32 + r * 8 + e // 32
    so = 0 + t0 * 1512 + ia + ib * 63
    x = tl.load(src + so, mask=(ia < 63) & (ib < 24), eviction_policy="evict_last")
    g = tl.broadcast_to((e % 8) * 32 + e // 8, (4, 256))
    y = tl.gather(x, g, axis=1)
    oa = t1 * 32 + e // 8
    ob = t2 * 32 + r * 8 + e % 8
    do = 0 + t0 * 1512 + oa * 24 + ob
    tl.store(dst + do, y, mask=(oa < 63) & (ob < 24))
