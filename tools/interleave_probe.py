"""Transposes between planes and interleaved channels (NCHW <-> NHWC, SoA <-> AoS): every
candidate plan the planner returns, each kernel variant (the interleave kernel's tl and Gluon
forms among them, `legalsat.kernels.interleave`), PyTorch, `torch.compile` and a same-size
copy_, timed eagerly and from CUDA graphs (the device's time alone).

    python -m tools.interleave_probe plan [NAME ...]  # CPU: benchmarks/interleave_probe_plans.json
    python -m tools.interleave_probe run [NAME ...]   # GPU: $OUT/interleave_probe.json, a table last

NAME: the cases whose names contain it (all by default); `plan` keeps the other cases' plans in
the file (those a recorded run measured).

Every kernel is run on a poisoned output and compared bit for bit with PyTorch's before it is
timed; functions are timed in interleaved rounds (median of 3 do_bench medians each).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "benchmarks"
PLANS = HERE / "interleave_probe_plans.json"

# (name, dtype, images, channels, pixels, to_interleaved): NCHW <-> NHWC of ImageNet-sized
# images (3 channels fp16 and fp32, RGBA uint8), 5 to 7 channels, and AoS <-> SoA of 8 fields
CASES = [
    ("NCHW→NHWC 64×3×224×224 fp16", "float16", 64, 3, 224 * 224, True),
    ("NHWC→NCHW 64×224×224×3 fp16", "float16", 64, 3, 224 * 224, False),
    ("NCHW→NHWC 32×4×224×224 uint8", "uint8", 32, 4, 224 * 224, True),
    ("NHWC→NCHW 32×224×224×4 uint8", "uint8", 32, 4, 224 * 224, False),
    ("NCHW→NHWC 32×3×224×224 uint8", "uint8", 32, 3, 224 * 224, True),
    ("NHWC→NCHW 32×224×224×3 uint8", "uint8", 32, 3, 224 * 224, False),
    ("NCHW→NHWC 16×3×512×512 fp32", "float32", 16, 3, 512 * 512, True),
    ("NHWC→NCHW 16×512×512×3 fp32", "float32", 16, 3, 512 * 512, False),
    *[(f"NCHW→NHWC 64×{c}×112×112 fp16", "float16", 64, c, 112 * 112, True) for c in (5, 6, 7)],
    *[(f"NHWC→NCHW 64×112×112×{c} fp16", "float16", 64, c, 112 * 112, False) for c in (5, 6, 7)],
    ("SoA→AoS 16M×8 fp32", "float32", 1, 8, 1 << 24, True),
    ("AoS→SoA 16M×8 fp32", "float32", 1, 8, 1 << 24, False),
]


def request(dtype: str, images: int, channels: int, pixels: int, to_interleaved: bool) -> dict:
    """A copy of (images, pixels, channels) elements from planes to interleaved channels, or back."""
    planar = [channels * pixels, 1, pixels]
    interleaved = [channels * pixels, channels, 1]
    src, dst = (planar, interleaved) if to_interleaved else (interleaved, planar)
    shape = [images, pixels, channels]
    return {"op": {"kind": "copy", "src": {"dtype": dtype, "shape": shape, "strides": src},
                   "dst": {"dtype": dtype, "shape": shape, "strides": dst}}, "options": {"max_plans": 8}}


def _chosen(names: tuple[str, ...]) -> list[tuple]:
    return [c for c in CASES if not names or any(n in c[0] for n in names)]


def plan(*names: str) -> None:
    from legalsat.api import optimize

    out = json.loads(PLANS.read_text()) if names and PLANS.exists() else {}
    out |= {name: optimize(request(*case)) for name, *case in _chosen(names)}
    out = {name: out[name] for name, *_ in CASES if name in out}  # in the order of CASES
    PLANS.write_text(json.dumps(out) + "\n")
    for name, resp in out.items():
        print(f"{name:32s} " + ", ".join(f"{p['strategy']} {p['cost']['estimated_us']:.1f} us" for p in resp["plans"]))
    print(f"wrote {PLANS}")


def run(*names: str) -> None:
    import torch
    from triton.testing import do_bench, do_bench_cudagraph

    from benchmarks.measure import checked_kernels, same_size_copy, write_probe
    from legalsat.testing.torch_reference import make_inputs, reference, same_bits

    rows = []
    chosen = {c[0] for c in _chosen(names)}
    for name, resp in json.loads(PLANS.read_text()).items():
        if name not in chosen:
            continue
        inp = make_inputs(resp, {"torch_op": "copy"}, "cuda", torch.Generator(device="cuda").manual_seed(1))
        want = reference(inp)
        records, kernels = checked_kernels(name, resp, inp, want, gluon=True)
        assert len(kernels) == len(records), f"{name}: a kernel failed or differs from PyTorch: {records}"
        labels = [f"{c['strategy']}/{c['variant']}" for c, _ in kernels]
        fns = [lambda k=k, inp=inp: inp.call(k) for _, k in kernels]
        meta = [{"plan": c["plan"], "default": c["default"], "estimated_us": c["estimated_us"]} for c, _ in kernels]

        def eager(inp=inp):
            return reference(inp)

        torch._dynamo.reset()  # each workload compiles afresh (no recompile limit, no guard from the last)
        compiled = torch.compile(eager, dynamic=False)
        assert same_bits(compiled(), want), f"{name}: torch.compile differs"
        labels += ["torch", "torch.compile", "copy_"]
        fns += [eager, compiled, same_size_copy(resp["plans"][0]["cost"]["bytes_moved"], "cuda")]
        meta += [{}, {}, {}]
        us = {n: [] for n in labels}
        graph_us = {n: [] for n in labels}
        for _ in range(3):  # each function eagerly and from a CUDA graph, in interleaved rounds
            for n, fn in zip(labels, fns):
                us[n].append(1e3 * do_bench(fn, return_mode="median"))
                graph_us[n].append(1e3 * do_bench_cudagraph(fn, return_mode="median"))
        for n, m in zip(labels, meta):
            rows.append({"workload": name, "kernel": n, **m, "us": round(sorted(us[n])[1], 2),
                         "graph_us": round(sorted(graph_us[n])[1], 2)})
        write_probe("interleave_probe.json", "planes <-> interleaved channels", rows)
    print(f"{'workload':32s} {'kernel':24s} {'eager us':>9s} {'graph us':>9s}")
    for r in rows:
        star = " (default of the first plan)" if r.get("default") and r.get("plan") == 0 else ""
        print(f"{r['workload']:32s} {r['kernel']:24s} {r['us']:9.2f} {r['graph_us']:9.2f}{star}")


if __name__ == "__main__":
    from benchmarks.commands import run_command

    run_command("tools.interleave_probe", {"run": run, "plan": plan})
