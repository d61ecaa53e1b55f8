"""What fetching a large kept e-graph costs the service's other clients: /healthz polled while
the e-graph's JSON document and its viewer page are fetched, against a live service.

    python -m benchmarks.bench_egraph_fetch [OUT.json]   # prints the table, writes OUT.json
                                                          # (default benchmarks/egraph_fetch_results.json)

A rank-8 permute planned with a node limit that keeps an e-graph just under the default
LEGALSAT_EGRAPH_MAX_BYTES (32 MiB of egglog's JSON), one worker; each fetch is timed, with the
slowest /healthz answered meanwhile (polled every 50 ms from another client). The same
request planned in this process gives the e-graph's size as the service keeps it (egglog's
JSON), per e-node. The file names the commit it ran at.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from legalsat.testing.live_server import LiveServer
from legalsat.testing.planner_suite import reordered_copy

HERE = Path(__file__).resolve().parent
NODE_LIMIT = 300_000  # 79,175 e-nodes kept: just under 32 MiB


def _fetch_watched(base: str, client: httpx.Client, path: str) -> dict:
    worst, stop = [0.0], threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=base, timeout=60) as p:
            while not stop.is_set():
                t0 = time.perf_counter()
                p.get("/healthz")
                worst[0] = max(worst[0], time.perf_counter() - t0)
                time.sleep(0.05)

    watcher = threading.Thread(target=probe)
    watcher.start()
    t0 = time.perf_counter()
    r = client.get(path)
    took = time.perf_counter() - t0
    stop.set()
    watcher.join()
    return {"path": path.rsplit("/", 1)[-1] if path.endswith("/view") else "document", "status": r.status_code,
            "bytes": len(r.content), "seconds": round(took, 3), "worst_healthz_ms": round(worst[0] * 1000, 1)}


def main(out_path: str | None = None) -> None:
    from legalsat.api import optimize

    body = {"op": reordered_copy("float32", (64, 8, 5, 4, 3, 2, 2, 2)),
            "options": {"node_limit": NODE_LIMIT, "timeout_ms": 120_000, "keep_egraph": True}}
    local = optimize(body)["egraph"]  # the snapshot the service would keep, here inline
    with LiveServer(workers=1, cache_path="", log_level="warning") as srv, \
            httpx.Client(base_url=srv.url, timeout=300) as c:
        kept = c.post("/v1/optimize", json=body).json()
        eid = kept["egraph"]["id"]
        rows = [_fetch_watched(srv.url, c, f"/v1/egraphs/{eid}"), _fetch_watched(srv.url, c, f"/v1/egraphs/{eid}/view")]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip() or None
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
           "commit": commit, "enodes": kept["egraph"]["enodes"], "snapshot_bytes": len(local["snapshot"]),
           "snapshot_bytes_per_enode": round(len(local["snapshot"]) / local["enodes"]), "rows": rows}
    Path(out_path or HERE / "egraph_fetch_results.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"kept e-graph: {out['enodes']} e-nodes, {out['snapshot_bytes']} bytes ({out['snapshot_bytes_per_enode']} "
          f"an e-node); {out['machine']}, commit {commit}")
    print(f"{'fetch':10s} {'bytes':>10s} {'seconds':>8s} {'worst /healthz':>15s}")
    for r in rows:
        print(f"{r['path']:10s} {r['bytes']:10d} {r['seconds']:8.2f} {r['worst_healthz_ms']:12.1f} ms")


if __name__ == "__main__":
    main(*sys.argv[1:2])
