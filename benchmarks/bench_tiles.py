"""Every tile-load plan on the GPU, through its consumer probe: bit-exact against PyTorch
(outputs poisoned first), every stage's raw bytes where the plan's layout says, and the walk
timed against the plan's estimate.

    python -m benchmarks.bench_tiles plan     # CPU: plan every tile workload -> benchmarks/tile_{,suite_}plans.json
    python -m benchmarks.bench_tiles run      # GPU: compile, check, time -> $OUT/tile_results.json
    python -m benchmarks.bench_tiles run-suite  # GPU: the public suites' tiles, checked -> $OUT/tile_suite_results.json
    python -m benchmarks.bench_tiles plan-boxes  # CPU: tiles of 1 to 25 boxes a stage -> benchmarks/tile_box_plans.json
    python -m benchmarks.bench_tiles plan-libraries  # CPU: libraries' tile loads -> benchmarks/tile_library_plans.json
    python -m benchmarks.bench_tiles run-libraries  # GPU: checked -> $OUT/tile_library_results.json
    python -m benchmarks.bench_tiles run-boxes  # GPU: their walks, timed -> $OUT/tile_box_results.json
    python -m benchmarks.bench_tiles plan-small  # CPU: walks of many small tiles -> benchmarks/tile_small_plans.json
    python -m benchmarks.bench_tiles run-small  # GPU: their walks, timed -> $OUT/tile_small_results.json
    python -m benchmarks.bench_tiles plan-edges  # CPU: tiles at the edges of TMA -> benchmarks/tile_edge_plans.json
    python -m benchmarks.bench_tiles run-edges  # GPU: checked -> $OUT/tile_edge_results.json
    python -m benchmarks.bench_tiles report tile_results.json   # CPU: the table
    python -m benchmarks.bench_tiles calibrate tile_results.json [tile_small_results.json ...]   # CPU: fit the walk's cost facts

`run` needs torch, triton and legalsat's light modules only (the Triton client never imports
the planner). Kernels are compiled first in parallel worker processes (the JIT's own cache,
shared by path), then run one by one. A TMA plan runs as its Gluon probe (the plan's
pipeline, the consumer's reads, the raw stage copy); a direct plan as its tl kernel. Times are
the median of three `do_bench(..., return_mode="median")` runs of the walk alone (the probe's
MODE=1), per tile: what `tile_load.estimated_us_per_tile` estimates.
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

from benchmarks.commands import run_command

HERE = Path(__file__).resolve().parent
PLANS = HERE / "tile_plans.json"
SUITE_PLANS = HERE / "tile_suite_plans.json"  # the tile loads of CuTe's and Triton's own tests
BOX_PLANS = HERE / "tile_box_plans.json"  # one tensor, tiles of 1 to 25 TMA boxes a stage
EDGE_PLANS = HERE / "tile_edge_plans.json"  # one-element views, tiles widened past their rows
SMALL_PLANS = HERE / "tile_small_plans.json"  # many small tiles over large tensors: round-trip bound
LIBRARY_PLANS = HERE / "tile_library_plans.json"  # FA3, FlashInfer, vLLM, DeepGEMM, FlashMLA, Triton, CuTe
REPEATS = 5


# ---------------------------------------------------------------- plan (CPU, planner)
def _plan_one(item):
    from legalsat.api import optimize

    name, req = item
    t = time.perf_counter()
    resp = optimize(req)
    resp.pop("egraph", None)
    return name, {"request": req, "response": resp, "plan_ms": round(1e3 * (time.perf_counter() - t), 1)}


def plan() -> None:
    from concurrent.futures import ProcessPoolExecutor

    from legalsat.testing.tile_workloads import suite_workloads, tile_workloads

    with ProcessPoolExecutor(max(1, (os.cpu_count() or 2))) as pool:
        for path, items in ((PLANS, tile_workloads()), (SUITE_PLANS, suite_workloads())):
            _plan_into(path, items, functools.partial(pool.map, chunksize=4))


def _plan_into(path: Path, items: list[tuple[str, dict]], mapper=map) -> None:
    """Plan `items` (through `mapper`: a process pool's map, or the built-in) into `path`."""
    out = dict(mapper(_plan_one, items))
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"planned {len(out)} tile loads into {path}")


def plan_boxes() -> None:
    from legalsat.testing.tile_workloads import box_count_workloads

    _plan_into(BOX_PLANS, box_count_workloads())


def plan_small() -> None:
    from legalsat.testing.tile_workloads import small_tile_workloads

    _plan_into(SMALL_PLANS, small_tile_workloads())


def plan_edges() -> None:
    from legalsat.testing.tile_workloads import edge_tile_workloads

    _plan_into(EDGE_PLANS, edge_tile_workloads())


def plan_libraries() -> None:
    from legalsat.testing.tile_workloads import library_workloads

    _plan_into(LIBRARY_PLANS, library_workloads())


# ---------------------------------------------------------------- run (GPU)
def _kernels(entry: dict) -> list[tuple[int, str]]:
    """(plan index, variant) of every plan of a response: TMA plans as the Gluon probe, direct
    ones as their tl kernel."""
    return [(i, "gluon" if p["strategy"] == "tma" else "tl") for i, p in enumerate(entry["response"]["plans"])]


def _inputs(entry: dict, k, dev, seed: int):
    import torch

    from legalsat.testing.tiles import source_tensor

    src = entry["request"]["op"]["src"]
    gen = torch.Generator(device=dev).manual_seed(seed)
    return source_tensor(src["shape"], src["strides"], src["dtype"], dev, gen, wgmma=k.emitted.tile.wgmma_input)


def _warm(batch: list[tuple[str, dict]]) -> list[str]:
    """Compile (JIT warmup, no launch) the kernels of `batch` in this process; returns errors."""
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError

    errors = []
    dev = torch.device("cuda")
    for name, entry in batch:
        for i, variant in _kernels(entry):
            try:
                k = build_kernel(entry["response"], plan_index=i, variant=variant)
                src = _inputs(entry, k, dev, 0)
                out = torch.empty(1, dtype=k.out_dtype(src), device=dev)
                stages = torch.empty(1, dtype=torch.int32, device=dev)
                k.warmup(src, out=out, stages=stages)
                del src
            except InputError:  # a plan Triton cannot express: the run reports it
                continue
            except Exception as e:  # reported by the run that follows, per kernel
                errors.append(f"{name} plan {i} {variant}: {type(e).__name__}: {str(e)[:300]}")
        torch.cuda.empty_cache()
    return errors


def run(out_dir: Path, only: str | None = None, plans_path: Path = PLANS, timing: bool = True,
        results_name: str = "tile_results.json") -> None:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import get_context

    import torch
    from triton.testing import do_bench

    from benchmarks.environment import gpu_environment
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError
    from legalsat.kernels import validate_plan
    from legalsat.testing.tiles import consumer_view, expected_stages, poison, reference_tiles, same_bits

    entries = json.loads(plans_path.read_text())
    if only:
        entries = {k: v for k, v in entries.items() if only in k}
    dev = torch.device("cuda")
    env = gpu_environment(dev)
    print(json.dumps(env), flush=True)
    t0 = time.perf_counter()
    items = list(entries.items())
    workers = max(1, min(14, (os.cpu_count() or 2) - 2))
    batches = [items[i::workers] for i in range(workers)]
    try:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            warm_errors = [e for errs in pool.map(_warm, batches) for e in errs]
    except BrokenProcessPool as e:  # a compiler abort: the kernels compile as they first run
        warm_errors = [f"compile workers died: {e}"]
    print(f"compiled in {time.perf_counter() - t0:.0f} s; {len(warm_errors)} compile errors", flush=True)
    for e in warm_errors[:20]:
        print("  " + e, flush=True)

    rows, timed_rows = [], []
    for name, entry in items:
        req = entry["request"]
        for i, variant in _kernels(entry):
            p = entry["response"]["plans"][i]
            tl_ = p["tile_load"]
            row = {"name": name, "plan": i, "strategy": p["strategy"], "variant": variant,
                   "dtype": req["op"]["src"]["dtype"], "rank": len(req["op"]["src"]["shape"]),
                   "consumer": tl_["consumer"], "tiles": 1, "boxes": len(tl_["boxes"]),
                   "tile_bytes": p["smem"]["bytes_per_stage"], "swizzle": tl_["layout"]["swizzle"],
                   "stages": p["num_stages"], "estimated_us_per_tile": tl_["estimated_us_per_tile"],
                   "folded": bool(tl_["folded"]), "broadcast": bool(tl_["broadcast"])}
            for g in tl_["grid"]:
                row["tiles"] *= g
            try:
                k = build_kernel(entry["response"], plan_index=i, variant=variant)
                row["read"] = k.emitted.tile.read
                src = _inputs(entry, k, dev, 1234)
                want = consumer_view(reference_tiles(src, req["op"]["tile"]), k.emitted.tile.element)
                out = poison(torch.empty(k.out_shape, dtype=k.out_dtype(src), device=dev))
                stages = None
                if k.emitted.tile.dump_words:
                    stages = poison(torch.empty(k.stages_shape, dtype=torch.int32, device=dev))
                k(src, out=out, stages=stages)
                torch.cuda.synchronize()
                row["exact"] = same_bits(out, want)
                if stages is not None:
                    ref_tiles = reference_tiles(src, req["op"]["tile"])
                    row["stage_bytes_exact"] = same_bits(
                        stages, expected_stages(validate_plan(p), ref_tiles, k.emitted.tile.dump_words))
                    del ref_tiles
                del want, stages
                if row["exact"]:
                    timed_rows.append((row, k, src, out))
            except InputError as e:  # a plan Triton cannot express (the emitter says why)
                row["exact"] = None
                row["skipped"] = f"{e.headline.field}: {e.headline.message}"
            except Exception as e:  # a kernel that fails is a result of the run, reported
                row["exact"] = False
                row["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            rows.append(row)
            print(f"  {name[:50]:50s} {p['strategy']:6s} {variant:5s} exact={row['exact']} "
                  f"stage={row.get('stage_bytes_exact', '-')} {row.get('error', '')[:160]}", flush=True)
    # the walks, timed in REPEATS passes over all of them (a pass is minutes apart from the
    # next, so a slow spell of the machine moves one pass, not a row's every sample)
    samples: dict[int, list[float]] = {}
    if not timing:
        timed_rows = []
    for _ in range(REPEATS):
        for j, (_, k, src, out) in enumerate(timed_rows):
            samples.setdefault(j, []).append(do_bench(lambda k=k, src=src, out=out: k.walk(src, out=out),
                                                      warmup=5, rep=30, return_mode="median"))
    spreads = []
    for j, (row, _, _, _) in enumerate(timed_rows):
        ms = sorted(samples[j])
        spreads.append(ms[-1] / ms[0])
        row["walk_ms"] = round(ms[len(ms) // 2], 5)
        row["walk_samples_ms"] = [round(x, 5) for x in samples[j]]
        row["us_per_tile"] = round(1e3 * row["walk_ms"] / row["tiles"], 5)
        row["estimate_ratio"] = round(row["estimated_us_per_tile"] / row["us_per_tile"], 3)
    del timed_rows
    results = {"env": env, "rows": rows, "compile_errors": warm_errors,
               "timing": {"method": f"median of {REPEATS} passes of do_bench(warmup=5, rep=30, return_mode='median') "
                                    "over every walk (probe MODE=1; the tl kernel for direct plans)",
                          "max_spread": round(max(spreads), 3) if spreads else None}}
    (out_dir / results_name).write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))



def table(results: dict) -> str:
    """The short table: plans checked and exact, per strategy and consumer; estimates."""
    rows = results["rows"]
    lines = [f"{results['env'].get('gpu')} driver {results['env'].get('driver')} triton {results['env'].get('triton')}",
             f"{'group':28s} {'plans':>6s} {'exact':>6s} {'stage ok':>9s} {'est/meas median':>16s} {'within 2x':>10s}"]
    groups: dict[str, list[dict]] = {}
    for r in rows:
        key = f"{r['strategy']}/{r['variant']} {r['read'].split(' (')[0].split(':')[0] if r.get('read') else '?'}"
        groups.setdefault(key, []).append(r)
    groups["all"] = rows
    for key, rs in groups.items():
        ratios = sorted(r["estimate_ratio"] for r in rs if "estimate_ratio" in r)
        med = f"{ratios[len(ratios) // 2]:.2f}" if ratios else "-"
        within = sum(1 for x in ratios if 0.5 <= x <= 2.0)
        staged = [r for r in rs if "stage_bytes_exact" in r]
        lines.append(f"{key[:28]:28s} {len(rs):6d} {sum(1 for r in rs if r.get('exact')):6d} "
                     f"{sum(1 for r in staged if r['stage_bytes_exact']):4d}/{len(staged):<4d} {med:>16s} "
                     f"{within:4d}/{len(ratios):<5d}")
    bad = [(r["name"], r["strategy"], r.get("error", "")[:80]) for r in rows if r.get("exact") is False]
    lines.append(f"inexact or failed: {len(bad)} {bad[:6]}")
    skipped = [(r["name"], r["strategy"]) for r in rows if r.get("exact") is None]
    if skipped:
        lines.append(f"not expressible in Triton (box extents that are no powers of two): {len(skipped)} {skipped[:6]}")
    return "\n".join(lines)


@functools.cache
def _recorded_plans() -> dict:
    """PLANS and SMALL_PLANS, read once (a calibration asks for every walk's estimate some
    thirty times)."""
    return {**json.loads(PLANS.read_text()), **json.loads(SMALL_PLANS.read_text())}


def estimates(rows: list[dict], facts) -> list[float]:
    """Each measured walk's estimate (µs per tile) under cost facts `facts`."""
    from dataclasses import replace

    from legalsat.planner.build.tile import walk_cost
    from legalsat.targets.sm90 import SM90
    from legalsat.terms.strategy import Strategy

    target = replace(SM90, cost=facts)
    plans = _recorded_plans()
    out = []
    for r in rows:
        p = plans[r["name"]]["response"]["plans"][r["plan"]]
        cost = walk_cost(target, Strategy(r["strategy"]), r["tiles"], r["tile_bytes"], r["stages"], p["vector_bytes"])
        out.append(cost.total_us / r["tiles"])
    return out


def calibrate(results_path: Path, *more: Path) -> None:
    """Fit the tile walk's facts (its fixed time, the TMA walk's share of the copy bandwidth)
    to the measured TMA walks (least squares of the relative error), write them into the
    target's cost file, and replay every walk's estimate against its measurement."""
    import datetime
    from dataclasses import replace

    import numpy as np

    from legalsat.targets.calibration import cost_path
    from legalsat.targets.sm90 import SM90

    results = json.loads(results_path.read_text())
    runs = [results] + [json.loads(path.read_text()) for path in more]
    rows = [r for run in runs for r in run["rows"] if r.get("walk_ms")]
    tma = [r for r in rows if r["strategy"] == "tma"]
    us = np.array([1e3 * r["walk_ms"] for r in tma])
    mb = np.array([r["tiles"] * r["tile_bytes"] / 1e6 for r in tma])
    design = np.stack([np.ones_like(mb), mb], 1) / us[:, None]
    (fixed, per_mb), *_ = np.linalg.lstsq(design, np.ones_like(us), rcond=None)
    facts = replace(SM90.cost, tile_walk_ns=int(round(1e3 * fixed)),
                    tile_tma=int(round(1e6 / per_mb / SM90.cost.copy_bandwidth_gbps)))

    def rms_log(f) -> float:
        return float(np.sqrt(np.mean([np.log(e / r["us_per_tile"]) ** 2 for e, r in zip(estimates(rows, f), rows)])))

    # the round trip that bounds walks with few tiles per SM (several tiles in flight per SM:
    # an effective figure), chosen on every walk, direct ones too
    facts = min((replace(facts, tma_latency_ns=lat) for lat in range(0, 1501, 50)), key=rms_log)
    ratios = [e / r["us_per_tile"] for e, r in zip(estimates(rows, facts), rows)]
    within = sum(1 for x in ratios if 0.5 <= x <= 2.0)
    doc = json.loads(cost_path("sm90").read_text())
    doc["facts"].update(tile_walk_ns=facts.tile_walk_ns, tile_tma=facts.tile_tma, tma_latency_ns=facts.tma_latency_ns)
    env = results["env"]
    doc["provenance"]["tile_walk"] = {
        "gpu": env["gpu"], "driver": env["driver"], "triton": env["triton"], "walks": len(tma),
        "date": datetime.date.today().isoformat(), "by": "benchmarks/bench_tiles.py calibrate",
        "within_2x": f"{within}/{len(rows)}"}
    cost_path("sm90").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"tile_walk_ns={facts.tile_walk_ns} tile_tma={facts.tile_tma} tma_latency_ns={facts.tma_latency_ns} (rms log "
          f"error {rms_log(facts):.3f}): estimates within 2x of the measured "
          f"walk for {within} of {len(rows)} plans (ratio min {min(ratios):.2f}, max {max(ratios):.2f})")


if __name__ == "__main__":
    out = Path(os.environ.get("OUT") or HERE)
    run_command("bench_tiles", {
        "run": lambda only=None: run(out, only), "plan": plan,
        # the public suites' tiles: checked, not timed
        "run-suite": lambda: run(out, None, SUITE_PLANS, timing=False, results_name="tile_suite_results.json"),
        "plan-boxes": plan_boxes,
        "run-boxes": lambda: run(out, None, BOX_PLANS, results_name="tile_box_results.json"),
        "plan-small": plan_small,
        "run-small": lambda: run(out, None, SMALL_PLANS, results_name="tile_small_results.json"),
        "plan-edges": plan_edges,
        "run-edges": lambda: run(out, None, EDGE_PLANS, timing=False, results_name="tile_edge_results.json"),
        "plan-libraries": plan_libraries,
        "run-libraries": lambda: run(out, None, LIBRARY_PLANS, timing=False, results_name="tile_library_results.json"),
        "report": lambda results: print(table(json.loads(Path(results).read_text()))),
        "calibrate": lambda results, *more: calibrate(Path(results), *map(Path, more))})
