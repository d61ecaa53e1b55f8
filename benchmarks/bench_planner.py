"""Planning time of `legalsat optimize` on the planner suite, in-process (interpreter
start-up and the one-time rule compilation of a worker excluded, as a long-running service
or batch worker sees it).

    python -m benchmarks.bench_planner [--repeat 3]

Prints per-request times (best of --repeat), then the median and maximum.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from legalsat.api import optimize
from legalsat.testing.planner_suite import load_suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    reqs = load_suite()
    optimize({"term": "(copy (view uint8 (16 16) (16 1) 16) (view uint8 (16 16) (1 16) 16))"})  # compile rules
    rows = []
    for q in reqs:
        best, out = None, None
        for _ in range(args.repeat):
            t = time.perf_counter()
            out = optimize(q)
            dt = (time.perf_counter() - t) * 1000
            best = dt if best is None else min(best, dt)
        first = out["plans"][0]["strategy"] if out["plans"] else "-"
        rows.append((q["request_id"], best, out["status"], first, out["egraph"]["enodes"], out["egraph"]["stop_reason"]))
    for rid, ms, status, first, n, stop in rows:
        print(f"{rid:36s} {ms:8.1f} ms  {status:10s} {first:18s} {n:6d} e-nodes  {stop}")
    times = [r[1] for r in rows]
    print(f"\n{len(rows)} requests on {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms "
          f"({sum(r[2] == 'ok' for r in rows)} ok, {sum(r[2] == 'infeasible' for r in rows)} infeasible)")


if __name__ == "__main__":
    main()
