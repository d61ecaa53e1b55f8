"""The H100 runs of `benchmarks/bench_budget.py` against the planner as it is now: each
recorded workload and budget planned again, each plan paired with the measured time of the
kernel `build_kernel` runs for it by default (what `benchmarks.bench_budget report` tabulates
and `tests/planner/test_copy_fields.py` checks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks"
RUNS = ("budget_results.json", "budget_heldout_results.json")
# earlier runs of a run's workloads whose kernels a plan may find when the run did not measure
# them (the first listed first): legalsat-planner/23's held-out run measured the 50257-row
# transpose's skewed 64 x 2 and 64 x 4 tiles, and the run before the skewed tile its plain ones
EARLIER = {"budget_heldout_results.json": ("budget_heldout_results_planner23.json",
                                           "budget_heldout_results_unskewed.json")}


def measured_key(strategy: str, variant: str, tiles: list, stages: list, forms: list) -> str:
    """What a recorded kernel is found by: its strategy, variant, and pieces' tiles, stage
    counts (TMA boxes of one tile under different budgets differ in stages alone) and staged
    forms (a skewed and a plain tile of one shape ran 1305.6 and 976.6 us:
    `legalsat.kernels.piece_forms`)."""
    return json.dumps([strategy, variant, tiles, stages, forms])


@dataclass(frozen=True)
class Replayed:
    """One workload under one budget: its plans now, best first, each with its kernel's
    measured time in us (None where that kernel was not measured), and the same-size copy's."""

    workload: str
    budget: str
    plans: tuple[tuple[dict, float | None], ...]
    copy_us: float


def measured(workload: dict) -> dict[str, float]:
    """A recorded workload's kernels' times in us by `measured_key`."""
    return {measured_key(k["strategy"], k["variant"], k["tiles"], k["stages"], k["forms"]): k["ms"] * 1e3
            for k in workload["kernels"] if "ms" in k}


def budgets(workload: dict) -> list[str]:
    """The budgets a recorded workload was planned under, in the run's order."""
    return list(dict.fromkeys(x["budget"] for k in workload["kernels"] for x in k["planned"]))


def replay(workload: dict, budget: str, earlier: tuple[dict, ...] = ()) -> Replayed:
    """`workload` (a run's record) planned now under `budget` ("block": the target's whole);
    a kernel the run did not measure is looked up in `earlier` records of the workload."""
    from legalsat.api import optimize
    from legalsat.kernels import default_variant, piece_forms
    from legalsat.testing.workloads import workloads

    req = next(w for w in workloads() if w.name == workload["name"]).request()
    if budget != "block":
        req["options"]["smem_bytes"] = int(budget)
    times: dict[str, float] = {}
    for w in reversed((workload, *earlier)):  # the run's own times over earlier ones
        times |= measured(w)
    plans = tuple((p, times.get(measured_key(p["strategy"], default_variant(p, True), [pc["tile"] for pc in p["pieces"]],
                                             [pc.get("num_stages") for pc in p["pieces"]], piece_forms(p))))
                  for p in optimize(req)["plans"])
    return Replayed(workload["name"], budget, plans, workload["copy_same_size_ms"] * 1e3)


@cache
def _recorded(name: str) -> dict:
    """A recorded run's results (read once a process; callers do not change them)."""
    return json.loads((RECORDED / name).read_text())


def earlier_records(run: str, workload: str) -> tuple[dict, ...]:
    """The `EARLIER` runs' records of `workload` (by name) for recorded run `run`."""
    return tuple(w for name in EARLIER.get(run, ()) for w in _recorded(name)["workloads"] if w["name"] == workload)


def replayed(results: dict, run: str = "") -> Iterator[Replayed]:
    """Every workload and budget of one recorded run (file name `run`), planned now."""
    for w in results["workloads"]:
        earlier = earlier_records(run, w["name"])
        for budget in budgets(w):
            yield replay(w, budget, earlier)


def recorded_runs() -> Iterator[tuple[str, dict]]:
    """(file name, results) of the recorded runs."""
    for name in RUNS:
        yield name, _recorded(name)
