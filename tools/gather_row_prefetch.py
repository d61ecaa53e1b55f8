"""Two other kernels for a gather along an inner axis (out[r, k] = src[r, index[k]]), measured
against the planned index-major gather, torch.compile of the same op and a same-size copy_.

    python -m tools.gather_row_prefetch            # on the GPU machine; writes $OUT/gather_row_prefetch.json
    python -m tools.gather_row_prefetch --staged   # also the register-staged variant (see below)

- `pf`: each program first prefetches its whole source rows into L2 (`prefetch.global.L2`, one
  per 128-byte line), so DRAM streams the rows instead of answering scattered sector reads,
  then gathers its entries; `nopf` is the same kernel without the prefetch.
- `--staged`: each program loads its whole source rows with coalesced loads and picks the
  entries with `tl.gather` (shared memory); with triton 3.6.0 a 4,096-element fp32 row did not
  compile within 270 s, so it is off by default.

Every variant is checked bit-exact against PyTorch and timed in interleaved rounds.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

from benchmarks.bench_kernels import PLANS
from benchmarks.measure import same_size_copy, timed_together
from legalsat.clients.triton import build_kernel
from legalsat.testing.torch_reference import compiled_peer, make_inputs, poison, reference, same_bits

SHAPES = ((1, 2), (1, 4), (2, 4), (4, 8))  # (rows per program, warps)


@triton.jit
def rows_gather(src, index, out, R: tl.constexpr, LINES: tl.constexpr, LINE: tl.constexpr, K: tl.constexpr,
                COUNT: tl.constexpr, BOUND: tl.constexpr, PREFETCH: tl.constexpr):
    pid = tl.program_id(0)
    r = pid * R + tl.arange(0, R)
    if PREFETCH:
        ln = tl.arange(0, LINES)
        tl.inline_asm_elementwise("prefetch.global.L2 [$1]; mov.u32 $0, 0;", "=r,l",
                                  [src + r[:, None] * BOUND + ln[None, :] * LINE],
                                  dtype=tl.int32, is_pure=False, pack=1)
    k = tl.arange(0, K)
    iv = tl.load(index + k, mask=k < COUNT, other=0).to(tl.int32)
    x = tl.load(src + r[:, None] * BOUND + iv[None, :])
    tl.store(out + r[:, None] * COUNT + k[None, :], x, mask=(k < COUNT)[None, :])


@triton.jit
def staged_rows_gather(src, index, out, R: tl.constexpr, W: tl.constexpr, K: tl.constexpr,
                       COUNT: tl.constexpr, BOUND: tl.constexpr):
    pid = tl.program_id(0)
    r = pid * R + tl.arange(0, R)
    k = tl.arange(0, K)
    iv = tl.load(index + k, mask=k < COUNT, other=0).to(tl.int32)
    x = tl.load(src + r[:, None] * BOUND + tl.arange(0, W)[None, :])
    y = tl.gather(x, tl.broadcast_to(iv[None, :], (R, K)), axis=1)
    tl.store(out + r[:, None] * COUNT + k[None, :], y, mask=(k < COUNT)[None, :])


def _launch(kernel, programs: int, args: tuple, warps: int):
    return lambda: kernel[(programs,)](*args, num_warps=warps)


def main(staged: bool, rounds: int = 7) -> dict:
    dev = torch.device("cuda")
    results = {}
    for name, entry in json.loads(PLANS.read_text()).items():
        if entry["workload"]["op"].get("axis", 0) == 0 or entry["workload"]["op"]["kind"] != "gather":
            continue
        resp = entry["response"]
        inp = make_inputs(resp, entry["workload"], dev, torch.Generator(device=dev).manual_seed(1234))
        ref = reference(inp)
        rows, bound = inp.src.shape
        count, line = inp.index.numel(), 128 // inp.src.element_size()
        fns = {"copy_": same_size_copy(inp.moved_bytes, dev)}
        peer = compiled_peer(inp)
        if same_bits(peer(), ref):
            fns["torch.compile"] = peer
        k = build_kernel(resp)
        poison(inp)
        if same_bits(inp.call(k), ref):
            fns["planned"] = lambda k=k, inp=inp: inp.call(k, check=False)
        K = triton.next_power_of_2(count)
        args = (inp.src, inp.index, inp.out)
        variants = {f"{'pf' if pf else 'nopf'} R{r} w{w}":
                    _launch(rows_gather, rows // r, (*args, r, bound // line, line, K, count, bound, pf), w)
                    for pf in (0, 1) for r, w in SHAPES}
        if staged:
            variants |= {f"staged R{r} w{w}": _launch(staged_rows_gather, rows // r, (*args, r, bound, K, count, bound), w)
                         for r, w in SHAPES}
        for label, fn in variants.items():
            t0 = time.time()
            poison(inp)
            fn()
            exact = same_bits(inp.out, ref)
            print(f"{label}: exact={exact} (compiled in {time.time() - t0:.1f} s)", flush=True)
            if exact:
                fns[label] = fn
        ms = timed_together(list(fns.values()), repeats=rounds)
        results[name] = dict(sorted(zip(fns, ms), key=lambda t: t[1]))
        for label, t in results[name].items():
            print(f"{name[:40]:40s} {label:16s} {t * 1000:8.2f} us", flush=True)
    return results


if __name__ == "__main__":
    out = Path(os.environ.get("OUT") or ".") / "gather_row_prefetch.json"
    out.write_text(json.dumps(main("--staged" in sys.argv[1:]), indent=1) + "\n")
    print("wrote", out)
