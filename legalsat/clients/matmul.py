"""`matmul(a, b)`: a GEMM whose operand loads legalsat plans (`legalsat.kernels.gemm`).

    from legalsat.clients.triton import matmul
    c = matmul(a, b)                      # a [M, K], b [K, N]: bf16 or fp16 on an sm90 GPU

Both operands are planned as tile loads (A: [BM, BK] tiles for wgmma_a, B: [BK, BN] tiles
for wgmma_b, K-major or MN-major as b's strides say); the kernels take the plans' boxes and
swizzles and the stages that fit both with the C tile. An operand whose row pitch TMA cannot
take (not a multiple of 16 bytes: a [K, 50257] bf16 B) is first relaid out into a padded
buffer by legalsat's own copy plan, then planned again; a C whose rows are no multiple of 16
bytes is written into a padded buffer and returned as a view of its first N columns.

Plans come from `planner` (a callable taking an optimize request, returning the response: the
in-process `legalsat.optimize` by default, or `legalsat.clients.http.Client(...).optimize`),
cached per request.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from functools import cache

import torch

from legalsat.diagnostics import Code, InputError
from legalsat.kernels.gemm import GemmConfig, gemm_source

TORCH_NAMES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
SMEM_BUDGET = 232448 - 2048  # sm90's opt-in shared memory, less what the compiler keeps for itself


def _arg_error(field: str, message: str, fix: str) -> InputError:
    return Code.INVALID_ARGUMENT.error(message, fix, field)


@cache
def _default_planner() -> Callable[[dict], dict]:
    from legalsat.api import optimize

    return optimize


_PLANS: dict[str, dict] = {}
_LAUNCHES: dict[tuple, tuple] = {}
_RELAYOUTS: dict[tuple, object] = {}  # copy request -> its kernel  # views, tiles and kernel -> (config, B relaid out, C element bytes)


def _plan(planner: Callable[[dict], dict] | None, request: dict) -> dict:
    key = json.dumps(request, sort_keys=True)
    if planner is None and key in _PLANS:
        return _PLANS[key]
    resp = (planner or _default_planner())(request)
    if planner is None:
        _PLANS[key] = resp
    return resp


def _view(t: torch.Tensor) -> dict:
    return {"dtype": TORCH_NAMES[t.dtype], "shape": list(t.shape), "strides": list(t.stride()),
            "base_align": 16 if t.data_ptr() % 16 == 0 else t.element_size()}


def _tile_request(t: torch.Tensor, tile: list[int], consumer: dict) -> dict:
    return {"target": "sm90", "op": {"kind": "load_tile", "src": _view(t), "tile": tile, "consumer": consumer}}


def _tma_plan(resp: dict) -> dict | None:
    return next((p for p in resp.get("plans", []) if p["strategy"] == "tma"), None)


def _padded(n: int, eb: int) -> int:
    """n rounded up so that n elements span a multiple of 16 bytes."""
    per = 16 // eb
    return -(-n // per) * per


def relayout(t: torch.Tensor, planner: Callable[[dict], dict] | None = None) -> torch.Tensor:
    """t [R, C] copied, by legalsat's copy plan, into a buffer whose rows are padded to a
    multiple of 16 bytes; returns the [R, C] view of it (what a TMA descriptor can walk).
    A meta tensor is only planned (what `plan_operands` asks for, without running it)."""
    from legalsat.clients.triton import build_kernel

    r, c = t.shape
    pitch = _padded(c, t.element_size())
    buf = torch.empty(r, pitch, dtype=t.dtype, device=t.device)
    dst = buf[:, :c]
    req = {"target": "sm90", "op": {"kind": "copy", "src": _view(t), "dst": _view(dst)}}
    key = (json.dumps(req, sort_keys=True), planner)
    kernel = _RELAYOUTS.get(key)
    if kernel is None:
        resp = _plan(planner, req)
        if t.device.type == "meta":
            return dst
        kernel = _RELAYOUTS[key] = build_kernel(resp)
    kernel(t, dst)
    return dst


def choose(m: int, n: int, k: int, sms: int = 132) -> tuple[int, int, int]:
    """(BM, BN, BK) of the GEMM's tiles, as measured fastest on the H100 (benchmarks/RESULTS.md):
    128-row A tiles (two warpgroups); 256-wide B tiles when they fill the GPU twice over, else
    128 (ragged M, small N); 64-deep K steps, 32 for a short K (a head dim of 80: less zero
    fill, still two 16-element k-slices per step)."""
    bn = 256 if -(-m // 128) * -(-n // 256) >= 2 * sms else 128 if n > 64 else 64
    bk = 64 if k >= 256 else 32 if k >= 32 else 16
    return 128, bn, bk


def plan_operands(a: torch.Tensor, b: torch.Tensor, bm: int, bn: int, bk: int,
                  planner: Callable[[dict], dict] | None = None):
    """(A's plan, B's plan, b as planned: relaid out when its pitch rules TMA out)."""
    instr = [64, bn, 16]
    a_resp = _plan(planner, _tile_request(a, [bm, bk], {"kind": "wgmma_a", "major": "k", "instruction": instr}))
    a_plan = _tma_plan(a_resp)
    if a_plan is None:
        raise _arg_error("a", "legalsat has no TMA plan for A's tiles: " + _why(a_resp),
                         "pass A contiguous (rows of a multiple of 16 bytes)")
    b_resp = _plan(planner, _tile_request(b, [bk, bn], {"kind": "wgmma_b", "instruction": instr}))
    b_plan = _tma_plan(b_resp)
    if b_plan is None and b.stride(1) == 1:
        b = relayout(b, planner)
        b_resp = _plan(planner, _tile_request(b, [bk, bn], {"kind": "wgmma_b", "instruction": instr}))
        b_plan = _tma_plan(b_resp)
    if b_plan is None:
        raise _arg_error("b", "legalsat has no TMA plan for B's tiles: " + _why(b_resp),
                         "pass B with N or K contiguous")
    return a_plan, b_plan, b


def _why(resp: dict) -> str:
    for r in resp.get("rejected", []):
        if r["strategy"] == "tma" and r.get("reasons"):
            return r["reasons"][0]["message"]
    return "no reason given"


def _swizzle(plan: dict) -> int:
    s = plan["tile_load"]["layout"]["swizzle"]
    return 0 if s == "none" else int(s.rstrip("B"))


def config(a_plan: dict, b_plan: dict, bm: int, bn: int, bk: int, in_bytes: int, out_bytes: int,
           variant: str, num_warps: int = 8) -> GemmConfig:
    """The GEMM around two operand plans: their swizzles, and the stages that fit both
    operands' stages and the C tile in the budget (2 to 5)."""
    for name, plan in (("a", a_plan), ("b", b_plan)):
        wg = plan["tile_load"].get("wgmma")
        if wg is None:
            raise _arg_error(name, f"{name}'s tile plan gives wgmma no descriptor: {plan['tile_load'].get('note')}",
                             "pass bf16 / fp16 operands with K or M/N contiguous")
    b_kmajor = b_plan["tile_load"]["wgmma"]["major"] == "k"
    subtile = variant == "tl" and bn == 256  # the tl epilogue stores C in two halves
    c_cols = bn // 2 if subtile else bn
    cfg = GemmConfig(bm, bn, bk, 2, num_warps, _swizzle(a_plan), _swizzle(b_plan), min(128, c_cols * out_bytes),
                     b_kmajor, subtile=subtile)
    stages = (SMEM_BUDGET - bm * c_cols * out_bytes) // ((bm + bn) * bk * in_bytes + 8)
    return replace(cfg, stages=max(2, min(5, stages)))


def _descriptor(t: torch.Tensor, block: list[int], swizzle: int, variant: str):
    if variant == "gluon":
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        layout = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8 * t.element_size(), rank=2)
        return TensorDescriptor(t, list(t.shape), list(t.stride()), block, layout, padding="zero")
    from triton.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor(t, list(t.shape), list(t.stride()), block)


@cache
def _module(variant: str):
    from legalsat.clients.triton import load_module

    return load_module(gemm_source(variant))


@cache
def _sms(dev: torch.device) -> int:
    return torch.cuda.get_device_properties(dev).multi_processor_count


def default_variant(m: int, n: int, bm: int, bn: int, sms: int = 132) -> str:
    """The kernel `matmul` runs by default: tl, whose compiler-made pipeline measured fastest on
    every shape of benchmarks/bench_gemm.py (Gluon's hand-written one trails it by 3 to 30%)."""
    return "tl"


def matmul(a: torch.Tensor, b: torch.Tensor, *, out_dtype: torch.dtype | None = None, variant: str = "auto",
           tiles: tuple[int, int, int] | None = None, planner: Callable[[dict], dict] | None = None,
           num_warps: int | None = None) -> torch.Tensor:
    """C = a @ b with fp32 accumulation (see the module docstring). `variant`: "gluon" (sm90),
    "tl", or "auto" (`default_variant`); `tiles`: (BM, BN, BK) instead of `choose`'s;
    `num_warps`: 8 for 128-row tiles (two warpgroups), else 4. Raises InputError naming the
    argument that cannot be multiplied this way."""
    from legalsat.clients.triton import check_dense

    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2:
            raise _arg_error(name, f"{name} must be a 2-D tensor", "pass matrices")
        check_dense(t, name)
        if t.dtype not in TORCH_NAMES:
            raise _arg_error(name, f"{name} is {t.dtype}; matmul takes bfloat16 or float16",
                             "convert to torch.bfloat16 or torch.float16")
    if a.shape[1] != b.shape[0]:
        raise _arg_error("b", f"a is {list(a.shape)} and b {list(b.shape)}: the inner dims differ",
                         "pass b with as many rows as a has columns")
    if a.dtype != b.dtype:
        raise _arg_error("b", f"a is {a.dtype} and b {b.dtype}", "convert both to one dtype")
    if a.dtype == torch.bfloat16 and not a.is_cuda and os.environ.get("TRITON_INTERPRET") == "1":
        # the interpreter reads bf16 through TMA descriptors as raw integers: wrong products, no error
        raise _arg_error("a", "a is bfloat16, which Triton's interpreter cannot read through TMA descriptors "
                         "(its products come out wrong)", "use float16 under TRITON_INTERPRET=1, or run on a GPU")
    if variant not in ("auto", "gluon", "tl"):
        raise _arg_error("variant", f"variant is {variant!r}", "use 'auto', 'gluon' or 'tl'")
    if a.stride(1) != 1:
        a = a.contiguous()  # A is read K-major
    if b.stride(1) != 1 and b.stride(0) != 1:
        b = b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    out_dtype = out_dtype or a.dtype
    sms = _sms(a.device) if a.is_cuda else 132
    bm, bn, bk = tiles or choose(m, n, k, sms)
    if variant == "auto":
        variant = default_variant(m, n, bm, bn, sms)
    num_warps = num_warps or (8 if bm >= 128 else 4)
    # what the plans fix depends on the views only: planned once per views and tiles
    key = (a.shape, a.stride(), b.shape, b.stride(), a.dtype, out_dtype, a.data_ptr() % 16, b.data_ptr() % 16,
           (bm, bn, bk), variant, num_warps, planner)
    known = _LAUNCHES.get(key)
    if known is None:
        a_plan, b_plan, b_planned = plan_operands(a, b, bm, bn, bk, planner)
        out_bytes = torch.empty(0, dtype=out_dtype).element_size()
        cfg = config(a_plan, b_plan, bm, bn, bk, a.element_size(), out_bytes, variant, num_warps)
        known = _LAUNCHES[key] = (cfg, b_planned.stride(1) == 1 and b_planned.data_ptr() != b.data_ptr(), out_bytes)
    cfg, relaid, out_bytes = known
    if relaid:
        b = relayout(b, planner)
    pitch = _padded(n, out_bytes)
    c = torch.empty(m, pitch, dtype=out_dtype, device=a.device)[:, :n]
    if m == 0 or n == 0:
        return c
    if k == 0:
        return c.zero_()
    a_desc = _descriptor(a, [bm, bk], cfg.a_swizzle, variant)
    b_desc = _descriptor(b.t() if cfg.b_kmajor else b, [bn, bk] if cfg.b_kmajor else [bk, bn], cfg.b_swizzle,
                         variant)
    c_desc = _descriptor(c, [bm, bn // 2 if cfg.subtile else bn], cfg.c_swizzle, variant)
    tiles_total = -(-m // bm) * -(-n // bn)
    grid = max(1, min(tiles_total, _sms(a.device) if a.is_cuda else tiles_total))
    fn = _module(variant).gemm
    if variant == "gluon":
        fn[(grid,)](a_desc, b_desc, c_desc, B_KMAJOR=cfg.b_kmajor, STAGES=cfg.stages, GROUP_M=cfg.group_m,
                    num_warps=cfg.num_warps)
    else:
        fn[(grid,)](a_desc, b_desc, c_desc, m, n, k, B_KMAJOR=cfg.b_kmajor, GROUP_M=cfg.group_m, NUM_SMS=grid,
                    SUBTILE=cfg.subtile, num_warps=cfg.num_warps, num_stages=cfg.stages)
    return c


__all__ = ["choose", "config", "default_variant", "matmul", "plan_operands", "relayout"]
