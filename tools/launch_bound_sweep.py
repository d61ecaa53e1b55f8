"""Which plan of a launch-bound movement is fastest, asked several times: every candidate of
the small cases (benchmarks/kernel_cases.json) and of the 517 x 33 transpose, timed in
interleaved rounds, in several fresh processes (a process's code placement and clocks moved
one candidate's time by up to 15 % between runs of the benchmark).

    python -m tools.launch_bound_sweep [--processes 3] [--rounds 31] [--cudagraph]
        # GPU; writes $OUT/launch_bound_sweep.json (launch_bound_sweep_cudagraph.json)

Prints, per case, each candidate's median time in each process and how often it was fastest.
What the planner's `plan_rank` does with launch-bound plans rests on this. `--cudagraph` times
each candidate replayed from a CUDA graph: the device's time alone, without the host's launch
(which is most of what the events around an eager launch of these kernels measure).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def one_process(rounds: int, graph: bool = False) -> dict:
    import torch

    from benchmarks.bench_kernels import CASES, PLANS
    from benchmarks.measure import timed_together
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    dev = torch.device("cuda")
    entries = dict(json.loads(CASES.read_text()))
    plans = json.loads(PLANS.read_text())
    entries.update({k: v for k, v in plans.items() if "517×33" in k})
    out = {}
    for name, e in entries.items():
        resp = e["response"]
        if len(resp["plans"]) < 2:
            continue
        inp = make_inputs(resp, e["workload"], dev, torch.Generator(device=dev).manual_seed(1234))
        want = reference(inp)
        labels, fns = [], []
        for i, p in enumerate(resp["plans"]):
            k = build_kernel(resp, plan_index=i, variant="tl")
            poison(inp)
            if not same_bits(inp.call(k), want):
                raise AssertionError(f"{name}: {p['strategy']} differs from PyTorch")
            labels.append(f"{i}:{p['strategy']}")
            fns.append(lambda k=k, inp=inp: inp.call(k, check=False))
        try:
            ms = timed_together(fns, repeats=rounds, graph=graph)
        except Exception as e:  # noqa: BLE001 - a plan that syncs with the host (an inspector) cannot be captured
            out[name] = {"plans": labels, "error": f"{type(e).__name__}: {str(e)[:200]}"}
            continue
        out[name] = {"plans": labels, "estimated_us": [p["cost"]["estimated_us"] for p in resp["plans"]],
                     "us": [round(t * 1000, 3) for t in ms]}
        del inp, want
    return out


def main() -> None:
    argv = sys.argv[1:]
    graph = "--cudagraph" in argv
    if argv and argv[0] == "--one":
        print(json.dumps(one_process(int(argv[1]), graph)))
        return
    procs = int(argv[argv.index("--processes") + 1]) if "--processes" in argv else 3
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 31
    runs = []
    for n in range(procs):
        done = subprocess.run([sys.executable, "-m", "tools.launch_bound_sweep", "--one", str(rounds),
                               *(["--cudagraph"] if graph else [])], capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"process {n + 1} of {procs} done", flush=True)
    out = Path(os.environ.get("OUT", "."))
    name = "launch_bound_sweep_cudagraph.json" if graph else "launch_bound_sweep.json"
    (out / name).write_text(json.dumps(runs, indent=1) + "\n")
    print(f"\n{'case':44s} {'plan':22s} {'est us':>7s}  measured us per process        fastest")
    for name, first in runs[0].items():
        if any("error" in r[name] for r in runs):
            print(f"{name[:44]:44s} not timed: {next(r[name]['error'] for r in runs if 'error' in r[name])}")
            continue
        wins = [min(range(len(r[name]["us"])), key=lambda i: r[name]["us"][i]) for r in runs]
        for i, label in enumerate(first["plans"]):
            times = " ".join(f"{r[name]['us'][i]:7.2f}" for r in runs)
            print(f"{name[:44]:44s} {label:22s} {first['estimated_us'][i]:7.2f}  {times}   {wins.count(i)}/{len(runs)}")


if __name__ == "__main__":
    main()
