"""The wgmma matrix descriptors of tile plans, read by the tensor core itself (GPU machine).

    python -m tools.wgmma_probe plan               # CPU: plan the extra cases -> benchmarks/wgmma_probe_plans.json
    python -m tools.wgmma_probe run --out DIR      # GPU: nvcc, run, check -> DIR/wgmma_probe_results.json
    python -m tools.wgmma_probe report FILE        # CPU: the table

A load_tile plan for a wgmma consumer gives, besides the TMA boxes, the fields of the shared
memory matrix descriptor that addresses its stage: layout type, leading and stride byte
offsets, per k-slice a start offset and a base offset, and the step from one instruction's
block of M or N to the next (`tile_load.wgmma`). The tile-load benchmark checks the stage's
bytes (where TMA puts each element) and reads stages through Triton's own descriptors; this
probe checks the plan's fields: for every wgmma plan of the recorded tile plans
(benchmarks/tile_plans.json, tile_suite_plans.json) and a few extra cases (interleaved
layouts, 8-bit integers with their own n, explicit instruction shapes), it fills one stage
with random values where the plan's layout says TMA puts them (`stage_addresses`), then one
warpgroup issues, for every block and k-slice, `wgmma.mma_async` with the plan's
descriptor as the B operand and an identity A from registers, and the accumulator must hold
exactly the operand's block: row k, column n = element (mn = block start + n, k = slice start
+ k) of the tile read as the plan's matrix, every other row zero.

An A operand's descriptor is read as a B operand of n = its 64 rows: the canonical layouts
are the same for both operands (PTX ISA, "Shared Memory Matrix Layout": MN-major and K-major
in terms of MN and K). Only light modules are imported on the GPU machine (no planner).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

from legalsat.testing.planner_suite import view

ROOT = Path(__file__).resolve().parents[1]
PLAN_FILES = ("tile_plans.json", "tile_suite_plans.json", "wgmma_probe_plans.json")
EXTRA = ROOT / "benchmarks" / "wgmma_probe_plans.json"

class WgmmaType(NamedTuple):
    """How the probe issues an element type: PTX type, K of one instruction, accumulator,
    the bits of 1 in one element (the identity), element bytes."""

    ptx: str
    k: int
    acc: str
    one: int
    bytes: int


_TF32 = WgmmaType("tf32", 8, "f32", 0x3F800000, 4)
TYPES = {"float16": WgmmaType("f16", 16, "f32", 0x3C00, 2), "bfloat16": WgmmaType("bf16", 16, "f32", 0x3F80, 2),
         "float32": _TF32, "float32_ftz": _TF32, "tfloat32": _TF32, "tfloat32_ftz": _TF32,
         "float8_e4m3fn": WgmmaType("e4m3", 32, "f32", 0x38, 1), "float8_e5m2": WgmmaType("e5m2", 32, "f32", 0x3C, 1),
         "int8": WgmmaType("s8", 32, "s32", 0x01, 1), "uint8": WgmmaType("u8", 32, "s32", 0x01, 1)}


def extra_requests() -> dict[str, dict]:
    """Cases the recorded tile plans lack: interleaved (unswizzled) layouts, 32B swizzles
    whose k-slices start off a 256-byte repeat, 8-bit integer B operands of an N no integer
    instruction has (read in n = 8 blocks), explicit instruction shapes, an N of 512."""
    big = 8192
    row, col = (big, 1), (1, big)
    cases = {
        "bf16 B MN-major 64x24 (interleave)": ("bfloat16", row, [64, 24], "wgmma_b"),
        "bf16 B MN-major 64x40 (interleave)": ("bfloat16", row, [64, 40], "wgmma_b"),
        "bf16 B K-major 48x24": ("bfloat16", col, [48, 24], "wgmma_b"),
        "bf16 B K-major 96x24": ("bfloat16", col, [96, 24], "wgmma_b"),
        "bf16 B K-major 64x176": ("bfloat16", col, [64, 176], "wgmma_b"),
        "bf16 B MN-major 64x176": ("bfloat16", row, [64, 176], "wgmma_b"),
        "f16 B MN-major 64x16 (32B)": ("float16", row, [64, 16], "wgmma_b"),
        "f16 B MN-major 64x512": ("float16", row, [64, 512], "wgmma_b"),
        "f16 B K-major 64x512": ("float16", col, [64, 512], "wgmma_b"),
        "bf16 B K-major 64x256 n=128": ("bfloat16", col, [64, 256], {"kind": "wgmma_b", "instruction": [64, 128, 16]}),
        "bf16 B MN-major 64x256 n=64": ("bfloat16", row, [64, 256], {"kind": "wgmma_b", "instruction": [64, 64, 16]}),
        "int8 B K-major 64x40": ("int8", col, [64, 40], "wgmma_b"),
        "uint8 B K-major 128x80": ("uint8", col, [128, 80], "wgmma_b"),
        "e4m3 B K-major 64x40": ("float8_e4m3fn", col, [64, 40], "wgmma_b"),
        "tf32 B K-major 32x24": ("float32", col, [32, 24], "wgmma_b"),
        "bf16 A K-major 128x48": ("bfloat16", row, [128, 48], "wgmma_a"),
        "bf16 A MN-major 128x64": ("bfloat16", col, [128, 64], "wgmma_a"),
        "f16 A K-major 192x32 (64B)": ("float16", row, [192, 32], "wgmma_a"),
    }
    return {name: {"request_id": name, "op": {"kind": "load_tile", "src": view(dt, (big, big), strides),
                                              "tile": tile, "consumer": consumer}}
            for name, (dt, strides, tile, consumer) in cases.items()}


def plan() -> None:
    """Plan the extra cases (CPU, planner) into benchmarks/wgmma_probe_plans.json."""
    from legalsat.api import optimize

    out = {}
    for name, req in extra_requests().items():
        resp = optimize(req)
        resp.pop("egraph", None)
        out[name] = {"request": req, "response": resp}
    EXTRA.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"planned {len(out)} wgmma cases into {EXTRA}")


# ---------------------------------------------------------------- cases (light modules only)
def signature(plan: dict) -> str:
    """What decides a probe's outcome: the stage layout and the descriptor fields."""
    tl = plan["tile_load"]
    return json.dumps([plan["tile"], tl["layout"], tl["wgmma"], tl.get("folded"), tl.get("broadcast")], sort_keys=True)


def cases() -> list[dict]:
    """Every distinct wgmma plan of the plan files: name, request, plan."""
    seen, out = set(), []
    for fname in PLAN_FILES:
        path = ROOT / "benchmarks" / fname
        if not path.exists():
            continue
        for name, entry in json.loads(path.read_text()).items():
            for i, p in enumerate(entry["response"]["plans"]):
                wg = (p.get("tile_load") or {}).get("wgmma")
                if not wg or wg["element"] not in TYPES:
                    continue
                sig = signature(p)
                if sig in seen:
                    continue
                seen.add(sig)
                out.append({"name": f"{name} #{i}", "file": fname, "request": entry["request"], "plan": p})
    return out


def operand_matrix(request: dict, plan: dict):
    """(stage addresses of every tile element, operand[mn, k] -> flat tile index): the tile
    read as the plan's matrix, (M, K) for wgmma_a and (K, N) for wgmma_b, indexed (mn, k)."""
    import numpy as np

    from legalsat.kernels import validate_plan
    from legalsat.schemas.optimize import parse_request
    from legalsat.terms.movement import Consumer
    from legalsat.testing.tiles import stage_addresses

    load = parse_request(request).movement
    mat = load.matrix()
    is_a = load.consumer.kind is Consumer.WGMMA_A
    mn_extent, k_extent = (mat.rows, mat.cols) if is_a else (mat.cols, mat.rows)
    mn, k = np.meshgrid(np.arange(mn_extent), np.arange(k_extent), indexing="ij")
    idx = mat.indices(mn, k) if is_a else mat.indices(k, mn)
    flat = np.ravel_multi_index(tuple(np.moveaxis(idx, -1, 0)), tuple(plan["tile"]))
    return stage_addresses(validate_plan(plan)), flat


def values(element: str, n: int, gen):
    """n random elements the tensor core reads exactly, as (raw bytes tensor, float64 values)."""
    import torch

    if element in ("int8", "uint8"):
        raw = torch.randint(0, 256, (n,), dtype=torch.uint8, generator=gen)
        vals = raw.view(torch.int8).double() if element == "int8" else raw.double()
        return raw, vals
    if element.startswith("float8"):
        raw = torch.randint(0, 256, (n,), dtype=torch.uint8, generator=gen)
        t = torch.float8_e4m3fn if element == "float8_e4m3fn" else torch.float8_e5m2
        vals = raw.view(t).double()
        bad = ~torch.isfinite(vals)
        raw[bad] = 0x10  # a finite value in both formats
        return raw, raw.view(t).double()
    ints = torch.randint(-1024, 1025, (n,), generator=gen)
    t = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(element, torch.float32)
    if t is torch.bfloat16:
        ints = ints.clamp(-256, 256)  # bf16 holds every integer up to 256
    x = ints.to(t)
    return x.view(torch.uint8), x.double()


def prepare(case: dict) -> dict:
    """What one case needs, on the CPU: the stage address of every tile element, the tile
    index of every operand element (mn, k), and the descriptors."""
    addr, flat = operand_matrix(case["request"], case["plan"])
    return {"addr": addr, "flat": flat, "descs": descriptors(case["plan"], flat.shape[0])}


def emulate(case: dict, prepared: dict) -> int:
    """The probe on the CPU: the place every block and k-slice's descriptor reads each
    element from (the canonical layout, legalsat.analyses.wgmma.canonical_offset, then the
    swizzle) against where the plan's layout put that element of the operand; the count of
    elements read from elsewhere (0 when the plan's fields describe its own layout). Places,
    not values: a broadcast dim's positions share one."""
    import numpy as np

    from legalsat.analyses.wgmma import canonical_offset
    from legalsat.terms.descriptor import Swizzle
    from legalsat.terms.movement import Major

    wg = case["plan"]["tile_load"]["wgmma"]
    element, n, _ = kernel_key(case["plan"])
    k_w, eb = TYPES[element].k, TYPES[element].bytes
    addr, flat = prepared["addr"], prepared["flat"]
    swizzle, major = Swizzle(wg["swizzle"]), Major(wg["major"])
    mn, k = np.meshgrid(np.arange(n), np.arange(k_w), indexing="ij")
    wrong = 0
    for d, b, s in prepared["descs"]:
        if (d >> 49) & 7:
            raise ValueError("the emulation takes base offset 0 only")
        start = (d & 0x3FFF) << 4
        off = start + canonical_offset(major, swizzle, eb, ((d >> 16) & 0x3FFF) << 4, ((d >> 32) & 0x3FFF) << 4, mn, k)
        k0 = wg["k_slices"][s]["k0"]
        wrong += int((swizzle.apply(off) != addr[flat[b * n:(b + 1) * n, k0:k0 + k_w]]).sum())
    return wrong


def kernel_key(plan: dict) -> tuple[str, int, int]:
    wg = plan["tile_load"]["wgmma"]
    return wg["element"], wg["mn_block"] or 64, int(wg["major"] == "mn")


def descriptors(plan: dict, mn_extent: int) -> list[tuple[int, int, int]]:
    """(64-bit descriptor less the stage's base, block, k-slice) for every block of
    `mn_extent` and every k-slice."""
    wg = plan["tile_load"]["wgmma"]
    lbo, sbo, lt = wg["lbo_bytes"] >> 4, wg["sbo_bytes"] >> 4, wg["layout_type"]
    out = []
    blocks = max(1, mn_extent // (wg["mn_block"] or mn_extent))
    for b in range(blocks):
        for s, ks in enumerate(wg["k_slices"]):
            start = (ks["start_offset_bytes"] + b * wg["mn_block_bytes"]) >> 4
            out.append((start | (lbo << 16) | (sbo << 32) | (ks["base_offset"] << 49) | (lt << 62), b, s))
    return out


# ---------------------------------------------------------------- CUDA source
def _kernel(element: str, n: int, trans: int) -> str:
    ptx, k, acc, one, eb = TYPES[element]
    regs = n // 2
    cons = "f" if acc == "f32" else "r"
    d = ", ".join(f"%{i}" for i in range(regs))
    a = ", ".join(f"%{regs + i}" for i in range(4))
    q = f"%{regs + 4}"
    if ptx in ("s8", "u8"):
        tail = "p"
    elif ptx in ("f16", "bf16"):
        tail = f"p, 1, 1, {trans}"
    else:
        tail = "p, 1, 1"
    outs = ", ".join(f'"+{cons}"(c[{i}])' for i in range(regs))
    ctype = "float" if acc == "f32" else "int"
    name = kernel_name((element, n, trans))
    return f"""
__global__ void {name}(const uint8_t* __restrict__ stage, int stage_bytes,
                       const unsigned long long* __restrict__ desc, int ndesc, int* __restrict__ out) {{
  extern __shared__ uint8_t raw[];
  uint32_t base = (uint32_t)__cvta_generic_to_shared(raw);
  uint32_t pad = ((base + 1023u) & ~1023u) - base;
  uint8_t* smem = raw + pad;
  base += pad;
  for (int i = threadIdx.x * 16; i < stage_bytes; i += blockDim.x * 16)
    *(uint4*)(smem + i) = *(const uint4*)(stage + i);
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  uint32_t a[4];
  identity_{eb}(a, {one}u);
  int w = threadIdx.x / 32, l = threadIdx.x % 32, yes = 1;
  for (int j = 0; j < ndesc; ++j) {{
    unsigned long long q = desc[j] + (base >> 4);
    {ctype} c[{regs}];
    for (int i = 0; i < {regs}; ++i) c[i] = 0;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 5}, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc}.{ptx}.{ptx} {{{d}}}, {{{a}}}, {q}, {tail};\\n}}\\n"
                 : {outs}
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(q), "r"(yes) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;\\nwgmma.wait_group.sync.aligned 0;" ::: "memory");
    for (int i = 0; i < {regs}; ++i) {{
      int row = 16 * w + l / 4 + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * (l % 4) + (i & 1);
      out[((size_t)j * 64 + row) * {n} + col] = {"__float_as_int(c[i])" if acc == "f32" else "c[i]"};
    }}
  }}
}}
"""


_HEAD = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

// The identity A (64 x k) in registers, as mma's m16n8k{16,8,32} A fragments per warp: warp w
// holds rows 16w..16w+15; a lane holds rows g = lane/4 and g + 8, columns by lane % 4.
__device__ void identity_2(uint32_t* a, uint32_t one) {  // 16-bit, k = 16
  int w = threadIdx.x / 32, l = threadIdx.x % 32, g = 16 * w + l / 4, t = l % 4;
  for (int r = 0; r < 4; ++r) {
    int row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
    a[r] = (row == col ? one : 0u) | (row == col + 1 ? one << 16 : 0u);
  }
}
__device__ void identity_4(uint32_t* a, uint32_t one) {  // tf32, k = 8
  int w = threadIdx.x / 32, l = threadIdx.x % 32, g = 16 * w + l / 4, t = l % 4;
  for (int r = 0; r < 4; ++r) a[r] = (g + 8 * (r & 1) == t + 4 * (r >> 1)) ? one : 0u;
}
__device__ void identity_1(uint32_t* a, uint32_t one) {  // 8-bit, k = 32
  int w = threadIdx.x / 32, l = threadIdx.x % 32, g = 16 * w + l / 4, t = l % 4;
  for (int r = 0; r < 4; ++r) {
    int row = g + 8 * (r & 1), col = 4 * t + 16 * (r >> 1);
    uint32_t v = 0;
    for (int e = 0; e < 4; ++e) if (row == col + e) v |= one << (8 * e);
    a[r] = v;
  }
}
"""

_MAIN = r"""
static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e)); exit(1); }
}

int main(int argc, char** argv) {
  FILE* in = fopen(argv[1], "rb");
  FILE* outf = fopen(argv[2], "wb");
  int ncases;
  if (fread(&ncases, 4, 1, in) != 1) return 1;
  for (int c = 0; c < ncases; ++c) {
    int head[3];  // kernel, stage bytes, descriptors
    if (fread(head, 4, 3, in) != 3) return 1;
    std::vector<uint8_t> stage(head[1]);
    std::vector<unsigned long long> desc(head[2]);
    if (fread(stage.data(), 1, head[1], in) != (size_t)head[1]) return 1;
    if (fread(desc.data(), 8, head[2], in) != (size_t)head[2]) return 1;
    int n = NS[head[0]];
    uint8_t* d_stage; unsigned long long* d_desc; int* d_out;
    size_t out_words = (size_t)head[2] * 64 * n;
    check(cudaMalloc(&d_stage, head[1] + 16), "malloc");
    check(cudaMalloc(&d_desc, 8 * head[2]), "malloc");
    check(cudaMalloc(&d_out, 4 * out_words), "malloc");
    check(cudaMemcpy(d_stage, stage.data(), head[1], cudaMemcpyHostToDevice), "copy");
    check(cudaMemcpy(d_desc, desc.data(), 8 * head[2], cudaMemcpyHostToDevice), "copy");
    check(cudaMemset(d_out, 0xA5, 4 * out_words), "memset");
    int smem = head[1] + 1024;
    KERNELS[head[0]](d_stage, head[1], d_desc, head[2], d_out, smem);
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "run");
    std::vector<int> out(out_words);
    check(cudaMemcpy(out.data(), d_out, 4 * out_words, cudaMemcpyDeviceToHost), "copy back");
    fwrite(out.data(), 4, out_words, outf);
    cudaFree(d_stage); cudaFree(d_desc); cudaFree(d_out);
  }
  fclose(outf);
  return 0;
}
"""


def kernel_name(key: tuple[str, int, int]) -> str:
    """The kernel of (element, n, trans); element types the tensor core reads alike share one."""
    element, n, trans = key
    return f"probe_{TYPES[element].ptx}_n{n}_t{trans}"


def kernel_index(keys: list[tuple[str, int, int]]) -> dict[tuple[str, int, int], int]:
    """Each key's kernel's place in the program's dispatch table (`source`)."""
    names = list(dict.fromkeys(kernel_name(k) for k in keys))
    return {k: names.index(kernel_name(k)) for k in keys}


def source(keys: list[tuple[str, int, int]]) -> str:
    """The probe program for the (element, n, trans) kernels `keys`, dispatched by
    `kernel_index`."""
    firsts: dict[str, tuple[str, int, int]] = {}  # each kernel, by the first key it serves
    for key in keys:
        firsts.setdefault(kernel_name(key), key)
    kernels = [_kernel(*key) for key in firsts.values()]
    launchers = [f"""static void launch_{name}(const uint8_t* s, int sb, const unsigned long long* d, int nd,
                          int* o, int smem) {{
  cudaFuncSetAttribute({name}, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  {name}<<<1, 128, smem>>>(s, sb, d, nd, o);
}}""" for name in firsts]
    table = (f"typedef void (*Launch)(const uint8_t*, int, const unsigned long long*, int, int*, int);\n"
             f"static const Launch KERNELS[] = {{{', '.join('launch_' + nm for nm in firsts)}}};\n"
             f"static const int NS[] = {{{', '.join(str(key[1]) for key in firsts.values())}}};\n")
    return _HEAD + "".join(kernels) + "\n".join(launchers) + "\n" + table + _MAIN


# ---------------------------------------------------------------- run (GPU)
# the control: every descriptor with its start one 16-byte chunk on, which must read wrong
CONTROL_SHIFT = 1


def run(out_dir: Path, seed: int = 7) -> dict:
    """Compile the probe for every kernel the cases need, run every case and its control,
    check the accumulators: the results document (`rows`: per case; `controls`: per case,
    how many elements its shifted descriptors read wrong)."""
    import numpy as np
    import torch

    gen = torch.Generator().manual_seed(seed)
    todo = cases()
    keys = sorted({kernel_key(c["plan"]) for c in todo})
    index = kernel_index(keys)
    out_dir.mkdir(parents=True, exist_ok=True)
    cu, exe = out_dir / "wgmma_probe.cu", out_dir / "wgmma_probe"
    cu.write_text(source(keys))
    t0 = time.time()
    built = subprocess.run(["nvcc", "-O1", "-gencode", "arch=compute_90a,code=sm_90a", "-std=c++17", "-o", str(exe),
                            str(cu)], capture_output=True, text=True)
    if built.returncode:
        raise SystemExit(f"nvcc failed:\n{built.stderr[-4000:]}")
    compile_s = time.time() - t0
    blob, expected = [np.array([2 * len(todo)], dtype=np.int32).tobytes()], []
    for c in todo:
        plan = c["plan"]
        element = plan["tile_load"]["wgmma"]["element"]
        prepared = prepare(c)
        addr, flat, descs = prepared["addr"], prepared["flat"], prepared["descs"]
        eb = TYPES[element].bytes
        raw, vals = values(element, int(np.prod(plan["tile"])), gen)
        # elements that share a place (a broadcast dim's positions) hold one value
        _, first, inverse = np.unique(addr, return_index=True, return_inverse=True)
        same = torch.as_tensor(first[inverse.reshape(-1)])
        raw, vals = raw.view(-1, eb)[same].reshape(-1), vals[same]
        stage_bytes = int(addr.max()) + eb + 16 * CONTROL_SHIFT  # the control reads past the last element
        stage_bytes += -stage_bytes % 16
        stage = np.zeros(stage_bytes, dtype=np.uint8)
        raw_np = raw.numpy().reshape(-1, eb)
        for b in range(eb):
            stage[addr + b] = raw_np[:, b]
        for shift in (0, CONTROL_SHIFT):
            blob.append(np.array([index[kernel_key(plan)], stage_bytes, len(descs)], dtype=np.int32).tobytes())
            blob.append(stage.tobytes())
            blob.append(np.array([d + shift for d, _, _ in descs], dtype=np.uint64).tobytes())
        expected.append((c, descs, flat, vals.numpy()))
    (out_dir / "wgmma_probe_cases.bin").write_bytes(b"".join(blob))
    t0 = time.time()
    ran = subprocess.run([str(exe), str(out_dir / "wgmma_probe_cases.bin"), str(out_dir / "wgmma_probe_out.bin")],
                         capture_output=True, text=True)
    run_s = time.time() - t0
    if ran.returncode:
        raise SystemExit(f"the probe failed: {ran.stderr[-4000:]}")
    got = np.fromfile(out_dir / "wgmma_probe_out.bin", dtype=np.int32)
    rows, controls, pos = [], [], 0
    for c, descs, flat, vals in expected:
        wg = c["plan"]["tile_load"]["wgmma"]
        element, n, _ = kernel_key(c["plan"])
        acc, k_w = TYPES[element].acc, TYPES[element].k
        counts, first = [], None
        for shift in (0, CONTROL_SHIFT):
            wrong = 0
            for _, b, s in descs:
                block = got[pos:pos + 64 * n].reshape(64, n)
                pos += 64 * n
                d_vals = block.view(np.float32).astype(np.float64) if acc == "f32" else block.astype(np.float64)
                k0 = wg["k_slices"][s]["k0"]
                want = np.zeros((64, n))
                want[:k_w] = vals[flat[b * n:(b + 1) * n, k0:k0 + k_w]].T
                bad = np.argwhere(d_vals != want)
                wrong += len(bad)
                if len(bad) and first is None and not shift:
                    r, col = bad[0]
                    first = {"block": b, "k_slice": s, "row": int(r), "col": int(col), "got": float(d_vals[r, col]),
                             "want": float(want[r, col])}
            counts.append(wrong)
        consumer = c["request"]["op"]["consumer"]
        rows.append({"name": c["name"], "file": c["file"], "element": element,
                     "consumer": consumer if isinstance(consumer, str) else consumer["kind"], "major": wg["major"],
                     "swizzle": wg["swizzle"], "layout_type": wg["layout_type"], "lbo_bytes": wg["lbo_bytes"],
                     "sbo_bytes": wg["sbo_bytes"], "mn_block": wg["mn_block"], "mn_block_bytes": wg["mn_block_bytes"],
                     "base_offsets": sorted({s["base_offset"] for s in wg["k_slices"]}), "instructions": len(descs),
                     "exact": counts[0] == 0, "wrong_elements": counts[0], "first_wrong": first,
                     "request": c["request"]})
        controls.append({"name": c["name"], "wrong_elements": counts[1], "of": len(descs) * k_w * n})
    return {"env": _env(), "compile_s": round(compile_s, 1), "run_s": round(run_s, 2), "rows": rows,
            "controls": controls}


def _env() -> dict:
    from benchmarks.environment import gpu_environment

    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return {**gpu_environment(0), "nvcc": nvcc}


def report(results: dict) -> str:
    rows = results["rows"]
    from collections import Counter

    groups = Counter((r["element"], r["consumer"], r["major"], r["swizzle"]) for r in rows)
    exact = Counter((r["element"], r["consumer"], r["major"], r["swizzle"]) for r in rows if r["exact"])
    env = results["env"]
    caught = sum(1 for c in results["controls"] if c["wrong_elements"])
    lines = [f"{env['gpu']}, driver {env['driver']}, {env['nvcc']}: {sum(r['exact'] for r in rows)} of {len(rows)} "
             f"distinct wgmma plans read exactly ({sum(r['instructions'] for r in rows)} instructions); controls "
             f"(each descriptor's start 16 bytes on) read wrong in {caught} of {len(results['controls'])}",
             "| element | consumer | major | swizzle | plans exact |", "| --- | --- | --- | --- | --- |"]
    for key in sorted(groups):
        lines.append(f"| {' | '.join(key)} | {exact[key]} / {groups[key]} |")
    for r in rows:
        if not r["exact"]:
            lines.append(f"WRONG {r['name']}: {r['wrong_elements']} elements, first {r['first_wrong']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("plan")
    r = sub.add_parser("run")
    r.add_argument("--out", default=os.environ.get("OUT", "."))
    r.add_argument("--seed", type=int, default=7)
    rp = sub.add_parser("report")
    rp.add_argument("file")
    args = ap.parse_args(argv)
    if args.cmd == "plan":
        plan()
    elif args.cmd == "run":
        results = run(Path(args.out), args.seed)
        path = Path(args.out) / "wgmma_probe_results.json"
        path.write_text(json.dumps(results, indent=1) + "\n")
        print(report(results))
    else:
        print(report(json.loads(Path(args.file).read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
