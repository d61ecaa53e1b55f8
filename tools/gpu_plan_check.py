"""Every plan of a fixed corpus of requests, run on the GPU and compared bit for bit with PyTorch.

    python -m tools.gpu_plan_check plan REQUESTS.jsonl [...] RESPONSES.jsonl                      # here
    python -m tools.gpu_plan_check run RESPONSES.jsonl OUT_DIR [--misalign]                          # GPU machine

The corpus (benchmarks/gpu_plan_check_requests.jsonl): 390 requests drawn from a random-request
fuzzer's logs (170 copies, 90 gathers, 130 tile loads; odd extents, padded pitches, broadcast
sources, unaligned bases, tiles past the tensor), those with TMA, staged and shuffle plans
first. `plan` runs the planner (which the GPU machine lacks); `run` builds every plan's kernel,
tl and (for TMA plans) Gluon, runs it on poisoned outputs and compares the whole destination
with PyTorch's. A kernel that faults kills its CUDA context: each run is a child process, and a
faulting plan is recorded and its request skipped. OUT_DIR/gpu_plan_check.json gets the counts
per kind and strategy/variant, the faults and every differing plan; the table is printed last.
`--misalign`: each copy's and gather's tensors are moved one element past a 16-byte boundary
(values, strides and offsets kept: what a caller passes when it slices past a buffer's first
element), so a plan made for aligned bases either runs bit-exact or is refused by the client
by name; none may differ or fault.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time


def plan(requests: list[str], responses: str) -> int:
    from legalsat.api import optimize

    with open(responses, "w") as out:
        for name in requests:
            with open(name) as f:
                for line in f:
                    rec = json.loads(line)
                    out.write(json.dumps({**rec, "response": optimize(rec["request"])}) + "\n")
    return 0


def _child(responses: str, out_dir: str, start: int, misalign: bool = False) -> int:
    """Run requests from `start` on; before each kernel, name it in progress.json. `misalign`:
    copies' and gathers' tensors moved one element past a 16-byte boundary (`misaligned`)."""
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError
    from legalsat.kernels import kernel_variants
    from legalsat.testing import tiles
    from legalsat.testing.torch_reference import make_inputs, misaligned, poison, reference, same_bits

    progress, counts = os.path.join(out_dir, "progress.json"), collections.Counter()
    differing = []
    with open(responses) as f:
        for n, line in enumerate(f):
            if n < start:
                continue
            rec = json.loads(line)
            resp, kind = rec["response"], rec["kind"]
            gen = torch.Generator(device="cuda").manual_seed(n)
            if kind != "load_tile":
                inp = make_inputs(resp, {}, "cuda", gen)
                want = reference(inp)
                if misalign and inp.src.element_size() < 16:
                    es = inp.src.element_size()
                    op = rec["request"].get("op") or {}
                    # a view one element off 16 bytes is what a request of base_align <= the
                    # element says it is (a gather's output is allocated 16-byte aligned)
                    said = [op[side].get("base_align", 16) for side in ("src", "dst") if isinstance(op.get(side), dict)]
                    if kind == "copy" and said and all(es % a == 0 for a in said):
                        counts[(f"{kind} (request)", "as aligned as it says")] += 1
                        continue
                    inp = misaligned(inp, es)
            elif misalign:
                continue  # a tile load's source is the consumer probe's own
            for i, p in enumerate(resp["plans"]):
                for variant in kernel_variants(p, True):
                    key = f"{kind} {p['strategy']}/{variant}"
                    with open(progress, "w") as pf:
                        json.dump({"n": n, "plan": i, "key": key, "request": rec["request"]}, pf)
                    try:
                        k = build_kernel(resp, plan_index=i, variant=variant)
                    except InputError:
                        counts[(key, "refused")] += 1
                        continue
                    if kind == "load_tile":  # values the tensor core reads exactly, where it reads them
                        src = rec["request"]["op"]["src"]
                        x = tiles.source_tensor(src["shape"], src["strides"], src["dtype"], "cuda", gen,
                                                wgmma=k.emitted.tile.wgmma_input)
                        got = tiles.poison(torch.empty(k.out_shape, dtype=k.out_dtype(x), device="cuda"))
                        k(x, out=got)
                        exact = tiles.same_bits(got, tiles.consumer_view(tiles.reference_tiles(
                            x, rec["request"]["op"]["tile"]), k.emitted.tile.element))
                    else:
                        poison(inp)
                        try:
                            exact = same_bits(inp.call(k), want)
                        except InputError:  # the client's checks of the tensors it was given
                            counts[(key, "refused")] += 1
                            continue
                    torch.cuda.synchronize()
                    counts[(key, "exact" if exact else "differs")] += 1
                    if not exact:
                        differing.append({"n": n, "plan": i, "key": key, "request": rec["request"]})
            # after every request: a later kernel that faults takes only its own run with it
            with open(os.path.join(out_dir, f"part_{start}.json"), "w") as pf:
                json.dump({"counts": [[*k, c] for k, c in counts.items()], "differing": differing}, pf)
    os.remove(progress)
    return 0


def run(responses: str, out_dir: str, misalign: bool = False) -> int:
    os.makedirs(out_dir, exist_ok=True)
    total = sum(1 for _ in open(responses))
    start, faults, t0 = 0, [], time.time()
    env = {**os.environ, "CUDA_LAUNCH_BLOCKING": "1"}
    while start < total:
        done = subprocess.run([sys.executable, "-m", "tools.gpu_plan_check", "_child", responses, out_dir, str(start)]
                              + ["--misalign"] * misalign,
                              env=env,
                              capture_output=True, text=True)
        progress = os.path.join(out_dir, "progress.json")
        if done.returncode == 0:
            break
        if not os.path.exists(progress):
            print(done.stderr[-3000:])
            return 1
        with open(progress) as pf:
            fault = json.load(pf)
        os.remove(progress)
        faults.append({**fault, "error": done.stderr.strip().splitlines()[-1][:300]})
        start = fault["n"] + 1
    import torch
    import triton

    counts, differing = collections.Counter(), []
    for name in sorted(os.listdir(out_dir)):
        if name.startswith("part_"):
            with open(os.path.join(out_dir, name)) as pf:
                part = json.load(pf)
            counts.update({(k, r): c for k, r, c in part["counts"]})
            differing += part["differing"]
    from benchmarks.environment import driver_version

    result = {"device": torch.cuda.get_device_name(), "driver": driver_version(), "torch": torch.__version__,
              "triton": triton.__version__,
              "requests": total, "misaligned": misalign, "seconds": round(time.time() - t0),
              "counts": {f"{k} {r}": c for (k, r), c in sorted(counts.items())},
              "faults": faults, "differing": differing}
    with open(os.path.join(out_dir, "gpu_plan_check.json"), "w") as f:
        json.dump(result, f, indent=1)
    rows = collections.defaultdict(collections.Counter)
    for (key, r), c in counts.items():
        rows[key][r] += c
    for fault in faults:
        rows[fault["key"]]["fault"] += 1
    print(f"{total} requests on {result['device']}, torch {result['torch']}, triton {result['triton']}")
    print(f"{'kind strategy/variant':34s} {'exact':>6s} {'differs':>8s} {'fault':>6s} {'refused':>8s}")
    for key in sorted(rows):
        c = rows[key]
        print(f"{key:34s} {c['exact']:6d} {c['differs']:8d} {c['fault']:6d} {c['refused']:8d}")
    runs = sum(counts.values()) + len(faults)
    print(f"{runs} plan runs: {sum(c for (_, r), c in counts.items() if r == 'exact')} exact")
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tools.gpu_plan_check", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="plan the corpus here (the GPU machine has no planner)")
    p.add_argument("requests", nargs="+", help="request files, planned in this order")
    p.add_argument("responses")
    r = sub.add_parser("run", help="run every plan on the GPU")
    r.add_argument("responses")
    r.add_argument("out_dir")
    c = sub.add_parser("_child")  # one run of `run`, from a request on
    c.add_argument("responses")
    c.add_argument("out_dir")
    c.add_argument("start", type=int)
    for p in (r, c):
        p.add_argument("--misalign", action="store_true",
                       help="move copies' and gathers' tensors one element past a 16-byte boundary")
    a = ap.parse_args(argv)
    if a.command == "plan":
        return plan(a.requests, a.responses)
    if a.command == "run":
        return run(a.responses, a.out_dir, a.misalign)
    return _child(a.responses, a.out_dir, a.start, a.misalign)


if __name__ == "__main__":
    raise SystemExit(main())
