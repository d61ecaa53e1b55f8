"""Throughput of the streaming commands, end to end (process start included).

    python -m benchmarks.bench_cli_throughput [--repeat 3] [--workers N]

Inputs (written to a temporary directory, deterministic):
- validate-descriptor, 100,000 lines: the differential-testing mix of tools/tma_generator.py
  (85% illegal, several violations per line: the slow case) and a compiler-like mix
  (realistic descriptors, mostly legal);
- bank-conflicts, 10,000 lines: random raw warp instructions (4/8/16 bytes, loads and
  stores, masks) and structured tile walks.
Prints the best wall-clock time of --repeat runs per input, and lines per second.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from tools import tma_generator as gen

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _descriptor_inputs(d: str) -> dict[str, str]:
    fuzz = os.path.join(d, "descriptors_fuzz.jsonl")
    with open(fuzz, "w") as f:
        for x in gen.descriptors(42, 100_000):
            f.write(json.dumps(x) + "\n")
    realistic = os.path.join(d, "descriptors_realistic.jsonl")
    rng = random.Random(7)
    with open(realistic, "w") as f:
        for _ in range(100_000):
            f.write(json.dumps(gen.realistic(rng)) + "\n")
    return {"validate-descriptor (fuzz mix)": fuzz, "validate-descriptor (compiler-like)": realistic}


def _bank_inputs(d: str) -> dict[str, str]:
    rng = random.Random(11)
    path = os.path.join(d, "bank.jsonl")
    with open(path, "w") as f:
        for i in range(10_000):
            if i % 10 == 9:
                req = {"op": rng.choice(["load", "store"]), "pattern": rng.choice(["rows", "cols", "ldmatrix"]),
                       "vector": 8, "tile": {"dtype": "bfloat16", "shape": [32, 64],
                                             "swizzle": rng.choice(["none", "128B"])}}
            else:
                w = rng.choice([4, 8, 16])
                req = {"access_bytes": w, "op": rng.choice(["load", "store"]),
                       "addresses": [rng.randrange(0, 4096 // w) * w if rng.random() < 0.9 else None
                                     for _ in range(32)]}
            f.write(json.dumps(req) + "\n")
    return {"bank-conflicts (raw + structured)": path}


def _time(cmd: list[str], path: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        with open(path, "rb") as src:
            done = subprocess.run(cmd + [path], stdin=src, stdout=subprocess.DEVNULL)
        if done.returncode not in (0, 4):  # 4: some lines are bad input, answered with error objects
            raise subprocess.CalledProcessError(done.returncode, done.args)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=None)
    a = ap.parse_args(argv)
    exe = [sys.executable, "-m", "legalsat.clients.cli"]
    extra = ["--workers", str(a.workers)] if a.workers else []
    with tempfile.TemporaryDirectory() as d:
        rows = []
        for name, path in _descriptor_inputs(d).items():
            n = sum(1 for _ in open(path))
            rows.append((name, n, _time(exe + ["validate-descriptor"] + extra, path, a.repeat)))
        for name, path in _bank_inputs(d).items():
            n = sum(1 for _ in open(path))
            rows.append((name, n, _time(exe + ["bank-conflicts"] + extra, path, a.repeat)))
    print(f"cores: {os.cpu_count()}, python {sys.version.split()[0]}, best of {a.repeat}")
    print(f"{'input':38s} {'lines':>8s} {'seconds':>8s} {'lines/s':>9s}")
    for name, n, t in rows:
        print(f"{name:38s} {n:8d} {t:8.2f} {n / t:9.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
