"""Tile shapes and warps of the staged transpose, measured on the GPU (the data behind the
field solver's staged-tile rule in legalsat.planner.solve).

    python -m tools.staged_sweep [NAME ...]   # on the GPU machine; writes $OUT/staged_sweep.json

For every transposing workload of benchmarks/kernel_plans.json, the staged plan's kernel is
re-emitted with each tile (dst-contiguous x src-contiguous extent) and warp count, checked
bit-exact against PyTorch and timed (median).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path


def main() -> None:
    from triton.testing import do_bench

    from legalsat.clients.triton import build_kernel
    from legalsat.kernels.words import piece_transposed_dims
    from legalsat.testing.torch_reference import poison, same_bits
    from tools.sweep import workloads

    def staged(resp: dict) -> dict | None:
        return next((p for p in resp["plans"] if p["strategy"] == "staged_smem"), None)

    rows = []
    for name, base, inp, want in workloads(staged, sys.argv[1:]):
        piece = base["pieces"][0]
        dims = piece["dims"]
        a, b = piece_transposed_dims(piece)
        eb = piece["element_bytes"]
        for ta in (16, 32, 64, 128, 256):
            for tb in (16, 32, 64, 128, 256):
                if not 4096 <= ta * tb * eb <= 65536:
                    continue
                for warps in (4, 8, 16):
                    p = copy.deepcopy(base)
                    tile = [1] * len(dims)
                    tile[a], tile[b] = ta, tb
                    p["pieces"][0]["tile"], p["pieces"][0]["num_warps"] = tile, warps
                    k = build_kernel(p, variant="tl")
                    poison(inp)
                    ok = same_bits(inp.call(k), want)
                    ms = do_bench(lambda k=k, inp=inp: inp.call(k, check=False), return_mode="median") if ok else None
                    rows.append({"workload": name, "eb": eb, "tile_src": ta, "tile_dst": tb, "warps": warps,
                                 "exact": ok, "ms": ms, "bytes": inp.moved_bytes})
                    print(f"{name:40s} src {ta:4d} dst {tb:4d} w{warps} {ok} "
                          f"{inp.moved_bytes / ms / 1e6 if ms else 0:7.0f} GB/s", flush=True)
    out = Path(os.environ.get("OUT", "."))
    (out / "staged_sweep.json").write_text(json.dumps(rows, indent=1) + "\n")
    best = {}
    for r in rows:
        if r["ms"] and (r["workload"] not in best or r["ms"] < best[r["workload"]]["ms"]):
            best[r["workload"]] = r
    for w, r in best.items():
        print(f"best {w:40s} src {r['tile_src']} dst {r['tile_dst']} w{r['warps']} {r['bytes'] / r['ms'] / 1e6:.0f} GB/s")


if __name__ == "__main__":
    main()
