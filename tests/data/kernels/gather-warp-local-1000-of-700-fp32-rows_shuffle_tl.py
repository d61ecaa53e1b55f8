import triton
import triton.language as tl


@triton.jit
def gather_window_0(src, index, out):
    pid = tl.program_id(0).to(tl.int64)
    tl.assume(pid >= 0)
    tl.assume(pid < 8)
    r = tl.arange(0, 32)
    for w in tl.static_range(4):
        k = pid * 128 + w * 32 + r
        idx = tl.load(index + k, mask=k < 1000, other=0).to(tl.int64)
        ok = (k < 1000) & (idx >= 0) & (idx < 700)
        w0 = tl.min(tl.where(ok, idx, 700), 0)
        w0 = tl.maximum(tl.minimum(w0, 668), 0)
        wr = w0 + r
        rel = idx - w0
        inside = ok & (rel >= 0) & (rel < 32)
        g1 = tl.where(inside, rel, 0).to(tl.int32)
        e = tl.arange(0, 32)
        ss = e
        sd = e
        win = tl.load(src + wr[:, None] * 20 + ss[None, :], mask=(wr < 700)[:, None] & (e < 20)[None, :], eviction_policy="evict_last")
        x = tl.gather(win, tl.broadcast_to(g1[:, None], win.shape), axis=0)
        far = tl.load(src + idx[:, None] * 20 + ss[None, :], mask=(ok & ~inside)[:, None] & (e < 20)[None, :], eviction_policy="evict_last")
        x = tl.where(inside[:, None], x, far)
        tl.store(out + k[:, None] * 20 + sd[None, :], x, mask=ok[:, None] & (e < 20)[None, :])
