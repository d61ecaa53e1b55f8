"""When a time-limited request answers, against its `timeout_ms`: a rank-7 copy whose dims
never coalesce (the server tests' slow request), planned in one process under several
timeouts. Saturation takes half of a timeout (its time budget) and stops before an
iteration the last two predict would end past it (`legalsat.planner.saturate.next_iteration_s`),
the serialization of the e-graph it would leave included (`finish_s`).

    python -m benchmarks.bench_deadline [--json OUT.json]

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
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
