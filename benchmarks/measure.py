"""What the GPU benchmarks share: the timing method and the check-then-time loop over a
response's candidate plans."""

from __future__ import annotations

from collections.abc import Callable

REPEATS = 3
# items this short (launch-bound: a 517 x 33 transpose's medians spread up to 15% between
# runs) take more do_bench runs
SHORT_MS, SHORT_REPEATS = 0.05, 11
METHOD = (f"median of {REPEATS} do_bench(return_mode='median') runs ({SHORT_REPEATS} for items under "
          f"{SHORT_MS * 1000:.0f} us); a workload's candidates, PyTorch, torch.compile and the same-size "
          "copies timed together in interleaved rounds")


def same_size_copy(moved_bytes: int, device="cuda") -> Callable[[], object]:
    """The copy limit at a workload's size: `copy_` between two contiguous buffers of half its
    moved bytes each (it reads and writes as many as the workload does). The buffers live as
    long as the returned function."""
    import torch

    a = torch.empty(moved_bytes // 2, dtype=torch.uint8, device=device)
    b = torch.empty_like(a)
    return lambda: b.copy_(a)


def timed(fn: Callable[[], object], spreads: list[float] | None = None, repeats: int = REPEATS) -> float:
    """Median of `repeats` do_bench medians (`SHORT_REPEATS` when the first is under
    `SHORT_MS`), in ms (one do_bench median moved by up to 15% between runs on the H100 for a
    60 us kernel); the largest / smallest ratio is appended to `spreads` when given."""
    return timed_together([fn], spreads, repeats)[0]


def timed_together(fns: list[Callable[[], object]], spreads: list[float] | None = None,
                   repeats: int = REPEATS, graph: bool = False) -> list[float]:
    """`timed` for several functions at once, in interleaved rounds (one do_bench of each per
    round), so that drift during the run and the order they come in weigh on all alike: the
    first of a workload's candidates measured alone ran up to 15% slower than the same
    kernel measured later (a 517 x 33 transpose on the H100). `graph`: each function
    captured in a CUDA graph and replayed (do_bench_cudagraph): the device's time alone,
    without the host's launch, as a kernel runs inside a captured model (torch.compile's
    reduce-overhead mode, serving engines)."""
    from triton.testing import do_bench, do_bench_cudagraph

    def bench(fn):
        return do_bench_cudagraph(fn, return_mode="median") if graph else do_bench(fn, return_mode="median")

    if not fns:
        return []
    runs: list[list[float]] = [[] for _ in fns]
    rounds = repeats
    r = 0
    while r < rounds:
        for k, fn in enumerate(fns):
            runs[k].append(bench(fn))
        if r == 0 and min(ms[0] for ms in runs) < SHORT_MS:
            rounds = max(repeats, SHORT_REPEATS)
        r += 1
    out = []
    for ms in runs:
        ms.sort()
        if spreads is not None:
            spreads.append(ms[-1] / ms[0])
        out.append(ms[len(ms) // 2])
    return out


def timed_both_ways(fns: list[Callable[[], object]], repeats: int = REPEATS) -> tuple[list[float], list[float]]:
    """`timed_together` eagerly (launches included), then from CUDA graphs (the device's time
    alone): (ms eagerly, ms from graphs), each in `fns`' order."""
    return timed_together(fns, repeats=repeats), timed_together(fns, repeats=repeats, graph=True)


def timed_against_copy(names: list[str], fns: list[Callable[[], object]], repeats: int = REPEATS,
                       digits: int = 1) -> list[dict]:
    """A probe's kernels timed together (`timed_together`), the last of `fns` the same-size
    copy: one {kernel, us, copy_ratio} per function, each printed."""
    ms = timed_together(fns, repeats=repeats)
    rows = [{"kernel": n, "us": round(t * 1e3, digits), "copy_ratio": round(ms[-1] / t, 3)} for n, t in zip(names, ms)]
    for r in rows:
        print(f"{r['kernel']:40s} {r['us']:8.{digits}f} us  {r['copy_ratio']:.3f} of the copy", flush=True)
    return rows


def write_probe(filename: str, workload: str, rows: list[dict]) -> None:
    """A probe's rows with the GPU's environment, as $OUT/`filename` (or ./`filename`)."""
    import json
    import os
    from pathlib import Path

    import torch

    from benchmarks.environment import gpu_environment

    result = {"env": gpu_environment(torch.device("cuda")), "workload": workload, "kernels": rows}
    (Path(os.environ.get("OUT", ".")) / filename).write_text(json.dumps(result, indent=1) + "\n")


def checked_kernels(name: str, response: dict, inp, want, gluon: bool) -> tuple[list[dict], list]:
    """Every plan of `response` as a kernel (TMA plans as the tl and, with `gluon`, the Gluon
    variant): output poisoned, compared bit for bit with `want`. Returns one record per
    kernel (`default`: the variant `build_kernel` runs by default on this GPU) and the
    (record, kernel) pairs of the exact ones. A kernel that fails is a result,
    reported with its error."""
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.kernels import default_variant, kernel_variants
    from legalsat.testing.torch_reference import poison, same_bits

    out, kernels = [], []
    for i, p in enumerate(response["plans"]):
        default = default_variant(p, gluon)
        for variant in kernel_variants(p, gluon):
            cand = {"plan": i, "strategy": p["strategy"], "variant": variant, "term": p["term"],
                    "estimated_us": p["cost"]["estimated_us"], "default": variant == default}
            try:
                k = build_kernel(response, plan_index=i, variant=variant)
                poison(inp)
                got = inp.call(k)
                torch.cuda.synchronize()
                cand["exact"] = same_bits(got, want)
                if cand["exact"]:
                    kernels.append((cand, k))
            except Exception as e:  # a kernel that fails is a result of the run, reported
                cand["exact"] = False
                cand["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            out.append(cand)
    return out, kernels


def candidates(name: str, response: dict, inp, want, time_it: bool, gluon: bool,
               spreads: list[float] | None = None,
               peers: dict[str, Callable[[], object]] | None = None) -> tuple[list[dict], dict[str, float | str]]:
    """`checked_kernels`, then, when `time_it`, the exact ones timed together with `peers`
    (PyTorch, torch.compile, same-size copies: name -> function) in the same interleaved
    rounds (`timed_together`), so that every figure of a workload's row comes from one set of
    rounds; items under `SHORT_MS` also from CUDA graphs (`graph_ms`, peers' `*_graph_ms`).
    Returns the candidate records (with `ms` when timed) and each peer's time in ms."""
    out, kernels = checked_kernels(name, response, inp, want, gluon)
    peer_ms: dict[str, float | str] = {}
    if time_it:
        named = list((peers or {}).items())
        fns = [fn for _, fn in named] + [lambda k=k: inp.call(k, check=False) for _, k in kernels]
        times = timed_together(fns, spreads)
        peer_ms = {label: ms for (label, _), ms in zip(named, times)}
        for (cand, _), ms in zip(kernels, times[len(named):]):
            cand["ms"] = ms
        if times and min(times) < SHORT_MS:
            # launch-scale items: do_bench's events also take in the host's launch of each call
            # whenever the device waits for it (a Python launch path on a slow host), so they
            # are timed from CUDA graphs too: the device's time alone
            try:
                graph = timed_together(fns, repeats=SHORT_REPEATS, graph=True)
                peer_ms |= {f"{label[:-3]}_graph_ms": ms for (label, _), ms in zip(named, graph)}
                for (cand, _), ms in zip(kernels, graph[len(named):]):
                    cand["graph_ms"] = ms
            except Exception as e:  # noqa: BLE001 - a call that syncs with the host cannot be captured
                peer_ms["graph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    for cand in out:
        print(f"  {name:48s} {cand['strategy']:18s} {cand['variant']:5s} exact={cand['exact']} "
              f"{cand.get('ms', float('nan')):.4f} ms {cand.get('error', '')[:200]}", flush=True)
    return out, peer_ms
