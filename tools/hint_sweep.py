"""Cache hints on the emitted kernels of the copies and gathers nearest the copy limit: each
plan's kernel as emitted, and with streaming hints on its global loads (`evict_first`, or
`.cg`: not kept in L1) and stores (`.cs`: evict first), measured in interleaved rounds next
to `torch.compile` of the same op and a same-size copy.

    python -m tools.hint_sweep [--graph] [--loads A,B] [--stores A,B] [NAME ...]
        # on the GPU machine; writes $OUT/hint_sweep.json (--loads / --stores: only these keys
        # of LOAD_HINTS / STORE_HINTS, '' for none, e.g. --loads ,evict_last --stores '')

`--graph`: timed from CUDA graphs (the same op replayed back to back, L2 not flushed between
runs: a workload that fits L2 finds part of its data there; `evict_last`, which Inductor puts on
its transposes' loads, keeps its source there), into $OUT/hint_sweep_graph.json.

Every variant is checked bit-exact against PyTorch before it is timed. A hint only changes
how the caches treat a line the kernel reads or writes once, never what it moves.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from legalsat.kernels.source import DATA_LOAD_CALL, with_call_kwarg, without_data_load_hint

WORKLOADS = ("transpose 50257×4096", "transpose 8192² bf16", "BSHD→BHSD", "AoS→SoA 16M", "column slice",
             "transpose 32768×8192 fp8", "gather 64 B rows", "gather 128 B rows random", "paged KV 16",
             "embedding 8 KiB")
LOAD_HINTS = {"": "", "evict_first": 'eviction_policy="evict_first"', "cg": 'cache_modifier=".cg"',
              "evict_last": 'eviction_policy="evict_last"'}
STORE_HINTS = {"": "", "cs": 'cache_modifier=".cs"'}


def hinted(source: str, load: str, store: str) -> str:
    """`source` with `load` on every tl.load of the moved data (from `src`) in place of the
    hint the emitters give them (`DATA_LOAD_HINT`: the emitted kernel without it is the sweep's
    unhinted one) and `store` on every tl.store of it (into `dst` / `out`); index and inspector
    traffic keeps its own."""
    source = without_data_load_hint(source)
    out = []
    for line in source.splitlines():
        if load and DATA_LOAD_CALL in line:
            line = with_call_kwarg(line, "tl.load(", load)
        for call in ("tl.store(dst", "tl.store(out"):
            if store and call in line:
                line = with_call_kwarg(line, "tl.store(", store)
        out.append(line)
    return "\n".join(out) + "\n"


def is_first_hints(label: str, loads: dict, stores: dict) -> bool:
    """Whether variant `label` (strategy+load+store) carries the first hints of `loads` and
    `stores` (the sweep's baseline; '' first: the kernel as emitted, unhinted)."""
    first = [k for k in (next(iter(loads)), next(iter(stores))) if k]
    return label.split("+")[1:] == first


def main() -> None:

    from benchmarks.measure import same_size_copy, timed_together
    from legalsat.clients.triton import Kernel, build_kernel
    from legalsat.testing.torch_reference import compiled_peer, poison, same_bits
    from tools.sweep import workloads

    out = Path(os.environ.get("OUT", "."))
    args = sys.argv[1:]
    graph = "--graph" in args
    loads, stores = dict(LOAD_HINTS), dict(STORE_HINTS)
    for flag, table_of in (("--loads", loads), ("--stores", stores)):
        if flag in args:
            i = args.index(flag)
            keep = args[i + 1].split(",")
            if set(keep) - set(table_of):
                sys.exit(f"{flag}: {args[i + 1]!r} names hints outside {sorted(table_of)}")
            for key in set(table_of) - set(keep):
                del table_of[key]
            del args[i:i + 2]
    names = [a for a in args if a != "--graph"] or list(WORKLOADS)
    rows, table = [], []
    for name, resp, inp, want in workloads(lambda r: r, names):
        peer = compiled_peer(inp)
        peer()  # compiled before it is timed
        labels, fns = ["copy_", "torch.compile"], [same_size_copy(inp.moved_bytes), peer]
        for i, plan in enumerate(resp["plans"]):
            # the plans that could be a workload's best (a direct transpose is 5x off)
            if plan["strategy"] not in ("direct", "staged_smem", "shuffle") or \
                    plan["cost"]["estimated_us"] > 1.5 * resp["plans"][0]["cost"]["estimated_us"]:
                continue
            base = build_kernel(resp, variant="tl", plan_index=i)
            for ln, load in loads.items():
                for sn, store in stores.items():
                    k = Kernel(base.plan, dataclasses.replace(base.emitted, source=hinted(base.source, load, store)),
                               base.request_op)
                    label = f"{plan['strategy']}{'+' + ln if ln else ''}{'+' + sn if sn else ''}"
                    try:
                        poison(inp)
                        exact = same_bits(inp.call(k), want)
                    except Exception as e:  # reported, not fatal
                        rows.append({"workload": name, "variant": label, "error": f"{type(e).__name__}: {e}"[:300]})
                        continue
                    if not exact:
                        rows.append({"workload": name, "variant": label, "exact": False})
                        continue
                    labels.append(label)
                    fns.append(lambda k=k, inp=inp: inp.call(k, check=False))
        ms = timed_together(fns, graph=graph)
        del fns
        copy_ms = ms[0]
        for label, t in zip(labels, ms):
            rows.append({"workload": name, "variant": label, "exact": True, "ms": t,
                         "of_copy": round(copy_ms / t, 4)})
            print(f"{name[:40]:40s} {label:28s} {t:9.4f} ms  {copy_ms / t:6.3f} of copy_", flush=True)
        kern = [(t, lab) for lab, t in zip(labels[2:], ms[2:])]
        plain = min(t for t, lab in kern if is_first_hints(lab, loads, stores))
        best_t, best_label = min(kern)
        table.append((name, copy_ms, ms[1], plain, best_t, best_label))
    (out / ("hint_sweep_graph.json" if graph else "hint_sweep.json")).write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\n{'workload':40s} {'copy_':>8s} {'compile':>8s} {'first':>8s} {'best':>8s}  best (first: the first hints asked for)")
    for name, cp, tc, pl, bt, bl in table:
        print(f"{name[:40]:40s} {cp:8.4f} {tc:8.4f} {pl:8.4f} {bt:8.4f}  {bl} ({pl / bt:.3f}x)")


if __name__ == "__main__":
    main()
