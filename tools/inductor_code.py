"""What torch.compile runs for a benchmark workload: Inductor's generated code and the launch
configuration its autotuner kept, next to legalsat's first plan's kernel source, so that where
the peer is faster the two kernels can be read side by side.

    python -m tools.inductor_code [NAME ...]     # GPU; writes $OUT/inductor/<workload>.py

NAME picks the workloads of benchmarks/kernel_plans.json whose name contains it (by default
those of `tools.peer_processes.CLOSE`). Each file holds legalsat's kernel (the default variant
of the first plan), then Inductor's code, then each Inductor kernel's kept config (block sizes,
warps, stages), the peer checked bit-exact first.
"""

from __future__ import annotations

import gc
import os
import re
import sys
from pathlib import Path


def kept_configs(seen: set[int]) -> list[str]:
    """'kernel: config' for every Inductor kernel alive in this process and not in `seen` (ids,
    which it joins): after its first call the autotuner keeps only the launcher it chose."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    out = []
    for obj in gc.get_objects():
        # type(), not isinstance: a dead weak proxy among the objects raises on __class__
        if issubclass(type(obj), CachingAutotuner) and obj.launchers and id(obj) not in seen:
            seen.add(id(obj))
            out.append(f"{obj.fn.__name__}: " + "; ".join(str(launcher.config) for launcher in obj.launchers))
    return sorted(out)


def file_stem(name: str) -> str:
    """A workload's file name: its name's letters and digits, runs of others as one '_'."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")[:60]


def main(names: list[str]) -> None:
    import torch
    from torch._inductor.utils import run_and_get_code

    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import reference, same_bits, torch_op
    from tools.peer_processes import CLOSE
    from tools.sweep import workloads

    out = Path(os.environ.get("OUT", ".")) / "inductor"
    out.mkdir(parents=True, exist_ok=True)
    seen: set[int] = set()
    for name, resp, inp, want in workloads(lambda r: r, names or CLOSE):
        fn, args, buf = torch_op(inp)
        compiled = torch.compile(fn, dynamic=False)
        result, codes = run_and_get_code(compiled, *args)
        assert same_bits(buf if buf is not None else result, want), f"{name}: torch.compile differs"
        assert same_bits(reference(inp), want)
        k = build_kernel(resp)
        text = [f"# {name}\n# legalsat: {k!r}\n", k.source, "\n# ---- Inductor\n", *codes,
                "\n# ---- kept configs\n", *(f"# {c}\n" for c in kept_configs(seen))]
        path = out / f"{file_stem(name)}.py"
        path.write_text("".join(text))
        print(f"{name}: {path}", flush=True)
        del compiled, result
        torch._dynamo.reset()
        gc.collect()


if __name__ == "__main__":
    main(sys.argv[1:])
