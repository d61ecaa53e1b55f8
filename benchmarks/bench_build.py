"""Host time of `build_kernel` on the planner's responses: what a client pays, before any
launch, to turn a response into a kernel. A whole response is checked first (its term parsed,
a gather's fields, then its plan's tile walk or slab proved with islpy); a bare plan skips the
request's checks.

    python -m benchmarks.bench_build [--json OUT.json]   # CPU: every response of benchmarks/kernel_plans.json

Per response, in one process (the client imported first): the first `build_kernel(response)`
(the process's first also loads what the checks use: the prover with islpy, the targets and
the request schema), the best of 5 more, and the best of 5
`build_kernel(plan)` on its first plan alone. The prover keeps its box checks per process
(legalsat.planner.prove), so a response built again pays emission, the other checks and the
kernel object. Prints the median and maximum of each, and the slowest.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from pathlib import Path

REPEATS = 5


def ms(fn, *args) -> float:
    """Milliseconds of one `fn(*args)`."""
    t = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t) * 1e3


def main(argv: list[str]) -> None:
    from benchmarks.bench_kernels import PLANS
    from legalsat.clients.triton import build_kernel

    rows = []
    for name, entry in json.loads(PLANS.read_text()).items():
        resp = entry["response"]
        first = ms(build_kernel, resp)
        again = min(ms(build_kernel, resp) for _ in range(REPEATS))
        plan = min(ms(build_kernel, resp["plans"][0]) for _ in range(REPEATS))
        rows.append({"workload": name, "first_ms": round(first, 3), "again_ms": round(again, 3),
                     "plan_alone_ms": round(plan, 3)})
        print(f"{name[:52]:52s} first {first:8.2f} ms  again {again:6.2f} ms  plan alone {plan:6.2f} ms", flush=True)
    summary = {"responses": len(rows), "python": platform.python_version()}
    for key in ("first_ms", "again_ms", "plan_alone_ms"):
        vals = [r[key] for r in rows]
        slowest = max(rows, key=lambda r: r[key])
        summary[key] = {"median": round(statistics.median(vals), 3), "max": round(max(vals), 3),
                        "slowest": slowest["workload"]}
    print(json.dumps(summary, ensure_ascii=False))
    if "--json" in argv:
        path = Path(argv[argv.index("--json") + 1])
        path.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
