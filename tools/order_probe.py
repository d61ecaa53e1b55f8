"""The order in which a staged transpose's programs walk its tiles, and a direct copy's block:
the planned kernels against the same kernels with their programs reordered, run persistent,
or given other blocks, next to a same-size `copy_`, timed eagerly and from CUDA graphs in
interleaved rounds.

    python -m tools.order_probe [NAME ...]   # GPU: $OUT/order_probe.json, a table last
    python -m tools.order_probe tiles NAME   # GPU: a staged workload's tiles (`tiles_of`), each in its
                                             # planned order and walking b fastest: $OUT/order_tiles.json
    python -m tools.order_probe bounds [NAME ...]  # GPU: every workload's first plan (tl), as emitted
                                             # and without its program ids' stated range: $OUT/bound_probe.json
    options: --offset-mb N (N MB allocated before the workloads' tensors), --quick (orders a/1, b/1)

NAME: substrings of benchmark workload names (default: every staged workload moving 64 MB or
more, and `DIRECT`). Every kernel is run on a poisoned output and compared bit for bit with
PyTorch's before it is timed.

Orders (a staged piece's transposed dims: a, contiguous in the source; b, in the destination;
other dims outermost): `planned` is the emitted kernel (its dims' order, the last fastest);
`x/G` takes G tiles along x per group and walks the other axis inside the group (Triton's
grouped GEMM order; `b/1` is "a fastest", `a/1` "b fastest"). Programs that run concurrently
(a few hundred) then share source rows and destination rows in other proportions, which
moves how many DRAM pages each of them opens. `persistent` loops each program over the tiles
(a grid of the SMs times the warps an SM holds over the kernel's).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import sys
from math import prod
from pathlib import Path

from legalsat.kernels.source import PROGRAM_ID_LINE, decompose
from legalsat.terms.integers import cdiv

DIRECT = ["BSHD→BHSD 8×32×4096×128 bf16", "column slice 8192×4096 of 4098 bf16"]
ORDERS = [("b", 1), ("a", 1), ("b", 4), ("b", 16), ("b", 64), ("a", 4), ("a", 16)]
BLOCKS = (512, 1024, 2048, 4096, 8192)
WARPS = (4, 8, 16)
MIN_BYTES = 64 << 20
PERSISTENT_WARPS = 64  # warps an SM holds: a persistent grid is the SMs times as many programs as fit
# (extent along a, along b, warps) the `tiles` sweep tries
TILE_BYTES = (4096, 65536)  # the staged tiles tried: from 4 to 64 KiB of shared memory


def tiles_of(element_bytes: int) -> list[tuple[int, int, int]]:
    """(extent along a, extent along b, warps) of the tiles `tiles` tries for a piece of
    `element_bytes` elements: extents 32-256 along a and 64-256 along b within `TILE_BYTES`."""
    return [(ta, tb, w) for ta in (32, 64, 128, 256) for tb in (64, 128, 256) for w in (4, 8)
            if TILE_BYTES[0] <= ta * tb * element_bytes <= TILE_BYTES[1]]


def order_lines(counts: list[int], a: int, b: int, axis: str, group: int, q: str, indent: str,
                walk: list[int]) -> list[str]:
    """Lines binding `pid` (the emitted kernel's linear tile index: its dims walked in order
    `walk`, the last fastest) to the tile that program `q` takes in the grouped order (`axis`
    "a" or "b" grouped by `group`)."""
    x, y = (a, b) if axis == "a" else (b, a)
    nx, ny = counts[x], counts[y]
    g = min(group, nx)
    others = [k for k in range(len(counts)) if k not in (a, b)]
    lines = [f"{indent}o = {q} // {nx * ny}", f"{indent}r = {q} % {nx * ny}",
             f"{indent}f = r // {g * ny} * {g}", f"{indent}gs = tl.minimum({nx} - f, {g})",
             f"{indent}rr = r % {g * ny}", f"{indent}u{x} = f + rr % gs", f"{indent}u{y} = rr // gs"]
    if others:
        lines += decompose("o", [(f"u{k}", counts[k]) for k in others], indent)
    lin = f"u{walk[0]}"
    for k in walk[1:]:
        lin = f"({lin}) * {counts[k]} + u{k}"
    return lines + [f"{indent}pid = {lin}"]


def reordered(source: str, counts: list[int], a: int, b: int, axis: str | None, group: int,
              persistent: bool, walk: list[int]) -> str:
    """The staged kernel `source` with its programs in another order and/or persistent (see
    the module docstring); its one `pid = tl.program_id(0)` line is what changes."""
    m = PROGRAM_ID_LINE.search(source)
    if m is None or m.group(1) != "pid":
        raise ValueError("the kernel has no `pid = tl.program_id(0)` line of its own")
    wide = ".to(tl.int64)" if m.group(0).endswith(".to(tl.int64)") else ""
    head, body = source[:m.start()], source[m.end() + 1:]
    total = prod(counts)
    # q's range stated as the emitter states pid's (the reordered pid is built from q)
    bound = ["tl.assume(q >= 0)", f"tl.assume(q < {total})"]
    if not persistent:
        lines = [f"    q = tl.program_id(0){wide}", *(f"    {x}" for x in bound),
                 *order_lines(counts, a, b, axis, group, "q", "    ", walk)]
        return head + "\n".join(lines) + "\n" + body
    fn_end = body.find("\n\n\n")  # the kernel's body ends where the module's next definition starts
    fn_body, rest = (body, "") if fn_end < 0 else (body[:fn_end + 1], body[fn_end + 1:])
    loop = [f"    for q in range(tl.program_id(0){wide}, {total}, tl.num_programs(0)):", *(f"        {x}" for x in bound)]
    if axis is None:
        loop.append("        pid = q")
    else:
        loop += order_lines(counts, a, b, axis, group, "q", "        ", walk)
    inner = "".join("    " + ln + "\n" if ln.strip() else "\n" for ln in fn_body.splitlines())
    return head + "\n".join(loop) + "\n" + inner + rest


def staged_variants(k, piece_raw: dict, orders: list | None = None):
    """(label, kernel) for the planned staged kernel `k` in every order of `orders` (default:
    `ORDERS`, and persistent in the planned order and with b grouped by 16)."""
    from legalsat.clients.triton import Kernel
    from legalsat.kernels.staged import staged_form, tile_counts, walk_order
    from legalsat.kernels.words import transposed_dims, word_piece
    from legalsat.schemas.plan import PieceOut

    raw = PieceOut.model_validate(piece_raw)
    wp = word_piece(raw, "pieces[0]")
    a, b = transposed_dims(wp)
    skewed = staged_form(wp, raw) == "skewed"
    counts = tile_counts(wp, wp.tile, skewed)
    walk = walk_order(wp, skewed, wp.tile) or list(range(len(counts)))  # how the emitted kernel splits pid
    (launch,) = k.emitted.launches
    if prod(counts) != launch.grid:
        raise ValueError(f"tile counts {counts} do not give the launch's grid {launch.grid}")
    out = [("planned", k)]
    if orders is None:
        orders = [*((ax, g, False) for ax, g in ORDERS), (None, 1, True), ("b", 16, True)]
    for axis, group, persistent in orders:
        text = reordered(k.emitted.source, counts, a, b, axis, group, persistent, walk)
        ln = launch
        if persistent:
            ln = dataclasses.replace(launch, grid="persistent", tiles=launch.grid,
                                     blocks_per_sm=max(PERSISTENT_WARPS // launch.num_warps, 1))
        em = dataclasses.replace(k.emitted, source=text, launches=(ln,))
        label = ("persistent" if persistent else "") + (f" {axis}/{group}" if axis else "")
        out.append((label.strip(), Kernel(k.plan, em, k.request_op)))
    return out


def direct_variants(base: dict, response: dict, plan_index: int):
    """(label, kernel) for a direct copy plan with its block (`tile[0]`) and warps replaced."""
    from legalsat.clients.triton import build_kernel

    planned = [(pc["tile"], pc["num_warps"]) for pc in base["pieces"] if pc["strategy"] == "direct"]
    out = []
    for block in BLOCKS:
        for warps in WARPS:
            r = copy.deepcopy(response)
            p = r["plans"][plan_index]
            for piece in p["pieces"]:
                if piece["strategy"] == "direct":
                    piece["tile"], piece["num_warps"] = [block], warps
                    piece["grid"] = [cdiv(prod(d["extent"] for d in piece["dims"]), block)]
            label = f"{block} w{warps}" + (" (planned)" if planned and planned[0] == ([block], warps) else "")
            try:
                out.append((label, build_kernel(r, plan_index=plan_index, variant="tl")))
            except Exception as e:  # a block the emitter refuses (it says why)
                print(f"  {label}: not built: {type(e).__name__}: {str(e)[:200]}")
    return out


def unstated(source: str) -> str:
    """`source` without the program id ranges the emitter states
    (`legalsat.kernels.source.state_program_ranges`)."""
    for name in {m.group(1) for m in PROGRAM_ID_LINE.finditer(source)}:
        source = re.sub(rf"\n    tl\.assume\({name} (?:>= 0|< \d+)\)(?=\n)", "", source)
    return source


def bound_variants(response: dict, index: int):
    """(label, kernel): the tl kernel of `response`'s plan `index` as emitted (its program ids'
    range stated), and without that statement (`unstated`)."""
    from legalsat.clients.triton import Kernel, build_kernel

    k = build_kernel(response, plan_index=index, variant="tl")
    text = unstated(k.emitted.source)
    if text == k.emitted.source:
        return [("planned", k)]
    return [("planned", k), ("unstated", Kernel(k.plan, dataclasses.replace(k.emitted, source=text), k.request_op))]


def tile_variants(base: dict, response: dict, index: int):
    """(label, kernel) for a staged plan with each tile of `tiles_of` (extents along the
    transposed dims a and b, warps) walking b fastest (`a/1`) and a fastest (`b/1`), and the
    planned kernel."""
    from legalsat.clients.triton import build_kernel
    from legalsat.kernels.words import piece_transposed_dims
    from tools.peer_tile_probe import variant

    piece = base["pieces"][0]
    a, b = piece_transposed_dims(piece)
    planned = (piece["tile"][a], piece["tile"][b], piece["num_warps"])
    out = []
    for ta, tb, warps in dict.fromkeys([planned, *tiles_of(piece["element_bytes"])]):
        r = copy.deepcopy(response)
        r["plans"][index] = variant(base, a, b, ta, tb, warps)
        try:
            k = build_kernel(r, plan_index=index, variant="tl")
            for label, kk in staged_variants(k, r["plans"][index]["pieces"][0], [("a", 1, False), ("b", 1, False)]):
                if label == "planned" and (ta, tb, warps) != planned:
                    continue  # the emitted order of another tile: one of the two orders
                out.append((f"{ta}x{tb} w{warps} {label}" + (" (planned)" if label == "planned" else ""), kk))
        except Exception as e:  # a tile the emitter refuses (it says why)
            print(f"  {ta}x{tb} w{warps}: not built: {type(e).__name__}: {str(e)[:200]}")
    return out


def main(names: list[str], sweep_tiles: bool = False, offset_mb: int = 0, quick: bool = False,
         bounds: bool = False) -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import same_size_copy, timed_together
    from legalsat.clients.triton import build_kernel
    from tools.sweep import checked, planned, workloads

    out = Path(os.environ.get("OUT", "."))
    dev = torch.device("cuda")
    result = {"env": gpu_environment(dev), "workloads": []}
    plans = planned()
    # memory taken before the workloads' tensors: they land at other addresses (an order whose
    # concurrent programs share few DRAM pages is sensitive to where its rows lie)
    held = torch.empty(offset_mb << 20, dtype=torch.uint8, device=dev) if offset_mb else None
    result["offset_mb"] = offset_mb

    def pick(resp: dict) -> dict | None:
        if bounds:  # the planner's first plan
            return resp["plans"][0] if resp["plans"] else None
        staged = next((p for p in resp["plans"] if p["strategy"] == "staged_smem"), None)
        return staged or next((p for p in resp["plans"] if p["strategy"] == "direct"), None)

    for name, base, inp, want in workloads(pick, names):
        staged = base["strategy"] == "staged_smem"
        if not names and not bounds and not ((staged and inp.moved_bytes >= MIN_BYTES) or name in DIRECT):
            continue
        response = plans[name]["response"]
        index = response["plans"].index(base)
        if staged and len(base["pieces"]) != 1 and not bounds:
            print(f"{name}: {len(base['pieces'])} pieces, skipped")
            continue
        try:
            if bounds:
                tried = bound_variants(response, index)
            elif sweep_tiles:
                if not staged:
                    continue
                tried = tile_variants(base, response, index)
            else:
                quick_orders = [("a", 1, False), ("b", 1, False)] if quick else None
                tried = staged_variants(build_kernel(response, plan_index=index, variant="tl"), base["pieces"][0],
                                        quick_orders) \
                    if staged else direct_variants(base, response, index)
        except Exception as e:  # a variant the emitter refuses (it says why)
            print(f"{name}: not built: {type(e).__name__}: {str(e)[:300]}")
            continue
        fns, labels = checked(name, [(label, k, inp, want) for label, k in tried])
        copy_fn = same_size_copy(inp.moved_bytes, dev)
        eager = timed_together([*fns, copy_fn])
        try:
            graph = timed_together([*fns, copy_fn], graph=True)
        except Exception as e:  # noqa: BLE001 - a call that syncs with the host cannot be captured
            print(f"{name[:40]:40s} not timed from CUDA graphs: {type(e).__name__}: {str(e)[:120]}")
            graph = [float("nan")] * len(eager)
        rows = [{"variant": lab, "us": round(g * 1e3, 3), "eager_us": round(e * 1e3, 3)}
                for lab, g, e in zip(labels, graph, eager)]
        entry = {"workload": name, "strategy": base["strategy"], "moved_bytes": inp.moved_bytes,
                 "copy_us": round(graph[-1] * 1e3, 3), "copy_eager_us": round(eager[-1] * 1e3, 3),
                 "kernels": sorted(rows, key=lambda r: r["us"])}
        result["workloads"].append(entry)
        stem = ("bound_probe" if bounds else "order_tiles" if sweep_tiles else "order_probe") + \
            (f"_offset{offset_mb}" if offset_mb else "")
        (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
        print(table({"workloads": [entry]}).splitlines()[-1], flush=True)
        del fns, copy_fn
    print(table(result))
    del held


def table(result: dict) -> str:
    lines = ["| workload | copy_ us (graph / eager) | planned | fastest from CUDA graphs | fastest eagerly |",
             "| --- | --- | --- | --- | --- |"]
    for w in result["workloads"]:
        ks = w["kernels"]
        pl = next((k for k in ks if k["variant"] == "planned" or "(planned)" in k["variant"]), None)
        g = min(ks, key=lambda k: k["us"])
        e = min(ks, key=lambda k: k["eager_us"])

        def cell(k: dict | None) -> str:
            return f"{k['variant']}: {k['us']:.1f} / {k['eager_us']:.1f}" if k else "–"

        lines.append(f"| {w['workload']} | {w['copy_us']:.1f} / {w['copy_eager_us']:.1f} | {cell(pl)} | {cell(g)} "
                     f"| {cell(e)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from tools.sweep import option

    args = sys.argv[1:]
    offset = option(args, "--offset-mb", 0)
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    if args[:1] == ["tiles"]:
        main(args[1:], sweep_tiles=True, offset_mb=offset)
    elif args[:1] == ["bounds"]:
        main(args[1:], offset_mb=offset, bounds=True)
    else:
        main(args, offset_mb=offset, quick=quick)
