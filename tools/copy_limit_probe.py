"""The copy limit itself: what `copy_` (the CUDA driver's device-to-device copy) launches, read
by Nsight Compute next to legalsat's flat direct copy of the same bytes, and flat Triton copies
of other shapes (words a program, warps, programs looping over blocks) timed against both.

    python -m tools.copy_limit_probe        # GPU: $OUT/copy_limit_probe.json, $OUT/copy_limit_ncu.csv,
                                            # a table last
    python -m tools.copy_limit_probe once   # each kernel launched once (what ncu reads)

The moved bytes are BSHD->BHSD's (2 x 268 MB), in int64 words (16-byte vectors two words).
Every kernel's output is compared bit for bit with the source before it is timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WORDS = 1 << 25  # int64 words a side: 268,435,456 bytes
BLOCKS = (512, 1024, 2048, 4096, 8192)  # int64 words a program
WARPS = (4, 8, 16)
PER_SM = (2, 4, 8, 16)  # persistent programs a multiprocessor
METRICS = ("launch__grid_size,launch__block_size,launch__registers_per_thread,launch__waves_per_multiprocessor,"
           "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,"
           "dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active")


def kernels(src, dst) -> dict:
    """label -> a function copying src into dst (int64 tensors of `WORDS`)."""
    import torch
    import triton
    import triton.language as tl

    from legalsat.clients.triton import build_kernel
    from tools.sweep import contiguous_copy

    @triton.jit
    def flat(src, dst, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + i, tl.load(src + i))

    @triton.jit
    def looping(src, dst, blocks, BLOCK: tl.constexpr):
        for b in range(tl.program_id(0), blocks, tl.num_programs(0)):
            i = b * BLOCK + tl.arange(0, BLOCK)
            tl.store(dst + i, tl.load(src + i))

    sms = torch.cuda.get_device_properties(src.device).multi_processor_count
    out = {"copy_": lambda: dst.copy_(src)}
    cc, inp = contiguous_copy("BSHD→BHSD 8×32×4096×128 bf16", src.device, seed=1)
    emitted = build_kernel(cc)
    # the emitted kernel on this probe's buffers, viewed as the benchmark's tensors of the same bytes
    dtype, shape = inp.src.dtype, tuple(inp.src.shape)
    del inp
    sv, dv = src.view(dtype).view(shape), dst.view(dtype).view(shape)
    out["emitted"] = lambda: emitted(sv, dv)
    for block in BLOCKS:
        for warps in WARPS:
            out[f"flat {block} words, {warps} warps"] = \
                lambda b=block, w=warps: flat[(WORDS // b,)](src, dst, BLOCK=b, num_warps=w)
    for per in PER_SM:
        out[f"looping 1024 words, 8 warps, {per} a SM"] = \
            lambda p=per: looping[(sms * p,)](src, dst, WORDS // 1024, BLOCK=1024, num_warps=8)
    return out


def buffers():
    import torch

    src = torch.randint(-2**62, 2**62, (WORDS,), dtype=torch.int64, device="cuda")
    return src, torch.empty_like(src)


def once() -> None:
    """Each kernel twice (the first launch compiles; ncu reads both)."""
    import torch

    src, dst = buffers()
    fns = kernels(src, dst)
    for _ in range(2):
        for fn in fns.values():
            fn()
        torch.cuda.synchronize()


def main() -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import timed_both_ways

    out = Path(os.environ.get("OUT", "."))
    src, dst = buffers()
    fns = kernels(src, dst)
    labels, timed = [], []
    for label, fn in fns.items():
        dst.zero_()
        fn()
        if not torch.equal(dst, src):
            print(f"{label}: NOT bit-exact")
            continue
        labels.append(label)
        timed.append(fn)
    eager, graph = timed_both_ways(timed)
    rows = [{"kernel": k, "us": round(e * 1e3, 2), "graph_us": round(g * 1e3, 2),
             "of_copy": round(eager[0] / e, 4), "graph_of_copy": round(graph[0] / g, 4)}
            for k, e, g in zip(labels, eager, graph)]
    del src, dst, fns, timed
    torch.cuda.empty_cache()
    ncu = subprocess.run(["ncu", "--clock-control", "none", "--csv", "--metrics", METRICS,
                          sys.executable, "-m", "tools.copy_limit_probe", "once"],
                         capture_output=True, text=True)
    (out / "copy_limit_ncu.csv").write_text(ncu.stdout + ncu.stderr[-4000:])
    result = {"env": gpu_environment(torch.device("cuda")), "bytes_moved": 2 * WORDS * 8, "rows": rows,
              "ncu_returncode": ncu.returncode}
    (out / "copy_limit_probe.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"{'kernel':44s} {'us':>8s} {'graph us':>9s} {'of copy_':>9s}")
    for r in rows:
        print(f"{r['kernel']:44s} {r['us']:8.2f} {r['graph_us']:9.2f} {r['of_copy']:6.3f} / {r['graph_of_copy']:.3f}")


if __name__ == "__main__":
    once() if sys.argv[1:] == ["once"] else main()
