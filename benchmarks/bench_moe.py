"""MoE routing (the grouped gather: tokens permuted into expert order) at the sizes of
today's MoE layers, against PyTorch eager and torch.compile; and every small gather case,
bit-exact, on the GPU.

    python -m benchmarks.bench_moe plan     # CPU: plan the workloads -> benchmarks/moe_plans.json
    python -m benchmarks.bench_moe run      # GPU: check + time every plan -> $OUT or benchmarks/moe_results.json

PyTorch's MoE permute is `order = argsort(expert, stable=True); rows = x[token[order]]`
(legalsat.testing.torch_reference); legalsat's kernel returns the same rows, the same order
and the experts' offsets. Every candidate plan of each workload is built (the one chosen
first and the fallbacks), checked bit for bit over a poisoned output, and timed as the
median of three `do_bench(..., return_mode="median")` runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.commands import run_command

HERE = Path(__file__).resolve().parent
PLANS = HERE / "moe_plans.json"

# (tokens, hidden, dtype, experts, top_k): Mixtral 8x7B, a 64-expert layer, and the
# fine-grained 128- and 256-expert top-8 layers (Qwen3-MoE, DeepSeek-V3 shapes)
WORKLOADS = [(16384, 4096, "bfloat16", 8, 2), (32768, 4096, "bfloat16", 64, 2), (16384, 2048, "bfloat16", 128, 8),
             (16384, 2048, "bfloat16", 256, 8), (8192, 7168, "bfloat16", 256, 8)]


def workload(tokens: int, hidden: int, dtype: str, experts: int, top_k: int) -> dict:
    from legalsat.testing.planner_suite import view

    name = f"MoE top-{top_k} {tokens}×{hidden} {dtype} {experts} experts"
    op = {"kind": "gather", "src": view(dtype, (tokens, hidden)), "axis": 0,
          "index": {"count": tokens * top_k, "distribution": "clustered", "groups": experts}}
    return {"name": name, "op": op, "torch_op": "moe_permute", "extra": {"top_k": top_k}}


# ---------------------------------------------------------------- plan (CPU, planner)
def plan() -> None:
    from legalsat.api import optimize
    from legalsat.testing.workloads import small_cases

    out = {"workloads": {}, "cases": {}}
    for spec in WORKLOADS:
        w = workload(*spec)
        out["workloads"][w["name"]] = {"workload": w, "response": optimize(
            {"request_id": w["name"], "target": "sm90", "op": w["op"], "options": {"max_plans": 5}})}
    for w in small_cases():
        if w.op["kind"] == "gather":
            out["cases"][w.name] = {"workload": w.__dict__, "response": optimize(w.request())}
    PLANS.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {PLANS}")


# ---------------------------------------------------------------- run (GPU)
def kernel_times(fn, calls: int = 20) -> dict[str, float]:
    """Mean device time (µs) per call of each kernel `fn` launches, by kernel name
    (torch.profiler over `calls` calls after a warm-up)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    out: dict[str, float] = {}
    for e in prof.key_averages():
        us = e.self_device_time_total
        if us > 0:
            out[e.key[:60]] = round(us / calls, 2)
    return out


def run(out_dir: Path) -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import METHOD, candidates
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, reference, same_bits

    dev = torch.device("cuda")
    env = gpu_environment(dev)
    print(json.dumps(env), flush=True)
    plans = json.loads(PLANS.read_text())
    results = {"env": env, "workloads": [], "cases": []}

    def permute(src, index, group):
        order = torch.argsort(group, stable=True)
        return src.index_select(0, index[order]), order

    compiled = torch.compile(permute, dynamic=False)

    def measure(name: str, entry: dict, time_it: bool) -> dict:
        resp, wl = entry["response"], entry["workload"]
        inp = make_inputs(resp, wl, dev, torch.Generator(device=dev).manual_seed(1234))
        want = reference(inp)
        row = {"name": name, "bytes": inp.moved_bytes, "candidates": []}
        peers = {}
        if time_it:  # PyTorch and torch.compile, timed in the candidates' rounds
            got = compiled(inp.src, inp.index, inp.group)
            row["compile_exact"] = same_bits(got, want)
            peers = {"torch_ms": lambda inp=inp: reference(inp),
                     "torch_compile_ms": lambda inp=inp: compiled(inp.src, inp.index, inp.group)}
        row["candidates"], peer_ms = candidates(name, resp, inp, want, time_it, gluon=False, peers=peers)
        row.update(peer_ms)
        if time_it:  # the plan chosen first and PyTorch, by kernel
            k = build_kernel(resp)
            row["kernels_us"] = {"legalsat": kernel_times(lambda k=k, inp=inp: inp.call(k, check=False)),
                                 "torch": kernel_times(lambda inp=inp: reference(inp))}
        del inp
        torch.cuda.empty_cache()
        return row

    for name, entry in plans["cases"].items():
        results["cases"].append(measure(name, entry, time_it=False))
    for name, entry in plans["workloads"].items():
        results["workloads"].append(measure(name, entry, time_it=True))
    results["timing"] = METHOD
    (out_dir / "moe_results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))


def table(results: dict) -> str:
    lines = [f"{'workload':44s} {'eager ms':>9s} {'compile ms':>10s} {'legalsat ms (plan 0)':>22s} "
             f"{'x eager':>8s} {'x compile':>9s}"]
    for w in results["workloads"]:
        first = w["candidates"][0]
        ms = first.get("ms")
        lines.append(f"{w['name']:44s} {w['torch_ms']:9.3f} {w['torch_compile_ms']:10.3f} "
                     f"{first['strategy'] + ' ' + (f'{ms:.3f}' if ms else 'FAILED'):>22s} "
                     f"{(w['torch_ms'] / ms if ms else 0):8.2f} {(w['torch_compile_ms'] / ms if ms else 0):9.2f}")
    for w in results["workloads"]:
        k = w.get("kernels_us", {}).get("legalsat", {})
        inspect = sum(v for name, v in k.items() if name.startswith("inspect"))
        execute = sum(v for name, v in k.items() if name.startswith("execute"))
        lines.append(f"  {w['name']:42s} inspector {inspect:6.1f} us, executor {execute:6.1f} us")
    bad = [(r["name"], c["strategy"]) for r in results["workloads"] + results["cases"] for c in r["candidates"]
           if not c.get("exact")]
    lines.append(f"inexact or failed kernels: {len(bad)} {bad[:8]}")
    return "\n".join(lines)


if __name__ == "__main__":
    run_command("bench_moe", {"run": lambda: run(Path(os.environ.get("OUT") or HERE)), "plan": plan})
