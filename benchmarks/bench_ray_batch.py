"""Batch planning on Ray: requests per second with 1 and 2 actors, and what 100,000 take.

    python -m benchmarks.bench_ray_batch      # prints the table, writes benchmarks/ray_batch_results.json

The repository's planner suite (legalsat/testing/data/planner_suite.jsonl: LLM and CNN
copies, gathers and tile loads), repeated REPEAT times with distinct request ids, is planned
by `legalsat batch`'s streaming path (chunks of one line) on a local Ray instance, with 1 and
then 2 actors, and by the local process pool with 2 workers for reference. Each time covers
everything but Ray's own start: starting the actors, importing the planner in them, planning
and writing every answer in order. The per-request cost is (workers x seconds) / requests,
i.e. CPU-seconds per request; a batch of N requests on `nodes` nodes of `cores` CPUs takes
about N x cost / (nodes x cores).
"""

from __future__ import annotations

import io
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from legalsat.clients import cli
from legalsat.clients.jsonl import run_stream
from legalsat.testing.planner_suite import load_suite

HERE = Path(__file__).resolve().parent
REPEAT = 4
LIMIT = 1 << 20


def _file(d: str) -> tuple[str, int]:
    reqs = load_suite()
    path = os.path.join(d, "batch.jsonl")
    with open(path, "w") as f:
        for k in range(REPEAT):
            for r in reqs:
                f.write(json.dumps({**r, "request_id": f"{r['request_id']}-{k}"}) + "\n")
    return path, REPEAT * len(reqs)


def _run(path: str, workers: int, executor=None) -> float:
    out = io.BytesIO()
    t = time.perf_counter()
    with open(path, "rb") as f:
        run_stream(f, out, cli.plan_chunk_job("sm90", LIMIT), lambda: None, cli._plan_error, LIMIT, workers,
                   chunk_lines=1, parallel_min_bytes=0, interactive_pipes=False, start_method="forkserver",
                   executor=executor)
    took = time.perf_counter() - t
    assert out.getvalue().count(b"\n") > 0
    return took


def main() -> None:
    import ray

    from legalsat.clients.ray_batch import RayExecutor

    rows = []
    with tempfile.TemporaryDirectory() as d:
        path, n = _file(d)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        try:
            for actors in (1, 2):
                s = _run(path, actors, lambda a=actors: RayExecutor("local", a, cli.lost_chunk))
                rows.append({"mode": f"ray, {actors} actor(s)", "workers": actors, "requests": n, "seconds": round(s, 2),
                             "requests_per_s": round(n / s, 1), "cpu_ms_per_request": round(1000 * actors * s / n, 1)})
        finally:
            ray.shutdown()
        s = _run(path, 2)
        rows.append({"mode": "local pool, 2 workers", "workers": 2, "requests": n, "seconds": round(s, 2),
                     "requests_per_s": round(n / s, 1), "cpu_ms_per_request": round(1000 * 2 * s / n, 1)})
    cost = rows[1]["cpu_ms_per_request"] / 1000
    estimate = {f"{nodes} node(s) x {cores} CPUs": round(100_000 * cost / (nodes * cores) / 60, 1)
                for nodes, cores in ((1, 2), (1, 64), (4, 64), (16, 64))}
    env = {"cpus": os.cpu_count(), "python": platform.python_version(), "ray": ray.__version__,
           "machine": platform.machine()}
    (HERE / "ray_batch_results.json").write_text(json.dumps(
        {"environment": env, "repeat": REPEAT, "results": rows, "minutes_for_100000_requests": estimate},
        indent=1) + "\n")
    print(f"batch planning, planner suite x {REPEAT} ({n} requests), {env['cpus']} CPUs, ray {env['ray']}")
    print(f"{'mode':24} {'seconds':>8} {'req/s':>7} {'CPU ms/req':>10}")
    for r in rows:
        print(f"{r['mode']:24} {r['seconds']:>8} {r['requests_per_s']:>7} {r['cpu_ms_per_request']:>10}")
    print("100,000 requests (from the 2-actor cost): " + ", ".join(f"{k}: {v} min" for k, v in estimate.items()))


if __name__ == "__main__":
    main()
