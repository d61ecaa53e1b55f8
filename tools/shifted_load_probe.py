"""A copy whose source rows start off 16 bytes (a column slice of a 4098-wide bf16 matrix
whose base is 2-byte aligned), read as whole 16-byte vectors and shifted into place,
measured against the plan of benchmarks/kernel_plans.json (when recorded: the direct kernel's
2-byte loads; since legalsat-planner/19 this shifted kernel), `torch.compile` and a same-size
copy_.

    python -m tools.shifted_load_probe   # on the GPU machine; writes $OUT/shifted_load_probe.json
    python -m tools.shifted_load_probe plan-dtypes   # CPU: benchmarks/shifted_load_dtypes_plans.json
    python -m tools.shifted_load_probe dtypes        # GPU: $OUT/shifted_load_dtypes.json

`dtypes`: the planner's own plans of a column slice of 1-, 2-, 4- and 8-byte elements (8,192
rows of 8 KiB, a pitch one element longer, the base one element off 16 bytes), with the shift
(which the planner now makes for 2-byte words only: `legalsat.planner.build.copy`) and without
it (loads one element wide), next to
`torch.compile` and a same-size copy_, timed eagerly and from CUDA graphs (the device's time).

`shifted`: each program copies `R` rows x `BC` columns. Its loads start each row at the
16-byte boundary at or before the row's first element (the kernel is passed the allocation's
aligned base and the view's element offset) and read each 16-byte vector and the one after it
(the second an L1 hit: the neighbouring thread's); each thread picks its 8 elements from the two
by the row's misalignment (`tl.gather` along a thread-held axis of 8), so loads and stores are
both 16-byte vectors and no shared memory is used. (A gather along the whole row, Triton's
generic warp-local form, compiles to 128 shuffles an element; this one to 2.)
Every variant is checked bit-exact against PyTorch and timed
in interleaved rounds.
"""

from __future__ import annotations

import json
from pathlib import Path

from legalsat.kernels.source import HEADER_TL

WORKLOAD = "column slice 8192×4096 of 4098 bf16, base 2 B aligned"
SHAPES = ((1, 1024, 4), (2, 1024, 8), (4, 512, 4), (8, 256, 4), (2, 2048, 8), (4, 1024, 8), (1, 2048, 8), (2, 512, 4))  # (R, BC, warps)


def shifted_kernel(rows: int, cols: int, pitch: int, r: int, bc: int, word: int = 2) -> tuple[str, int]:
    """Source and program count of the shifted copy: dst[i, c] = base[off + i * pitch + c]
    (`rows` x `cols`, dst contiguous), `base` 16-byte aligned, `off` a runtime argument."""
    v = 16 // word  # elements of a 16-byte vector
    if cols % bc or rows % r:
        raise ValueError(f"{rows} x {cols} is not whole {r} x {bc} tiles")
    nct = cols // bc
    text = f"""@triton.jit
def shifted_copy(base, dst, off):
    pid = tl.program_id(0)
    ct = pid % {nct}
    rt = pid // {nct}
    i = rt * {r} + tl.arange(0, {r})
    c = ct * {bc} + tl.arange(0, {bc})
    start = off + i.to(tl.int64) * {pitch}
    e = (start % {v}).to(tl.int32)
    a = tl.multiple_of(start - e, {v})
    p = base + a[:, None] + c[None, :]
    m = tl.reshape(tl.load(p), ({r}, {bc // v}, {v}))
    n = tl.reshape(tl.load(p + {v}), ({r}, {bc // v}, {v}))
    k = tl.broadcast_to(tl.arange(0, {v})[None, None, :] + e[:, None, None], ({r}, {bc // v}, {v}))
    y = tl.where(k < {v}, tl.gather(m, k % {v}, axis=2), tl.gather(n, k % {v}, axis=2))
    tl.store(dst + i[:, None] * {cols} + c[None, :], tl.reshape(y, ({r}, {bc})))
"""
    return text, (rows // r) * nct


def main() -> list[dict]:
    import torch

    from benchmarks.bench_kernels import PLANS
    from benchmarks.measure import same_size_copy, timed_against_copy
    from legalsat.clients.triton import build_kernel, load_module

    dev = torch.device("cuda")
    rows, cols, pitch, off = 8192, 4096, 4098, 1
    buf = torch.randn(rows * pitch + 16, device=dev).to(torch.bfloat16)  # 16 spare: the last row's next vector
    src = buf.as_strided((rows, cols), (pitch, 1), off)
    want = src.contiguous()
    fns, names = [], []
    for r, bc, warps in SHAPES:
        text, grid = shifted_kernel(rows, cols, pitch, r, bc)
        fn = load_module(HEADER_TL + "\n" + text).shifted_copy
        dst = torch.full((rows, cols), float("nan"), device=dev, dtype=torch.bfloat16)
        try:
            fn[(grid,)](buf, dst, off, num_warps=warps)
            exact = torch.equal(dst.view(torch.int16), want.view(torch.int16))
        except Exception as e:  # reported, not fatal
            exact = False
            print(f"shifted {r}x{bc} w{warps}: {type(e).__name__}: {str(e)[:300]}", flush=True)
        print(f"shifted {r}x{bc} w{warps}: exact {exact}", flush=True)
        if exact:
            fns.append(lambda fn=fn, grid=grid, dst=dst, w=warps: fn[(grid,)](buf, dst, off, num_warps=w))
            names.append(f"shifted R={r} BC={bc} warps={warps}")
    response = json.loads(PLANS.read_text())[WORKLOAD]["response"]
    planned = build_kernel(response, variant="tl")
    out = torch.empty(rows, cols, device=dev, dtype=torch.bfloat16)
    planned(src, out)
    assert torch.equal(out.view(torch.int16), want.view(torch.int16)), "the planned kernel"
    fns.append(lambda: planned(src, out))
    # the recorded run's plan (before planner/19) loaded 2 bytes at a time; later plans shift
    names.append("planned direct, shifted" if response["plans"][0]["pieces"][0].get("shifted_loads")
                 else "planned direct")
    compiled = torch.compile(lambda d, s: d.copy_(s), dynamic=False)
    tc_out = torch.empty_like(out)
    compiled(tc_out, src)
    assert torch.equal(tc_out.view(torch.int16), want.view(torch.int16)), "torch.compile"
    fns.append(lambda: compiled(tc_out, src))
    names.append("torch.compile")
    fns.append(same_size_copy(2 * src.numel() * src.element_size(), dev))
    names.append("same-size copy_")
    return timed_against_copy(names, fns, repeats=5, digits=2)


DTYPES_PLANS = Path(__file__).resolve().parents[1] / "benchmarks" / "shifted_load_dtypes_plans.json"


def plan_dtypes() -> None:
    """Plan the column slice of each element size with and without the shift (CPU)."""
    from unittest import mock

    import legalsat.planner.build.copy as copy_build
    from legalsat.api import optimize

    out = {}
    for dtype, eb in (("uint8", 1), ("bfloat16", 2), ("float32", 4), ("int64", 8)):
        cols = 8192 // eb
        req = {"op": {"kind": "copy",
                      "src": {"dtype": dtype, "shape": [8192, cols], "strides": [cols + 1, 1], "base_align": eb},
                      "dst": {"dtype": dtype, "shape": [8192, cols], "strides": [cols, 1]}}}
        with mock.patch.object(copy_build, "SHIFT_ELEMENT_BYTES", eb):  # the planner shifts 2-byte words only
            shifted = optimize(req)
        with mock.patch.object(copy_build, "shifted_loads", lambda r: False):
            plain = optimize(req)
        assert shifted["plans"][0]["pieces"][0].get("shifted_loads") and not plain["plans"][0]["pieces"][0].get(
            "shifted_loads")
        out[dtype] = {"shifted": shifted, "plain": plain}
    DTYPES_PLANS.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {DTYPES_PLANS}")


def dtypes() -> list[dict]:
    """Each element size's shifted and plain plans, torch.compile and copy_, eager and graphed (GPU)."""
    import torch

    from benchmarks.measure import same_size_copy, timed_both_ways
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import compiled_peer, make_inputs, poison, reference, same_bits

    dev = torch.device("cuda")
    rows = []
    for dtype, entry in json.loads(DTYPES_PLANS.read_text()).items():
        inp = make_inputs(entry["shifted"], {"torch_op": "copy"}, dev, torch.Generator(device=dev).manual_seed(5))
        want = reference(inp)
        names, fns = [], []
        for form in ("shifted", "plain"):
            k = build_kernel(entry[form], variant="tl")
            poison(inp)
            assert same_bits(inp.call(k), want), (dtype, form)
            names.append(form)
            fns.append(lambda k=k, inp=inp: inp.call(k, check=False))
        peer = compiled_peer(inp)
        assert same_bits(peer(), want), (dtype, "torch.compile")
        names += ["torch.compile", "copy_"]
        fns += [peer, same_size_copy(inp.moved_bytes, dev)]
        eager, graph = timed_both_ways(fns, repeats=5)
        row = {"dtype": dtype, "eager_us": {n: round(t * 1e3, 2) for n, t in zip(names, eager)},
               "graph_us": {n: round(t * 1e3, 2) for n, t in zip(names, graph)}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    import sys

    from benchmarks.measure import write_probe

    if sys.argv[1:] == ["plan-dtypes"]:
        plan_dtypes()
    elif sys.argv[1:] == ["dtypes"]:
        write_probe("shifted_load_dtypes.json", "column slices of 1- to 8-byte elements", dtypes())
    else:
        write_probe("shifted_load_probe.json", WORKLOAD, main())
