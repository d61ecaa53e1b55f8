"""A GEMM whose operand loads are legalsat's tile-load plans: C[M, N] = A[M, K] @ B[K, N].

Two kernels take the plans' descriptors (box, swizzle) and the stages that fit both operands'
stages and the C tile in the shared-memory budget:

- `gluon` (sm90): persistent, one flat loop over (tile, k-step) with the TMA loads `STAGES - 1`
  steps ahead across tile boundaries, each stage one mbarrier phase for both operands (expect-tx
  of their summed bytes), `warpgroup_mma` issued asynchronously with one group in flight (the
  stage the previous group read is the one refilled), grouped tile order for L2 reuse, and a
  TMA-store epilogue that overlaps the next tile's loads. The shared layouts are the plans':
  the descriptors' NVMMA layouts carry their swizzle, and an operand stored K-major on the
  host ([N, K] for B) is read through a permuted view, as its plan's wgmma fields say.
- `tl`: Triton's persistent descriptor matmul: host descriptors with the plans' boxes, the
  plans' stages as `num_stages`, the compiler's software pipeline. Runs in the interpreter too.

Both are fully general in M, N and K: TMA zero-fills what the last tiles overhang and clips the
stores. Pure Python here; `legalsat.clients.triton.matmul` plans, builds and launches them.
"""

from __future__ import annotations

from dataclasses import dataclass

GLUON_GEMM = '''
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)


@gluon.constexpr_function
def acc_layout(BM, BN, num_warps, bits):
    """The wgmma accumulator layout: warpgroups along M (64 rows each), the widest N that
    divides BN and fits a warpgroup's share."""
    warps = [4, 1]
    while warps[0] * warps[1] != num_warps:
        if BM > 16 * warps[0]:
            warps[0] *= 2
        else:
            warps[1] *= 2
    n = 256
    while n > max(BN // warps[1], 8) or BN % n:
        n -= 8
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=warps, instr_shape=[16, n, 256 // bits])


@gluon.jit
def tile_of(t, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    group = GROUP_M * num_pid_n
    first = (t // group) * GROUP_M
    size = gl.minimum(num_pid_m - first, GROUP_M)
    return first + (t % size), (t % group) // size


@gluon.jit
def issue(a_desc, b_desc, a_s, b_s, bars, p, pid, nprog, k_tiles, num_pid_m, num_pid_n, pred,
          B_KMAJOR: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0] if B_KMAJOR else b_desc.block_type.shape[1]
    pm, pn = tile_of(pid + (p // k_tiles) * nprog, num_pid_m, num_pid_n, GROUP_M)
    k = (p % k_tiles) * BK
    s = p % STAGES
    mbarrier.expect(bars.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_copy_global_to_shared(a_desc, [pm * BM, k], bars.index(s), a_s.index(s), pred=pred)
    if B_KMAJOR:
        tma.async_copy_global_to_shared(b_desc, [pn * BN, k], bars.index(s), b_s.index(s), pred=pred)
    else:
        tma.async_copy_global_to_shared(b_desc, [k, pn * BN], bars.index(s), b_s.index(s), pred=pred)


@gluon.jit
def gemm(a_desc, b_desc, c_desc, B_KMAJOR: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
         num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    M = c_desc.shape[0]
    N = c_desc.shape[1]
    K = a_desc.shape[1]
    pid = gl.program_id(0)
    nprog = gl.num_programs(0)
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    k_tiles = gl.cdiv(K, BK)
    total = gl.cdiv(num_pid_m * num_pid_n - pid, nprog) * k_tiles
    a_s = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_s = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_s = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for st in gl.static_range(STAGES):
        mbarrier.init(bars.index(st), count=1)
    acc_l: gl.constexpr = acc_layout(BM, BN, num_warps, a_desc.dtype.primitive_bitwidth)
    acc = gl.zeros((BM, BN), dtype=gl.float32, layout=acc_l)
    for st in gl.static_range(STAGES - 1):
        issue(a_desc, b_desc, a_s, b_s, bars, st, pid, nprog, k_tiles, num_pid_m, num_pid_n, st < total,
              B_KMAJOR, GROUP_M, STAGES)
    for c in range(total):
        ki = c % k_tiles
        s = c % STAGES
        mbarrier.wait(bars.index(s), (c // STAGES) & 1)
        if B_KMAJOR:
            b = b_s.index(s).permute([1, 0])
        else:
            b = b_s.index(s)
        acc = warpgroup_mma(a_s.index(s), b, acc, use_acc=ki != 0, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
        p = c + STAGES - 1
        issue(a_desc, b_desc, a_s, b_s, bars, p, pid, nprog, k_tiles, num_pid_m, num_pid_n, p < total,
              B_KMAJOR, GROUP_M, STAGES)
        if ki == k_tiles - 1:
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            pm, pn = tile_of(pid + (c // k_tiles) * nprog, num_pid_m, num_pid_n, GROUP_M)
            tma.store_wait(pendings=0)
            c_s.store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [pm * BM, pn * BN], c_s)
    tma.store_wait(pendings=0)
    for st in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(st))
'''

TL_GEMM = '''
import triton
import triton.language as tl


@triton.jit
def tile_of(t, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    group = GROUP_M * num_pid_n
    first = (t // group) * GROUP_M
    size = min(num_pid_m - first, GROUP_M)
    return first + (t % size), (t % group) // size


@triton.jit
def gemm(a_desc, b_desc, c_desc, M, N, K, B_KMAJOR: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
         SUBTILE: tl.constexpr):
    BM: tl.constexpr = c_desc.block_shape[0]
    BN: tl.constexpr = c_desc.block_shape[1] * (2 if SUBTILE else 1)
    BK: tl.constexpr = a_desc.block_shape[1]
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    for t in tl.range(pid, num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        pm, pn = tile_of(t, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pm * BM, ki * BK])
            if B_KMAJOR:
                b = b_desc.load([pn * BN, ki * BK]).T
            else:
                b = b_desc.load([ki * BK, pn * BN])
            acc = tl.dot(a, b, acc)
        if SUBTILE:
            acc = tl.reshape(acc, (BM, 2, BN // 2))
            acc = tl.permute(acc, (0, 2, 1))
            c0, c1 = tl.split(acc)
            c_desc.store([pm * BM, pn * BN], c0.to(c_desc.dtype))
            c_desc.store([pm * BM, pn * BN + BN // 2], c1.to(c_desc.dtype))
        else:
            c_desc.store([pm * BM, pn * BN], acc.to(c_desc.dtype))
'''


@dataclass(frozen=True)
class GemmConfig:
    """What the operand plans fix (block shapes, swizzles) and what is chosen around them
    (stages within the budget, warps, tile order, the epilogue split)."""

    bm: int
    bn: int
    bk: int
    stages: int
    num_warps: int
    a_swizzle: int
    b_swizzle: int
    c_swizzle: int
    b_kmajor: bool
    group_m: int = 8
    subtile: bool = False  # tl: store C in two halves

    def smem_bytes(self, in_bytes: int, out_bytes: int) -> int:
        return self.stages * ((self.bm + self.bn) * self.bk * in_bytes + 8) + self.bm * self.bn * out_bytes


def gemm_source(variant: str) -> str:
    """The kernel module of a GEMM variant ("gluon" or "tl")."""
    return GLUON_GEMM if variant == "gluon" else TL_GEMM
