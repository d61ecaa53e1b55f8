"""The native thread pools of a planning process.

A planning process loads two libraries that start a thread pool as they load: numpy's
OpenBLAS (a thread per CPU, less one, up to 64: its one helper on the 2-CPU machine took 40 MiB
of data) and egglog (one thread, or as many as RAYON_NUM_THREADS says: about 2 MiB each). The
planner does no BLAS work and saturates one e-graph at a time, and its processes come one per CPU (the service's workers, `legalsat batch`'s, Ray's
actors), so the pools' other threads only take memory: memory a worker's limit (RLIMIT_DATA)
counts, and that a worker forked from the service's forkserver inherits from it (the
forkserver loads numpy) without the threads. How much: `python -m
benchmarks.bench_worker_memory` (benchmarks/worker_memory.json).
"""

from __future__ import annotations

import os

# what each pool reads, once, when its library loads: egglog's (Rust's rayon), numpy's OpenBLAS,
# and an OpenMP BLAS's
POOL_THREADS_VARS = ("RAYON_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def one_thread_pools() -> None:
    """One thread in each native pool that a library of this process loads from here on, and
    of every process this one starts from here on. For a pool of planning processes: call
    before its forkserver or its first worker starts."""
    for var in POOL_THREADS_VARS:
        os.environ[var] = "1"
