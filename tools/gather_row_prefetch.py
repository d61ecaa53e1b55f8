"""Two other kernels for a gather along an inner axis (out[r, k] = src[r, index[k]]), measured
against the planned index-major gather, torch.compile of the same op and a same-size copy_.

    python -m tools.gather_row_prefetch            # on the GPU machine; writes $OUT/gather_row_prefetch.json
    python -m tools.gather_row_prefetch --staged   # also the register-staged variant (see below)
    python -m tools.gather_row_prefetch --compile-staged   # CPU: how long that variant takes to compile
    python -m tools.gather_row_prefetch --counts [--cudagraph]
        # also by column count; --cudagraph: every function replayed from a CUDA graph (the
        # device's time alone, where do_bench's events also take in a slow host's launches)

- `pf`: each program first prefetches its whole source rows into L2 (`prefetch.global.L2`, one
  per 128-byte line), so DRAM streams the rows instead of answering scattered sector reads,
  then gathers its entries; `nopf` is the same kernel without the prefetch.
- `gluon staged`: one row a program, loaded whole with coalesced 16-byte loads (Gluon), its
  entries picked by `gl.gather` through shared memory (compiles in under a second).
- `--staged`: each program loads its whole source rows with coalesced loads and picks the
  entries with `tl.gather` (shared memory); with triton 3.6.0 one 4,096-element fp32 row a
  program (1,000 entries, 2 warps) took 215 s to compile for sm90 on the 2-core development
  machine (`--compile-staged`: benchmarks/staged_gather_compile.json), so it is off by default.

Every variant is checked bit-exact against PyTorch and timed in interleaved rounds.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

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


@gluon.jit
def gluon_rows_gather(src, index, out, W: gl.constexpr, K: gl.constexpr, COUNT: gl.constexpr, BOUND: gl.constexpr,
                      NW: gl.constexpr):
    """One source row a program, loaded whole with 16-byte coalesced loads; its entries picked by
    `gl.gather` (through shared memory: the row is staged there, then read at the indices)."""
    row = gl.program_id(0)
    lay: gl.constexpr = gl.BlockedLayout([4], [32], [NW], [0])
    offs = gl.arange(0, W, layout=lay)
    x = gl.load(src + row * BOUND + offs, mask=offs < BOUND, other=0.0)
    k = gl.arange(0, K, layout=lay)
    iv = gl.load(index + k, mask=k < COUNT, other=0).to(gl.int32)
    gl.store(out + row * COUNT + k, gl.gather(x, iv, 0), mask=k < COUNT)


def _launch(kernel, programs: int, args: tuple, warps: int):
    return lambda: kernel[(programs,)](*args, num_warps=warps)


def main(staged: bool, rounds: int = 7, graph: bool = False) -> dict:
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
        for variant in ("tl", "gluon"):  # the plan's kernel as emitted, each variant
            k = build_kernel(resp, variant=variant)
            poison(inp)
            if same_bits(inp.call(k), ref):
                fns[f"planned {variant}"] = lambda k=k, inp=inp: inp.call(k, check=False)
        K = triton.next_power_of_2(count)
        args = (inp.src, inp.index, inp.out)
        variants = {f"{'pf' if pf else 'nopf'} R{r} w{w}":
                    _launch(rows_gather, rows // r, (*args, r, bound // line, line, K, count, bound, pf), w)
                    for pf in (0, 1) for r, w in SHAPES}
        W = triton.next_power_of_2(bound)
        variants |= {f"gluon staged w{w}": _launch(gluon_rows_gather, rows, (*args, W, K, count, bound, w), w)
                     for w in (2, 4, 8)}
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
        ms = timed_together(list(fns.values()), repeats=rounds, graph=graph)
        results[name] = dict(sorted(zip(fns, ms), key=lambda t: t[1]))
        for label, t in results[name].items():
            print(f"{name[:40]:40s} {label:16s} {t * 1000:8.2f} us", flush=True)
    return results


def by_count(counts=(64, 250, 500, 1000, 2000, 4000), rows: int = 2048, bound: int = 4096, rounds: int = 7,
             graph: bool = False) -> dict:
    """The index-major gather's shape (1,024 entries x 1 row, 2 warps: `nopf R1 w2`) against the
    Gluon staged row and torch.compile, for `count` random distinct columns of `bound` fp32:
    where a whole row's load pays (most of its sectors are read anyway) and where it does not."""
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(7)
    src = torch.randn(rows, bound, device=dev, generator=gen)
    W = triton.next_power_of_2(bound)
    results = {}
    for count in counts:
        index = torch.randperm(bound, device=dev, generator=gen)[:count]
        want = torch.index_select(src, 1, index)
        out = torch.empty_like(want)
        K = triton.next_power_of_2(count)
        line = 128 // src.element_size()
        fns = {"copy_": same_size_copy(2 * want.numel() * 4, dev)}
        peer = torch.compile(lambda s, i: torch.index_select(s, 1, i), dynamic=False)
        if same_bits(peer(src, index), want):
            fns["torch.compile"] = lambda peer=peer, index=index: peer(src, index)
        kernels: dict = {"index-major (planned shape)": None}
        for w in (4, 8, 16):
            kernels[f"gluon staged w{w}"] = _launch(gluon_rows_gather, rows, (src, index, out, W, K, count, bound, w), w)
        if K <= 1024:
            kernels["index-major (planned shape)"] = _launch(
                rows_gather, rows, (src, index, out, 1, bound // line, line, K, count, bound, 0), 2)
        else:
            del kernels["index-major (planned shape)"]
        for label, fn in kernels.items():
            out.fill_(float("nan"))
            fn()
            if torch.equal(out, want):
                fns[label] = fn
            else:
                print(f"{count}: {label} differs", flush=True)
        ms = timed_together(list(fns.values()), repeats=rounds, graph=graph)
        results[f"{count} of {bound} fp32 columns x {rows} rows"] = dict(sorted(zip(fns, ms), key=lambda t: t[1]))
        for label, t in results[f"{count} of {bound} fp32 columns x {rows} rows"].items():
            print(f"{count:5d} {label:28s} {t * 1000:8.2f} us", flush=True)
    return results


def staged_compile_seconds(rows: int = 1, warps: int = 2, bound: int = 4096, count: int = 1000) -> float:
    """Seconds Triton takes to compile the register-staged variant for sm90 (no GPU needed)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource

    sig = {"src": "*fp32", "index": "*i64", "out": "*fp32", **dict.fromkeys(("R", "W", "K", "COUNT", "BOUND"),
                                                                           "constexpr")}
    consts = {"R": rows, "W": triton.next_power_of_2(bound), "K": triton.next_power_of_2(count), "COUNT": count,
              "BOUND": bound}
    # a cold compile: Triton's cache would answer the second
    with tempfile.TemporaryDirectory() as cache, mock.patch.dict(os.environ, {"TRITON_CACHE_DIR": cache}):
        t = time.time()
        triton.compile(ASTSource(staged_rows_gather, sig, constexprs=consts), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": warps})
        return time.time() - t


if __name__ == "__main__" and sys.argv[1:] == ["--compile-staged"]:
    seconds = staged_compile_seconds()
    print(f"compiled in {seconds:.1f} s")
    record = {"machine": f"{os.uname().machine}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
              "triton": triton.__version__, "kernel": "staged_rows_gather R=1 W=4096 K=1024 COUNT=1000, 2 warps, sm90",
              "compile_seconds": round(seconds, 1)}
    (Path(os.environ.get("OUT") or ".") / "staged_gather_compile.json").write_text(json.dumps(record, indent=1) + "\n")
elif __name__ == "__main__":
    graph = "--cudagraph" in sys.argv[1:]
    out = Path(os.environ.get("OUT") or ".") / f"gather_row_prefetch{'_cudagraph' if graph else ''}.json"
    from benchmarks.environment import gpu_environment

    result = {"env": gpu_environment(torch.device("cuda")), "cudagraph": graph,
              **main("--staged" in sys.argv[1:], graph=graph)}
    if "--counts" in sys.argv[1:]:
        result["by_count"] = by_count(graph=graph)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", out)
