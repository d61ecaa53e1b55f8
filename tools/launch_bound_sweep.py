"""Which plan of a launch-bound movement is fastest, asked several times: every candidate of
the small cases (benchmarks/kernel_cases.json) and of the 517 x 33 transpose, timed in
interleaved rounds, in several fresh processes (a process's code placement and clocks moved
one candidate's time by up to 15 % between runs of the benchmark).

    python -m tools.launch_bound_sweep [--processes 3] [--rounds 31] [--cudagraph]
        # GPU; writes $OUT/launch_bound_sweep.json (launch_bound_sweep_cudagraph.json)
    python -m tools.launch_bound_sweep report [--write]
        # CPU: the recorded sweeps against the planner's order now; fits program_gbps
        # (--write: into legalsat/targets/sm90_cost.json)
    python -m tools.launch_bound_sweep plan-heldout [--seed 7] [--count 24]
        # CPU: small random transposes and permutes no rule was fitted on, planned
        # -> benchmarks/launch_bound_heldout_cases.json
    python -m tools.launch_bound_sweep --cases benchmarks/launch_bound_heldout_cases.json --cudagraph
        # GPU: the same sweep over those (writes launch_bound_heldout[_cudagraph].json)
    python -m tools.launch_bound_sweep --peer [--cudagraph]
        # GPU: the 517 x 33 transpose's plans next to torch.compile of the same op
        # (writes launch_bound_peer[_cudagraph].json)

Prints, per case, each candidate's median time in each process and how often it was fastest.
What the planner's `plan_rank` does with launch-bound plans rests on this. `--cudagraph` times
each candidate replayed from a CUDA graph: the device's time alone, without the host's launch
(which is most of what the events around an eager launch of these kernels measure).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def sweep_entries(cases: Path | None) -> dict:
    """name -> {workload, response}: the benchmark's small cases and its 517 x 33 transpose,
    or the entries of `cases` (a file of the same shape)."""
    from benchmarks.bench_kernels import CASES, PLANS

    if cases is not None:
        return json.loads(cases.read_text())
    entries = dict(json.loads(CASES.read_text()))
    entries.update({k: v for k, v in json.loads(PLANS.read_text()).items() if "517×33" in k})
    return entries


def one_process(rounds: int, graph: bool = False, cases: Path | None = None, peer: bool = False) -> dict:
    """Every plan of each entry (`peer`: of the 517 x 33 transpose only, with torch.compile of
    the same op), bit-exact, timed together in `rounds` interleaved rounds (`graph`: from CUDA
    graphs)."""
    import torch

    from benchmarks.measure import timed_together
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, make_inputs, poison, reference, same_bits

    dev = torch.device("cuda")
    entries = sweep_entries(cases)
    if peer:
        entries = {k: v for k, v in entries.items() if "517×33" in k}
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
        estimated = [p["cost"]["estimated_us"] for p in resp["plans"]]
        if peer:  # compiled (and checked) before it is timed
            compiled = compiled_peer(inp)
            if not same_bits(compiled(), want):
                raise AssertionError(f"{name}: torch.compile differs from PyTorch")
            labels.append("torch.compile")
            fns.append(compiled)
            estimated.append(None)
        try:
            ms = timed_together(fns, repeats=rounds, graph=graph)
            out[name] = {"plans": labels, "estimated_us": estimated, "us": [round(t * 1000, 3) for t in ms]}
        except Exception as err:  # noqa: BLE001 - a plan that syncs with the host (an inspector) cannot be captured
            out[name] = {"plans": labels, "error": f"{type(err).__name__}: {str(err)[:200]}"}
        del inp, want, fns
    return out


RECORDED = Path(__file__).resolve().parent.parent / "benchmarks"
# a program moving at least this much (read + written) alone in its launch shows its serial time
SERIAL_PROBE_BYTES = 16384


def replay(runs: list[dict], cases: Path | None = None) -> list[dict]:
    """Per recorded case with times: the planner's first plan now, its median time over the
    processes against the fastest candidate's (candidates matched by strategy), and each
    candidate's program bytes and median time."""
    from statistics import median

    from legalsat.planner.optimize import optimize
    from legalsat.planner.rank import launch_bound, longest_program_bytes, ranked_launch_bound
    from legalsat.schemas.optimize import parse_request
    from legalsat.terms.strategy import Strategy
    from legalsat.testing.workloads import Workload

    known = {name: Workload(**e["workload"]) for name, e in sweep_entries(cases).items()}
    rows = []
    for name, recorded in runs[0].items():
        if any("error" in r[name] for r in runs) or name not in known:
            continue
        us = {label.split(":", 1)[1]: median(r[name]["us"][i] for r in runs)
              for i, label in enumerate(recorded["plans"])}
        req = parse_request(known[name].request())
        plans = optimize(req).plans
        program = {p.strategy.value: 2 * longest_program_bytes(p) for p in plans}
        lead = plans[0].strategy.value
        facts = req.target.cost
        bound = sum(ranked_launch_bound(list(plans), facts))  # the plans the launch-bound order ranks
        # the order before plan_rank: the direct copy first among launch-bound plans, else by estimate
        direct_first = min(plans, key=lambda p: (not launch_bound(p, facts),
                                                 launch_bound(p, facts) and p.strategy is not Strategy.DIRECT,
                                                 p.cost.estimated_us)).strategy.value
        rows.append({"case": name, "kind": plans[0].kind.value, "first": lead, "us": us, "program_bytes": program,
                     "launch_bound_plans": bound, "regret": us[lead] / min(us.values()),
                     "direct_first_regret": us[direct_first] / min(us.values())})
    return rows


def fit_program_gbps(rows: list[dict]) -> int:
    """One program's bandwidth (read + write, GB/s): the median, over the pointer kernels of
    copies whose program moves at least SERIAL_PROBE_BYTES, of their bytes over their time
    beyond the case's fastest candidate (a gather's programs read rows at random, which this
    figure is not about)."""
    from statistics import median

    rates = [r["program_bytes"][s] / (t - min(r["us"].values())) / 1e3
             for r in rows if r["kind"] == "copy" for s, t in r["us"].items()
             if s in ("direct", "staged_smem") and r["program_bytes"].get(s, 0) >= SERIAL_PROBE_BYTES
             and t > min(r["us"].values())]
    if not rates:
        raise SystemExit("no pointer kernel in the recorded sweep moves enough bytes in one program")
    return round(median(rates))


HELDOUT = RECORDED / "launch_bound_heldout_cases.json"
SWEEPS = (("launch_bound_sweep.json", None), ("launch_bound_sweep_cudagraph.json", None),
          ("launch_bound_heldout.json", HELDOUT), ("launch_bound_heldout_cudagraph.json", HELDOUT))


def plan_heldout(seed: int, count: int) -> None:
    """Small random transposes and permutes (up to 256 KiB, every element size, odd extents),
    each with more than one plan, planned now -> HELDOUT."""
    import random

    from legalsat.api import optimize
    from legalsat.testing.workloads import permute, transpose

    rng = random.Random(seed)
    dtypes = {"uint8": 1, "bfloat16": 2, "float32": 4, "float64": 8}
    out: dict = {}
    while len(out) < count:
        dtype = rng.choice(list(dtypes))
        if rng.random() < 0.6:
            m, n = rng.randint(9, 700), rng.randint(9, 700)
            w = transpose(f"transpose {m}×{n} {dtype}", dtype, m, n)
        else:
            shape = tuple(rng.randint(2, 48) for _ in range(rng.choice((3, 4))))
            perm = tuple(rng.sample(range(len(shape)), len(shape)))
            w = permute(f"permute {'×'.join(map(str, shape))} {perm} {dtype}", dtype, shape, perm)
        resp = optimize(w.request())
        plans = resp["plans"]
        small = plans and plans[0]["cost"]["bytes_moved"] <= 2 * 262144
        if not small or len(plans) < 2 or w.name in out:
            continue
        out[w.name] = {"workload": w.__dict__, "response": resp}
    HELDOUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {HELDOUT}: {len(out)} cases")


def report(write: bool) -> None:
    from legalsat.targets.calibration import cost_path

    replayed: dict[str, list[dict]] = {}
    for file, cases in SWEEPS:
        if not (RECORDED / file).exists():
            continue
        rows = replay(json.loads((RECORDED / file).read_text()), cases)
        near = sum(r["regret"] <= 1.03 for r in rows)
        ruled = [r for r in rows if r["launch_bound_plans"] > 1]  # the cases the launch-bound order decides
        print(f"{file}: the planner's first plan within 3 % of the fastest on {near} of {len(rows)} cases, "
              f"worst {max(r['regret'] for r in rows):.3f}; of the {len(ruled)} with more than one launch-bound "
              f"plan, {sum(r['regret'] <= 1.03 for r in ruled)}")
        print(f"  the direct copy first instead: {sum(r['direct_first_regret'] <= 1.03 for r in rows)} of "
              f"{len(rows)}, worst {max(r['direct_first_regret'] for r in rows):.3f}; of those "
              f"{len(ruled)}, {sum(r['direct_first_regret'] <= 1.03 for r in ruled)}")
        for r in rows:
            if r["regret"] > 1.03:
                print(f"  {r['case']}: {r['first']} {r['us'][r['first']]:.2f} us, fastest {min(r['us'].values()):.2f}")
        replayed[file] = rows
    if "launch_bound_sweep_cudagraph.json" not in replayed:
        sys.exit(f"no {RECORDED / 'launch_bound_sweep_cudagraph.json'}: run the sweep with --cudagraph first")
    gbps = fit_program_gbps(replayed["launch_bound_sweep_cudagraph.json"])
    print(f"program_gbps = {gbps}")
    if write:
        path = cost_path("sm90")
        doc = json.loads(path.read_text())
        doc["facts"]["program_gbps"] = gbps
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {path}")


def main() -> None:
    from tools.sweep import in_fresh_processes, option

    argv = sys.argv[1:]
    if argv and argv[0] == "report":
        report("--write" in argv)
        return
    if argv and argv[0] == "plan-heldout":
        args = argv[1:]
        plan_heldout(option(args, "--seed", 7), option(args, "--count", 24))
        return
    graph, peer = "--cudagraph" in argv, "--peer" in argv
    cases = Path(argv[argv.index("--cases") + 1]) if "--cases" in argv else None
    if peer and cases:
        sys.exit("--peer times the 517 x 33 transpose of the benchmark against torch.compile; leave out --cases")
    if argv and argv[0] == "--one":
        print(json.dumps(one_process(int(argv[1]), graph, cases, peer)))
        return
    args = list(argv)
    procs, rounds = option(args, "--processes", 3), option(args, "--rounds", 31)
    runs = in_fresh_processes("tools.launch_bound_sweep", ["--one", str(rounds), *(["--cudagraph"] if graph else []),
                                                           *(["--peer"] if peer else []),
                                                           *(["--cases", str(cases)] if cases else [])], procs)
    out = Path(os.environ.get("OUT", "."))
    stem = "launch_bound_heldout" if cases else "launch_bound_peer" if peer else "launch_bound_sweep"
    name = f"{stem}_cudagraph.json" if graph else f"{stem}.json"
    (out / name).write_text(json.dumps(runs, indent=1) + "\n")
    print(f"\n{'case':44s} {'plan':22s} {'est us':>7s}  measured us per process        fastest")
    for name, first in runs[0].items():
        if any("error" in r[name] for r in runs):
            print(f"{name[:44]:44s} not timed: {next(r[name]['error'] for r in runs if 'error' in r[name])}")
            continue
        wins = [min(range(len(r[name]["us"])), key=lambda i: r[name]["us"][i]) for r in runs]
        for i, label in enumerate(first["plans"]):
            times = " ".join(f"{r[name]['us'][i]:7.2f}" for r in runs)
            est = first["estimated_us"][i]
            print(f"{name[:44]:44s} {label:22s} {'-' if est is None else f'{est:.2f}':>7}  {times}   "
                  f"{wins.count(i)}/{len(runs)}")


if __name__ == "__main__":
    main()
