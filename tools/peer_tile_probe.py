"""The staged transposes where `torch.compile` comes within a few percent of legalsat: the
planned tile against every other tile shape and warp count the staged kernel takes, next to
`torch.compile` of the op and a same-size `copy_`, all timed from CUDA graphs (the device's
time alone) in interleaved rounds. Inductor's generated code for each op is kept, so its
tiles can be read next to ours.

    python -m tools.peer_tile_probe [NAME ...]  # GPU: $OUT/peer_tile_probe.json, $OUT/inductor_*.py,
                                                # a table last
    python -m tools.peer_tile_probe shapes [NAME ...]
        # GPU: every staged workload (default: all of the benchmark's), the planned tile and the
        # tiles of `BYTE_SHAPES`, timed eagerly and from CUDA graphs: $OUT/peer_tile_shapes.json
    python -m tools.peer_tile_probe warps [NAME ...]
        # GPU: the same workloads, the planned tile with each of `WARP_COUNTS` warps (the bytes
        # each thread moves), eagerly and from CUDA graphs: $OUT/peer_tile_warps.json

NAME: substrings of benchmark workload names (default: `WORKLOADS`). Every kernel is run on a
poisoned output and compared bit for bit with PyTorch's before it is timed.
"""

from __future__ import annotations

import copy
import json
import math
import os
import sys
from pathlib import Path

from legalsat.terms.integers import cdiv, pow2_at_least

WORKLOADS = ["NCHW→NHWC 32×256×56×56 bf16", "NHWC→NCHW 32×56×56×256 bf16", "AoS→SoA 16M×8 fp32",
             "BHSD→BHDS 8×32×4096×128 bf16", "transpose 50257×4096 bf16"]
SIDES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
TILE_BYTES = (4096, 65536)  # the staged kernel's shared-memory tile, smallest and largest tried
WARPS = (4, 8)
WARP_COUNTS = (4, 8, 16, 32)
# (bytes along the source-contiguous dim, bytes along the destination-contiguous dim, warps)
BYTE_SHAPES = [(128, 64, 8), (128, 64, 4), (64, 128, 8), (256, 64, 8), (128, 128, 8), (256, 128, 8),
               (256, 256, 8), (512, 64, 8)]


def caps(piece: dict, a: int, b: int) -> tuple[int, int]:
    """The extents of dims a and b rounded up to powers of two: the longest tile along each."""
    return tuple(pow2_at_least(piece["dims"][d]["extent"]) for d in (a, b))


def tiles(piece: dict, a: int, b: int) -> list[tuple[int, int]]:
    """Extents to try along the transposed dims a and b: powers of two from 32 to 256 (longer
    ones only against a dim shorter than 32, taken whole), within `TILE_BYTES`."""
    eb, cap = piece["element_bytes"], caps(piece, a, b)

    def sides(mine: int, other: int) -> list[int]:
        if mine < 32:
            return [mine]
        return [s for s in SIDES if 32 <= s <= mine and (s <= 256 or other < 32)]

    return [(ta, tb) for ta in sides(cap[0], cap[1]) for tb in sides(cap[1], cap[0])
            if TILE_BYTES[0] <= ta * tb * eb <= TILE_BYTES[1]]


def variant(base: dict, a: int, b: int, ta: int, tb: int, warps: int) -> dict:
    """`base` (a staged plan) with its piece's tile along dims a, b and its warps replaced, its
    grid the tile walk's."""
    p = copy.deepcopy(base)
    piece = p["pieces"][0]
    tile = [1] * len(piece["dims"])
    tile[a], tile[b] = ta, tb
    piece["tile"], piece["num_warps"] = tile, warps
    piece["grid"] = [math.prod(cdiv(d["extent"], t) for d, t in zip(piece["dims"], tile))]
    return p


def byte_tiles(piece: dict, a: int, b: int) -> list[tuple[int, int, int]]:
    """`BYTE_SHAPES` as element extents along dims a and b (at least one element, at most the
    dim's extent rounded up to a power of two), each once."""
    eb, cap = piece["element_bytes"], caps(piece, a, b)
    out = []
    for ra, rb, warps in BYTE_SHAPES:
        t = (min(max(ra // eb, 1), cap[0]), min(max(rb // eb, 1), cap[1]), warps)
        if t not in out:
            out.append(t)
    return out


def tried_tiles(mode: str, piece: dict, a: int, b: int, planned: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """(extent along a, extent along b, warps) of each variant `mode` times, the planned first
    where the mode times it."""
    if mode == "sweep":
        return [(ta, tb, w) for ta, tb in tiles(piece, a, b) for w in WARPS]
    if mode == "shapes":
        return [planned, *byte_tiles(piece, a, b)]
    return [planned, *((planned[0], planned[1], w) for w in WARP_COUNTS)]


def main(names: list[str], mode: str = "sweep") -> None:
    """`mode`: sweep (tiles x `WARPS`, CUDA graphs), shapes (`BYTE_SHAPES`) or warps (the
    planned tile x `WARP_COUNTS`); the last two eagerly too."""
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import same_size_copy, timed_together
    from legalsat.clients.triton import build_kernel
    from legalsat.kernels.words import piece_transposed_dims
    from legalsat.testing.torch_reference import compiled_peer, same_bits
    from tools.inductor_code import file_stem, inductor_source
    from tools.sweep import checked, workloads

    out = Path(os.environ.get("OUT", "."))
    dev = torch.device("cuda")
    result = {"env": gpu_environment(dev), "workloads": []}

    def staged(resp: dict) -> dict | None:
        return next((p for p in resp["plans"] if p["strategy"] == "staged_smem"), None)

    shapes = mode != "sweep"
    for name, base, inp, want in workloads(staged, names or ([] if shapes else WORKLOADS)):
        piece = base["pieces"][0]
        a, b = piece_transposed_dims(piece)
        planned = (piece["tile"][a], piece["tile"][b], piece["num_warps"])
        tried = tried_tiles(mode, piece, a, b, planned)
        built = []
        for ta, tb, warps in dict.fromkeys(tried):
            try:
                k = build_kernel(variant(base, a, b, ta, tb, warps), variant="tl")
            except Exception as e:  # a shape the staged kernel does not take (the emitter says why)
                print(f"{name[:40]:40s} {ta}x{tb} w{warps}: not built: {str(e).splitlines()[0][:120]}")
                continue
            built.append(({"tile_a": ta, "tile_b": tb, "warps": warps, "planned": (ta, tb, warps) == planned},
                          k, inp, want))
        fns, labels = checked(name, built)
        peer = compiled_peer(inp)
        exact = same_bits(peer(), want)
        if not shapes:
            (out / f"inductor_{file_stem(name)}.py").write_text(inductor_source(peer))
        copy_fn = same_size_copy(inp.moved_bytes, dev)
        ms = timed_together([*fns, peer, copy_fn], graph=True)
        rows = [{**lab, "us": round(t * 1e3, 3)} for lab, t in zip(labels, ms)]
        entry = {"workload": name, "dims": [a, b], "element_bytes": piece["element_bytes"],
                 "planned_tile": list(planned), "torch_compile_exact": exact,
                 "torch_compile_us": round(ms[-2] * 1e3, 3), "copy_us": round(ms[-1] * 1e3, 3)}
        if shapes:  # eager too: the benchmark's table times eagerly (do_bench: an L2 flush, then the launch)
            eager = timed_together([*fns, peer, copy_fn])
            for r, t in zip(rows, eager):
                r["eager_us"] = round(t * 1e3, 3)
            entry.update(torch_compile_eager_us=round(eager[-2] * 1e3, 3), copy_eager_us=round(eager[-1] * 1e3, 3))
        entry["kernels"] = sorted(rows, key=lambda r: r["us"])
        result["workloads"].append(entry)
        (out / {"sweep": "peer_tile_probe.json", "shapes": "peer_tile_shapes.json",
                "warps": "peer_tile_warps.json"}[mode]).write_text(
            json.dumps(result, indent=1) + "\n")
        del fns, peer, copy_fn
        torch._dynamo.reset()
    print(table(result))


def table(result: dict) -> str:
    lines = ["| workload | torch.compile us | copy_ us | planned tile (a x b, warps): us | fastest three |",
             "| --- | ---: | ---: | --- | --- |"]
    for w in result["workloads"]:
        ks = w["kernels"]
        pl = next((k for k in ks if k["planned"]), None)
        best = "; ".join(f"{k['tile_a']}x{k['tile_b']} w{k['warps']}: {k['us']:.2f}" for k in ks[:3])
        pls = f"{pl['tile_a']}x{pl['tile_b']} w{pl['warps']}: {pl['us']:.2f}" if pl else "–"
        lines.append(f"| {w['workload']} | {w['torch_compile_us']:.2f} | {w['copy_us']:.2f} | {pls} | {best} |")
    return "\n".join(lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[1:], args[0]) if args[:1] in (["shapes"], ["warps"]) else main(args)
