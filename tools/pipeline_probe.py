"""Staged transposes run persistent with their source loads software-pipelined: each program
walks tiles pid, pid + nprog, ... in a `tl.range(..., num_stages=S)` loop, which Triton's
pipeliner turns into `cp.async` copies of the next S - 1 tiles' sources into shared memory
while the current tile is shuffled and stored. The planned kernels launch one program a
tile, each loading its tile, then shuffling, then storing: a program has loads in flight only
before its stores, and the SM's other programs fill the gaps. Measured against the planned
kernel, the persistent kernel without pipelining, and a same-size copy_, from CUDA graphs
and eagerly, in interleaved rounds.

    python -m tools.pipeline_probe [NAME ...]      # GPU: $OUT/pipeline_probe.json, a table last
    python -m tools.pipeline_probe compile [NAME ...]  # CPU: compiles every variant for sm90 and
                                                   # prints its cp.async count and shared memory

NAME: substrings of benchmark workload names (default: every staged workload moving 64 MB
or more). A kernel whose loads sit in both arms of an `if` (the skewed tile's and a ragged
plain tile's interior and edge programs) gets one load before the `if`, masked as the edge
arm's (a mask along the destination-contiguous dim only, so still whole vectors along the
source's): the pipeliner takes no load inside a branch. Every kernel is run on a poisoned
output and compared bit for bit with PyTorch's before it is timed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from pathlib import Path

from tools.order_probe import MIN_BYTES, PERSISTENT_WARPS, reordered

# (stages, programs an SM): stages 1 is the persistent loop as the order probe runs it
VARIANTS = ((1, 4), (2, 2), (2, 4), (3, 1), (3, 2), (3, 4), (4, 1), (4, 2))
_LOAD = re.compile(r"^(\s+)x = tl\.load\((.*)\)$")


def hoisted(source: str) -> str:
    """`source` with the load that both arms of its `if`/`else` make (`x = tl.load(...)`)
    made once before the `if`, as the `else` arm's (masked) load: unchanged where the kernel
    has no such branch."""
    lines = source.splitlines()
    try:
        i_if = next(i for i, ln in enumerate(lines) if ln.strip().startswith("if ") and ln.rstrip().endswith(":"))
        i_else = next(i for i in range(i_if + 1, len(lines)) if lines[i].strip() == "else:")
    except StopIteration:
        return source
    in_if = [i for i in range(i_if + 1, i_else) if _LOAD.match(lines[i])]
    in_else = [i for i in range(i_else + 1, len(lines)) if _LOAD.match(lines[i])]
    if len(in_if) != 1 or len(in_else) != 1:
        return source
    indent = lines[i_if][:len(lines[i_if]) - len(lines[i_if].lstrip())]
    load = indent + lines[in_else[0]].strip()
    kept = [ln for i, ln in enumerate(lines) if i not in (in_if[0], in_else[0])]
    kept.insert(i_if, load)
    return "\n".join(kept) + "\n"


def pipelined(source: str, stages: int) -> str:
    """A persistent kernel's `for q in range(...)` loop as `tl.range(..., num_stages=stages)`."""
    if stages == 1:
        return source
    text, n = re.subn(r"for q in range\((.*)\):", rf"for q in tl.range(\1, num_stages={stages}):", source)
    if n != 1:
        raise ValueError("the kernel has no persistent `for q in range(...)` loop")
    return text


def variants(k, piece_raw: dict):
    """(label, kernel) for the planned staged kernel `k`: planned, and persistent with each of
    `VARIANTS` (its loads hoisted out of a branch, `hoisted`)."""
    from legalsat.clients.triton import Kernel
    from legalsat.kernels.staged import staged_form, tile_counts, walk_order
    from legalsat.kernels.words import transposed_dims, word_piece
    from legalsat.schemas.plan import PieceOut

    raw = PieceOut.model_validate(piece_raw)
    wp = word_piece(raw, "pieces[0]")
    a, b = transposed_dims(wp)
    skewed = staged_form(wp, raw) == "skewed"
    counts = tile_counts(wp, wp.tile, skewed)
    walk = walk_order(wp, skewed, wp.tile) or list(range(len(counts)))
    (launch,) = k.emitted.launches
    out = [("planned", k)]
    loop = reordered(hoisted(k.emitted.source), counts, a, b, None, 1, True, walk)
    for stages, per_sm in VARIANTS:
        if per_sm * launch.num_warps > PERSISTENT_WARPS:  # more than an SM holds: not resident at once
            continue
        ln = dataclasses.replace(launch, grid="persistent", tiles=launch.grid, blocks_per_sm=per_sm)
        em = dataclasses.replace(k.emitted, source=pipelined(loop, stages), launches=(ln,))
        out.append((f"persistent S={stages} x{per_sm}/SM", Kernel(k.plan, em, k.request_op)))
    return out


def _staged(resp: dict) -> dict | None:
    return next((p for p in resp["plans"] if p["strategy"] == "staged_smem" and len(p["pieces"]) == 1), None)


def compile_only(names: list[str]) -> None:
    """Compile every variant of every chosen workload for sm90 (no GPU): cp.async count, shared bytes."""
    from legalsat.clients.resources import compile_kernel
    from legalsat.clients.triton import build_kernel
    from tools.sweep import planned

    for name, entry in planned().items():
        base = _staged(entry["response"])
        if base is None or (names and not any(n in name for n in names)):
            continue
        index = entry["response"]["plans"].index(base)
        for label, k in variants(build_kernel(entry["response"], plan_index=index, variant="tl"), base["pieces"][0]):
            (ln,) = k.emitted.launches
            c = compile_kernel(k.emitted, ln, aligned=True)  # 16-byte aligned tensors, as the benchmark's are
            ptx = c.asm["ptx"]
            print(f"{name[:34]:34s} {label:24s} cp.async {ptx.count('cp.async.c'):4d}  shared {c.metadata.shared}")


def main(names: list[str]) -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import same_size_copy, timed_together
    from legalsat.clients.triton import build_kernel
    from tools.order_probe import table
    from tools.sweep import checked, planned, workloads

    out = Path(os.environ.get("OUT", "."))
    dev = torch.device("cuda")
    result = {"env": gpu_environment(dev), "command": "python -m tools.pipeline_probe " + " ".join(names),
              "workloads": []}
    plans = planned()
    for name, base, inp, want in workloads(_staged, names):
        if not names and inp.moved_bytes < MIN_BYTES:
            continue
        response = plans[name]["response"]
        index = response["plans"].index(base)
        try:
            tried = variants(build_kernel(response, plan_index=index, variant="tl"), base["pieces"][0])
        except Exception as e:  # a variant the emitter refuses (it says why)
            print(f"{name}: not built: {type(e).__name__}: {str(e)[:300]}")
            continue
        fns, labels = checked(name, [(label, k, inp, want) for label, k in tried])
        copy_fn = same_size_copy(inp.moved_bytes, dev)
        graph = timed_together([*fns, copy_fn], graph=True)
        eager = timed_together([*fns, copy_fn])
        rows = [{"variant": lab, "us": round(g * 1e3, 3), "eager_us": round(e * 1e3, 3)}
                for lab, g, e in zip(labels, graph, eager)]
        entry = {"workload": name, "tile": base["pieces"][0]["tile"], "warps": base["pieces"][0]["num_warps"],
                 "moved_bytes": inp.moved_bytes, "copy_us": round(graph[-1] * 1e3, 3),
                 "copy_eager_us": round(eager[-1] * 1e3, 3), "kernels": sorted(rows, key=lambda r: r["us"])}
        result["workloads"].append(entry)
        (out / "pipeline_probe.json").write_text(json.dumps(result, indent=1) + "\n")
        for r in entry["kernels"]:
            print(f"  {name[:34]:34s} {r['variant']:24s} {r['us']:8.1f} us graph ({entry['copy_us'] / r['us']:.3f} "
                  f"of copy)  {r['eager_us']:8.1f} us eager ({entry['copy_eager_us'] / r['eager_us']:.3f})",
                  flush=True)
        del fns, copy_fn
    print(table(result))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["compile"]:
        compile_only(args[1:])
    else:
        main(args)
