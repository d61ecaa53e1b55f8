"""Load qualifiers Triton has no argument for, on the emitted kernels nearest the copy limit:
each plan's tl kernel as emitted before its data loads took `evict_last` (the recorded run
predates it: `legalsat.kernels.source.without_data_load_hint`), and the same kernel with every
global load of its PTX given
an L2 prefetch size (`.L2::128B`, `.L2::256B`: the L2 fetches that many bytes around a miss),
the non-coherent path (`.nc`), or no L1 allocation (`.L1::no_allocate`), timed in interleaved
rounds next to `torch.compile` of the same op and a same-size `copy_`, eagerly and from CUDA
graphs. The PTX is rewritten by a stage hook (`triton.knobs.runtime.add_stages_inspection_hook`)
on kernels renamed per variant, so ptxas compiles each variant's own text.

    python -m tools.ptx_hint_probe [NAME ...]  # GPU: $OUT/ptx_hint_probe.json, a table last

NAME: substrings of benchmark workload names (default: `WORKLOADS`); `contiguous copy` is the
benchmark's own direct copy of as many bytes as BSHD->BHSD moves. Every variant is checked
bit-exact against PyTorch before it is timed: a qualifier only changes how the caches fetch
a line the kernel reads once, never what it moves.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from pathlib import Path

WORKLOADS = ("contiguous copy", "BSHD→BHSD", "AoS→SoA 16M", "transpose 4096² fp64", "embedding 8 KiB",
             "embedding 7 KiB", "paged KV 16", "transpose 50257×4096", "transpose 8192² bf16", "NCHW→NHWC 32×256")
# variant tag -> the qualifiers put after `ld.global` (PTX ISA order: .nc, L1 then L2 hints)
HINTS = {"l2_128": ".L2::128B", "l2_256": ".L2::256B", "nc": ".nc", "nc_l2_256": ".nc.L2::256B",
         "noalloc_l2_256": ".L1::no_allocate.L2::256B"}
LOAD = re.compile(r"\bld\.global\.")


def qualified(ptx: str, qualifiers: str) -> str:
    """`ptx` with `qualifiers` after every `ld.global` (index loads included: a prefetch size
    or the read-only path changes no value a load returns)."""
    return LOAD.sub(f"ld.global{qualifiers}.", ptx)


def install_hook() -> None:
    """Rewrite the PTX of every kernel whose name ends in `__TAG` (a key of `HINTS`)."""
    import triton

    def hook(backend, stages, options, language, capability):
        make_ptx = stages["ptx"]

        def ptx(src, metadata):
            out = make_ptx(src, metadata)
            m = re.search(r"\.visible \.entry (\w+)", out)
            tag = m.group(1).rsplit("__", 1)[-1] if m and "__" in m.group(1) else ""
            return qualified(out, HINTS[tag]) if tag in HINTS else out

        stages["ptx"] = ptx

    triton.knobs.runtime.add_stages_inspection_hook = hook


def renamed(em, tag: str):
    """`em` (an Emitted module) with each of its launched kernels renamed `NAME__tag`."""
    source = em.source
    for name in {ln.kernel for ln in em.launches}:
        source = re.sub(rf"\b{name}\b", f"{name}__{tag}", source)
    launches = [dataclasses.replace(ln, kernel=f"{ln.kernel}__{tag}") for ln in em.launches]
    return dataclasses.replace(em, source=source, launches=launches)


def unhinted(kernel):
    """`kernel` (a legalsat Kernel) without its data loads' eviction hint: the probe's base."""
    from legalsat.clients.triton import Kernel
    from legalsat.kernels.source import without_data_load_hint

    return Kernel(kernel.plan, dataclasses.replace(kernel.emitted, source=without_data_load_hint(kernel.source)),
                  kernel.request_op)


def tagged(kernel, tag: str):
    """`kernel` (a legalsat Kernel) with its kernels renamed for variant `tag` (`renamed`)."""
    from legalsat.clients.triton import Kernel

    return Kernel(kernel.plan, renamed(kernel.emitted, tag), kernel.request_op)


def main() -> None:
    import torch

    from benchmarks.environment import gpu_environment
    from benchmarks.measure import same_size_copy, timed_both_ways
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, reference
    from tools.sweep import checked, contiguous_copy, workloads

    install_hook()
    out = Path(os.environ.get("OUT", "."))
    names = sys.argv[1:] or list(WORKLOADS)
    dev = torch.device("cuda")

    def cases():
        if any("contiguous copy" in n for n in names):
            cc, inp = contiguous_copy("BSHD→BHSD 8×32×4096×128 bf16", dev)
            yield "contiguous copy (BSHD→BHSD's bytes)", cc, inp, reference(inp), False
        rest = [n for n in names if "contiguous copy" not in n]
        if rest:
            for name, resp, inp, want in workloads(lambda r: r, rest):
                yield name, resp, inp, want, True

    rows, table = [], []
    for name, resp, inp, want, peer in cases():
        base = unhinted(build_kernel(resp, variant="tl"))
        tried = [("emitted", base, inp, want)] + [(tag, tagged(base, tag), inp, want) for tag in HINTS]
        fns, labels = checked(name, tried)
        fns, labels = [same_size_copy(inp.moved_bytes)] + fns, ["copy_"] + labels
        if peer:
            peer = compiled_peer(inp)
            peer()  # compiled before it is timed
            fns.insert(1, peer)
            labels.insert(1, "torch.compile")
        eager, graph = timed_both_ways(fns)
        del fns
        for label, e, g in zip(labels, eager, graph):
            rows.append({"workload": name, "strategy": resp["plans"][0]["strategy"], "variant": label,
                         "us": round(e * 1e3, 2), "graph_us": round(g * 1e3, 2),
                         "of_copy": round(eager[0] / e, 4), "graph_of_copy": round(graph[0] / g, 4)})
            print(f"{name[:40]:40s} {label:16s} {e * 1e3:9.2f} / {g * 1e3:9.2f} us  "
                  f"{eager[0] / e:6.3f} / {graph[0] / g:6.3f} of copy_", flush=True)
        table.append((name, dict(zip(labels, zip(eager, graph)))))
        torch._dynamo.reset()
    result = {"env": gpu_environment(dev), "hints": HINTS, "rows": rows}
    (out / "ptx_hint_probe.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n{'workload':40s} {'copy_':>15s} {'compile':>15s} {'emitted':>15s}  best qualified (us eager / graph)")
    def cell(t: dict, label: str) -> str:
        return f"{t[label][0] * 1e3:7.1f}/{t[label][1] * 1e3:7.1f}" if label in t else f"{'-':>15s}"

    for name, t in table:
        hinted = [(v[0], k) for k, v in t.items() if k in HINTS]
        best = min(hinted) if hinted else None
        print(f"{name[:40]:40s} {cell(t, 'copy_')} {cell(t, 'torch.compile')} {cell(t, 'emitted')}  "
              f"{(best[1] + ' ' + cell(t, best[1])) if best else '-'}")


if __name__ == "__main__":
    main()
