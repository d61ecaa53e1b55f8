"""What the work after saturation's rounds costs an e-node (the rate behind
`legalsat.planner.saturate.finish_s`): the serialization of the saturated e-graph that gives
the e-class count and the viewer's snapshot, timed where the planner times it.

    python -m benchmarks.bench_finish [--json OUT.json]

Every request of the planner suite, then the server tests' slow request (a rank-7 copy whose
dims never coalesce) stopped by node limits of 2,000 to 150,000 e-nodes and by timeouts of
1.5, 2.5 and 4 s (its e-graph cut mid-growth). Prints, per run, the e-nodes, the finish's
milliseconds and microseconds per e-node.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from unittest import mock

from legalsat.testing.planner_suite import reordered_copy, requests

NODE_LIMITS = (2_000, 5_000, 10_000, 20_000, 40_000, 80_000, 150_000)
TIMEOUTS_MS = (1500, 2500, 4000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    import legalsat.planner.saturate as saturate
    from legalsat.api import optimize

    runs: list[tuple[float, int]] = []
    learn = saturate._learn_finish_rate

    def record(seconds: float, nodes: int) -> None:
        runs.append((seconds, nodes))
        learn(seconds, nodes)

    suite = requests()
    for r in suite:  # rules compiled, caches warm
        optimize(r)
    figures: dict = {"python": platform.python_version()}
    with mock.patch.object(saturate, "_learn_finish_rate", record):
        for label, reqs in (("planner_suite", suite),
                            ("node_limit", [{"op": reordered_copy(), "options": {"node_limit": n, "timeout_ms": 60_000}}
                                            for n in NODE_LIMITS]),
                            ("time_limit", [{"op": reordered_copy(), "options": {"node_limit": 400_000,
                                                                                  "timeout_ms": t}}
                                            for t in TIMEOUTS_MS])):
            runs.clear()
            for r in reqs:
                optimize(r)
            rows = [{"enodes": n, "finish_ms": round(s * 1e3, 2), "us_per_enode": round(s / n * 1e6, 2)}
                    for s, n in runs]
            figures[label] = rows
            per = [r["us_per_enode"] for r in rows]
            print(f"{label}: {len(rows)} runs, e-nodes {min(r['enodes'] for r in rows)}-"
                  f"{max(r['enodes'] for r in rows)}, us per e-node median {statistics.median(per):.2f} "
                  f"(min {min(per):.2f}, max {max(per):.2f})", flush=True)
            for r in rows if label != "planner_suite" else []:
                print(f"  {r['enodes']:8d} e-nodes {r['finish_ms']:9.2f} ms {r['us_per_enode']:6.2f} us/e-node")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
