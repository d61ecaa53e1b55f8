import triton
import triton.language as tl


@triton.jit
def shuffle_copy_0(src, dst):
    pid = tl.program_id(0)
    t1 = 0
    t0 = pid
    r = tl.arange(0, 4)[:, None]
    e = tl.arange(0, 256)[None, :]
    ia = t1 * 4 + e % 4
    ib = t0 * 256 + r * 64 + e // 4
    so = 0 + ia + ib * 4
    x = tl.load(src + so, mask=(ib < 777))
    g = tl.broadcast_to((e % 64) * 4 + e // 64, (4, 256))
    y = tl.gather(x, g, axis=1)
    oa = t1 * 4 + e // 64
    ob = t0 * 256 + r * 64 + e % 64
    do = 0 + oa * 777 + ob
    tl.store(dst + do, y, mask=(ob < 777))
