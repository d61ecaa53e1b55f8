"""What a planning worker holds once warmed up, and the least LEGALSAT_WORKER_MEMORY_MB it
warms up under.

    python -m benchmarks.bench_worker_memory [--target sm90]   # writes benchmarks/worker_memory.json
                                                               # ($OUT/worker_memory.json when OUT is set)

Each measurement starts the service's own worker pool (`legalsat.server.pool.WorkerPool`, one
worker: forkserver, start-up, warm-up) in a fresh process and reads the worker's data segment
(VmData, what its RLIMIT_DATA counts), resident peak and threads. The least limit is bisected
over whole MiB between 64 and 2048. For comparison, a bare process that plans the warm-up
request with the native pools at their defaults (numpy's OpenBLAS: a thread per CPU, less
one), as a worker did before its pools were held to one thread, with OpenBLAS at one, and with
OpenBLAS at one and egglog's pool asked for 128 threads (RAYON_NUM_THREADS).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

_POOL_CHILD = """
import json, sys
from legalsat.server.pool import WorkerPool, WorkerStartError
pool = WorkerPool(1, 1, target=sys.argv[2], memory_mb=int(sys.argv[1]) or None, start_timeout_s=300)
try:
    pool.start()
except WorkerStartError:
    sys.exit(3)
from benchmarks.bench_worker_memory import figures
print(json.dumps(figures(pool.slots[0].proc.pid)))
pool.close()
"""

_BARE_CHILD = """
import json, sys
from legalsat.api import optimize
from legalsat.server.worker import WARM_UP
optimize({**WARM_UP, "target": sys.argv[2]})
from benchmarks.bench_worker_memory import figures
print(json.dumps(figures("self")))
"""


def figures(pid: int | str) -> dict:
    """A process's data (VmData, what RLIMIT_DATA counts) and resident peak in MiB, and threads."""
    from legalsat.server.worker import process_status

    st = process_status(pid)
    return {"vm_data_mib": round(st["VmData"] / 2**20, 1), "rss_peak_mib": round(st["VmHWM"] / 2**20, 1),
            "threads": st["Threads"]}


def warm(limit_mib: int, target: str = "sm90", env: dict[str, str] | None = None,
         bare: bool = False) -> tuple[int, dict | None]:
    """(exit status, the warmed-up worker's figures or None) of a fresh process that starts the
    service's pool of one worker with `limit_mib` (0: no limit), with `env` added to its
    environment; a worker that cannot warm up within its limit makes the pool's start fail
    (exit 3). `bare`: a process that plans the warm-up request itself instead (no pool, no
    limit)."""
    r = subprocess.run([sys.executable, "-c", _BARE_CHILD if bare else _POOL_CHILD, str(limit_mib), target],
                       capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    return r.returncode, json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None


def least_limit(target: str) -> int:
    """The least whole MiB the pool's worker warms up under."""
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
              "bare_process": warm(0, args.target, bare=True)[1],
              "bare_process_one_blas_thread": warm(0, args.target, {"OPENBLAS_NUM_THREADS": "1"}, bare=True)[1],
              "bare_process_one_blas_thread_egglog_128": warm(0, args.target, {"OPENBLAS_NUM_THREADS": "1",
                                                                             "RAYON_NUM_THREADS": "128"}, bare=True)[1]}
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).resolve().parent
    (out / "worker_memory.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
