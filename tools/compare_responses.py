"""Plan a set of requests and compare the answers with a recorded run: a change to how the
planner is organised must not change what it answers.

    python -m tools.compare_responses dump REQUESTS.jsonl... -o OUT.json
    python -m tools.compare_responses compare BEFORE.json AFTER.json

`dump` plans every request (JSON Lines files, one optimize request per line) with
`legalsat.optimize` and records each response without what legitimately differs between
runs (stage timings, e-graph snapshots), plus, for every plan a kernel can be emitted from,
the emitted kernel source. `compare` reports every request whose answer differs; fields
present only in AFTER are listed separately (a change may add fields, never drop or alter
them). Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import sys

VOLATILE = ("timings_ms",)


def _strip(response: dict) -> dict:
    out = {k: v for k, v in response.items() if k not in VOLATILE}
    out["egraph"] = {k: v for k, v in response.get("egraph", {}).items() if k not in ("snapshot", "report")}
    return out


def _kernels(response: dict) -> dict:
    """Emitted source per (plan, variant), or the error the emitter gave."""
    try:
        from legalsat.kernels import emit
    except ImportError:
        return {}
    out = {}
    for i, plan in enumerate(response.get("plans", [])):
        for variant in ("tl", "gluon") if plan["strategy"] == "tma" else ("tl",):
            try:
                out[f"{i}/{variant}"] = emit(plan, variant).source
            except Exception as e:  # noqa: BLE001 - the message is what is compared
                out[f"{i}/{variant}"] = f"error: {type(e).__name__}: {e}"
    return out


def dump(paths: list[str], out_path: str) -> int:
    import legalsat

    record = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                req = json.loads(line)
                key = f"{path}:{req.get('request_id')}"
                try:
                    resp = legalsat.optimize(req)
                except Exception as e:  # noqa: BLE001
                    record[key] = {"error": f"{type(e).__name__}: {e}"}
                    continue
                record[key] = {"response": _strip(resp), "kernels": _kernels(resp)}
    with open(out_path, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
    print(f"{len(record)} requests planned into {out_path}")
    return 0


def _diff(a, b, path: str, changed: list[str], added: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                changed.append(f"{path}.{k}: dropped")
            else:
                _diff(a[k], b[k], f"{path}.{k}", changed, added)
        added.extend(f"{path}.{k}" for k in b if k not in a)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", changed, added)
    elif a != b:
        changed.append(f"{path}: {json.dumps(a)[:160]} -> {json.dumps(b)[:160]}")


def compare(before_path: str, after_path: str, expected: list[str]) -> int:
    """Print every difference; those whose path matches an `expected` regex are counted per
    pattern instead. Exit status 1 when an unexpected difference remains."""
    import re

    with open(before_path) as f:
        before = json.load(f)
    with open(after_path) as f:
        after = json.load(f)
    changed: list[str] = []
    added: list[str] = []
    for key in before:
        if key not in after:
            changed.append(f"{key}: missing")
            continue
        _diff(before[key], after[key], key, changed, added)
    patterns = [re.compile(x) for x in expected]
    counts = dict.fromkeys(expected, 0)
    left = []
    for c in changed:
        path = c.split(": ", 1)[0]
        hit = next((p for p in patterns if p.search(path)), None)
        if hit is None:
            left.append(c)
        else:
            counts[hit.pattern] += 1
    print(f"{len(before)} requests compared; {len(left)} unexpected differences")
    for c in left[:200]:
        print("  " + c)
    for pat, n in counts.items():
        print(f"  expected ({pat}): {n}")
    names = sorted({a.rsplit(".", 1)[-1] for a in added})
    if names:
        print(f"fields added ({len(added)} places): " + ", ".join(names))
    return 1 if left else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.compare_responses", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("requests", nargs="+")
    d.add_argument("-o", "--output", required=True)
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--expect", action="append", default=[],
                   help="a regex of paths whose differences are expected (repeatable); they are counted")
    a = p.parse_args(argv)
    if a.cmd == "dump":
        return dump(a.requests, a.output)
    return compare(a.before, a.after, a.expect)


if __name__ == "__main__":
    sys.exit(main())
