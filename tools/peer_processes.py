"""The planner's first plan against torch.compile where the benchmark found them close, asked in
several fresh processes: one benchmark run is one draw of each process's code placement, clocks
and memory layout, and the eager times of the short items moved by up to 2x between runs (the
gather along an inner axis: 25.7-52.0 us for one kernel across four runs of
`benchmarks/bench_kernels.py`, 10.6-11.1 us in device time).

    python -m tools.peer_processes [--processes 3] [--rounds 5] [NAME ...]
        # GPU; writes $OUT/peer_processes.json
    python -m tools.peer_processes report benchmarks/peer_processes.json   # the table again

Per process and workload (those of benchmarks/kernel_plans.json whose name contains a NAME;
by default those whose best kernel was behind torch.compile's, eagerly or from CUDA graphs, in
the benchmark's run): the first plan's kernel in each variant `build_kernel` offers (the default one
first), PyTorch, torch.compile of the same op and a same-size `copy_`, all bit-exact, timed
together in interleaved rounds, eagerly (do_bench: an L2 flush before each call) and from CUDA
graphs (the device's time alone). The table gives, per workload, torch.compile's time over the
first plan's default kernel in each process (above 1: legalsat faster).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from statistics import median

# the benchmark's workloads whose best kernel was behind torch.compile's, eagerly or from CUDA
# graphs (benchmarks/kernel_results.json, legalsat-planner/25)
CLOSE = ["AoS→SoA 16M×8", "NCHW→NHWC 32×256×56×56", "NHWC→NCHW 32×56×56×256", "transpose 1023×4097",
         "transpose 517×33", "embedding 7 KiB", "paged KV 16", "gather axis 1"]


def one_process(rounds: int, names: list[str]) -> dict:
    """{workload: {labels, eager_us, graph_us}} for this process (see the module docstring)."""
    import torch

    from benchmarks.measure import same_size_copy, timed_together
    from legalsat.clients.triton import build_kernel
    from legalsat.kernels import default_variant, kernel_variants
    from legalsat.testing.torch_reference import compiled_peer, reference, same_bits
    from tools.sweep import exact, workloads

    sm90 = torch.cuda.get_device_capability()[0] == 9
    out = {}
    for name, resp, inp, want in workloads(lambda r: r, names):
        plan = resp["plans"][0]
        first = default_variant(plan, sm90)
        variants = [first] + [v for v in kernel_variants(plan, sm90) if v != first]
        labels, fns = [], []
        for v in variants:
            labels.append(f"{plan['strategy']}/{v}")
            fns.append(exact(f"{name} {labels[-1]}", build_kernel(resp, variant=v), inp, want))
        compiled = compiled_peer(inp)
        assert same_bits(compiled(), want), f"{name}: torch.compile differs from PyTorch"
        labels += ["torch", "torch.compile", "copy_"]
        fns += [lambda inp=inp: reference(inp), compiled, same_size_copy(inp.moved_bytes)]
        row = {"labels": labels, "eager_us": [round(t * 1e3, 3) for t in timed_together(fns, repeats=rounds)]}
        try:
            row["graph_us"] = [round(t * 1e3, 3) for t in timed_together(fns, repeats=rounds, graph=True)]
        except Exception as e:  # noqa: BLE001 - a plan that syncs with the host cannot be captured
            row["graph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        out[name] = row
        print(f"{name[:48]:48s} eager {row['eager_us']} graph {row.get('graph_us')}", file=sys.stderr, flush=True)
        del fns, compiled
        torch._dynamo.reset()
    return out


def ratios(runs: list[dict], name: str, timing: str) -> list[float]:
    """torch.compile's time over the default kernel's (the first label), one per process."""
    out = []
    for r in runs:
        row = r[name]
        if f"{timing}_us" in row:
            us = row[f"{timing}_us"]
            out.append(us[row["labels"].index("torch.compile")] / us[0])
    return out


def table(runs: list[dict]) -> str:
    lines = [f"{'workload':44s} {'first plan':22s} {'timing':6s} {'first us (per process)':>28s} "
             f"{'torch.compile us':>24s}  x compile: median [min, max]"]
    for name, row in runs[0].items():
        for timing in ("eager", "graph"):
            rs = ratios(runs, name, timing)
            if not rs:
                continue
            k = row["labels"].index("torch.compile")
            ours = " ".join(f"{r[name][f'{timing}_us'][0]:8.2f}" for r in runs if f"{timing}_us" in r[name])
            peer = " ".join(f"{r[name][f'{timing}_us'][k]:8.2f}" for r in runs if f"{timing}_us" in r[name])
            lines.append(f"{name[:44]:44s} {row['labels'][0]:22s} {timing:6s} {ours:>28s} {peer:>24s}  "
                         f"{median(rs):.3f} [{min(rs):.3f}, {max(rs):.3f}]")
    return "\n".join(lines)


def main() -> None:
    from tools.sweep import in_fresh_processes, option

    argv = sys.argv[1:]
    if argv and argv[0] == "report":
        print(table(json.loads(Path(argv[1]).read_text())["runs"]))
        return
    if argv and argv[0] == "--one":
        print(json.dumps(one_process(int(argv[1]), argv[2:])))
        return
    args = list(argv)
    procs, rounds = option(args, "--processes", 3), option(args, "--rounds", 5)
    names = args or CLOSE
    runs = in_fresh_processes("tools.peer_processes", ["--one", str(rounds), *names], procs)
    import torch

    from benchmarks.environment import gpu_environment

    result = {"env": gpu_environment(torch.device("cuda")), "rounds": rounds, "runs": runs}
    (Path(os.environ.get("OUT", ".")) / "peer_processes.json").write_text(json.dumps(result, indent=1) + "\n")
    print(table(runs))


if __name__ == "__main__":
    main()
