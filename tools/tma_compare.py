"""Compare legalsat's TMA legality model with recorded driver verdicts; export the CI corpus.

    python -m tools.tma_compare PROBE_DIR_OR_TAR... [--export tests/data/tma_sm90_driver_corpus.jsonl.gz]

Each argument is the output of tools/tma_probe.py (a directory, or the tma.tar.gz that
tools/gpu_ground_truth.sh packs). The descriptors are regenerated from their seeds (grid
and random) and checked against the recorded digests, then judged by the sm90 model and by
the documented rules alone (the sm100 facts: what the driver API reference states). The
table printed last counts agreement, false-legal (model says legal, driver refused) and
false-illegal (model refuses, driver accepted) per source.

--export writes the regression corpus CI replays: every grid descriptor plus a sample of the
random ones stratified by which rules they break (all legal and every single-rule class
represented), each with the driver's result.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import random
import sys
import tarfile
import tempfile

from legalsat.analyses.tma_legality import check_descriptor
from legalsat.targets import SM90, SM100
from legalsat.terms.descriptor import TmaDescriptor
from tools import tma_generator as gen

HERE = os.path.dirname(os.path.abspath(__file__))


def _open_probe(path: str) -> str:
    if os.path.isdir(path):
        inner = os.path.join(path, "tma")
        return inner if os.path.exists(os.path.join(inner, "probe.json")) else path
    tmp = tempfile.mkdtemp(prefix="tma-probe-")
    with tarfile.open(path) as t:
        t.extractall(tmp, filter="data")
    return _open_probe(tmp)


def load_probe(path: str) -> tuple[dict, list[tuple[str, dict, int]]]:
    """(probe metadata, [(source, descriptor, driver CUresult)]) with digests verified."""
    d = _open_probe(path)
    with open(os.path.join(d, "probe.json")) as f:
        meta = json.load(f)
    grid = None
    rows = []
    for c in meta["chunks"]:
        if c.get("kind", "random") == "random":
            seed, n = c.get("a", c.get("seed")), c.get("b", c.get("n"))
            ds = list(gen.descriptors(seed, n))
            name = c.get("name", f"verdicts-{seed}")
        else:
            grid = grid if grid is not None else gen.grid()
            ds = grid[c["a"]:c["b"]]
            name = c["name"]
        if gen.digest(ds) != c["digest"]:
            # The generator (usually the grid) changed since this probe: these verdicts belong
            # to descriptors that can no longer be regenerated, so they are left out.
            print(f"{path}: skipped chunk {name}: it does not regenerate to its recorded digest "
                  "(the generator changed since this probe)", file=sys.stderr)
            continue
        with open(os.path.join(d, f"{name}.bin"), "rb") as f:
            codes = f.read()
        rows += [(c.get("kind", "random"), x, code) for x, code in zip(ds, codes, strict=True)]
    return meta, rows


def judge(rows, target):
    """Counter of (source, outcome) and per-row rule tuples for `target`."""
    counts: collections.Counter = collections.Counter()
    rules = []
    for source, d, code in rows:
        if code == 254:  # the binding refused the arguments and ctypes was not tried (old probes)
            counts[(source, "not probed")] += 1
            rules.append(None)
            continue
        v = check_descriptor(TmaDescriptor.from_fields(**d), target)
        driver_legal = code == 0
        outcome = ("agree" if v.legal == driver_legal else
                   "false-legal" if v.legal else "false-illegal")
        counts[(source, outcome)] += 1
        rules.append(v.rules)
    return counts, rules


def export(rows, rules, path: str, meta: dict, seed: int = 0) -> int:
    """Write the stratified regression corpus; returns the number of descriptors written."""
    rng = random.Random(seed)
    chosen = [i for i, (src, _, code) in enumerate(rows) if src == "grid" and code != 254]
    by_class: dict[str, list[int]] = collections.defaultdict(list)
    for i, (src, _, code) in enumerate(rows):
        if src != "random" or code == 254 or rules[i] is None:
            continue
        r = sorted(set(rules[i]))
        key = "legal" if not r else (r[0] if len(r) == 1 else "multi")
        by_class[key].append(i)
    quota = {"legal": 20000, "multi": 12000}
    for key, idx in sorted(by_class.items()):
        k = min(len(idx), quota.get(key, 2500))
        chosen += rng.sample(idx, k)
    with gzip.open(path, "wt", compresslevel=9) as f:
        for i in chosen:
            src, d, code = rows[i]
            f.write(json.dumps({"descriptor": d, "driver_result": code, "source": src},
                               separators=(",", ":")) + "\n")
    with open(path.replace(".jsonl.gz", ".meta.json"), "w") as f:
        json.dump({k: meta[k] for k in ("gpu", "driver_version", "nvidia_smi", "binding", "python",
                                        "compute_capability") if k in meta}
                  | {"descriptors": len(chosen),
                     "how": "tools/gpu_ground_truth.sh (tools/tma_probe.py) on the GPU machine, "
                            "exported by tools/tma_compare.py --export"}, f, indent=1)
    return len(chosen)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("probes", nargs="+")
    ap.add_argument("--export", default=None, help="write the CI regression corpus here")
    a = ap.parse_args(argv)
    rows, meta = [], {}
    for p in a.probes:
        m, r = load_probe(p)
        meta = meta or m
        rows += r
    table = {}
    rules_sm90 = None
    for name, target in (("sm90 model", SM90), ("documented rules", SM100)):
        counts, rules = judge(rows, target)
        table[name] = counts
        if target is SM90:
            rules_sm90 = rules
    print(f"driver: {meta.get('nvidia_smi')} (CUDA {meta.get('driver_version')}), "
          f"cuda-bindings {meta.get('binding')}")
    print(f"{'checker':18s} {'source':7s} {'descriptors':>11s} {'agree':>9s} {'false-legal':>11s} "
          f"{'false-illegal':>13s}")
    for name, counts in table.items():
        for src in ("grid", "random"):
            n = sum(v for (s, o), v in counts.items() if s == src and o != "not probed")
            if not n:
                continue
            print(f"{name:18s} {src:7s} {n:11d} {counts[(src, 'agree')]:9d} "
                  f"{counts[(src, 'false-legal')]:11d} {counts[(src, 'false-illegal')]:13d}")
    if a.export:
        n = export(rows, rules_sm90, a.export, meta)
        print(f"exported {n} descriptors to {a.export}")
    bad = sum(v for (s, o), v in table["sm90 model"].items() if o.startswith("false"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
