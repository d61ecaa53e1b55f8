"""What torch.compile runs for a benchmark workload: Inductor's generated code and the launch
configuration its autotuner kept, next to legalsat's first plan's kernel source, so that where
the peer is faster the two kernels can be read side by side.

    python -m tools.inductor_code [NAME ...]
        # GPU; writes $OUT/inductor/<workload>.py and $OUT/inductor_code.json (each workload's
        # kept configs and both sources)

NAME picks the workloads of benchmarks/kernel_plans.json whose name contains it (by default
those of `tools.peer_processes.CLOSE`). Each file holds legalsat's kernel (the default variant
of the first plan), then Inductor's code, then each Inductor kernel's kept config (block sizes,
warps, stages), the peer checked bit-exact first.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
from pathlib import Path


def inductor_source(fn) -> str:
    """Inductor's generated code for `fn` (a torch.compile'd function of no arguments), its
    modules separated by `# ----` lines."""
    from torch._inductor.utils import run_and_get_code

    _, sources = run_and_get_code(fn)
    return "\n\n# ----\n\n".join(sources)


def file_stem(name: str) -> str:
    """A workload's file name: its name's letters and digits, runs of others as one '_'."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")[:60]


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


def main(names: list[str]) -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, same_bits
    from tools.peer_processes import CLOSE
    from tools.sweep import workloads

    root = Path(os.environ.get("OUT", "."))
    out = root / "inductor"
    out.mkdir(parents=True, exist_ok=True)
    seen: set[int] = set()
    record = {"env": gpu_environment(torch.device("cuda")), "workloads": {}}
    for name, resp, inp, want in workloads(lambda r: r, names or CLOSE):
        peer = compiled_peer(inp)
        code = inductor_source(peer)  # its first call: compiles and autotunes
        assert same_bits(peer(), want), f"{name}: torch.compile differs"
        k = build_kernel(resp)
        configs = kept_configs(seen)
        path = out / f"{file_stem(name)}.py"
        path.write_text("".join([f"# {name}\n# legalsat: {k!r}\n", k.source, "\n# ---- Inductor\n", code,
                                 "\n# ---- kept configs\n", *(f"# {c}\n" for c in configs)]))
        record["workloads"][name] = {"kept_configs": configs, "legalsat": k.source, "inductor": code}
        print(f"{name}: {path}", flush=True)
        del peer
        torch._dynamo.reset()
        gc.collect()
    (root / "inductor_code.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
