"""When a time-limited request answers, against its `timeout_ms`: a rank-7 copy whose dims
never coalesce (the server tests' slow request), planned in one process under several
timeouts. Saturation takes half of a timeout (its time budget) and stops before an
iteration the last two predict would end past it (`legalsat.planner.saturate.next_iteration_s`),
the serialization of the e-graph it would leave included (`finish_s`).

    python -m benchmarks.bench_deadline [--json OUT.json]
    python -m benchmarks.bench_deadline --short [--json OUT.json]

`--short`: the same request under the default node limit and budgets of 1 to 100 ms (a JIT's),
five times each: how far past its budget an answer comes (a proof always gets islpy's minimum
operations, `legalsat.planner.budget.ISL_MIN_OPERATIONS`, however little is left) and what it
holds.

Each timeout three times: without either prediction (the loop stopping only once past the
budget), with the next round's alone (the serialization after the rounds left out), and with
both. Prints per timeout the answer's time, status, stop reason, rounds and e-nodes (best of 3).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from unittest import mock

from legalsat.testing.planner_suite import reordered_copy

TIMEOUTS_MS = (1500, 2500, 4000)
SHORT_TIMEOUTS_MS = (1, 5, 20, 50, 100)


def short(figures: dict) -> None:
    """The short budgets (`--short`): each five times, default options otherwise."""
    from legalsat.api import optimize

    optimize({"op": reordered_copy()})  # the request's own rules and proofs warm, as a worker's are
    rows = figures["short"] = []
    for timeout in SHORT_TIMEOUTS_MS:
        runs = []
        for _ in range(5):
            t = time.perf_counter()
            out = optimize({"op": reordered_copy(), "options": {"timeout_ms": timeout}})
            runs.append(((time.perf_counter() - t) * 1000, out))
        times = sorted(ms for ms, _ in runs)
        rows.append({"timeout_ms": timeout, "answered_ms": [round(ms, 1) for ms, _ in runs],
                     "median_ms": round(times[2], 1), "max_ms": round(times[-1], 1),
                     "statuses": sorted({out["status"] for _, out in runs}),
                     "plans": sorted({len(out["plans"]) for _, out in runs}),
                     "reasons": sorted({x["rule"] for _, out in runs for r in out["rejected"] for x in r["reasons"]})})
        print(json.dumps(rows[-1]), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--short", action="store_true", help="budgets of 1 to 100 ms instead")
    args = ap.parse_args()
    if args.short:
        figures = {"python": platform.python_version()}
        short(figures)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=1)
        return
    import legalsat.planner.saturate as saturate
    from legalsat.api import optimize

    optimize({"term": "(copy (view uint8 (16 16) (16 1) 16) (view uint8 (16 16) (1 16) 16))"})  # compile rules
    figures = {"python": platform.python_version()}
    rounds, finish = saturate.next_iteration_s, saturate.finish_s
    for label, predict, after in (("without_prediction", lambda last, before: 0.0, lambda nodes: 0.0),
                                  ("with_round_prediction", rounds, lambda nodes: 0.0),
                                  ("with_prediction", rounds, finish)):
        rows = figures[label] = []
        with mock.patch.object(saturate, "next_iteration_s", predict), mock.patch.object(saturate, "finish_s", after):
            for timeout in TIMEOUTS_MS:
                runs = []
                for _ in range(3):
                    t = time.perf_counter()
                    out = optimize({"op": reordered_copy(), "options": {"node_limit": 400_000, "timeout_ms": timeout}})
                    runs.append(((time.perf_counter() - t) * 1000, out))
                ms, out = min(runs, key=lambda r: r[0])
                eg = out["egraph"]
                rows.append({"timeout_ms": timeout, "answered_ms": round(ms, 1), "status": out["status"],
                             "stop_reason": eg["stop_reason"], "iterations": eg["iterations"],
                             "enodes": eg["enodes"], "saturate_ms": out["timings_ms"]["saturate"]})
                print(label, json.dumps(rows[-1]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
