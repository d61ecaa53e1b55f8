"""The order programs walk a sector-skewed tile, by the tile's source runs: the 50257 x 4096
bf16 transpose's staged plans under each shared-memory budget of the held-out budget run
(benchmarks/budget_heldout_plans.json), each skewed one emitted with its programs stepping along
the destination's rows fastest and along the source's (whichever
`legalsat.kernels.staged.walk_order` picks for its source runs, and the other), timed in
interleaved rounds next to a same-size `copy_`, eagerly and from CUDA graphs
(`tools.edge_sweep.skewed_walk`).

    python -m tools.skew_walk_probe   # GPU: $OUT/skew_walk_probe.json, a table last

Every kernel is run on a poisoned output and compared bit for bit with PyTorch's first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PLANS = Path(__file__).resolve().parents[1] / "benchmarks" / "budget_heldout_plans.json"
WORKLOAD = "transpose 50257×4096 bf16"


def main() -> None:
    import torch

    import legalsat.kernels.staged as staged
    from benchmarks.environment import gpu_environment
    from benchmarks.measure import same_size_copy, timed_both_ways
    from legalsat.clients.triton import build_kernel
    from legalsat.kernels import piece_forms
    from legalsat.testing.torch_reference import make_inputs, reference
    from tools.edge_sweep import skewed_walk
    from tools.sweep import checked

    dev = torch.device("cuda")
    entry = json.loads(PLANS.read_text())[WORKLOAD]
    seen, tried = set(), []
    inp = want = None
    shipped = staged.walk_order
    for budget, resp in entry["budgets"].items():
        plan = next((p for p in resp["plans"] if p["strategy"] == "staged_smem"), None)
        tile = plan and tuple(plan["pieces"][0]["tile"])
        if plan is None or tile in seen or piece_forms(plan) != ["skewed"]:
            continue
        seen.add(tile)
        if inp is None:
            inp = make_inputs(resp, entry["workload"], dev, torch.Generator(device=dev).manual_seed(1234))
            want = reference(inp)
        i = resp["plans"].index(plan)
        for order, walk in (("destination rows fastest", skewed_walk(shipped, True)),
                            ("source rows fastest", skewed_walk(shipped, False))):
            staged.walk_order = walk
            try:
                k = build_kernel(resp, variant="tl", plan_index=i)
            finally:
                staged.walk_order = shipped
            tried.append(({"budget": budget, "tile": list(tile), "order": order}, k, inp, want))
    fns, labels = checked(WORKLOAD, tried)
    copy_fn = same_size_copy(inp.moved_bytes, dev)
    eager, graph = timed_both_ways([copy_fn, *fns])
    rows = [{**lab, "us": round(e * 1e3, 2), "graph_us": round(g * 1e3, 2), "of_copy": round(eager[0] / e, 4)}
            for lab, e, g in zip(labels, eager[1:], graph[1:])]
    result = {"env": gpu_environment(dev), "workload": WORKLOAD, "copy_us": round(eager[0] * 1e3, 2),
              "copy_graph_us": round(graph[0] * 1e3, 2), "kernels": rows}
    (Path(os.environ.get("OUT", ".")) / "skew_walk_probe.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"copy_ {result['copy_us']} / {result['copy_graph_us']} us")
    for r in rows:
        print(f"{r['budget']:>7s} {str(r['tile']):10s} {r['order']:38s} {r['us']:8.2f} / {r['graph_us']:8.2f} us "
              f"{r['of_copy']:.3f} of copy_")


if __name__ == "__main__":
    main()
