"""A planning worker's memory: what the service's pool worker holds warmed up is measured as it
warms up (benchmarks/bench_worker_memory.py), not assumed, and its native thread pools run one
thread whatever the environment gives them (legalsat.planner.threads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchmarks.bench_worker_memory import warm
from legalsat.settings import Settings

FLOOR = min(m.ge for m in Settings.model_fields["worker_memory_mb"].metadata if hasattr(m, "ge"))
# a worker's threads: its main thread and egglog's one (one more is left to the runtime)
MOST_THREADS = 3


def test_a_warmed_up_worker_fits_the_settings_floor_and_a_tight_limit_stops_its_start():
    rc, figures = warm(0)
    assert rc == 0 and 0 < figures["vm_data_mib"] < FLOOR and figures["threads"] <= MOST_THREADS, figures
    assert warm(FLOOR)[0] == 0
    assert warm(64)[0] == 3  # the pool's start fails, naming the setting


def test_a_workers_pools_run_one_thread_whatever_the_environment_sizes_them():
    """egglog's pool took RAYON_NUM_THREADS threads in every worker of one per CPU, about 2 MiB
    of the data the worker's limit counts each (256: over the 512 MiB floor, so no worker
    started under it); numpy's OpenBLAS, a thread per CPU less one, 40 MiB each, inherited by
    every worker from the forkserver."""
    rc, figures = warm(0, env={"RAYON_NUM_THREADS": "256", "OPENBLAS_NUM_THREADS": "64", "OMP_NUM_THREADS": "64"})
    assert rc == 0 and figures["threads"] <= MOST_THREADS and figures["vm_data_mib"] < FLOOR, figures


@pytest.mark.parametrize("start", ["legalsat.clients.jsonl:_worker_start",
                                   "legalsat.clients.ray_batch:_ChunkActor"])
def test_batch_workers_and_ray_actors_run_one_thread_pools(start):
    module, name = start.split(":")
    code = (f"import {module} as m; m.{name}(); from legalsat.api import optimize; "
            "from legalsat.server.worker import WARM_UP, process_status; optimize(WARM_UP); "
            "print(process_status()['Threads'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "RAYON_NUM_THREADS": "128", "OPENBLAS_NUM_THREADS": "64"})
    assert r.returncode == 0 and int(r.stdout.split()[-1]) <= MOST_THREADS, r.stderr[-2000:]


def test_the_node_cap_leaves_room_by_the_data_the_limit_counts():
    """The cap was sized from resident memory, which leaves out mapped but untouched buffers the
    limit counts: the e-graph it allowed went past the limit by their size."""
    code = ("from legalsat.server.worker import prepare, node_cap, data_bytes, process_status, BYTES_PER_ENODE; "
            "prepare('sm90'); cap = node_cap(1024, data_bytes()); "
            "print(int(process_status()['VmData'] + 2 * cap * BYTES_PER_ENODE <= 1024 << 20))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.split()[-1] == "1", r.stderr[-2000:]


def test_a_job_past_the_workers_memory_cap_is_refused_with_the_cap_in_bytes():
    """A job whose allocation fails under the worker's data cap answers memory_limit with the
    cap as its `limit` (it carried none), in a process of its own (the cap is process-wide)."""
    code = ("import json\n"
            "from legalsat.server import worker\n"
            "worker.limit_memory(1024)\n"
            "worker.JOBS['big'] = lambda payload, budget, waited: bytearray(4 << 30)\n"
            "status, body, meta = worker.run_job('big', {})\n"
            "print(status, body.decode())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    status, body = out.stdout.split(" ", 1)
    err = json.loads(body)["error"]
    assert status == "422" and err["code"] == "memory_limit", out.stdout
    assert err["limit"] == 1024 << 20 and err["value"] is None
    assert "1024 MiB" in err["message"] and "LEGALSAT_WORKER_MEMORY_MB" in err["fix"]
