"""Block, tile and warp choices for the copies that sit furthest from the copy limit (odd and
small transposes, a padded pitch, 3-channel NCHW->NHWC), measured on the GPU next to
`torch.compile` of the same op (whose generated Triton source is written too).

    python -m tools.edge_sweep [--plain] [--halo BYTES] [--src-fastest] [--interleave N [--cudagraph]] [--only STRATEGY] [NAME ...]
                                                      # on the GPU machine; writes $OUT/edge_sweep*.json

`--plain`: staged tiles whose destination rows are misaligned are emitted unskewed (whole-tile
loads and scalar stores, as Inductor's tiled transposes do) instead of sector-skewed.
`--halo BYTES`: skewed tiles align each destination row's stores to BYTES (16: a vector, 32:
a sector, the emitter's choice) and load that many bytes of extra source rows.
`--src-fastest`: skewed tiles take consecutive program ids along the source's rows (the
emitter's order, `legalsat.kernels.staged.walk_order`, walks the destination's rows fastest;
`benchmarks/edge_sweep_skew.json`'s `_dstfast` variants were measured when it walked the
source's, and the destination's order emitted without the program id range the emitter now
states).
`--interleave N`: every exact variant of a workload, its same-size `copy_` and `torch.compile`
are timed together in N interleaved rounds (`benchmarks.measure.timed_together`), so that drift
weighs on all alike, instead of one after another.
`--only STRATEGY`: variants of that strategy's plan alone.
`--cudagraph` (with `--interleave`): each replayed from a CUDA graph, the device's time alone
(the small transposes are otherwise mostly the host's launch).

Each variant is the planner's plan with one piece's `tile` / `num_warps` replaced, re-emitted,
checked bit-exact against PyTorch and timed (median of do_bench medians, benchmarks.measure).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

from legalsat.kernels.words import transposed_dims

WORKLOADS = ("padded pitch 16384", "1023×4097", "517×33 bf16", "64×3×224×224")


def set_halo(halo_bytes: int) -> None:
    """Skewed tiles align each destination row's stores to `halo_bytes` (and load as many bytes
    of extra source rows): the one constant the planner's promise and the kernel's tile read."""
    import legalsat.kernels.staged as staged
    import legalsat.terms.movement as movement

    movement.SKEW_SECTOR_BYTES = staged.SKEW_SECTOR_BYTES = halo_bytes


def skewed_walk(order, dst_fastest: bool):
    """`order` (`legalsat.kernels.staged.walk_order`) with a skewed tile's transposed pair in
    the given order, whichever `order` picks for its source runs: the destination-contiguous
    dim fastest, or the source-contiguous one; plain tiles and untiled dims keep their order."""
    def walk(p, skewed: bool, tile: tuple[int, ...] = ()):
        w = order(p, skewed, tile)
        if not skewed or not w:
            return w
        a, b = transposed_dims(p)
        return [*w[:-2], *((a, b) if dst_fastest else (b, a))]
    return walk


def src_fastest(order):
    """`order` with every skewed tile's programs stepping along the source's rows fastest."""
    return skewed_walk(order, dst_fastest=False)


def variants(plan: dict) -> list[tuple[list[int], int]]:
    """(tile, num_warps) to try for `plan`'s first piece."""
    piece = plan["pieces"][0]
    eb, dims = piece["element_bytes"], piece["dims"]
    elems = 1
    for d in dims:
        elems *= d["extent"]
    out = []
    if plan["strategy"] == "direct":
        for block in (512, 1024, 2048, 4096, 8192, 16384):
            if block * eb <= 32768 and block <= 4 * elems:
                out += [([block], w) for w in (2, 4, 8, 16) if block // (32 * w) >= 1]
    elif plan["strategy"] in ("staged_smem", "shuffle"):
        base = piece["tile"]
        tiled = [k for k, t in enumerate(base) if t > 1]
        if len(tiled) != 2:
            return [(base, piece["num_warps"])]
        ka, kb = tiled
        cap = [1 << max(d["extent"] - 1, 1).bit_length() for d in dims]
        small = min(base[ka], base[kb]) < 8  # the shuffle's small side, held whole: keep it
        for ta in (8, 16, 32, 64, 128, 256, 512, 1024, 2048):
            for tb in (4, 8, 16, 32, 64, 128, 256):
                if small and (base[ka] if base[ka] < 8 else base[kb]) != (ta if base[ka] < 8 else tb):
                    continue
                if not 512 <= ta * tb * eb <= 65536 or ta > cap[ka] or tb > cap[kb]:
                    continue
                if not small and max(ta, tb) > 256 and min(ta, tb) > 8:  # long thin tiles: AoS->SoA's 8 fields
                    continue
                t = list(base)
                t[ka], t[kb] = ta, tb
                out += [(t, w) for w in (2, 4, 8, 16) if ta * tb // (32 * w) >= 4]
    return out


def main() -> None:

    from benchmarks.measure import same_size_copy, timed, timed_together
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, poison, same_bits
    from tools.inductor_code import inductor_source
    from tools.sweep import workloads

    out = Path(os.environ.get("OUT", "."))
    argv = sys.argv[1:]
    plain = "--plain" in argv
    tag = "_plain" if plain else ""
    import legalsat.kernels.staged as staged

    if plain:
        staged.staged_form = lambda *a, **k: "plain"
    if "--halo" in argv:
        k = argv.index("--halo")
        set_halo(int(argv[k + 1]))
        tag += f"_halo{argv[k + 1]}"
        del argv[k:k + 2]
    if "--src-fastest" in argv:
        staged.walk_order = src_fastest(staged.walk_order)
        tag += "_srcfast"
    rounds = 0
    if "--interleave" in argv:
        k = argv.index("--interleave")
        rounds = int(argv[k + 1])
        tag += "_interleaved"
        del argv[k:k + 2]
    only = None
    if "--only" in argv:
        k = argv.index("--only")
        only = argv[k + 1]
        del argv[k:k + 2]
    graph = "--cudagraph" in argv
    if graph and not rounds:
        raise SystemExit("--cudagraph times variants together: give --interleave N")
    tag += "_cudagraph" if graph else ""
    names = [a for a in argv if not a.startswith("--")] or list(WORKLOADS)
    rows, summary = [], []
    for name, resp, inp, want in workloads(lambda r: r, names):
        tc_fn = compiled_peer(inp)
        (out / f"inductor{tag}_{len(summary)}.py").write_text(f"# {name}\n" + inductor_source(tc_fn))
        cp_fn = same_size_copy(inp.moved_bytes)
        if not rounds:
            tc, cp = timed(tc_fn), timed(cp_fn)
        pending: list[tuple[dict, object]] = []  # interleaved: (row, kernel call), timed at the end
        best = None
        for i, plan in enumerate(resp["plans"]):
            if only and plan["strategy"] != only:
                continue
            for tile, warps in variants(plan):
                r = copy.deepcopy(resp)
                r["plans"] = [r["plans"][i]]
                r["plans"][0]["pieces"][0]["tile"], r["plans"][0]["pieces"][0]["num_warps"] = tile, warps
                row = {"workload": name, "strategy": plan["strategy"], "tile": tile, "warps": warps,
                       "planned": tile == plan["pieces"][0]["tile"] and warps == plan["pieces"][0]["num_warps"]}
                try:
                    k = build_kernel(r, variant="tl")
                    poison(inp)
                    row["exact"] = same_bits(inp.call(k), want)
                    if row["exact"] and rounds:
                        pending.append((row, lambda k=k, inp=inp: inp.call(k, check=False)))
                    elif row["exact"]:
                        row["ms"] = timed(lambda k=k, inp=inp: inp.call(k, check=False))
                except Exception as e:  # reported, not fatal
                    row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                rows.append(row)
                ms = row.get("ms")
                print(f"{name[:36]:36s} {plan['strategy']:12s} {str(tile):18s} w{warps:<2d} "
                      f"{row.get('exact')} {ms or 0:.4f} ms {'planned' if row['planned'] else ''}"
                      f" {row.get('error', '')[:100]}", flush=True)
                if ms and (best is None or ms < best["ms"]):
                    best = row
        if rounds:
            cp, tc, *times = timed_together([cp_fn, tc_fn] + [fn for _, fn in pending], repeats=rounds,
                                          graph=graph)
            for (row, _), ms in zip(pending, times):
                row["ms"] = ms
                if best is None or ms < best["ms"]:
                    best = row
            for row, _ in sorted(pending, key=lambda rf: rf[0]["ms"])[:8]:
                print(f"  {row['strategy']:12s} {str(row['tile']):18s} w{row['warps']:<2d} {row['ms']:.4f} ms"
                      f" {'planned' if row['planned'] else ''}", flush=True)
        del cp_fn
        rows += [{"workload": name, "strategy": "copy_ (same size)", "ms": cp},
                 {"workload": name, "strategy": "torch.compile", "ms": tc}]
        planned = [r["ms"] for r in rows if r["workload"] == name and r.get("planned") and r.get("ms")]
        summary.append((name, cp, tc, min(planned) if planned else None, best))
        (out / f"edge_sweep{tag}.json").write_text(json.dumps(rows, indent=1) + "\n")  # after each workload
    print(f"\n{'workload':40s} {'copy ms':>9s} {'compile':>9s} {'planned':>9s} {'best':>9s}  best variant")
    for name, cp, tc, pl, best in summary:
        print(f"{name[:40]:40s} {cp:9.4f} {tc:9.4f} {pl or 0:9.4f} {best['ms'] if best else 0:9.4f}  "
              f"{best and (best['strategy'], best['tile'], best['warps'])}")


if __name__ == "__main__":
    main()
