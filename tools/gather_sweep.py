"""Tiles of the gathers, measured on the GPU: the data behind `solve_index_major` and
`solve_rows` in legalsat.planner.solve.

    python -m tools.gather_sweep [NAME ...]   # on the GPU machine; writes $OUT/gather_sweep.json
    python -m tools.gather_sweep --shapes 1024x1,1024x2 --rounds 3 NAME   # only these (entries x
        slab step), each measured in 3 rounds (interleaved, so drift shows)
    python -m tools.gather_sweep --row-gathers [--rounds 5] [--processes 2] NAME ...   # row
        gathers: rows per program x warps, timed in interleaved rounds with torch.compile and a
        same-size copy_, in fresh processes (writes $OUT/row_gather_sweep.json: one list of
        rows per process)

For every workload of benchmarks/kernel_plans.json whose first plan is an index-major gather
(its piece tile is (entries, slab elements)), the plan's kernel is re-emitted with each
(entries per program, slab step, warps), checked bit-exact against PyTorch and timed.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

SHAPES = ((1024, 1), (512, 1), (256, 1), (512, 2), (1024, 2), (256, 4), (1024, 4), (1024, 8), (512, 8), (256, 8),
          (256, 16), (128, 32), (64, 64), (2048, 2))


ROW_SHAPES = tuple(dict.fromkeys([*((rows, warps) for warps in (4, 8, 16) for rows in (8 * warps, 16 * warps, 32 * warps)),
                                   (256, 8), (512, 8)]))
# rows longer than 128 bytes (embeddings, KV pages, MoE): few rows, and the slab's step
LONG_ROW_SHAPES = ((1, 4), (1, 8), (1, 16), (2, 4), (2, 8), (2, 16), (4, 8), (4, 16), (8, 8))
SLAB_STEPS = (8192, 16384, 65536)


def row_gathers(names: list[str], rounds: int) -> list[dict]:
    """Each named workload's direct row gather with every (rows per program, warps) of
    ROW_SHAPES (LONG_ROW_SHAPES for rows over 128 bytes, and the planned shape with each of
    SLAB_STEPS bytes a slab step), bit-exact, timed together with the plan as planned,
    torch.compile of the same op and a contiguous copy_ of as many bytes, in `rounds`
    interleaved rounds."""
    import torch

    import legalsat.kernels.direct as direct
    from benchmarks.measure import same_size_copy, timed_together
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, poison, same_bits
    from tools.sweep import workloads

    def row_gather(resp: dict) -> dict | None:
        p = next((p for p in resp["plans"] if p["strategy"] == "direct"), None)
        return p if p and p.get("gather") and len(p["pieces"][0]["tile"]) == 1 else None

    rows_out = []
    for name, base, inp, want in workloads(row_gather, names):
        peer = compiled_peer(inp)
        assert same_bits(peer(), want), f"{name}: torch.compile differs from eager"
        labels, fns = ["torch.compile", "copy_"], [peer, same_size_copy(inp.moved_bytes)]
        planned = (base["gather"]["rows_per_program"], base["num_warps"])
        step = direct.SLAB_STEP_BYTES
        long = base["gather"]["slab_bytes"] > 128
        shapes = [(*s, step) for s in (LONG_ROW_SHAPES if long else ROW_SHAPES) if s != planned]
        shapes += [(*planned, st) for st in SLAB_STEPS] if long else []
        for rows, warps, slab_step in [(*planned, step), *shapes]:
            p = copy.deepcopy(base)
            p["gather"]["rows_per_program"], p["num_warps"] = rows, warps
            for piece in p["pieces"]:  # one kernel per piece, each with the plan's rows
                piece["tile"][0], piece["num_warps"] = rows, warps
            direct.SLAB_STEP_BYTES = slab_step  # read when the kernel is emitted
            try:
                k = build_kernel(p, variant="tl")
            finally:
                direct.SLAB_STEP_BYTES = step
            poison(inp)
            if not same_bits(inp.call(k), want):
                raise AssertionError(f"{name}: {rows} rows x {warps} warps differs from PyTorch")
            label = f"rows {rows} w{warps}" + (f" step {slab_step}" if slab_step != step else "")
            labels.append(label + (" (planned)" if (rows, warps, slab_step) == (*planned, step) else ""))
            fns.append(lambda k=k, inp=inp: inp.call(k, check=False))
        times = timed_together(fns, repeats=rounds)
        for label, ms in zip(labels, times):
            rows_out.append({"workload": name, "variant": label, "ms": ms, "bytes": inp.moved_bytes,
                             "slab_bytes": base["gather"]["slab_bytes"]})
        for label, ms in sorted(zip(labels, times), key=lambda x: x[1]):
            print(f"{name[:40]:40s} {label:22s} {1e3 * ms:8.1f} us  x compile {times[0] / ms:.3f}", flush=True)
        del fns, peer
        torch._dynamo.reset()
    return rows_out


def main() -> None:
    from tools.sweep import in_fresh_processes, option

    if "--row-gathers" in sys.argv or "--one" in sys.argv:
        args = [a for a in sys.argv[1:] if a not in ("--row-gathers", "--one")]
        rounds, processes = option(args, "--rounds", 5), option(args, "--processes", 2)
        if "--one" in sys.argv:
            print(json.dumps(row_gathers(args, rounds)))
            return
        runs = in_fresh_processes("tools.gather_sweep", ["--one", "--rounds", str(rounds), *args], processes)
        out = Path(os.environ.get("OUT", "."))
        (out / "row_gather_sweep.json").write_text(json.dumps({"processes": runs}, indent=1) + "\n")
        return
    from benchmarks.measure import timed
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, poison, same_bits
    from tools.sweep import workloads

    def index_major(resp: dict) -> dict | None:
        p = resp["plans"][0]
        return p if p.get("gather") and len(p["pieces"][0]["tile"]) == 2 else None

    args, shapes, rounds = sys.argv[1:], SHAPES, 1
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = tuple(tuple(int(v) for v in s.split("x")) for s in args[i + 1].split(","))
        del args[i:i + 2]
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    rows = []
    for name, base, inp, want in workloads(index_major, args):
        count = base["gather"]["index_count"]
        peer = compiled_peer(inp)
        assert same_bits(peer(), want)
        peer_ms = timed(peer)
        rows.append({"workload": name, "torch_compile_ms": peer_ms})
        print(f"{name:48s} torch.compile {1e3 * peer_ms:8.1f} us", flush=True)
        for entries, step in shapes * rounds:
            for warps in (2, 4, 8):
                p = copy.deepcopy(base)
                p["gather"]["rows_per_program"] = entries
                p["pieces"][0]["tile"], p["pieces"][0]["num_warps"] = [entries, step], warps
                k = build_kernel(p, variant="tl")
                inp.call(k)
                poison(inp)
                ok = same_bits(inp.call(k), want)
                ms = timed(lambda k=k, inp=inp: inp.call(k, check=False)) if ok else None
                rows.append({"workload": name, "count": count, "entries": entries, "step": step, "warps": warps,
                             "exact": ok, "ms": ms, "bytes": inp.moved_bytes})
                print(f"{name:48s} entries {entries:5d} step {step:4d} w{warps} {ok} "
                      f"{1e3 * ms if ms else 0:8.1f} us", flush=True)
        peer_ms = timed(peer)  # again after the variants: drift shows between the two
        rows.append({"workload": name, "torch_compile_ms": peer_ms})
        print(f"{name:48s} torch.compile {1e3 * peer_ms:8.1f} us", flush=True)
    out = Path(os.environ.get("OUT", "."))
    (out / "gather_sweep.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
