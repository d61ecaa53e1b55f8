"""What ran before a kernel, and what that does to its time: the planned kernel and
`torch.compile` of the same op, each timed right after another operation (eagerly with
do_bench, which flushes L2 before every run, and from CUDA graphs), for workloads whose
tensors are about the size of the L2 (50 MB on the H100) and one far larger. Also the same
kernel with its tensors placed elsewhere in device memory (behind padding allocations, or in
memory the caching allocator kept from 2 GiB buffers freed before).

    python -m tools.predecessor_probe [NAME ...]   # GPU: $OUT/predecessor_probe.json, a table last
    python -m tools.predecessor_probe --carveout [NAME ...]
        # GPU: the planned kernel after the same-size copy_ with each preferred shared-memory
        # carveout (cuFuncSetAttribute, cuda-bindings): $OUT/predecessor_carveout.json

Each timing is the median of 3 (predecessor's do_bench, then the kernel's) pairs; every kernel
is run on a poisoned output and compared bit for bit with PyTorch's first.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

WORKLOADS = ["NCHW→NHWC 32×256×56×56 bf16", "NHWC→NCHW 32×56×56×256 bf16", "transpose 8192² bf16"]
CARVEOUTS = [-1, 100, 72, 58, 44, 30]  # percent of the SM's largest shared memory; -1: the driver's choice
# (label, bytes allocated and kept before the inputs, bytes allocated and freed before them)
PLACEMENTS = [("behind 2 MiB", 2 << 20, 0), ("behind 24 MiB", 24 << 20, 0), ("behind 100 MiB", 100 << 20, 0),
              ("in freed 2 x 2 GiB", 0, 2 << 30)]


def after(pred, fn) -> tuple[float, float]:
    """`fn`'s median time (ms) from CUDA graphs and eagerly, each measurement right after one
    of `pred` (None: right after `fn`'s own)."""
    from triton.testing import do_bench, do_bench_cudagraph

    graph, eager = [], []
    for _ in range(3):
        if pred is not None:
            do_bench_cudagraph(pred, return_mode="median")
        graph.append(do_bench_cudagraph(fn, return_mode="median"))
        if pred is not None:
            do_bench(pred, return_mode="median")
        eager.append(do_bench(fn, return_mode="median"))
    return sorted(graph)[1], sorted(eager)[1]


def function_handle(kernel):
    """The CUfunction of `kernel`'s (a legalsat Kernel, launched once) first launch."""
    from cuda.bindings import driver

    jit = getattr(kernel.module, kernel.emitted.launches[0].kernel)
    compiled = [k for cache in jit.device_caches.values() for k in cache[0].values()][-1]
    compiled._init_handles()
    return driver.CUfunction(compiled.function)


def carveouts(names: list[str]) -> None:
    import torch
    from cuda.bindings import driver

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import same_size_copy
    from legalsat.clients.triton import build_kernel
    from tools.sweep import exact, workloads

    dev = torch.device("cuda")
    result = {"env": gpu_environment(dev), "rows": []}
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
    for name, resp, inp, want in workloads(lambda r: r, names or WORKLOADS[:1]):
        kernel = build_kernel(resp)
        exact(name, kernel, inp, want)
        func = function_handle(kernel)
        copy_fn = same_size_copy(inp.moved_bytes, dev)
        for percent in CARVEOUTS:
            (err,) = driver.cuFuncSetAttribute(func, attr, percent)
            assert err == driver.CUresult.CUDA_SUCCESS, err
            graph, eager = after(copy_fn, lambda inp=inp, k=kernel: inp.call(k, check=False))
            row = {"workload": name, "carveout_percent": percent, "graph_us": round(graph * 1e3, 2),
                   "eager_us": round(eager * 1e3, 2)}
            result["rows"].append(row)
            print(json.dumps(row, ensure_ascii=False), flush=True)
        driver.cuFuncSetAttribute(func, attr, -1)
    out = Path(os.environ.get("OUT", "."))
    (out / "predecessor_carveout.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


def main(names: list[str]) -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import same_size_copy
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, make_inputs, reference, same_bits
    from tools.sweep import exact, planned

    out = Path(os.environ.get("OUT", "."))
    dev = torch.device("cuda")
    plans = planned()
    result = {"env": gpu_environment(dev), "rows": []}

    def inputs(entry, kept: int = 0, freed: int = 0):
        if freed:
            a, b = (torch.empty(freed, dtype=torch.uint8, device=dev) for _ in range(2))
            del a, b
        pad = torch.empty(kept, dtype=torch.uint8, device=dev) if kept else None
        inp = make_inputs(entry["response"], entry["workload"], dev, torch.Generator(device=dev).manual_seed(1234))
        return inp, pad

    def record(name: str, case: str, who: str, ms: tuple[float, float]) -> None:
        row = {"workload": name, "case": case, "kernel": who, "graph_us": round(ms[0] * 1e3, 2),
               "eager_us": round(ms[1] * 1e3, 2)}
        result["rows"].append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)

    def predecessors(name: str, entry: dict):
        inp, _ = inputs(entry)
        want = reference(inp)
        kernel = build_kernel(entry["response"])
        exact(name, kernel, inp, want)
        peer = compiled_peer(inp)
        assert same_bits(peer(), want), f"{name}: torch.compile is not bit-exact"
        n = inp.moved_bytes // 2
        a, b = torch.randint(0, 255, (n,), dtype=torch.uint8, device=dev), torch.empty(n, dtype=torch.uint8,
                                                                                       device=dev)
        sa, sb = (torch.empty(4 << 20, dtype=torch.uint8, device=dev) for _ in range(2))

        def legalsat():
            return inp.call(kernel, check=False)

        preds = {"the same-size copy_": lambda: b.copy_(a), "a 4 MiB copy_": lambda: sb.copy_(sa),
                 "an elementwise add": lambda: torch.add(a, 1, out=b), "zero_ of its size": lambda: b.zero_(),
                 "torch.compile of the op": peer, "the planned kernel": legalsat}
        for label, pred in preds.items():
            for who, fn in (("legalsat", legalsat), ("torch.compile", peer)):
                record(name, f"after {label}", who, after(pred, fn))
        return kernel

    def placed(name: str, entry: dict, kernel, label: str, kept: int, freed: int) -> None:
        inp, pad = inputs(entry, kept, freed)
        exact(name, kernel, inp, reference(inp))  # on these inputs too
        record(name, f"{label}, after the same-size copy_", "legalsat",
               after(same_size_copy(inp.moved_bytes, dev), lambda: inp.call(kernel, check=False)))

    for name in names or WORKLOADS:
        kernel = predecessors(name, plans[name])
        torch.cuda.empty_cache()
        for label, kept, freed in PLACEMENTS:  # where the tensors lie, after the same predecessor
            placed(name, plans[name], kernel, label, kept, freed)
            torch.cuda.empty_cache()
        torch._dynamo.reset()
        (out / "predecessor_probe.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print("| workload | case | kernel | graph us | eager us |\n| --- | --- | --- | ---: | ---: |")
    for r in result["rows"]:
        print(f"| {r['workload']} | {r['case']} | {r['kernel']} | {r['graph_us']:.2f} | {r['eager_us']:.2f} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    carveouts(args[1:]) if args[:1] == ["--carveout"] else main(args)
