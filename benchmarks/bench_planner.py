"""Planning time of `legalsat optimize` on the planner suite, in one process: what a JIT
that calls the planner as a library sees.

    python -m benchmarks.bench_planner [--repeat 1] [--json OUT.json]

Every request of legalsat/testing/data/planner_suite.jsonl is planned once in the order of
the suite (after one warm-up request that compiles the rules), each a request the process
has not seen; `--repeat N` plans the whole suite N times and keeps each request's best.
Prints per-request times, the median and maximum, and the median of each stage (the
response's `timings_ms`). Then a fresh interpreter's import + first plan, best of 3.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

from legalsat.testing.planner_suite import load_suite

COLD = ("import time; t = time.perf_counter(); from legalsat.api import optimize; "
        "from legalsat.testing.planner_suite import suite_request; "
        "optimize(suite_request('transpose-8192sq-bf16')); print(time.perf_counter() - t)")


def cold_start_s(runs: int = 3) -> float:
    """A fresh interpreter: import legalsat.api and plan one suite request (best of `runs`)."""
    return min(float(subprocess.run([sys.executable, "-c", COLD], check=True, capture_output=True,
                                     text=True).stdout) for _ in range(runs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    from legalsat.api import optimize

    reqs = load_suite()
    optimize({"term": "(copy (view uint8 (16 16) (16 1) 16) (view uint8 (16 16) (1 16) 16))"})  # compile rules
    best: dict[str, tuple[float, dict, dict]] = {}
    for _ in range(args.repeat):
        for q in reqs:
            t = time.perf_counter()
            out = optimize(q)
            ms = (time.perf_counter() - t) * 1000
            if q["request_id"] not in best or ms < best[q["request_id"]][0]:
                best[q["request_id"]] = (ms, out["timings_ms"], out)
    print(f"{'request':36s} {'total':>8s}    {'saturate':>8s} {'solve':>6s} {'verify':>6s}  {'status':10s} "
          f"{'first plan':18s} {'e-nodes':>7s} {'rounds':>6s}  stop")
    for rid, (ms, t, out) in best.items():
        first = out["plans"][0]["strategy"] if out["plans"] else "-"
        eg = out["egraph"]
        print(f"{rid:36s} {ms:8.1f} ms {t['saturate']:8.1f} {t['solve']:6.1f} {t['verify']:6.1f}  {out['status']:10s} "
              f"{first:18s} {eg['enodes']:7d} {eg['iterations']:6d}  {eg['stop_reason']}")
    times = [v[0] for v in best.values()]
    stages = {k: round(statistics.median(v[1][k] for v in best.values()), 2)
              for k in next(iter(best.values()))[1] if k != "total"}
    slowest = max(best, key=lambda r: best[r][0])
    cold = cold_start_s()
    figures = {"requests": len(times), "repeat": args.repeat, "median_ms": round(statistics.median(times), 2),
               "max_ms": round(max(times), 2), "slowest": slowest, "stage_median_ms": stages,
               "cold_start_s": round(cold, 3), "python": platform.python_version(),
               "ok": sum(v[2]["status"] == "ok" for v in best.values())}
    print(f"\n{len(times)} requests, Python {platform.python_version()}: median {figures['median_ms']:.1f} ms, "
          f"max {figures['max_ms']:.1f} ms ({slowest}); stage medians {stages}; "
          f"fresh process import + first plan {cold:.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
