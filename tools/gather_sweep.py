"""Tiles of the index-major gather (a gather along an inner axis), measured on the GPU: the
data behind `solve_rows(index_major=True)` in legalsat.planner.solve.

    python -m tools.gather_sweep [NAME ...]   # on the GPU machine; writes $OUT/gather_sweep.json
    python -m tools.gather_sweep --shapes 1024x1,1024x2 --rounds 3 NAME   # only these (entries x
        slab step), each measured in 3 rounds (interleaved, so drift shows)

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


def main() -> None:
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
