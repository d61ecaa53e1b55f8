"""Cost facts as data: a target's calibrated cost model lives in `<target>_cost.json` beside
this module, written by `benchmarks/bench_kernels.py report` from one GPU run's measured
kernel times (see benchmarks/RESULTS.md). A target without such a file keeps its analytic
facts.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from pathlib import Path

from legalsat.targets.base import CostFacts

HERE = Path(__file__).resolve().parent


def cost_path(target: str) -> Path:
    return HERE / f"{target}_cost.json"


def load_cost(target: str, analytic: CostFacts) -> CostFacts:
    """The target's calibrated cost facts, or `analytic` when none were fitted. Fields the
    file does not name keep their analytic values."""
    path = cost_path(target)
    if not path.exists():
        return analytic
    data = json.loads(path.read_text())
    known = {f.name for f in fields(CostFacts)}
    values = {k: v for k, v in data["facts"].items() if k in known}
    for name, v in values.items():  # the tables: (key, permille) pairs
        if isinstance(v, list):
            values[name] = tuple((int(k), int(e)) for k, e in v)
    return replace(analytic, **values)


def cost_document(facts: CostFacts, provenance: dict) -> dict:
    """The JSON a calibration writes: the facts and where they come from."""
    out = {k: [list(x) for x in v] if isinstance(v, tuple) else v for k, v in asdict(facts).items()}
    return {"facts": out, "provenance": provenance}
