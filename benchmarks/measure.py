"""What the GPU benchmarks share: the timing method and the check-then-time loop over a
response's candidate plans."""

from __future__ import annotations

from collections.abc import Callable

REPEATS = 3
METHOD = f"median of {REPEATS} do_bench(return_mode='median') runs"


def timed(fn: Callable[[], object], spreads: list[float] | None = None, repeats: int = REPEATS) -> float:
    """Median of `repeats` do_bench medians, in ms (one do_bench median moved by up to 15%
    between runs on the H100 for a 60 us kernel); the largest / smallest ratio is appended to
    `spreads` when given."""
    from triton.testing import do_bench

    ms = sorted(do_bench(fn, return_mode="median") for _ in range(repeats))
    if spreads is not None:
        spreads.append(ms[-1] / ms[0])
    return ms[len(ms) // 2]


def candidates(name: str, response: dict, inp, want, time_it: bool, gluon: bool,
               time_fn: Callable[[Callable[[], object]], float] = timed) -> list[dict]:
    """Every plan of `response` as a kernel (TMA plans as the tl and, with `gluon`, the Gluon
    variant): output poisoned, compared bit for bit with `want`, and timed when exact and
    `time_it`. A kernel that fails is a result, reported with its error."""
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import poison, same_bits

    out = []
    for i, p in enumerate(response["plans"]):
        for variant in ["tl", "gluon"] if p["strategy"] == "tma" and gluon else ["tl"]:
            cand = {"plan": i, "strategy": p["strategy"], "variant": variant, "term": p["term"],
                    "estimated_us": p["cost"]["estimated_us"]}
            try:
                k = build_kernel(response, plan_index=i, variant=variant)
                poison(inp)
                got = inp.call(k)
                torch.cuda.synchronize()
                cand["exact"] = same_bits(got, want)
                if time_it and cand["exact"]:
                    cand["ms"] = time_fn(lambda k=k: inp.call(k, check=False))
            except Exception as e:  # a kernel that fails is a result of the run, reported
                cand["exact"] = False
                cand["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            out.append(cand)
            print(f"  {name:48s} {p['strategy']:18s} {variant:5s} exact={cand['exact']} "
                  f"{cand.get('ms', float('nan')):.4f} ms {cand.get('error', '')[:200]}", flush=True)
    return out
