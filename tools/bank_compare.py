"""Compare legalsat's sm90 bank model with Nsight Compute measurements; export the CI corpus.

    python -m tools.bank_compare MEASURED.jsonl|bank.tar.gz... [--export tests/data/bank_sm90_ncu.jsonl.gz]

Inputs are tools/bank_probe.py outputs (bank_measured.jsonl, or the bank.tar.gz packed by
tools/gpu_ground_truth.sh). Prints, per (op, access width), how many instructions the
model predicts exactly; exits non-zero on any mismatch. --export writes the de-duplicated
measured instructions (op, width, offsets, ncu wavefronts, family) that CI replays.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import tarfile

from legalsat.analyses.bank_conflicts import analyze_access  # noqa: E402
from legalsat.targets import SM90  # noqa: E402
from legalsat.terms.smem import MemOp, SharedAccess  # noqa: E402

OPS = {"ld": MemOp.LOAD, "st": MemOp.STORE}


def load(path: str) -> list[dict]:
    """Measured instructions (nop baselines checked to be zero and dropped)."""
    if path.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path) as t:
            member = next(m for m in t.getmembers() if m.name.endswith("bank_measured.jsonl"))
            lines = t.extractfile(member).read().decode().splitlines()
    else:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            lines = f.read().splitlines()
    out = []
    for line in lines:
        r = json.loads(line)
        if r["family"] == "nop":
            assert not any(r["measured"].values()), f"nonzero baseline in {path}: {r}"
            continue
        if "measured" in r:
            r["wavefronts"] = r["measured"][f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{r['op']}.sum"]
        out.append(r)
    return out


def predict(r: dict) -> int:
    return analyze_access(SharedAccess(OPS[r["op"]], r["access_bytes"], tuple(r["addresses"])),
                          SM90).wavefronts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--export", default=None)
    a = ap.parse_args(argv)
    rows: dict[tuple, dict] = {}
    conflicts = 0
    for p in a.inputs:
        for r in load(p):
            key = (r["op"], r["access_bytes"], tuple(r["addresses"]))
            if key in rows and rows[key]["wavefronts"] != r["wavefronts"]:
                conflicts += 1  # the same instruction measured twice with different counts
            rows.setdefault(key, r)
    total, exact = collections.Counter(), collections.Counter()
    misses = []
    for r in rows.values():
        k = (r["op"], r["access_bytes"])
        total[k] += 1
        if predict(r) == r["wavefronts"]:
            exact[k] += 1
        elif len(misses) < 10:
            misses.append(r)
    print(f"{'op':3s} {'bytes':>5s} {'instructions':>12s} {'exact':>6s}")
    for k in sorted(total):
        print(f"{k[0]:3s} {k[1]:5d} {total[k]:12d} {exact[k]:6d}")
    print(f"all       {sum(total.values()):12d} {sum(exact.values()):6d}   "
          f"(repeat measurements that disagreed: {conflicts})")
    for r in misses:
        print("MISS", r["family"], r["op"], r["access_bytes"], "ncu", r["wavefronts"], "model",
              predict(r), r["addresses"])
    if a.export:
        with gzip.open(a.export, "wt", compresslevel=9) as f:
            for r in rows.values():
                f.write(json.dumps({"op": r["op"], "access_bytes": r["access_bytes"],
                                    "addresses": r["addresses"], "ncu_wavefronts": r["wavefronts"],
                                    "family": r["family"]}, separators=(",", ":")) + "\n")
        print(f"exported {len(rows)} instructions to {a.export}")
    return 0 if sum(exact.values()) == sum(total.values()) and not conflicts else 1


if __name__ == "__main__":
    raise SystemExit(main())
