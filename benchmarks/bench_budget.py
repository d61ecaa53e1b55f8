"""Plans under a shared-memory budget (`options.smem_bytes`) on the GPU: every candidate of
transposes and permutes planned at budgets from 1 KiB to the target's whole block, checked
bit-exact against PyTorch and timed together with a same-size copy, so that what a smaller
budget costs each strategy (smaller staged tiles, smaller TMA boxes) is measured, not assumed.

    python -m benchmarks.bench_budget plan [SET]     # CPU: plan -> benchmarks/budget_[SET_]plans.json
    python -m benchmarks.bench_budget run [SET]      # GPU: check + time -> $OUT or benchmarks/, budget_[SET_]results.json
    python -m benchmarks.bench_budget report [SET] [RESULTS.json]   # CPU: re-planned against the times (RESULTS.md)

SET `fit` (the default): the runs the cost facts of a copy's fields were fitted to
(`CostFacts.tma_dst_run`, `staged_tile`, `program_ns`); `heldout`: other workloads and budgets,
planned with those facts, to see how the estimates hold where they were not fitted.

The same kernel planned under several budgets (a direct copy takes no shared memory) is
timed once. Timing: `benchmarks.measure` (a workload's kernels and its copy in interleaved
rounds).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.commands import run_command

HERE = Path(__file__).resolve().parent
# set -> (workloads, budgets); a budget of None: the target's whole block
SETS = {
    "fit": (("transpose 8192² bf16", "transpose 4096² fp32", "transpose 8192² uint8",
             "NCHW→NHWC 32×256×56×56 bf16", "BSHD→BHSD 8×32×4096×128 bf16"),
            (1024, 2048, 4096, 8192, 16384, 32768, None)),
    "heldout": (("transpose 4096² fp64", "BHSD→BHDS 8×32×4096×128 bf16", "rotate (A,B,C)→(C,A,B) 256×512×1024 bf16",
                 "transpose 50257×4096 bf16", "BSHD→BHSD 8×32×4096×128 bf16", "transpose 8192² bf16"),
                (256, 512, 3072, 12288, 49152, 98304, 131072)),
}


def _path(kind: str, which: str, folder: Path = HERE) -> Path:
    return folder / (f"budget_{kind}.json" if which == "fit" else f"budget_{which}_{kind}.json")


def plan(which: str = "fit") -> None:
    from legalsat.api import optimize
    from legalsat.testing.workloads import workloads

    names, budgets = SETS[which]
    out = {}
    for w in workloads():
        if w.name not in names:
            continue
        by_budget = {}
        for budget in budgets:
            req = w.request()
            if budget is not None:
                req["options"]["smem_bytes"] = budget
            by_budget[str(budget or "block")] = optimize(req)
        out[w.name] = {"workload": w.__dict__, "budgets": by_budget}
        print(f"planned {w.name}", flush=True)
    path = _path("plans", which)
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path}")


def kernel_key(plan: dict, variant: str) -> str:
    """What makes two plans one kernel: strategy, variant and every piece's fields."""
    return json.dumps([plan["strategy"], variant, plan["pieces"]], sort_keys=True)


def run(which: str = "fit", out_dir: Path | None = None) -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import METHOD, checked_kernels, same_size_copy, timed_together
    from legalsat.kernels import piece_forms
    from legalsat.testing.torch_reference import make_inputs, reference

    out_dir = Path(out_dir or os.environ.get("OUT") or HERE)
    dev = torch.device("cuda")
    results = {"env": gpu_environment(dev), "method": METHOD, "workloads": []}
    print(json.dumps(results["env"]), flush=True)
    gluon = torch.cuda.get_device_properties(dev).major == 9
    for name, entry in json.loads(_path("plans", which).read_text()).items():
        first = next(iter(entry["budgets"].values()))
        inp = make_inputs(first, entry["workload"], dev, torch.Generator(device=dev).manual_seed(1234))
        want = reference(inp)
        kernels: dict[str, dict] = {}  # kernel key -> record (budgets that planned it, its kernel)
        for budget, resp in entry["budgets"].items():
            records, exact = checked_kernels(f"{name} @ {budget}", resp, inp, want, gluon)
            ok = {id(c) for c, _ in exact}
            fns = {id(c): k for c, k in exact}
            for rec in records:
                p = resp["plans"][rec["plan"]]
                key = kernel_key(p, rec["variant"])
                row = kernels.setdefault(key, {"strategy": rec["strategy"], "variant": rec["variant"],
                                               "tiles": [pc["tile"] for pc in p["pieces"]],
                                               "stages": [pc.get("num_stages") for pc in p["pieces"]],
                                               "forms": piece_forms(p),
                                               "exact": rec["exact"], "error": rec.get("error"),
                                               "planned": [], "kernel": fns.get(id(rec)) if id(rec) in ok else None})
                row["planned"].append({"budget": budget, "rank": rec["plan"],
                                       "estimated_us": rec["estimated_us"]})
        timed = [row for row in kernels.values() if row["kernel"] is not None]
        copy = same_size_copy(inp.moved_bytes, dev)
        times = timed_together([copy] + [lambda k=row["kernel"], inp=inp: inp.call(k, check=False) for row in timed])
        for row, ms in zip(timed, times[1:]):
            row["ms"] = ms
        rows = [{k: v for k, v in row.items() if k != "kernel"} for row in kernels.values()]
        results["workloads"].append({"name": name, "bytes": inp.moved_bytes, "copy_same_size_ms": times[0],
                                     "kernels": rows})
        for row in rows:
            print(f"  {name:34s} {row['strategy']:12s} {row['variant']:5s} {str(row['tiles']):18s} "
                  f"exact={row['exact']} {row.get('ms', float('nan')):.4f} ms "
                  f"budgets={[x['budget'] for x in row['planned']]}", flush=True)
        del inp, want
        torch.cuda.empty_cache()
        path = _path("results", which, out_dir)  # after each workload: a run cut short keeps what it measured
        path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(table(results))
    print(f"wrote {path}")


def table(results: dict) -> str:
    """Markdown: per workload and budget, each strategy's best kernel (ms, share of the
    same-size copy), and the plan the planner ranked first."""
    lines = ["| workload | smem_bytes | first plan | direct | tma (best variant) | staged_smem | first ÷ best |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for w in results["workloads"]:
        copy = w["copy_same_size_ms"]
        budgets = list(dict.fromkeys(x["budget"] for row in w["kernels"] for x in row["planned"]))
        for budget in budgets:
            at = [(row, x) for row in w["kernels"] for x in row["planned"] if x["budget"] == budget]
            best_of = {}
            for row, _ in at:
                if "ms" in row and row["ms"] < best_of.get(row["strategy"], (float("inf"),))[0]:
                    best_of[row["strategy"]] = (row["ms"], row["tiles"][0])
            first = min(at, key=lambda rx: (rx[1]["rank"], rx[0]["variant"] != "tl"))[0]

            def cell(strategy: str, best_of=best_of, copy=copy) -> str:
                if strategy not in best_of:
                    return "–"
                ms, tile = best_of[strategy]
                return f"{1e3 * ms:.0f} us ({copy / ms:.2f}) {tile}"

            best = min(ms for ms, _ in best_of.values()) if best_of else None
            ratio = f"{first['ms'] / best:.3f}" if best and "ms" in first else "–"
            lines.append(f"| {w['name']} | {budget} | {first['strategy']} {first['tiles'][0]} | {cell('direct')} | "
                         f"{cell('tma')} | {cell('staged_smem')} | {ratio} |")
    return "\n".join(lines)


def replanned(results: dict, run: str = "") -> str:
    """Markdown: the recorded kernels against the planner as it is now (re-planned here, on
    the CPU: `legalsat.testing.budget_replay`): per workload and budget, its first plan
    (estimate and the time of the kernel `build_kernel` runs by default), each strategy's
    fastest kernel (share of the same-size copy), and the first plan's regret; then how far its
    TMA and staged estimates are from the times."""
    from legalsat.testing.budget_replay import replayed

    lines = ["| workload | smem_bytes | first plan: tile, estimate / measured | direct | tma | staged_smem | regret |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    ratios = []
    for r in replayed(results, run):
        best: dict[str, float] = {}
        for p, us in r.plans:
            if us and p["strategy"] in ("tma", "staged_smem"):
                ratios.append(p["cost"]["estimated_us"] / us)
            if us and us < best.get(p["strategy"], float("inf")):
                best[p["strategy"]] = us
        first, first_us = r.plans[0]
        cells = [f"{best[s]:.0f} us ({r.copy_us / best[s]:.2f})" if s in best else "–"
                 for s in ("direct", "tma", "staged_smem")]
        regret = f"{first_us / min(best.values()):.3f}" if first_us and best else "–"
        lines.append(f"| {r.workload} | {r.budget} | {first['strategy']} {first['pieces'][0]['tile']}, "
                     f"{first['cost']['estimated_us']:.0f} / {first_us or float('nan'):.0f} us | "
                     + " | ".join(cells) + f" | {regret} |")
    ratios.sort()
    if ratios:
        within = sum(1 / 1.25 <= r <= 1.25 for r in ratios)
        lines += ["", f"TMA and staged estimates ÷ measured: median {ratios[len(ratios) // 2]:.2f}, "
                      f"range {ratios[0]:.2f}-{ratios[-1]:.2f}, within 1.25x: {within} of {len(ratios)}."]
    return "\n".join(lines)


def report(which: str = "fit", results_path: str | None = None) -> None:
    path = Path(results_path or _path("results", which))
    print(replanned(json.loads(path.read_text()), path.name))


if __name__ == "__main__":
    run_command("bench_budget", {"plan": plan, "run": run, "report": report})
