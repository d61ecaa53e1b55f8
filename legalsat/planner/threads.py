"""How many threads a process's e-graphs run on.

egglog saturates on a thread pool of one thread per usable CPU, started when its bindings
load. A process that is one of a pool of one per CPU (the service's workers, `legalsat
batch`'s, Ray's actors) runs its requests one at a time, so the pool's other threads only
oversubscribe the machine, and their stacks count against a worker's memory limit (about
2 MiB of data a thread: `python -m benchmarks.bench_worker_memory`).
"""

from __future__ import annotations

import os
import sys

# the variable egglog's thread pool (Rust's rayon) reads when it starts
POOL_THREADS_VAR = "RAYON_NUM_THREADS"


def one_planner_thread() -> bool:
    """Run this process's saturations on one thread. Takes effect only before egglog's
    bindings load (they start the pool): returns whether it did."""
    if "egglog.bindings" in sys.modules:
        return False
    os.environ[POOL_THREADS_VAR] = "1"
    return True
