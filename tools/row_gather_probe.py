"""Where a long-row gather's time goes: the planned direct kernel of the embeddings and paged KV
caches against the same gather moved in whole slabs (`solve_rows`' programs: the plan of
legalsat-planner/22), that kernel on identity indices, without its index load, and run
persistent with each program loading its next index while it moves its current row, and
against programs that each move a part of one slab; next to `torch.compile` of the same op and
a same-size `copy_`, eagerly and from CUDA graphs, in interleaved rounds.

    python -m tools.row_gather_probe plan   # CPU: each workload's gather in whole slabs, as
                                            # solve_rows gives them -> benchmarks/row_gather_probe_plans.json
    python -m tools.row_gather_probe [NAME ...]   # GPU: $OUT/row_gather_probe.json, a table last

NAME: substrings of benchmark workload names (default: `DEFAULT`). Variants: `planned` (the
plan as planned now, the benchmark's random indices); `whole slabs` (`solve_rows`' rows a
program); `identity` (that kernel, indices 0, 1, 2, ...: the rows read in order); `no index
load` (the identity's rows, the index never read: a blocked copy with the gather's programs);
`persistent wN` (N programs an SM, each looping over rows, its next index loaded before its
current row moves); `persistent wN, no prefetch`; `split C wN` (one entry a program's index,
its slab moved in parts of C bytes, each part a program of N warps, a slab's parts taken by
consecutive programs, as Inductor's flat gather kernels take them; `parts slowest`: the parts
of one position taken by consecutive programs). Every kernel is run on a poisoned output and
compared bit for bit with PyTorch's before it is timed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from pathlib import Path

from legalsat.terms.integers import cdiv

DEFAULT = ["embedding", "paged KV"]
WHOLE_SLABS = Path(__file__).resolve().parent.parent / "benchmarks" / "row_gather_probe_plans.json"
BLOCKS_PER_SM = (2, 4)
# (bytes a program, warps, a row's parts taken by consecutive programs)
SPLITS = ((1024, 2, True), (2048, 4, True), (4096, 4, True), (4096, 8, True), (8192, 8, True), (2048, 4, False))
ENTRY_LINE = re.compile(r"\n    k = pid \* (\d+) \+ tl\.arange\(0, (\d+)\)\n    iv = tl\.load\(index \+ k\)\n")


def _split(source: str) -> tuple[str, int, str]:
    """(text before the kernel's `pid` line, entries a program, the body after its index load)
    of a planned row gather's kernel."""
    pid = re.search(r"\n    pid = tl\.program_id\(0\)\n(    tl\.assume\(pid [^\n]*\n)*", source)
    m = ENTRY_LINE.search(source)
    if pid is None or m is None or m.start() != pid.end() - 1 or m.group(1) != m.group(2):
        raise ValueError("not a one-launch row gather whose entries start at pid * rows")
    return source[:pid.start()], int(m.group(1)), source[m.end():]


def without_index_load(source: str) -> str:
    """The kernel with each entry's index taken as the entry itself (no load of `index`)."""
    return source.replace("    iv = tl.load(index + k)\n", "    iv = k\n", 1)


def persistent(source: str, programs: int, prefetch: bool) -> str:
    """The kernel with each program looping over `programs` row groups (stride: the grid), and,
    with `prefetch`, its next group's indices loaded before the current group moves."""
    head, rows, body = _split(source)
    inner = "".join("    " + ln + "\n" if ln.strip() else "\n" for ln in body.rstrip("\n").splitlines())
    count = programs * rows
    lines = ["    p0 = tl.program_id(0)", "    step = tl.num_programs(0)"]
    if prefetch:
        lines += [f"    kn = p0 * {rows} + tl.arange(0, {rows})",
                  f"    ivn = tl.load(index + kn, mask=kn < {count}, other=0)",
                  f"    for pid in range(p0, {programs}, step):",
                  f"        k = pid * {rows} + tl.arange(0, {rows})",
                  "        iv = ivn",
                  f"        kn = k + step * {rows}",
                  f"        ivn = tl.load(index + kn, mask=kn < {count}, other=0)"]
    else:
        lines += [f"    for pid in range(p0, {programs}, step):",
                  f"        k = pid * {rows} + tl.arange(0, {rows})",
                  "        iv = tl.load(index + k)"]
    return head + "\n" + "\n".join(lines) + "\n" + inner


def split_rows(source: str, words: int, part: int, parts_fastest: bool) -> str:
    """A one-row-a-program gather kernel (its row `tl.arange(0, T)` words, no slab loop) with
    each program moving `part` words of it: ceil(words / part) programs a row."""
    head, rows, body = _split(source)
    n = cdiv(words, part)
    if rows != 1 or body.count("    e = tl.arange(0, ") != 1 or "for c in range" in body:
        raise ValueError("not a one-row, one-slab row gather")
    body = re.sub(r"    e = tl\.arange\(0, \d+\)\n", f"    e = c * {part} + tl.arange(0, {part})\n", body)
    q = "tl.program_id(0)"
    lines = [f"    pid = {q} // {n}", f"    c = {q} % {n}"] if parts_fastest else \
        [f"    pid = {q} % (tl.num_programs(0) // {n})", f"    c = {q} // (tl.num_programs(0) // {n})"]
    if words % part:  # the last part's tail: the row's own mask on e stays in the body
        assert f"(e < {words})" in body
    return head + "\n" + "\n".join(lines) + "\n    k = pid * 1 + tl.arange(0, 1)\n    iv = tl.load(index + k)\n" + body


def whole_slabs(response: dict, rows: int, warps: int) -> dict:
    """`response` whose first plan (a direct gather) moves `rows` whole slabs a program with
    `warps` warps."""
    import copy

    r = copy.deepcopy(response)
    p = r["plans"][0]
    p["gather"]["rows_per_program"], p["num_warps"] = rows, warps
    grid = [cdiv(p["gather"]["index_count"], rows)]
    p["tile"], p["grid"] = [rows], grid
    for piece in p["pieces"]:
        piece["tile"], piece["grid"], piece["num_warps"] = [rows], grid, warps
    return r


def solved_rows(response: dict) -> dict:
    """`response` with its first plan's programs as `solve_rows` gives them (whole slabs)."""
    from legalsat.planner.solve import solve_rows

    p = response["plans"][0]
    f = solve_rows(p["gather"]["slab_bytes"], p["pieces"][0]["element_bytes"], p["gather"]["index_count"])
    return whole_slabs(response, f.rows, f.num_warps)


def split_variants(response: dict):
    """(label, kernel, False) for the first plan of `response` (a direct row gather) with one
    entry a program and each program moving a part of its slab (`SPLITS`)."""
    import legalsat.kernels.direct as direct
    from legalsat.clients.triton import Kernel, build_kernel

    r = whole_slabs(response, 1, 8)
    p = r["plans"][0]
    step = direct.SLAB_STEP_BYTES
    direct.SLAB_STEP_BYTES = 1 << 30  # one slab: the row whole
    try:
        k = build_kernel(r, plan_index=0, variant="tl")
    finally:
        direct.SLAB_STEP_BYTES = step
    (launch,) = k.emitted.launches
    words = p["gather"]["slab_bytes"] // launch.word
    out = []
    for part_bytes, warps, fastest in SPLITS:
        part = part_bytes // launch.word
        if part >= words:
            continue
        text = split_rows(k.emitted.source, words, part, fastest)
        ln = dataclasses.replace(launch, grid=launch.grid * cdiv(words, part), num_warps=warps)
        label = f"split {part_bytes} w{warps}" + ("" if fastest else ", parts slowest")
        out.append((label, Kernel(k.plan, dataclasses.replace(k.emitted, source=text, launches=(ln,)), k.request_op),
                    False))
    return out


def row_gather(resp: dict) -> dict | None:
    """`resp`'s first plan where it is a direct gather of ungrouped entries (what the probe
    varies), else None."""
    p = resp["plans"][0] if resp["plans"] else None
    return p if p and p["strategy"] == "direct" and p.get("gather") and not p["gather"].get("groups") else None


def plan_whole_slabs(names: list[str]) -> None:
    """Write `WHOLE_SLABS`: each named workload's response with its first plan's programs as
    `solve_rows` gives them (the GPU machine runs no planner)."""
    from tools.sweep import planned

    out = {}
    for name, entry in planned().items():
        resp = entry["response"]
        if row_gather(resp) and any(a in name for a in names or DEFAULT):
            out[name] = solved_rows(resp)
    WHOLE_SLABS.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {WHOLE_SLABS} ({len(out)} workloads)")


def variants(response: dict, whole: dict):
    """(label, kernel, on identity indices) for a planned direct gather `response` and the same
    gather in whole slabs (`whole`)."""
    from legalsat.clients.triton import Kernel, build_kernel

    out = [("planned", build_kernel(response, plan_index=0, variant="tl"), False)]
    k = build_kernel(whole, plan_index=0, variant="tl")
    (launch,) = k.emitted.launches
    out += [("whole slabs", k, False), ("identity", k, True)]

    def kernel(text: str, ln=launch):
        return Kernel(k.plan, dataclasses.replace(k.emitted, source=text, launches=(ln,)), k.request_op)

    out.append(("no index load", kernel(without_index_load(k.emitted.source)), True))
    for bps in BLOCKS_PER_SM:
        ln = dataclasses.replace(launch, grid="persistent", tiles=launch.grid, blocks_per_sm=bps)
        out.append((f"persistent w{bps}", kernel(persistent(k.emitted.source, launch.grid, True), ln), False))
        out.append((f"persistent w{bps}, no prefetch", kernel(persistent(k.emitted.source, launch.grid, False), ln),
                    False))
    return out


def main(names: list[str]) -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import same_size_copy, timed_both_ways
    from legalsat.testing.torch_reference import compiled_peer, reference, same_bits
    from tools.sweep import checked, planned, workloads

    out = Path(os.environ.get("OUT", "."))
    dev = torch.device("cuda")
    result = {"env": gpu_environment(dev), "workloads": []}
    plans = planned()
    whole = json.loads(WHOLE_SLABS.read_text())
    for name, base, inp, want in workloads(row_gather, names or DEFAULT):
        response = plans[name]["response"]
        ident = dataclasses.replace(inp, index=torch.arange(inp.index.numel(), device=dev, dtype=inp.index.dtype),
                                    ref_out={})
        want_ident = reference(ident)
        peer = compiled_peer(inp)
        assert same_bits(peer(), want), f"{name}: torch.compile differs from eager"
        tried = [*variants(response, whole[name]), *split_variants(response)]
        fns, labels = checked(name, [(label, kk, *((ident, want_ident) if on_ident else (inp, want)))
                                     for label, kk, on_ident in tried])
        fns.append(peer)
        labels.append("torch.compile")
        copy_fn = same_size_copy(inp.moved_bytes, dev)
        eager, graph = timed_both_ways([*fns, copy_fn], repeats=5)
        rows = [{"variant": lab, "us": round(g * 1e3, 3), "eager_us": round(e * 1e3, 3)}
                for lab, g, e in zip(labels, graph, eager)]
        entry = {"workload": name, "moved_bytes": inp.moved_bytes, "tile": base["pieces"][0]["tile"],
                 "slab_bytes": base["gather"]["slab_bytes"], "num_warps": base["num_warps"],
                 "copy_us": round(graph[-1] * 1e3, 3), "copy_eager_us": round(eager[-1] * 1e3, 3), "kernels": rows}
        result["workloads"].append(entry)
        (out / "row_gather_probe.json").write_text(json.dumps(result, indent=1) + "\n")
        print(table({"workloads": [entry]}), flush=True)
        del fns, copy_fn, peer, ident, want_ident
    print(table(result))


def table(result: dict) -> str:
    """Each workload's variants: µs from CUDA graphs / eagerly, and the share of the copy."""
    lines = []
    for w in result["workloads"]:
        lines.append(f"{w['workload']}: copy_ {w['copy_us']:.1f} / {w['copy_eager_us']:.1f} us")
        for r in w["kernels"]:
            lines.append(f"  {r['variant']:32s} {r['us']:8.1f} / {r['eager_us']:8.1f} us  "
                         f"{w['copy_us'] / r['us']:.3f} / {w['copy_eager_us'] / r['eager_us']:.3f} of the copy")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["plan"]:
        plan_whole_slabs(sys.argv[2:])
    else:
        main(sys.argv[1:])
