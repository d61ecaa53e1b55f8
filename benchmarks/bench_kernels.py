"""Every plan's kernel on the GPU: bit-exact against PyTorch, timed against PyTorch and the
measured copy bandwidth; then the planner's cost model calibrated on those times.

    python -m benchmarks.bench_kernels plan     # CPU: plan every workload -> benchmarks/kernel_plans.json
    python -m benchmarks.bench_kernels run      # GPU: check + time every candidate -> $OUT or benchmarks/
    python -m benchmarks.bench_kernels report RESULTS.json [--keep-facts]
        # CPU: calibrate (--keep-facts: keep the shipped cost facts), regret, RESULTS.md

`run` needs only torch, triton and legalsat's light modules (the Triton client never imports
the planner), so the GPU machine runs the plans the CPU made. Each candidate strategy of a
workload's response becomes a kernel (TMA plans twice: the tl descriptor kernel and the
Gluon pipeline); outputs are poisoned before each check; times are
the median of three `do_bench(..., return_mode="median")` runs; achieved GB/s counts bytes
read + written once. Each workload is also run as `torch.compile` of the same PyTorch op
(the peer a PyTorch user would pick), checked bit-exact, and timed after its compile.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from benchmarks.commands import run_command

HERE = Path(__file__).resolve().parent
PLANS = HERE / "kernel_plans.json"
CASES = HERE / "kernel_cases.json"


# ---------------------------------------------------------------- plan (CPU, planner)
def plan() -> None:
    from legalsat.api import optimize
    from legalsat.testing.workloads import small_cases, workloads

    out = {}
    for w in workloads():
        t = time.perf_counter()
        resp = optimize(w.request())
        # the copy limit at this size: legalsat's own plan for a contiguous copy of as many bytes
        n = resp["plans"][0]["cost"]["bytes_moved"] // 2
        flat = {"dtype": "uint8", "shape": [n], "strides": [1], "base_align": 16}
        copy = optimize({"request_id": f"contiguous copy of {w.name}", "target": "sm90",
                         "op": {"kind": "copy", "src": flat, "dst": flat}})
        out[w.name] = {"workload": w.__dict__, "response": resp, "contiguous_copy": copy}
        print(f"planned {w.name} in {1e3 * (time.perf_counter() - t):.0f} ms", flush=True)
    PLANS.write_text(json.dumps(out, indent=1) + "\n")
    cases = {w.name: {"workload": w.__dict__, "response": optimize(w.request())} for w in small_cases()}
    CASES.write_text(json.dumps(cases, indent=1) + "\n")
    print(f"wrote {PLANS} and {CASES}")


# ---------------------------------------------------------------- run (GPU)
def run(out_dir: Path) -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import METHOD, candidates, same_size_copy
    from benchmarks.measure import timed as measure_timed
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import (
        Inputs,
        compiled_peer,
        make_inputs,
        poison,
        reference,
        same_bits,
    )

    spreads: list[float] = []

    def timed(fn) -> float:
        return measure_timed(fn, spreads)

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    env = gpu_environment(dev)
    print(json.dumps(env), flush=True)
    # device-to-device copy bandwidth, measured in this run (1 GiB read + 1 GiB written)
    a = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    copy_ms = timed(lambda a=a, b=b: b.copy_(a))
    copy_gbps = 2 * a.numel() / copy_ms / 1e6
    del a, b
    print(f"device copy: {copy_gbps:.0f} GB/s", flush=True)
    # the copy limit by size: do_bench's per-launch overhead (L2 flush before each run, launch,
    # ramp and tail) is a fixed time, so smaller copies reach a smaller share of the 1 GiB figure
    curve = []
    for mib in (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048):
        a = torch.empty(mib << 20, dtype=torch.uint8, device=dev)
        b = torch.empty_like(a)
        curve.append([2 * a.numel(), timed(lambda a=a, b=b: b.copy_(a))])
        del a, b
    torch.cuda.empty_cache()
    results = {"env": env, "copy_gbps": copy_gbps, "copy_curve": curve, "workloads": [], "cases": []}

    def measure(name: str, entry: dict, time_it: bool) -> dict:
        resp, wl = entry["response"], entry["workload"]
        gen = torch.Generator(device=dev).manual_seed(1234)
        inp: Inputs = make_inputs(resp, wl, dev, gen)
        ref = reference(inp)
        row = {"name": name, "bytes": inp.moved_bytes, "candidates": []}
        peers: dict = {}
        if time_it:  # the peers, timed in the candidates' interleaved rounds
            peers["torch_ms"] = lambda inp=inp: reference(inp)
            try:  # the peer: torch.compile of the same op, compiled before it is timed
                peer = compiled_peer(inp)
                row["torch_compile_exact"] = same_bits(peer(), ref)
                if row["torch_compile_exact"]:
                    peers["torch_compile_ms"] = peer
            except Exception as e:  # a peer that does not compile is reported, not fatal
                row["torch_compile_error"] = f"{type(e).__name__}: {str(e)[:400]}"
            # the copy limit at this workload's size: a contiguous copy of as many bytes
            peers["copy_same_size_ms"] = same_size_copy(inp.moved_bytes, dev)
            if "contiguous_copy" in entry:  # legalsat's direct copy of the same bytes
                cc = entry["contiguous_copy"]
                flat = make_inputs(cc, {"torch_op": "copy"}, dev, gen)
                k = build_kernel(cc)
                poison(flat)
                if same_bits(flat.call(k), reference(flat)):
                    peers["copy_same_size_legalsat_ms"] = lambda k=k, flat=flat: flat.call(k, check=False)
        row["candidates"], peer_ms = candidates(name, resp, inp, ref, time_it, props.major == 9, spreads,
                                                peers=peers)
        row.update(peer_ms)
        del peers
        torch._dynamo.reset()
        del inp
        torch.cuda.empty_cache()
        return row

    for name, entry in json.loads(CASES.read_text()).items():
        results["cases"].append(measure(name, entry, time_it=False))
    for name, entry in json.loads(PLANS.read_text()).items():
        results["workloads"].append(measure(name, entry, time_it=True))
        # after each workload (a run cut short keeps what it measured; only a whole run has "timing")
        (out_dir / "kernel_results.json").write_text(json.dumps(results, indent=1) + "\n")
    results["timing"] = {"method": METHOD,
                         "max_spread": round(max(spreads), 3),
                         "median_spread": round(sorted(spreads)[len(spreads) // 2], 3)}
    (out_dir / "kernel_results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))



def table(results: dict) -> str:
    """The short table: per workload PyTorch, every candidate, the best, as GB/s and share of copy."""
    bw = results["copy_gbps"]
    lines = [f"copy bandwidth {bw:.0f} GB/s", f"{'workload':48s} {'torch':>13s} {'best legalsat':>30s} {'x torch':>8s}"
             f" {'x compile':>9s} {'of same-size copy':>18s} {'first':>18s}"]  # same-size: faster of copy_ and legalsat's
    for w in results["workloads"]:
        gbps = lambda ms, w=w: w["bytes"] / ms / 1e6  # noqa: E731
        timed = [c for c in w["candidates"] if c.get("ms")]
        best = min(timed, key=lambda c: c["ms"]) if timed else None
        t = w.get("torch_ms")
        tt = f"{gbps(t):6.0f} ({gbps(t) / bw:.2f})" if t else "-"
        bb = (f"{best['strategy']}/{best['variant']} {gbps(best['ms']):6.0f} ({gbps(best['ms']) / bw:.2f})"
              if best else "-")
        sp = f"{t / best['ms']:.2f}" if best and t else "-"
        limit = min(w.get("copy_same_size_ms") or 1e9, w.get("copy_same_size_legalsat_ms") or 1e9)
        same = f"{limit / best['ms']:.2f}" if best and limit < 1e9 else "-"
        tc = w.get("torch_compile_ms")
        xc = f"{tc / best['ms']:.2f}" if best and tc else "-"
        # the planner's first plan as build_kernel runs it (records before "default": its first variant)
        first = next((c for c in w["candidates"] if c["plan"] == 0 and c.get("default", True)), {})
        fr = f"{first.get('strategy', '-')} {first['ms'] / best['ms']:.3f}" if best and first.get("ms") else "-"
        lines.append(f"{w['name'][:48]:48s} {tt:>13s} {bb:>30s} {sp:>8s} {xc:>9s} {same:>18s} {fr:>18s}")
    bad = [(w["name"], c["strategy"], c["variant"]) for w in results["workloads"] + results["cases"]
           for c in w["candidates"] if not c.get("exact")]
    lines.append(f"inexact or failed kernels: {len(bad)} {bad[:8]}")
    return "\n".join(lines)


def _report(results: str, *flags: str) -> None:
    from benchmarks.kernel_report import report

    if set(flags) - {"--keep-facts"}:
        sys.exit("usage: python -m benchmarks.bench_kernels report RESULTS.json [--keep-facts]")
    report(Path(results), keep_facts="--keep-facts" in flags)


if __name__ == "__main__":
    run_command("bench_kernels", {"run": lambda: run(Path(os.environ.get("OUT") or HERE)), "plan": plan,
                                  "report": _report})
