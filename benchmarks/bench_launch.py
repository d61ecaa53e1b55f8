"""Host time per call of a plan's kernel: what a small movement pays before the GPU starts.

    python -m benchmarks.bench_launch      # GPU: prints the table, writes $OUT/launch_results.json

For the small workloads of benchmarks/kernel_plans.json (at most 20 MB moved), the first plan's
kernel is called back to back without synchronizing and the host time per call is taken: the
client's call (argument checks, word views, launch), its kernel launched through Triton's JIT
with the same arguments (the launch alone), and PyTorch's eager op. Each figure is the median
of 5 runs of 300 calls.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMALL_BYTES = 20 << 20
CALLS, RUNS = 300, 5


def host_us(fn) -> float:
    """Median over RUNS of the host time per call of CALLS back-to-back calls, in us."""
    import torch

    fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(RUNS):
        t = time.perf_counter()
        for _ in range(CALLS):
            fn()
        runs.append((time.perf_counter() - t) / CALLS * 1e6)
        torch.cuda.synchronize()
    return statistics.median(runs)


def measure(name: str, entry: dict, dev) -> dict | None:
    """The row of one workload (None when its first plan has a launch with other arguments
    than the movement's tensors)."""
    import torch

    from legalsat.clients.triton import aligned_words, build_kernel
    from legalsat.testing.torch_reference import make_inputs, reference

    resp = entry["response"]
    inp = make_inputs(resp, entry["workload"], dev, torch.Generator(device=dev).manual_seed(1))
    k = build_kernel(resp)
    ln = k.emitted.launches[0]
    named = {"src": inp.src, "dst": inp.dst, "out": inp.out, "index": inp.index}
    shifted = {"src:aligned": 0, "src:skew": 1}  # a shifted copy's source: aligned_words of its word view
    if not set(ln.args) <= set(named) | set(shifted):
        return None
    k(inp.src, inp.dst) if inp.kind == "copy" else k(inp.src, inp.index, inp.out)  # compiles
    fn = getattr(k.module, ln.kernel)
    args = [aligned_words(k._words("src", inp.src, ln.word))[shifted[a]] if a in shifted
            else k._words(a, named[a], ln.word) if a != "index" else inp.index for a in ln.args]
    return {"name": name, "strategy": resp["plans"][0]["strategy"], "launches": len(k.emitted.launches),
            "client_us": host_us(lambda: inp.call(k, check=False)),
            "jit_launch_us": host_us(lambda: fn[(ln.grid,)](*args, num_warps=ln.num_warps)),
            "torch_eager_us": host_us(lambda: reference(inp))}


def main() -> None:
    import torch

    from benchmarks.environment import gpu_environment

    dev = torch.device("cuda")
    rows = []
    for name, entry in json.loads((HERE / "kernel_plans.json").read_text()).items():
        if entry["response"]["plans"][0]["cost"]["bytes_moved"] <= SMALL_BYTES:
            row = measure(name, entry, dev)
            if row:
                rows.append(row)
                print(json.dumps(row), flush=True)
    out = Path(os.environ.get("OUT") or HERE)
    (out / "launch_results.json").write_text(json.dumps({"env": gpu_environment(dev), "rows": rows}, indent=1) + "\n")
    print(f"{'workload':44s} {'client':>8s} {'launch':>8s} {'eager':>8s}  (host us per call)")
    for r in rows:
        print(f"{r['name'][:44]:44s} {r['client_us']:8.1f} {r['jit_launch_us']:8.1f} {r['torch_eager_us']:8.1f}")


if __name__ == "__main__":
    main()
