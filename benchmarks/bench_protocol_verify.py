"""Time protocol verification (every trip count up to the bound), per pipeline shape.

    python -m benchmarks.bench_protocol_verify [--repeat 50]

Protocols: synthesized TMA pipelines (1 and 2 roles, load-only and load-store, 1-6 stages)
and Triton's Gluon TMA tutorial pipeline. Prints the median and worst time of --repeat
verifications each, and the trip counts covered.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from legalsat.protocols.synth import TmaPipelineSpec, synthesize_tma_pipeline
from legalsat.protocols.verify import verify_protocol
from legalsat.testing.protocols import gluon_elementwise_add_tma

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    a = ap.parse_args(argv)
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


if __name__ == "__main__":
    raise SystemExit(main())
