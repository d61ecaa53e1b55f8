"""Time protocol verification (every trip count up to the bound), per pipeline shape.

    python -m benchmarks.bench_protocol_verify [--repeat 50]
    python -m benchmarks.bench_protocol_verify --bound   # protocols at the parser's work bound

Protocols: synthesized TMA pipelines (1 and 2 roles, load-only and load-store, 1-6 stages)
and Triton's Gluon TMA tutorial pipeline. Prints the median and worst time of --repeat
verifications each, and the trip counts covered. `--bound`: protocols near the work bound
the parser sets (legalsat.schemas.protocol.MAX_VERIFY_WORK: the sum over the trip counts
checked of the squared unrolled operations), each verified 3 times: what one request the
bound lets through costs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from legalsat.protocols.synth import TmaPipelineSpec, synthesize_tma_pipeline
from legalsat.protocols.verify import verify_protocol
from legalsat.testing.protocols import arrivals, gluon_elementwise_add_tma, racing_roles, store_epilogue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--bound", action="store_true", help="time protocols near the parser's work bound")
    a = ap.parse_args(argv)
    if a.bound:
        return _at_the_bound()
    cases = [(f"gluon tutorial, {s} stages", gluon_elementwise_add_tma(s)) for s in (2, 4)]
    for roles in (1, 2):
        for store in (0, 16384):
            for s in (4, 6):
                spec = TmaPipelineSpec((16384, 16384), store_bytes=store, stages=s, roles=roles,
                                       smem_bytes=1 << 20)
                kind = "load+store" if store else "load"
                cases.append((f"{roles} role(s), {s} stages, {kind}", synthesize_tma_pipeline(spec)))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {a.repeat} runs each")
    print(f"{'protocol':34s} {'trip counts':>11s} {'median ms':>10s} {'max ms':>8s}")
    for name, proto in cases:
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            v = verify_protocol(proto)
            times.append((time.perf_counter() - t) * 1000)
        assert v.ok
        print(f"{name:34s} {f'0..{max(v.trip_counts)}':>11s} {statistics.median(times):10.2f} "
              f"{max(times):8.2f}")
    return 0


def _at_the_bound() -> int:
    from legalsat.protocols.verify import trip_count_range
    from legalsat.schemas.protocol import MAX_VERIFY_WORK, parse_protocol, verify_work

    with open(os.path.join(ROOT, "examples", "pipelines.jsonl")) as f:
        tutorial = json.loads(f.readline())
    cases = [(f"gluon tutorial, {n} iterations", {**tutorial, "iterations": n}) for n in (1024, 1400)]
    cases += [(f"8 roles x {c} x 6 arrivals", arrivals(8, c)) for c in (20, 26)]
    # every load races: the read/write judgement's pairs (millions) and violations (thousands)
    cases += [(f"8 roles racing, 16 x {n} loads", racing_roles(8, 16, n)) for n in (20, 30)]
    # one TMA store per iteration, waited for at once: stores x writes (the store rules' pairs)
    cases += [(f"store epilogue, {n} iterations", store_epilogue(n)) for n in (1600, 3162)]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, 3 runs each; bound {MAX_VERIFY_WORK:.3g}")
    print(f"{'protocol':34s} {'trip counts':>11s} {'ops/run':>8s} {'work/bound':>10s} {'median s':>9s} {'max s':>6s}")
    for name, obj in cases:
        proto = parse_protocol(obj)  # refused past the bound
        trips = trip_count_range(proto)
        work, (ops, _, _) = verify_work(proto, trips)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            verify_protocol(proto)
            times.append(time.perf_counter() - t)
        print(f"{name:34s} {len(trips):11d} {ops:8d} {work / MAX_VERIFY_WORK:10.2f} {statistics.median(times):9.2f} "
              f"{max(times):6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
