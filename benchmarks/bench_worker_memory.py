"""What a planning worker holds once warmed up, and the least LEGALSAT_WORKER_MEMORY_MB it
warms up under.

    python -m benchmarks.bench_worker_memory [--target sm90]

Each measurement is a fresh process that does what a worker does before it takes jobs
(`legalsat.server.worker`: cap its data with RLIMIT_DATA, plan WARM_UP) and reports its data
segment (VmData, what RLIMIT_DATA counts) and its resident peak. The least limit is found by
bisection over whole MiB between 64 and 2048. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_CHILD = """
import json, sys
from legalsat.server.worker import WARM_UP, limit_memory
from legalsat.api import optimize
limit = int(sys.argv[1])
limit_memory(limit or None)
try:
    optimize({**WARM_UP, "target": sys.argv[2]})
except MemoryError:
    sys.exit(3)
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
kib = lambda k: int(status[k].split()[0])
print(json.dumps({"vm_data_mib": kib("VmData") / 1024, "rss_peak_mib": kib("VmHWM") / 1024}))
"""


def warm(limit_mib: int, target: str) -> dict | None:
    """The warmed-up figures of a fresh worker-like process under `limit_mib` (0: none), or
    None when it could not warm up within it."""
    r = subprocess.run([sys.executable, "-c", _CHILD, str(limit_mib), target], capture_output=True, text=True,
                       timeout=600)
    return json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="sm90")
    args = ap.parse_args()
    free = warm(0, args.target)
    lo, hi = 64, 2048  # lo fails, hi warms up
    if warm(lo, args.target) is not None or warm(hi, args.target) is None:
        sys.exit(f"the bracket {lo}..{hi} MiB does not hold the least limit")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if warm(mid, args.target) is not None else (mid, hi)
    print(json.dumps({"target": args.target, "unlimited": free, "least_limit_mib": hi}))


if __name__ == "__main__":
    main()
