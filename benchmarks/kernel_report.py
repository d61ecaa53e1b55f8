"""Calibrate the planner's cost model on one GPU run and report it (benchmarks/RESULTS.md).

    python -m benchmarks.bench_kernels report path/to/kernel_results.json

The fit is of the planner's own model, not of a copy of it: every estimate comes from the
planner (a what-if target whose cost facts are the candidate values). Efficiencies enter the
model as factors of 1/efficiency, so around the current facts log(estimate) is linear in
log(efficiency); the exponents are read off the planner by perturbing one fact at a time,
and a ridge least-squares fit of log(measured) gives the new facts. Two rounds. Then every
workload is planned again with the fitted facts, and its plan regret is the measured time of
the planner's first plan over the best measured time among all its candidates.
"""

from __future__ import annotations

import datetime
import json
import math
import statistics
from dataclasses import replace
from pathlib import Path

from legalsat.testing.workloads import Workload

HERE = Path(__file__).resolve().parent
PARAMS = ("w1", "w2", "w4", "w8", "w16", "tma", "tma_transpose", "staged", "shuffle", "shuffle_gather",
          "inspector", "scatter",
          "row_overhead_bytes", "sort_bytes_per_slot", "way_penalty")
BOUNDS = {"row_overhead_bytes": (0, 4096), "sort_bytes_per_slot": (8, 65536), "way_penalty": (0, 2000)}
STEP = 1.25
ROUNDS = 4
RIDGE = 0.002  # per fact, in log units: facts no measurement moves stay where they were


def _get(facts, p: str) -> int:
    if p[0] == "w" and p[1:].isdigit():
        return dict(facts.by_width)[int(p[1:])]
    return getattr(facts, p)


def _set(facts, p: str, v: float):
    lo, hi = BOUNDS.get(p, (50, 3000))
    v = int(min(max(round(v), lo), hi))
    if p[0] == "w" and p[1:].isdigit():
        w = int(p[1:])
        return replace(facts, by_width=tuple((k, v if k == w else e) for k, e in facts.by_width))
    return replace(facts, **{p: v})


class WhatIf:
    """Plans the workloads under candidate cost facts (each a throwaway target)."""

    def __init__(self, entries: dict):
        self.entries = entries
        self.n = 0
        self.order: dict[str, list[str]] = {}  # the planner's order of the last estimates' plans

    def estimates(self, facts) -> dict[tuple[str, str], float]:
        from legalsat.api import optimize
        from legalsat.targets import TARGETS
        from legalsat.targets.sm90 import SM90

        self.n += 1
        TARGETS["sm90"] = replace(SM90, cost=facts)
        try:
            out = {}
            for wname, e in self.entries.items():
                plans = optimize(e["workload_request"])["plans"]
                self.order[wname] = [p["strategy"] for p in plans]
                for p in plans:
                    out[(wname, p["strategy"])] = p["cost"]["estimated_us"]
            return out
        finally:
            TARGETS["sm90"] = SM90


def measured(results: dict, plans: dict, key: str = "ms") -> tuple[dict, dict]:
    """(workload, strategy) -> ms of the kernel build_kernel runs by default on that GPU
    (`default_variant`), and -> {variant: ms} for the table. `key`: "graph_ms" for the times
    from CUDA graphs (only the launch-scale items have them)."""
    from legalsat.kernels import default_variant

    env = results["env"]  # runs recorded before "capability" was kept name their GPU only
    sm90 = env.get("capability", 90 if ("H100" in env["gpu"] or "H200" in env["gpu"]) else 0) == 90
    chosen, variants = {}, {}
    for w in results["workloads"]:
        for c in w["candidates"]:
            if c.get(key):
                variants.setdefault((w["name"], c["strategy"]), {})[c["variant"]] = c[key]
                plan = plans[w["name"]]["response"]["plans"][c["plan"]]
                if c["variant"] == default_variant(plan, sm90):
                    chosen[(w["name"], c["strategy"])] = c[key]
    return chosen, variants


def fit(entries: dict, meas: dict, analytic) -> tuple[object, list[dict]]:
    """Fitted cost facts and the fit's rounds (rms log error before / after)."""
    import numpy as np

    whatif = WhatIf(entries)
    facts = analytic
    rounds = []
    for _ in range(ROUNDS):
        base = whatif.estimates(facts)
        keys = [k for k in meas if k in base]
        y = np.array([math.log(meas[k] * 1e3) - math.log(base[k]) for k in keys])
        cols = []
        for p in PARAMS:
            bumped = whatif.estimates(_set(facts, p, max(_get(facts, p), 16) * STEP))
            cols.append([math.log(base[k] / bumped[k]) / math.log(STEP) for k in keys])
        d = np.array(cols).T  # log est(u) ~ log est(0) - d @ u
        a = np.vstack([-d, math.sqrt(RIDGE) * np.eye(len(PARAMS))])
        b = np.concatenate([y, np.zeros(len(PARAMS))])
        u, *_ = np.linalg.lstsq(a, b, rcond=None)
        before = float(np.sqrt(np.mean(y ** 2)))
        # damped step: the model is only locally log-linear (and facts are clipped), so halve
        # the step until the error falls; a round that cannot lower it ends the fit
        for damp in (1.0, 0.5, 0.25, 0.125):
            trial = facts
            for p, du in zip(PARAMS, u):
                trial = _set(trial, p, max(_get(trial, p), 16) * math.exp(damp * max(min(du, 2.5), -2.5)))
            est = whatif.estimates(trial)
            after = math.sqrt(sum((math.log(meas[k] * 1e3) - math.log(est[k])) ** 2 for k in keys) / len(keys))
            if after < before:
                break
        if after >= before:
            break
        facts = trial
        rounds.append({"rms_log_error_before": round(before, 4), "rms_log_error_after": round(after, 4),
                       "points": len(keys), "step": damp})
    return facts, rounds


def residuals(meas: dict, est: dict) -> list[tuple[str, str, float, float]]:
    """(workload, strategy, measured us, estimated us) of every measured candidate."""
    return [(w, s, meas[(w, s)] * 1e3, est[(w, s)]) for (w, s) in sorted(meas) if (w, s) in est]


def regrets(entries: dict, meas: dict, est: dict, order: dict[str, list[str]]) -> dict[str, dict]:
    """Per workload: the planner's first plan (the first of `order` that was measured: the
    planner's own ranking, `legalsat.planner.rank.plan_rank`), its time, the best time."""
    out = {}
    for wname in entries:
        cands = {s: v for (w, s), v in est.items() if w == wname and (w, s) in meas}
        if not cands:
            continue
        first = next(s for s in order[wname] if s in cands)
        best = min(cands, key=lambda s: meas[(wname, s)])
        out[wname] = {"first": first, "best": best, "regret": meas[(wname, first)] / meas[(wname, best)]}
    return out


def report(results_path: Path, keep_facts: bool = False) -> None:
    """Calibrate the cost facts on a run and write them (legalsat/targets/sm90_cost.json), the
    run (kernel_results.json) and RESULTS.md's kernel section. `keep_facts`: the shipped facts
    stay as they are (no fit, nothing written to the cost file); the regrets and residuals are
    theirs against this run."""
    from legalsat.targets.calibration import cost_document, cost_path
    from legalsat.targets.sm90 import ANALYTIC, SM90

    results = json.loads(results_path.read_text())
    plans = json.loads((HERE / "kernel_plans.json").read_text())
    entries = {name: {"workload_request": Workload(**e["workload"]).request()} for name, e in plans.items()}
    meas, variants = measured(results, plans)
    # the tile walk's facts come from benchmarks/bench_tiles.py calibrate, one program's bandwidth
    # from tools/launch_bound_sweep.py report, what a copy's fields cost from
    # benchmarks/bench_budget.py: kept as they are, in the fit and the regrets too
    kept = {k: getattr(SM90.cost, k) for k in ("tile_walk_ns", "tile_tma", "tma_latency_ns", "program_gbps",
                                                "tma_dst_run", "staged_tile", "program_ns")}
    analytic = replace(ANALYTIC, copy_bandwidth_gbps=int(round(results["copy_gbps"])), **kept)
    whatif = WhatIf(entries)
    before = regrets(entries, meas, whatif.estimates(analytic), whatif.order)  # the uncalibrated model
    env = results["env"]
    if keep_facts:
        facts, rounds = SM90.cost, []
    else:
        facts, rounds = fit(entries, meas, analytic)
        facts = replace(facts, source=f"calibrated on {env['gpu']} (driver {env['driver']}, triton {env['triton']})")
    after_est = whatif.estimates(facts)
    after = regrets(entries, meas, after_est, whatif.order)
    # launch-scale items: the same regret on the device's time (eagerly, the host's launch is
    # most of their time, and which candidate is fastest changes from process to process:
    # tools/launch_bound_sweep.py)
    device = regrets(entries, measured(results, plans, "graph_ms")[0], after_est, whatif.order)
    if not keep_facts:  # the fitted facts, with the cost file's earlier provenance of the facts this fit keeps
        provenance = {"gpu": env["gpu"], "driver": env["driver"], "torch": env["torch"], "triton": env["triton"],
                      "copy_gbps": round(results["copy_gbps"], 1), "date": datetime.date.today().isoformat(),
                      "fit": rounds, "by": "benchmarks/bench_kernels.py report"}
        old = json.loads(cost_path("sm90").read_text()).get("provenance", {}) if cost_path("sm90").exists() else {}
        for kept_from in ("tile_walk", "fields"):
            if kept_from in old:
                provenance[kept_from] = old[kept_from]
        cost_path("sm90").write_text(json.dumps(cost_document(facts, provenance), indent=1) + "\n")
    (HERE / "kernel_results.json").write_text(json.dumps(results, indent=1) + "\n")
    md = results_md(results, variants, meas, before, after, facts, rounds, residuals(meas, after_est), keep_facts,
                    device)
    write_section(HERE / "RESULTS.md", md)
    print(md)


BEGIN, END = "<!-- kernels: written by benchmarks/bench_kernels.py report -->", "<!-- kernels: end -->"


def write_section(path: Path, md: str) -> None:
    """Replace (or append) the kernel section of RESULTS.md; the rest of the file is kept."""
    text = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{md.rstrip()}\n{END}\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


def launch_scale_md(results: dict) -> list[str]:
    """The items under `SHORT_MS`, timed from CUDA graphs in the same run (the device's time
    alone): lines of a table, or none when the run has no such times."""
    rows = [w for w in results["workloads"] if any("graph_ms" in c for c in w["candidates"])]
    if not rows:
        return []
    lines = ["", "Items this short are timed from CUDA graphs too (`do_bench_cudagraph`, the same rounds' "
             "functions: the device's time alone; the events around an eager call also take in the host's launch "
             "whenever the device waits for it):", "",
             "| workload | PyTorch µs | torch.compile µs | legalsat µs (best) | copy_ µs (same size) | "
             "× torch.compile | ÷ same-size copy |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for w in rows:
        best = min((c for c in w["candidates"] if "graph_ms" in c), key=lambda c: c["graph_ms"])
        us = best["graph_ms"] * 1e3
        tc, cp = w.get("torch_compile_graph_ms"), w.get("copy_same_size_graph_ms")
        lines.append(f"| {w['name']} | {w.get('torch_graph_ms', 0) * 1e3:.2f} | "
                     + (f"{tc * 1e3:.2f}" if tc else "–") + f" | {us:.2f} ({best['strategy']}/{best['variant']}) | "
                     + (f"{cp * 1e3:.2f}" if cp else "–") + " | " + (f"{tc * 1e3 / us:.3f}" if tc else "–")
                     + " | " + (f"{cp * 1e3 / us:.3f}" if cp else "–") + " |")
    return lines


def results_md(results, variants, meas, before, after, facts, rounds, resid, kept: bool = False,
               device: dict | None = None) -> str:
    env = results["env"]
    bw = results["copy_gbps"]
    lines = ["## Kernels on the GPU (every plan strategy, against PyTorch and the copy limit)", "",
             f"One run of `benchmarks/bench_kernels.py run` on {env['gpu']} ({env['sms']} SMs), driver "
             f"{env['driver']}, CUDA {env['cuda']}, torch {env['torch']}, triton {env['triton']}, Python "
             f"{env['python']}. Device-to-device copy in the same run: **{bw:.0f} GB/s** (1 GiB, read + write). "
             f"Times: {results.get('timing', {}).get('method', 'do_bench median')}; largest spread between the "
             f"runs of one item {results.get('timing', {}).get('max_spread', '–')}x, median "
             f"{results.get('timing', {}).get('median_spread', '–')}x.",
             "", "GB/s count bytes read + written once; in parentheses the share of the copy bandwidth. Every "
             "kernel's output was poisoned, then compared bit for bit with PyTorch's over the whole "
             "destination. The same-size copy is the faster of `copy_` and legalsat's direct kernel on a "
             "contiguous copy of as many bytes, in the same run. A cell with two figures shows the Gluon kernel, then the tl one (TMA pipelines, "
             "the staged-row gathers); `build_kernel` runs the one `default_variant` picks, and regret uses "
             "that one.", "",
             "| workload | PyTorch | torch.compile | direct (gluon / tl) | tma gluon / tl | staged_smem | shuffle | inspector_executor | best × PyTorch | best × torch.compile | best ÷ same-size copy | planner's first (regret) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for w in results["workloads"]:
        n = w["name"]

        def g(ms, w=w):
            return f"{w['bytes'] / ms / 1e6:.0f} ({w['bytes'] / ms / 1e6 / bw:.2f})"
        cells = []
        for s in ("direct", "tma", "staged_smem", "shuffle", "inspector_executor"):
            vs = variants.get((n, s))
            if not vs:
                cells.append("–")
            else:  # a strategy with a Gluon form: both kernels
                cells.append(" / ".join(g(vs[v]) for v in ("gluon", "tl") if v in vs))
        best = min((meas[k] for k in meas if k[0] == n), default=None)
        t = w.get("torch_ms")
        tc = w.get("torch_compile_ms")
        r = after.get(n)
        speedup = f"{t / best:.2f}" if t and best else "–"
        # three places: the targets (faster than torch.compile, 0.95 of the copy) sit at the second
        over_compile = f"{tc / best:.3f}" if tc and best else "–"
        first = f"{r['first']} ({r['regret']:.3f})" if r else "–"
        c = min(w.get("copy_same_size_ms") or 1e9, w.get("copy_same_size_legalsat_ms") or 1e9)
        same = f"{c / best:.3f}" if c < 1e9 and best else "–"
        lines.append(f"| {n} | {g(t) if t else '–'} | {g(tc) if tc else '–'} | " + " | ".join(cells)
                     + f" | {speedup} | {over_compile} | {same} | {first} |")
    lines += launch_scale_md(results)
    inexact = [(w["name"], c["strategy"], c["variant"]) for w in results["workloads"] + results["cases"]
               for c in w["candidates"] if not c.get("exact")]
    total = sum(len(w["candidates"]) for w in results["workloads"] + results["cases"])
    lines += ["", f"Kernels checked bit-exact: {total - len(inexact)} of {total} ({len(results['cases'])} small "
              f"odd-shape cases and {len(results['workloads'])} workloads, every candidate plan, both TMA variants)."
              + (f" Inexact: {inexact}" if inexact else ""), "",
              "`torch.compile` is the same PyTorch op compiled (`dynamic=False`), checked bit-exact and timed "
              "after its compile: "
              + (f"{sum(1 for w in results['workloads'] if w.get('torch_compile_exact'))} of "
                 f"{len(results['workloads'])} exact." if any('torch_compile_exact' in w for w in results['workloads'])
                 else "not run."), "",
              "### Plan regret", "",
              "Measured time of the planner's first plan ÷ best measured time among its candidates; for the "
              "launch-scale items, also on their time from CUDA graphs (the device's time: eagerly the host's "
              "launch is most of theirs, and which candidate is fastest changes from process to process, "
              "\"Launch-bound candidates\" below).", "",
              "| workload | analytic model: first (regret) | " + ("shipped" if kept else "calibrated")
              + ": first (regret) | the same, device time |", "| --- | --- | --- | --- |"]
    device = device or {}
    for n in after:
        b, a, d = before.get(n), after[n], device.get(n)
        lines.append(f"| {n} | {b['first']} ({b['regret']:.3f}) | {a['first']} ({a['regret']:.3f}) | "
                     + (f"{d['first']} ({d['regret']:.3f}) |" if d else "– |"))
    worst = max(after, key=lambda n: after[n]["regret"])
    long_worst = max((a["regret"] for n, a in after.items() if n not in device), default=1.0)
    lines += ["", f"Worst regret {'of the shipped cost facts' if kept else 'after calibration'}: "
              f"**{after[worst]['regret']:.3f}** ({worst}); of the items that are not launch-scale "
              f"**{long_worst:.3f}**"
              + (f"; of the launch-scale items on their device time **{max(d['regret'] for d in device.values()):.3f}**"
                 if device else "") + ".", "",
              "### Calibrated cost facts (sm90)", "",
              ("Not refitted on this run (`report --keep-facts`): those of `legalsat/targets/sm90_cost.json` "
               f"({facts.source}), which the planner loads at import." if kept else
               "Written to `legalsat/targets/sm90_cost.json`; the planner loads them at import."), "",
              "| fact | value |", "| --- | --- |"]
    lines += [f"| copy bandwidth | {facts.copy_bandwidth_gbps} GB/s |",
              f"| direct, by access width (‰ of copy) | {', '.join(f'{w} B: {e}' for w, e in facts.by_width)} |"]
    lines += [f"| {k} (‰) | {getattr(facts, k)} |"
              for k in ("tma", "tma_transpose", "staged", "shuffle", "shuffle_gather", "inspector", "scatter",
                        "way_penalty")]
    lines += [f"| {k} | {getattr(facts, k)} |" for k in ("row_overhead_bytes", "sort_bytes_per_slot", "launch_ns")]
    if rounds:
        lines += ["", "Fit rounds (rms of log(measured / estimated) over the measured candidates): "
                  + "; ".join(f"{r['rms_log_error_before']:.3f} → {r['rms_log_error_after']:.3f} ({r['points']} points)"
                              for r in rounds)]
    lines += ["", "| workload | strategy | measured µs | calibrated estimate µs |", "| --- | --- | --- | --- |"]
    lines += [f"| {w} | {s} | {m:.1f} | {e:.1f} |" for w, s, m, e in resid]
    return "\n".join(lines + copy_curve_md(results)) + "\n"


def copy_curve_fit(curve: list[list[float]]) -> tuple[float, float]:
    """Least-squares line time = fixed + bytes / bandwidth over (bytes moved, ms) points:
    (fixed µs, bandwidth GB/s)."""
    slope, fixed = statistics.linear_regression([b for b, _ in curve], [ms * 1e3 for _, ms in curve])
    return fixed, 1e-3 / slope


def copy_curve_md(results: dict) -> list[str]:
    """The copy limit by size: `copy_` of 4 MiB .. 2 GiB in the same run, and its line fit."""
    curve = results.get("copy_curve")
    if not curve:
        return []
    bw = results["copy_gbps"]
    fixed, slope_bw = copy_curve_fit(curve)
    lines = ["", "### The copy limit by size", "",
             f"`copy_` of n bytes (read + write 2n), timed like the kernels. A line through the points: "
             f"**{fixed:.1f} µs + bytes / {slope_bw:.0f} GB/s**. The fixed part (do_bench flushes the L2 before "
             "every run; then launch, ramp and tail) is paid by every kernel timed this way, so a copy smaller "
             "than the 1 GiB one reaches a smaller share of that bandwidth, and a kernel moving as many bytes "
             "is held to the same share.", "",
             "| bytes moved | GB/s | share of the 1 GiB copy |", "| --- | --- | --- |"]
    lines += [f"| {b / 1e6:.0f} MB | {b / ms / 1e6:.0f} | {b / ms / 1e6 / bw:.2f} |" for b, ms in curve]
    return lines
