"""Tiles of the index-major gather (a gather along an inner axis), measured on the GPU: the
data behind `solve_rows(index_major=True)` in legalsat.planner.solve.

    python -m tools.gather_sweep [NAME ...]   # on the GPU machine; writes $OUT/gather_sweep.json

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

SHAPES = ((1024, 4), (1024, 8), (512, 8), (256, 8), (256, 16), (128, 32), (64, 64), (2048, 2))


def main() -> None:
    from benchmarks.measure import timed
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import poison, same_bits
    from tools.sweep import workloads

    def index_major(resp: dict) -> dict | None:
        p = resp["plans"][0]
        return p if p.get("gather") and len(p["pieces"][0]["tile"]) == 2 else None

    rows = []
    for name, base, inp, want in workloads(index_major, sys.argv[1:]):
        count = base["gather"]["index_count"]
        for entries, step in SHAPES:
            for warps in (4, 8):
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
    out = Path(os.environ.get("OUT", "."))
    (out / "gather_sweep.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
