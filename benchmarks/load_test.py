"""Bounded load test of the legalsat service (loopback only; stops by itself).

    python -m benchmarks.load_test [--url URL] [--clients 32] [--seconds 30] [--workers 2]

Without --url it starts `legalsat serve` on a free loopback port with a fresh plan cache.
Phase 1 (mixed): `clients` concurrent clients for `seconds` send a mix of
  - cached:   requests planned once before the run (answered from the plan cache),
  - uncached: copies of random shapes and dtypes, new to the cache, under a 5 s deadline
              (planning takes ~10-20 ms; the rest is waiting for one of the 2 workers),
  - deadline: large requests under a 60 ms budget: the planner keeps to it and answers 200
              saying what it could not finish (stop_reason time_limit, planning_deadline or
              proof_budget reasons); 504 only when a request's whole budget went waiting
              in the queue (answered when a worker comes for it, at the latest at the budget
              plus the grace, LEGALSAT_DEADLINE_GRACE_MS),
while a separate client polls /healthz every 100 ms. Every answer other than 200, and other
than 504 for the deadline class, counts as an error.
Phase 2 (cached only): `clients` connections send only cached requests for `cached_seconds`,
through wrk (Debian's `wrk`) when it is installed, since a Python client tops out below the
service's rate on two cores; otherwise through the Python clients (a lower bound).
Prints a table of requests, rates and latency percentiles per class; --json writes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from legalsat.testing.planner_suite import reordered_copy

CACHED = [
    {"op": {"kind": "copy", "src": {"dtype": dt, "shape": [m, n], "strides": [n, 1]},
            "dst": {"dtype": dt, "shape": [m, n], "strides": [1, m]}}}
    for dt, m, n in (("bfloat16", 8192, 8192), ("float32", 4096, 4096), ("bfloat16", 50257, 4096),
                     ("float16", 1024, 768), ("bfloat16", 128, 80), ("float32", 333, 777))
] + [
    {"op": {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [128256, 4096], "strides": [4096, 1]},
            "axis": 0, "index": {"count": 8192, "distribution": "random"}}},
    {"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [4096, 4096], "strides": [4096, 1]},
            "tile": [128, 64], "consumer": "wgmma_a"}},
]

# a node limit far above the default: seconds of planning
DEADLINE = {"op": reordered_copy(), "options": {"node_limit": 2_000_000, "timeout_ms": 60}}


UNCACHED_DEADLINE_MS = 5000


def uncached(rng: random.Random) -> dict:
    m, n = rng.randint(2, 20000), rng.randint(2, 20000)
    dt = rng.choice(["bfloat16", "float16", "float32", "uint8"])
    return {"op": {"kind": "copy", "src": {"dtype": dt, "shape": [m, n], "strides": [n, 1]},
                   "dst": {"dtype": dt, "shape": [m, n], "strides": [1, m]}},
            "options": {"timeout_ms": UNCACHED_DEADLINE_MS}}


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def _client(http: httpx.AsyncClient, end: float, rng: random.Random, mix: dict, out: dict) -> None:
    classes, weights = zip(*mix.items())
    while time.monotonic() < end:
        kind = rng.choices(classes, weights)[0]
        body = rng.choice(CACHED) if kind == "cached" else uncached(rng) if kind == "uncached" else DEADLINE
        t = time.perf_counter()
        try:
            r = await http.post("/v1/optimize", json=body)
            status = r.status_code
        except httpx.HTTPError as e:
            status = f"{type(e).__name__}"
        dt = time.perf_counter() - t
        rec = out[kind]
        rec["n"] += 1
        rec["lat"].append(dt)
        rec["status"][str(status)] = rec["status"].get(str(status), 0) + 1
        if not (status == 200 or (kind == "deadline" and status == 504)):
            rec["errors"] += 1


async def _health(http: httpx.AsyncClient, end: float, out: dict) -> None:
    while time.monotonic() < end:
        t = time.perf_counter()
        try:
            r = await http.get("/healthz", timeout=2.0)
            ok = r.status_code == 200
        except httpx.HTTPError:
            ok = False
        out["polls"] += 1
        out["failures"] += 0 if ok else 1
        out["lat"].append(time.perf_counter() - t)
        await asyncio.sleep(0.1)


async def phase(url: str, clients: int, seconds: float, mix: dict, seed: int) -> dict:
    limits = httpx.Limits(max_connections=clients + 2, max_keepalive_connections=clients + 2)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120.0) as http, \
            httpx.AsyncClient(base_url=url, timeout=5.0) as hhttp:
        out = {k: {"n": 0, "errors": 0, "lat": [], "status": {}} for k in mix}
        health = {"polls": 0, "failures": 0, "lat": []}
        start = time.monotonic()
        end = start + seconds
        await asyncio.gather(_health(hhttp, end, health),
                             *(_client(http, end, random.Random(seed + i), mix, out) for i in range(clients)))
        wall = time.monotonic() - start
    summary = {"seconds": round(wall, 2), "clients": clients, "classes": {}, "healthz": {
        "polls": health["polls"], "failures": health["failures"],
        "p99_ms": round(1000 * pct(health["lat"], 0.99), 2), "max_ms": round(1000 * max(health["lat"] or [0]), 2)}}
    total = 0
    for k, rec in out.items():
        total += rec["n"]
        summary["classes"][k] = {"requests": rec["n"], "per_s": round(rec["n"] / wall, 1),
                                 "errors": rec["errors"], "status": rec["status"],
                                 "p50_ms": round(1000 * pct(rec["lat"], 0.5), 2),
                                 "p99_ms": round(1000 * pct(rec["lat"], 0.99), 2),
                                 "mean_ms": round(1000 * statistics.fmean(rec["lat"]), 2) if rec["lat"] else None}
    summary["requests"] = total
    summary["per_s"] = round(total / wall, 1)
    summary["errors"] = sum(r["errors"] for r in out.values())
    return summary


async def warm(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120.0) as http:
        for body in CACHED:
            r = await http.post("/v1/optimize", json=body)
            r.raise_for_status()


def _lua_string(s: str) -> str:
    return "[==[" + s + "]==]"


def wrk_phase(url: str, clients: int, seconds: float) -> dict | None:
    """Cached-only throughput measured with wrk (C, two threads), whose own cost per request
    is far below a Python client's, so the figure is the service's. None without wrk."""
    exe = shutil.which("wrk")
    if exe is None:
        return None
    bodies = ", ".join(_lua_string(json.dumps(b)) for b in CACHED)
    script = f"""local bodies = {{ {bodies} }}
local i = 0
request = function()
  i = i + 1
  return wrk.format("POST", "/v1/optimize", {{["Content-Type"] = "application/json"}}, bodies[(i % #bodies) + 1])
end
"""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    run = subprocess.run([exe, "-t2", f"-c{clients}", f"-d{int(seconds)}s", "--latency", "-s", f.name,
                          url + "/v1/optimize"], capture_output=True, text=True, timeout=seconds + 60)
    Path(f.name).unlink()
    text = run.stdout

    def grab(pattern: str, conv=float, default=None):
        m = re.search(pattern, text, re.M)
        return conv(m.group(1)) if m else default

    def ms(tok: str | None) -> float | None:
        if tok is None:
            return None
        num, unit = re.match(r"([\d.]+)(\w+)", tok).groups()
        return round(float(num) * {"us": 1e-3, "ms": 1.0, "s": 1000.0}[unit], 2)

    requests = grab(r"(\d+) requests in", int, 0)
    non2xx = grab(r"Non-2xx or 3xx responses: (\d+)", int, 0)
    errors = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", text))
    return {"seconds": seconds, "clients": clients, "tool": "wrk", "requests": requests,
            "per_s": grab(r"Requests/sec:\s+([\d.]+)"), "errors": non2xx + errors,
            "p50_ms": ms(grab(r"^\s+50%\s+(\S+)", str)), "p99_ms": ms(grab(r"^\s+99%\s+(\S+)", str))}


def run(url: str, clients: int = 32, seconds: float = 30.0, cached_seconds: float = 10.0,
        seed: int = 0) -> dict:
    """Both phases against a running service; returns their summaries."""
    asyncio.run(warm(url))
    mixed = asyncio.run(phase(url, clients, seconds, {"cached": 86, "uncached": 13, "deadline": 1}, seed))
    cached = wrk_phase(url, clients, cached_seconds)
    if cached is None:  # without wrk: Python clients (client-bound: a lower bound of the service's rate)
        cached = asyncio.run(phase(url, clients, cached_seconds, {"cached": 1}, seed + 1000))
    return {"mixed": mixed, "cached_only": cached}


def table(result: dict) -> str:
    lines = ["| phase | class | requests | per s | p50 ms | p99 ms | errors | statuses |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for name, ph in result.items():
        if ph.get("tool") == "wrk":
            lines.append(f"| {name} (wrk) | cached | {ph['requests']} | {ph['per_s']} | {ph['p50_ms']} | "
                         f"{ph['p99_ms']} | {ph['errors']} | |")
            continue
        for k, c in ph["classes"].items():
            lines.append(f"| {name} | {k} | {c['requests']} | {c['per_s']} | {c['p50_ms']} | {c['p99_ms']} "
                         f"| {c['errors']} | {json.dumps(c['status'])} |")
        h = ph["healthz"]
        lines.append(f"| {name} | /healthz | {h['polls']} | | | {h['p99_ms']} | {h['failures']} | "
                     f"max {h['max_ms']} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running service (default: start one)")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--cached-seconds", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=2, help="workers of the started service")
    ap.add_argument("--json", help="write the summaries here")
    args = ap.parse_args(argv)
    if args.url:
        result = run(args.url, args.clients, args.seconds, args.cached_seconds)
    else:
        from legalsat.testing.live_server import LiveServer

        with tempfile.TemporaryDirectory() as d, \
                LiveServer(workers=args.workers, cache_path=str(Path(d) / "plans.sqlite3"),
                           log_level="warning") as srv:
            result = run(srv.url, args.clients, args.seconds, args.cached_seconds)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return 0 if result["mixed"]["errors"] == 0 and result["mixed"]["healthz"]["failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
