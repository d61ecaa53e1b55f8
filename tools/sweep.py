"""What the GPU sweeps share: the benchmark's planned workloads, with their inputs and
PyTorch's answer, one at a time; their integer options; running a sweep in fresh processes."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Callable, Iterator

from benchmarks.bench_kernels import PLANS


@functools.cache
def planned() -> dict:
    """benchmarks/kernel_plans.json, read once a process (callers copy what they edit)."""
    return json.loads(PLANS.read_text())


def workloads(pick: Callable[[dict], dict | None], names: list[str]) -> Iterator[tuple[str, dict, object, object]]:
    """(name, plan, inputs, PyTorch's result) for every workload of benchmarks/kernel_plans.json
    whose response has a plan `pick(response)` returns, and whose name contains one of
    `names` (all when empty); each workload's tensors are freed before the next. Inputs are
    drawn with the benchmark's seed (benchmarks/bench_kernels.py): a variant sees its data."""
    import torch

    from legalsat.testing.torch_reference import make_inputs, reference

    dev = torch.device("cuda")
    for name, entry in planned().items():
        resp = entry["response"]
        base = pick(resp)
        if base is None or (names and not any(a in name for a in names)):
            continue
        inp = make_inputs(resp, entry["workload"], dev, torch.Generator(device=dev).manual_seed(1234))
        want = reference(inp)
        yield name, base, inp, want
        del inp, want
        torch.cuda.empty_cache()


def checked(name: str, tried) -> tuple[list[Callable[[], object]], list[str]]:
    """The timing functions and labels of the kernels of `tried` ((label, kernel, inputs,
    PyTorch's result) each) that run bit-exact on their poisoned inputs; one that fails or
    differs is reported and left out."""
    from legalsat.testing.torch_reference import poison, same_bits

    fns, labels = [], []
    for label, k, inp, want in tried:
        try:
            poison(inp)
            exact = same_bits(inp.call(k), want)
        except Exception as e:  # a variant that does not compile or run is reported, not timed
            print(f"{name[:40]:40s} {label}: failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            continue
        if not exact:
            print(f"{name[:40]:40s} {label}: NOT bit-exact")
            continue
        fns.append(lambda k=k, inp=inp: inp.call(k, check=False))
        labels.append(label)
    return fns, labels


def contiguous_copy(of: str, device, seed: int = 1234) -> tuple[dict, object]:
    """(response, inputs) of the benchmark's contiguous copy of as many bytes as workload `of`
    moves (its same-size copy as legalsat plans it), inputs drawn with `seed`."""
    import torch

    from legalsat.testing.torch_reference import make_inputs

    cc = planned()[of]["contiguous_copy"]
    return cc, make_inputs(cc, {"torch_op": "copy"}, device, torch.Generator(device=device).manual_seed(seed))


def exact(what: str, kernel, inp, want) -> Callable[[], object]:
    """`kernel` run on `inp` over a poisoned output and asserted bit-exact with `want` (`what`
    names it); the call to time."""
    from legalsat.testing.torch_reference import poison, same_bits

    poison(inp)
    assert same_bits(inp.call(kernel), want), f"{what} differs from PyTorch"
    return lambda: inp.call(kernel, check=False)


def option(args: list[str], name: str, default: int) -> int:
    """The integer after `name` in `args` (both removed from it), or `default`."""
    if name not in args:
        return default
    i = args.index(name)
    value = int(args[i + 1])
    del args[i:i + 2]
    return value


def in_fresh_processes(module: str, args: list[str], processes: int) -> list:
    """`python -m module *args` run `processes` times, each in a fresh process (a process's code
    placement and clocks are its own): the JSON each prints last, its other lines echoed."""
    runs = []
    for n in range(processes):
        # stderr is the terminal's: a child that fails shows its traceback
        done = subprocess.run([sys.executable, "-m", module, *args], stdout=subprocess.PIPE, text=True)
        lines = done.stdout.strip().splitlines()
        if done.returncode or not lines:
            sys.exit(f"python -m {module} {' '.join(args)} failed (exit {done.returncode}); its error is above")
        if lines[:-1]:
            print("\n".join(lines[:-1]), flush=True)
        runs.append(json.loads(lines[-1]))
        print(f"process {n + 1} of {processes} done", flush=True)
    return runs
