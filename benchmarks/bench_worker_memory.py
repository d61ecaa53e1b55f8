"""What a planning worker holds once warmed up, and the least LEGALSAT_WORKER_MEMORY_MB it
warms up under.

    python -m benchmarks.bench_worker_memory [--target sm90]   # writes $OUT/worker_memory.json

Each measurement is a fresh process that runs the worker's own start-up
(`legalsat.server.worker.prepare`: one planner thread, its data capped with RLIMIT_DATA, the
warm-up request planned) and reports its data segment (VmData, what RLIMIT_DATA counts), its
resident peak and its threads. The least limit is found by bisection over whole MiB between 64
and 2048. For comparison, the same warm-up without the one-thread start-up and egglog's pool
at 128 threads (what a 128-CPU host gives it by default).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = """
import json, sys
limit, target, threads = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if threads == "worker":
    from legalsat.server.worker import prepare
    prepare(target, limit or None)
else:
    from legalsat.api import optimize
    from legalsat.server.worker import WARM_UP
    optimize({**WARM_UP, "target": target})
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
kib = lambda k: int(status[k].split()[0])
print(json.dumps({"vm_data_mib": round(kib("VmData") / 1024, 1), "rss_peak_mib": round(kib("VmHWM") / 1024, 1),
                  "threads": int(status["Threads"])}))
"""


def warm(limit_mib: int, target: str = "sm90", pool_threads: int | None = None) -> tuple[int, dict | None]:
    """(exit status, the warmed-up figures or None) of a fresh process that runs the worker's
    start-up under `limit_mib` (0: no limit); with `pool_threads`, the warm-up alone with
    egglog's pool at that many threads instead. A worker that cannot warm up within its limit
    exits 1 (a MemoryError) or is aborted (-6: an allocation inside egglog)."""
    env = dict(os.environ)
    if pool_threads is not None:
        env["RAYON_NUM_THREADS"] = str(pool_threads)
    r = subprocess.run([sys.executable, "-c", _CHILD, str(limit_mib), target,
                        "worker" if pool_threads is None else "pool"], capture_output=True, text=True,
                       timeout=600, env=env)
    return r.returncode, json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None


def least_limit(target: str) -> int:
    """The least whole MiB the worker's start-up warms up under."""
    lo, hi = 64, 2048  # lo fails, hi warms up
    if warm(lo, target)[1] is not None or warm(hi, target)[1] is None:
        sys.exit(f"the bracket {lo}..{hi} MiB does not hold the least limit")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if warm(mid, target)[1] is not None else (mid, hi)
    return hi


def main() -> None:
    from legalsat.settings import usable_cpus

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="sm90")
    args = ap.parse_args()
    result = {"machine": f"{os.uname().machine}, {usable_cpus()} usable CPUs, Python {sys.version.split()[0]}",
              "target": args.target, "worker": warm(0, args.target)[1], "least_limit_mib": least_limit(args.target),
              "egglog_pool_128_threads": warm(0, args.target, pool_threads=128)[1]}
    out = Path(os.environ.get("OUT", ".")) / "worker_memory.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
