"""A planning worker's start-up (legalsat.server.worker.prepare) and the floor of
LEGALSAT_WORKER_MEMORY_MB: what a warmed-up worker holds is measured as it warms up
(benchmarks/bench_worker_memory.py), not assumed, and does not grow with the host's CPUs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.bench_worker_memory import warm
from legalsat.settings import Settings

FLOOR = min(m.ge for m in Settings.model_fields["worker_memory_mb"].metadata if hasattr(m, "ge"))


def test_a_warmed_up_worker_fits_the_settings_floor_and_a_tight_limit_stops_its_warm_up():
    rc, figures = warm(0)
    assert rc == 0 and 0 < figures["vm_data_mib"] < FLOOR, (rc, figures, FLOOR)
    assert warm(FLOOR)[0] == 0
    # too little to warm up: a MemoryError (exit 1) or an allocation inside egglog (abort)
    assert warm(64)[0] in (1, -6)


def test_a_worker_plans_on_one_thread_whatever_the_host_gives_egglog(monkeypatch):
    """egglog's pool took a thread per usable CPU in every worker (one worker per CPU), each
    about 2 MiB of the data the worker's limit counts: with 128 threads a warmed-up worker
    held more than the 512 MiB floor and could not start under it."""
    monkeypatch.setenv("RAYON_NUM_THREADS", "128")  # what a 128-CPU host gives egglog
    rc, figures = warm(0)
    assert rc == 0 and figures["threads"] < 8 and figures["vm_data_mib"] < FLOOR, figures
    assert warm(FLOOR)[0] == 0


@pytest.mark.parametrize("start", ["legalsat.clients.jsonl:_worker_start",
                                   "legalsat.clients.ray_batch:_ChunkActor"])
def test_batch_workers_and_ray_actors_plan_on_one_thread(start):
    module, name = start.split(":")
    code = (f"import {module} as m; m.{name}(); from legalsat.api import optimize; "
            "from legalsat.server.worker import WARM_UP; optimize(WARM_UP); "
            "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('Threads')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "RAYON_NUM_THREADS": "128"})
    assert r.returncode == 0 and int(r.stdout.split()[-1]) < 8, r.stderr[-2000:]
