"""What the GPU sweeps share: the benchmark's planned workloads, with their inputs and
PyTorch's answer, one at a time."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

PLANS = Path(__file__).resolve().parent.parent / "benchmarks" / "kernel_plans.json"


def workloads(pick: Callable[[dict], dict | None], names: list[str]) -> Iterator[tuple[str, dict, object, object]]:
    """(name, plan, inputs, PyTorch's result) for every workload of benchmarks/kernel_plans.json
    whose response has a plan `pick(response)` returns, and whose name contains one of
    `names` (all when empty); each workload's tensors are freed before the next. Inputs are
    drawn with the benchmark's seed (benchmarks/bench_kernels.py): a variant sees its data."""
    import torch

    from legalsat.testing.torch_reference import make_inputs, reference

    dev = torch.device("cuda")
    for name, entry in json.loads(PLANS.read_text()).items():
        resp = entry["response"]
        base = pick(resp)
        if base is None or (names and not any(a in name for a in names)):
            continue
        inp = make_inputs(resp, entry["workload"], dev, torch.Generator(device=dev).manual_seed(1234))
        want = reference(inp)
        yield name, base, inp, want
        del inp, want
        torch.cuda.empty_cache()
