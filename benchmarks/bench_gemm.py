"""The GEMM whose operand loads legalsat plans (`legalsat.clients.triton.matmul`) against
`torch.matmul` on the GPU: correct against an fp32 reference, and timed.

    python -m benchmarks.bench_gemm run            # GPU -> $OUT/gemm_results.json and a table
    python -m benchmarks.bench_gemm report FILE    # CPU: the table again

Shapes: bf16 4096^3 (B MN-major and K-major), the Llama MLP projections (M 8192, K 4096,
N 14336 / 11008, weights as nn.Linear stores them: B = W.t(), K-major), a head-dim-80
contraction (K = 80), ragged M = 1000, and an N = 50257 vocabulary projection with B stored
[K, N] (its row pitch, 100514 bytes, is no multiple of 16: legalsat's copy plan relays it out
first, timed apart) and with B = W.t(). Each shape runs every kernel variant (Gluon and tl,
128x256 and 128x128 tiles); times are the median of three do_bench medians; the operand plans
are made (and cached) before timing, as a compiler would make them once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.commands import run_command

HERE = Path(__file__).resolve().parent
SHAPES = [  # name, M, K, N, B stored as: "kn" ([K, N] row-major) or "nk" (W [N, K], b = W.t())
    ("bf16 4096^3, B [K,N]", 4096, 4096, 4096, "kn"),
    ("bf16 4096^3, B = W.t()", 4096, 4096, 4096, "nk"),
    ("Llama MLP up 8192x4096x14336", 8192, 4096, 14336, "nk"),
    ("Llama MLP up 8192x4096x11008", 8192, 4096, 11008, "nk"),
    ("head dim 80: 8192x80x8192", 8192, 80, 8192, "kn"),
    ("ragged M=1000: 1000x4096x4096", 1000, 4096, 4096, "nk"),
    ("vocab 4096x4096x50257, B [K,N]", 4096, 4096, 50257, "kn"),
    ("vocab 4096x4096x50257, B = W.t()", 4096, 4096, 50257, "nk"),
]
VARIANTS = [("gluon", (128, 256, 64)), ("gluon", (64, 256, 64)), ("tl", (128, 256, 64)), ("tl", (128, 128, 64)),
            ("tl", (64, 256, 64))]
EXTRA = {"head dim": [("tl", (128, 128, 32)), ("tl", (128, 64, 16)), ("gluon", (128, 128, 16))],
         "ragged": [("gluon", (128, 128, 64)), ("gluon", (64, 128, 64))]}


def variants(name: str) -> list[tuple[str, tuple[int, int, int]]]:
    """The kernels tried on a shape: the common ones (the default among them), and a few more
    for the shapes that do not fill 128x256 tiles."""
    return VARIANTS + [v for key, vs in EXTRA.items() if name.startswith(key) for v in vs]
ALIGNED = {"bf16 4096^3, B [K,N]", "bf16 4096^3, B = W.t()", "Llama MLP up 8192x4096x14336",
           "Llama MLP up 8192x4096x11008"}


PLANS = HERE / "gemm_plans.json"


def _operands(m: int, k: int, n: int, layout: str, device):
    import torch

    a = torch.empty(m, k, dtype=torch.bfloat16, device=device)
    w = torch.empty(n, k, dtype=torch.bfloat16, device=device)
    return a, (w.t() if layout == "nk" else torch.empty(k, n, dtype=torch.bfloat16, device=device))


def _tiles(name: str, m: int, k: int, n: int, tiles: tuple[int, int, int]) -> tuple[int, int, int]:
    from legalsat.clients.matmul import choose

    return (tiles[0], tiles[1], choose(m, n, k)[2]) if name.startswith("head dim") and tiles[2] == 64 else tiles


def plan() -> None:
    """Every operand plan (and relayout plan) the run asks for, made here: the GPU machine
    has no planner, so the run's planner looks them up."""
    from legalsat.api import optimize
    from legalsat.clients.matmul import plan_operands

    recorded = {}

    def planner(req: dict) -> dict:
        key = json.dumps(req, sort_keys=True)
        if key not in recorded:
            resp = optimize(req)
            resp.pop("egraph", None)
            recorded[key] = resp
        return recorded[key]

    for name, m, k, n, layout in SHAPES:
        a, b = _operands(m, k, n, layout, "meta")
        for _, tiles in variants(name):
            plan_operands(a, b, *_tiles(name, m, k, n, tiles), planner)
    PLANS.write_text(json.dumps(recorded, separators=(",", ":")) + "\n")
    print(f"{len(recorded)} plans into {PLANS}")


def run(out_dir: Path) -> None:

    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import METHOD, timed
    from legalsat.clients.matmul import choose, relayout
    from legalsat.clients.triton import matmul

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    env = gpu_environment(dev)
    print(json.dumps(env), flush=True)

    recorded = json.loads(PLANS.read_text())

    def planner(req: dict) -> dict:
        return recorded[json.dumps(req, sort_keys=True)]

    rows = []
    for name, m, k, n, layout in SHAPES:
        gen = torch.Generator(device=dev).manual_seed(7)
        a = torch.randn(m, k, device=dev, generator=gen).to(torch.bfloat16)
        w = torch.randn(n, k, device=dev, generator=gen).to(torch.bfloat16)
        b = w.t() if layout == "nk" else w.t().contiguous()
        ref = a.float() @ b.float()
        scale = ref.abs().max().item()
        flops = 2 * m * n * k
        row = {"name": name, "m": m, "k": k, "n": n, "b": layout, "default_tiles": list(choose(m, n, k)),
               "torch_ms": timed(lambda a=a, b=b: torch.matmul(a, b)), "variants": []}
        row["torch_tflops"] = flops / row["torch_ms"] / 1e9
        if layout == "kn" and (n * 2) % 16:
            row["relayout_ms"] = timed(lambda b=b: relayout(b, planner))
        for variant, tiles in [*variants(name), ("auto", None)]:
            tiles = _tiles(name, m, k, n, tiles or choose(m, n, k))
            v = {"variant": variant, "tiles": list(tiles)}
            try:
                c = matmul(a, b, variant=variant, tiles=tiles, planner=planner)
                torch.cuda.synchronize()
                err = (c.float() - ref).abs().max().item()
                v["max_abs_err"] = err
                v["rel_err"] = err / scale
                # bf16 output: one rounding of the fp32 result (2^-8 relative) plus fp32 accumulation
                v["correct"] = bool(torch.isfinite(c).all()) and err <= 2 ** -7 * scale + 1e-3 * k ** 0.5
                if v["correct"]:
                    if layout == "kn" and (n * 2) % 16:
                        bp = relayout(b, planner)  # what matmul does on each call; timed apart above
                        v["ms"] = timed(lambda a=a, bp=bp, variant=variant, tiles=tiles:
                                        matmul(a, bp, variant=variant, tiles=tiles, planner=planner))
                    else:
                        v["ms"] = timed(lambda a=a, b=b, variant=variant, tiles=tiles:
                                        matmul(a, b, variant=variant, tiles=tiles, planner=planner))
                    v["tflops"] = flops / v["ms"] / 1e9
                    v["vs_torch"] = row["torch_ms"] / v["ms"]
            except Exception as e:  # a failing variant is a result of the run
                v["correct"] = False
                v["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            row["variants"].append(v)
            print(f"  {name:36s} {variant:5s} {tiles} correct={v['correct']} {v.get('ms', float('nan')):.3f} ms "
                  f"x{v.get('vs_torch', float('nan')):.3f} of torch {v.get('error', '')[:160]}", flush=True)
        del a, w, b, ref
        torch.cuda.empty_cache()
        rows.append(row)
    results = {"env": env, "rows": rows,
               "timing": f"{METHOD}; plans made before timing"}
    (out_dir / "gemm_results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))


def table(results: dict) -> str:
    lines = [f"{'shape':36s} {'torch TF/s':>10s} {'matmul(a, b)':>13s} {'x torch':>8s} {'best variant':>24s} "
             f"{'x torch':>8s} {'rel err':>8s}"]
    for r in results["rows"]:
        ok = [v for v in r["variants"] if v.get("ms")]
        best = min(ok, key=lambda v: v["ms"]) if ok else None
        auto = next((v for v in ok if v["variant"] == "auto"), None)
        desc = f"{best['variant']} {'x'.join(map(str, best['tiles']))}" if best else "-"
        lines.append(f"{r['name']:36s} {r['torch_tflops']:10.0f} {auto['tflops'] if auto else 0:9.0f} TF/s "
                     f"{auto['vs_torch'] if auto else 0:8.3f} {desc:>24s} {best['vs_torch'] if best else 0:8.3f} "
                     f"{max(v.get('rel_err', 0) for v in r['variants']):8.1e}"
                     + (f"  (+ relayout {r['relayout_ms']:.3f} ms)" if "relayout_ms" in r else ""))
    bad = [(r["name"], v["variant"], v["tiles"]) for r in results["rows"] for v in r["variants"] if not v["correct"]]
    lines.append(f"incorrect or failed: {len(bad)} {bad[:6]}")
    return "\n".join(lines)


if __name__ == "__main__":
    run_command("bench_gemm", {"run": lambda: run(Path(os.environ.get("OUT") or HERE)), "plan": plan,
                               "report": lambda results: print(table(json.loads(Path(results).read_text())))})
