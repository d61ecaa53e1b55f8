import triton
import triton.language as tl


@triton.jit
def tma_copy_0(load_desc, store_desc):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(pid < 4)
    t1 = pid % 2
    r0 = pid // 2
    t0 = r0
    x = load_desc.load([t0 * 32, t1 * 64])
    x = tl.permute(x, [1, 0])
    store_desc.store([t1 * 64, t0 * 32], x)
