import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma


@gluon.jit
def tma_gluon_0(load_desc, store_desc):
    STAGES: gl.constexpr = 4
    stage = gl.allocate_shared_memory(load_desc.dtype, [STAGES] + [32, 64], load_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    outb = gl.allocate_shared_memory(store_desc.dtype, [1] + [64, 32], store_desc.layout)
    for b0 in gl.static_range(STAGES):
        mbarrier.init(bars.index(b0), count=1)
    pid = gl.program_id(0)
    nprog = gl.num_programs(0)
    mine = (4 - pid + nprog - 1) // nprog
    for p0 in gl.static_range(STAGES - 1):
        if p0 < mine:
            t1 = (pid + p0 * nprog) % 2
            r0 = (pid + p0 * nprog) // 2
            t0 = r0
            mbarrier.expect(bars.index(p0), 4096)
            tma.async_copy_global_to_shared(load_desc, [t0 * 32, t1 * 64], bars.index(p0), stage.index(p0))
    for i in range(mine):
        s = i % STAGES
        mbarrier.wait(bars.index(s), (i // STAGES) & 1)
        t1 = (pid + i * nprog) % 2
        r0 = (pid + i * nprog) // 2
        t0 = r0
        x = stage.index(s).load(gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0]))
        x = gl.permute(x, [1, 0])
        x = gl.convert_layout(x, gl.BlockedLayout([1, 8], [8, 4], [4, 1], [1, 0]))
        tma.store_wait(0)
        gl.thread_barrier()
        outb.index(i % 1).store(x)
        fence_async_shared()
        tma.async_copy_shared_to_global(store_desc, [t1 * 64, t0 * 32], outb.index(i % 1))
        gl.thread_barrier()
        j = i + STAGES - 1
        if j < mine:
            sj = j % STAGES
            t1 = (pid + j * nprog) % 2
            r0 = (pid + j * nprog) // 2
            t0 = r0
            mbarrier.expect(bars.index(sj), 4096)
            tma.async_copy_global_to_shared(load_desc, [t0 * 32, t1 * 64], bars.index(sj), stage.index(sj))
    tma.store_wait(0)
    for b1 in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(b1))
