"""Transposes whose destination rows start on 16 bytes but off a 32-byte sector (a padded
pitch of 50264 bf16), and ragged ones into sector-aligned rows: the planned staged tile
against the plain tile the planner gives the nearest sector-aligned pitch, and against that
tile emitted as it was before its programs inside the tensor ran unmasked (every program
masked: a mask along the stored dim whose extent is odd is not constant over a vector, so
every store was one element wide), with a same-size copy_. The benchmark's workloads whose
first plan is such a tile (NCHW <-> NHWC 32 x 256 x 56 x 56 bf16: 3,136 pixels, a ragged edge
of 64 in tiles of 128) are timed the same way next to `torch.compile` of the op, eagerly and
from CUDA graphs.

    python -m tools.sector_pitch_probe plan [workloads]  # CPU: benchmarks/sector_pitch_probe_plans.json
    python -m tools.sector_pitch_probe run [workloads]   # GPU: $OUT/sector_pitch_probe.json, a table last

`workloads`: the benchmark's workloads alone (planned into the same file, the other entries
kept; run into $OUT/sector_pitch_probe_workloads.json).

Every kernel is run on a poisoned output and compared bit for bit with PyTorch's before it is
timed; a case's functions are timed in interleaved rounds (median of 3 do_bench medians each).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

from legalsat.terms.dtypes import ELEMENT_TYPES
from legalsat.terms.integers import cdiv
from legalsat.terms.movement import SKEW_SECTOR_BYTES

PLANS = Path(__file__).resolve().parent.parent / "benchmarks" / "sector_pitch_probe_plans.json"

# (dtype, source rows, columns, destination pitch): src (rows, columns) row-major, copied to
# its transpose whose rows are `pitch` elements apart
CASES = [
    ("bfloat16", 50257, 4096, 50264),
    ("bfloat16", 20000, 4096, 20008),
    ("float16", 30000, 2048, 30008),
    ("float32", 5001, 4096, 5004),
    ("float32", 16385, 2048, 16388),
    ("bfloat16", 50257, 4096, 50304),
    ("float16", 12345, 2048, 12352),
]


# benchmark workloads (legalsat.testing.workloads) whose first plan is a plain tile with a ragged edge
WORKLOADS = ["NCHW→NHWC 32×256×56×56 bf16", "NHWC→NCHW 32×56×56×256 bf16"]


def name(dtype: str, rows: int, cols: int, pitch: int) -> str:
    return f"transpose {rows}×{cols} {dtype} into a {pitch}-element pitch"


def request(dtype: str, rows: int, cols: int, pitch: int) -> dict:
    return {"op": {"kind": "copy", "src": {"dtype": dtype, "shape": [rows, cols], "strides": [cols, 1]},
                   "dst": {"dtype": dtype, "shape": [rows, cols], "strides": [1, pitch]}}}


def sector_pitch(dtype: str, pitch: int) -> int:
    """The least pitch at or above `pitch` whose rows start on a sector."""
    per = SKEW_SECTOR_BYTES * 8 // ELEMENT_TYPES[dtype].storage_bits
    return cdiv(pitch, per) * per


def plain_response(resp: dict, aligned: dict) -> dict:
    """`resp` with its staged piece's tile, warps and skew taken from the plan of the same copy
    into sector-aligned rows (`aligned`): the tile the planner gives rows that need no skew."""
    out = copy.deepcopy(resp)
    plan = next(p for p in out["plans"] if p["strategy"] == "staged_smem")
    piece = plan["pieces"][0]
    model = next(p for p in aligned["plans"] if p["strategy"] == "staged_smem")["pieces"][0]
    piece.pop("skewed_stores", None)
    for key in ("tile", "grid", "num_warps", "store_vector_bytes", "vector_bytes"):
        piece[key] = model[key]
    out["plans"] = [plan]
    return out


def plan(*which: str) -> None:
    from legalsat.api import optimize

    out = {}
    if which == ("workloads",):
        out = {k: v for k, v in json.loads(PLANS.read_text()).items() if "workload" not in v}
    for case in CASES if not which else ():
        resp = optimize(request(*case))
        dtype, rows, cols, pitch = case
        aligned = optimize(request(dtype, rows, cols, sector_pitch(dtype, pitch)))
        staged = next(p for p in resp["plans"] if p["strategy"] == "staged_smem")
        out[name(*case)] = {"case": list(case), "planned": {**resp, "plans": [staged]},
                            "plain": plain_response(resp, aligned)}
        pc = staged["pieces"][0]
        print(f"{name(*case):60s} planned {pc['tile']} skewed={bool(pc.get('skewed_stores'))}, "
              f"plain {out[name(*case)]['plain']['plans'][0]['pieces'][0]['tile']}")
    from legalsat.testing.workloads import workloads

    for w in workloads():
        if w.name in WORKLOADS:
            resp = optimize(w.request())
            out[w.name] = {"workload": {k: v for k, v in w.__dict__.items() if isinstance(v, (str, int, float))},
                           "planned": {**resp, "plans": resp["plans"][:1]}}
            print(f"{w.name:60s} planned {resp['plans'][0]['strategy']} {resp['plans'][0]['pieces'][0]['tile']}")
    PLANS.write_text(json.dumps(out) + "\n")
    print(f"wrote {PLANS}")


def _masked_everywhere(build):
    """`build` with the plain staged tile emitted as before: every program masked."""
    import legalsat.kernels.staged as staged

    def patched(*a, **k):
        ti = real(*a, **k)
        return dataclasses.replace(ti, interior="(pid < 0)") if ti.masked else ti

    real = staged.tile_index
    staged.tile_index = patched
    try:
        return build()
    finally:
        staged.tile_index = real


def run(*which: str) -> None:
    import torch

    from benchmarks.measure import same_size_copy, timed_against_copy, write_probe
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, reference
    from tools.sweep import exact

    rows, bench = [], []
    for workload, entry in json.loads(PLANS.read_text()).items():
        if "workload" in entry:
            bench += _benchmark_workload(workload, entry)
            write_probe("sector_pitch_probe_workloads.json", "benchmark workloads of ragged plain tiles", bench)
            continue
        if which == ("workloads",):
            continue
        resp = entry["planned"]
        inp = make_inputs(resp, {"torch_op": "copy"}, "cuda", torch.Generator(device="cuda").manual_seed(1))
        want = reference(inp)
        kernels = [("planned", build_kernel(resp, variant="tl"), resp),
                   ("plain tile", build_kernel(entry["plain"], variant="tl"), entry["plain"]),
                   ("plain tile, every program masked",
                    _masked_everywhere(lambda e=entry: build_kernel(e["plain"], variant="tl")), entry["plain"])]
        names, fns = [], []
        for label, k, r in kernels:
            pc = r["plans"][0]["pieces"][0]
            names.append(f"{label} {pc['tile']}{' skewed' if pc.get('skewed_stores') else ''}")
            fns.append(exact(f"{workload}: {label}", k, inp, want))
        names.append("same-size copy_")
        fns.append(same_size_copy(resp["plans"][0]["cost"]["bytes_moved"], "cuda"))
        print(workload, flush=True)
        rows += [{"workload": workload, **r} for r in timed_against_copy(names, fns)]
        write_probe("sector_pitch_probe.json", "transposes into rows off a sector, or ragged", rows)
    print(f"\n{'workload':60s} {'kernel':44s} {'us':>8s} {'of copy':>8s}")
    for r in rows + bench:
        print(f"{r['workload']:60s} {r['kernel']:44s} {r['us']:8.1f} {r['copy_ratio']:8.3f}")


def _benchmark_workload(workload: str, entry: dict) -> list[dict]:
    """The planned kernel (unmasked inside), the same tile every program masked, torch.compile
    and a same-size copy_, eagerly and from CUDA graphs (median of 3 interleaved rounds each)."""
    import torch

    from benchmarks.measure import same_size_copy, timed_both_ways
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, make_inputs, reference, same_bits
    from tools.sweep import exact

    resp = entry["planned"]
    inp = make_inputs(resp, entry["workload"], "cuda", torch.Generator(device="cuda").manual_seed(1))
    want = reference(inp)
    kernels = [("planned", build_kernel(resp, variant="tl")),
               ("every program masked", _masked_everywhere(lambda: build_kernel(resp, variant="tl")))]
    names = [f"{label} {resp['plans'][0]['pieces'][0]['tile']}" for label, _ in kernels]
    fns = [exact(f"{workload}: {label}", k, inp, want) for label, k in kernels]
    torch._dynamo.reset()
    peer = compiled_peer(inp)
    assert same_bits(peer(), want), f"{workload}: torch.compile differs"
    names += ["torch.compile", "same-size copy_"]
    fns += [peer, same_size_copy(resp["plans"][0]["cost"]["bytes_moved"], "cuda")]
    eager, graph = timed_both_ways(fns)
    rows = [{"workload": workload, "kernel": n, "us": round(e * 1e3, 2), "copy_ratio": round(eager[-1] / e, 3),
             "graph_us": round(g * 1e3, 2), "graph_copy_ratio": round(graph[-1] / g, 3)}
            for n, e, g in zip(names, eager, graph)]
    print(workload, flush=True)
    for r in rows:
        print(f"  {r['kernel']:40s} {r['us']:8.2f} us ({r['copy_ratio']:.3f})  graph {r['graph_us']:8.2f} us "
              f"({r['graph_copy_ratio']:.3f})", flush=True)
    return rows


if __name__ == "__main__":
    from benchmarks.commands import run_command

    run_command("tools.sector_pitch_probe", {"run": run, "plan": plan})
