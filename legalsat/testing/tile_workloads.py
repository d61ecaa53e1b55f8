"""Tile loads as compilers issue them, for the consumer probes (benchmarks/bench_tiles.py)
and the kernel tests: LLM GEMM operands (K-major and MN-major, fp8 to fp32), attention
Q/K/V tiles (head dims 64, 80, 128; grouped-query K/V broadcast over the group), paged KV,
CNN activations (NHWC and NCHW, odd spatial extents), views of 5 to 7 dims, tiles over 256
elements, edge tiles and tiles larger than the tensor, and element types moved as words.

`tile_workloads()` is deterministic; each entry is (name, request). Sizes stay at most a few
hundred MB so a GPU run checks every one.
"""

from __future__ import annotations

import json
from math import prod

from legalsat.terms.movement import contiguous_strides

WGMMA_K_TILE = {"float8_e4m3fn": 128, "float8_e5m2": 128, "int8": 128, "bfloat16": 64, "float16": 64, "float32": 32}
ESIZE = {"float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1, "uint8": 1, "bool": 1, "int16": 2, "bfloat16": 2,
         "float16": 2, "float32": 4, "float64": 8, "int64": 8}


def _req(name: str, dtype: str, shape, tile, consumer, strides=None) -> tuple[str, dict]:
    strides = list(strides) if strides is not None else list(contiguous_strides(tuple(shape)))
    return name, {"request_id": name, "target": "sm90",
                  "op": {"kind": "load_tile", "tile": list(tile), "consumer": consumer,
                         "src": {"dtype": dtype, "shape": list(shape), "strides": strides, "base_align": 16}}}


def _transposed(shape) -> list[int]:
    """Strides of a 2-D [r, c] view of a row-major [c, r] tensor (its transpose)."""
    return [1, shape[0]]


def gemm_operands() -> list[tuple[str, dict]]:
    out = []
    for dt in ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "int8", "float32"):
        bk = WGMMA_K_TILE[dt]
        for m, k in ((4096, 4096), (1000, 4096), (8192, 2048), (4096, 80 if ESIZE[dt] == 2 else 512)):
            for bm in (64, 128, 256):
                kt = min(bk, k if k & (k - 1) == 0 else bk)
                out.append(_req(f"A[{m},{k}] {dt} tile {bm}x{kt}", dt, (m, k), (bm, kt), "wgmma_a"))
        # B stored [N, K] (K-major), seen as the [K, N] operand
        for k, n in ((4096, 4096), (4096, 1000), (2048, 14336)):
            for bn in (64, 128, 256):
                out.append(_req(f"B K-major [{k},{n}] {dt} tile {bk}x{bn}", dt, (k, n), (bk, bn),
                                {"kind": "wgmma_b", "major": "k"}, _transposed((k, n))))
        if ESIZE[dt] == 2:  # MN-major operands: 16-bit only
            for k, n in ((4096, 4096), (4096, 11008), (1000, 2048)):
                for bn in (64, 128, 256):
                    out.append(_req(f"B MN-major [{k},{n}] {dt} tile 64x{bn}", dt, (k, n), (64, bn), "wgmma_b"))
            for m, k in ((4096, 4096), (1000, 1024)):
                out.append(_req(f"A MN-major [{m},{k}] {dt} tile 128x64", dt, (m, k), (128, 64),
                                {"kind": "wgmma_a", "major": "mn"}, _transposed((m, k))))
    return out


def attention() -> list[tuple[str, dict]]:
    out = []
    for dt in ("bfloat16", "float16", "float8_e4m3fn"):
        for d in (64, 80, 128):
            b, h, s = 2, 16, 1000
            shape = (b, h, s, d)
            out.append(_req(f"Q [{b},{h},{s},{d}] {dt}", dt, shape, (1, 1, 128, d), "wgmma_a"))
            out.append(_req(f"K as B [{b},{h},{s},{d}] {dt}", dt, shape, (1, 1, 64, d), "wgmma_b"))
            # K^T (the B operand of Q K^T, K contiguous along the head dim)
            kt = (b, h, d, s)
            st = [h * s * d, s * d, 1, d]
            out.append(_req(f"K^T [{b},{h},{d},{s}] {dt}", dt, kt, (1, 1, d, 128), {"kind": "wgmma_b", "major": "k"}, st))
            # grouped-query K/V: 4 query heads share each KV head (stride 0 over the group)
            hk, g = 4, 4
            gshape = (b, hk, g, s, d)
            gst = [hk * s * d, s * d, 0, d, 1]
            out.append(_req(f"GQA V [{b},{hk},{g},{s},{d}] {dt}", dt, gshape, (1, 1, g, 64, d), "rows", gst))
        # paged KV cache: [blocks, block_size, heads, head_dim]
        out.append(_req(f"paged KV [512,16,8,128] {dt}", dt, (512, 16, 8, 128), (1, 16, 1, 128), "wgmma_b"))
        out.append(_req(f"paged KV [256,64,8,80] {dt}", dt, (256, 64, 8, 80), (1, 64, 2, 80), "rows"))
    return out


def cnn() -> list[tuple[str, dict]]:
    out = []
    for dt in ("float16", "bfloat16", "float32", "int8"):
        for n, hw, c in ((8, 56, 64), (4, 28, 192), (16, 7, 512), (2, 14, 96)):
            nhwc = (n, hw, hw, c)
            ct = min(c, 64 if ESIZE[dt] <= 2 else 32)
            out.append(_req(f"NHWC [{n},{hw},{hw},{c}] {dt} rows", dt, nhwc, (1, 4, 16, ct), "rows"))
            out.append(_req(f"NHWC [{n},{hw},{hw},{c}] {dt} im2col rows", dt, nhwc, (1, 1, 32, ct), "wgmma_a"))
            nchw = (n, c, hw, hw)
            out.append(_req(f"NCHW [{n},{c},{hw},{hw}] {dt} cols", dt, nchw, (1, 32, 2, 64 if hw >= 28 else 16),
                            "cols"))
            # an NHWC tensor seen as NCHW (channels contiguous): the tile's last dim is strided
            st = [hw * hw * c, 1, hw * c, c]
            out.append(_req(f"NCHW view of NHWC [{n},{c},{hw},{hw}] {dt}", dt, nchw, (1, ct, 1, 16), "cols", st))
    return out


def high_rank() -> list[tuple[str, dict]]:
    out = []
    for dt in ("bfloat16", "float32", "uint8"):
        e = ESIZE[dt]
        inner = 64 // e * 2
        out.append(_req(f"5-D [2,3,4,40,{inner}] {dt}", dt, (2, 3, 4, 40, inner), (1, 2, 2, 32, inner), "rows"))
        out.append(_req(f"6-D [2,3,2,5,24,{inner}] {dt}", dt, (2, 3, 2, 5, 24, inner), (1, 1, 2, 1, 16, inner // 2),
                        "rows"))
        # 7 dims that do not merge (every dim padded): past rank 5 the unspanned dims fold
        shape = (3, 2, 3, 2, 5, 16, inner)
        strides, acc = [], 1
        for x in reversed(shape):
            strides.append(acc)
            acc = acc * x + 16 // e * 2  # a pad after every dim
        out.append(_req(f"7-D padded {dt}", dt, shape, (1, 1, 1, 1, 1, 16, inner), "rows", list(reversed(strides))))
        out.append(_req(f"7-D contiguous {dt}", dt, (2, 2, 3, 2, 2, 32, inner), (1, 2, 1, 2, 1, 32, inner), "cols"))
        # a unit dim and a broadcast dim among them
        out.append(_req(f"5-D broadcast {dt}", dt, (4, 1, 8, 64, inner), (2, 1, 8, 32, inner), "rows",
                        [64 * inner, 64 * inner, 0, inner, 1]))
    return out


def large_and_edge() -> list[tuple[str, dict]]:
    out = []
    for dt in ("bfloat16", "float8_e4m3fn", "float32", "int8"):
        e = ESIZE[dt]
        w = 128 // e
        out.append(_req(f"tile 512x{w} {dt}", dt, (4096, 1024 // e), (512, w), "rows"))
        out.append(_req(f"tile 64x{4 * w} {dt}", dt, (4096, 1024 // e), (64, 4 * w), "rows"))
        out.append(_req(f"tile 1024x{w // 2} {dt}", dt, (3000, 512 // e), (1024, w // 2), "cols"))
        # tiles larger than the tensor along a dim (the overhang reads as zero)
        out.append(_req(f"tile over tensor [48,{w}] {dt}", dt, (48, w), (64, 2 * w), "rows"))
        out.append(_req(f"tile over tensor [5,3,{w}] {dt}", dt, (5, 3, w), (8, 4, w), "rows"))
        # odd extents: ragged last tiles
        out.append(_req(f"ragged [1001,{w * 3 + w // 2}] {dt}", dt, (1001, w * 3 + w // 2), (128, w), "rows"))
        out.append(_req(f"ragged wgmma [777,{4 * w}] {dt}", dt, (777, 4 * w), (128, w), "wgmma_a"))
        # a row pitch that is no multiple of 16 bytes: no TMA descriptor, a direct plan
        out.append(_req(f"odd pitch [300,{w + 1}] {dt}", dt, (300, w + 1), (64, w), "rows"))
    out.append(_req("vocab 50257 bf16 (odd pitch)", "bfloat16", (512, 50257), (64, 128), "wgmma_b"))
    # extent-1 dims that the tile spans, with strides no descriptor takes (torch's strides of a
    # [1, 509] row vector and of a [509, 1] column): only index 0 exists, any stride addresses it
    out.append(_req("row vector [1,509] float16 tile 8x128", "float16", (1, 509), (8, 128), "rows"))
    out.append(_req("column [509,1] float32 tile 128x32", "float32", (509, 1), (128, 32), "cols"))
    out.append(_req("column [509,1] bfloat16 wgmma_a 64x64", "bfloat16", (509, 1), (64, 64), "wgmma_a"))
    # broadcast (stride-0) dims whose last tile overhangs the tensor: the overhang reads zero
    # there too, though the descriptor does not walk those dims
    out.append(_req("broadcast overhang [3,16] uint8 tile 2x16", "uint8", (3, 16), (2, 16), "rows", (0, 1)))
    out.append(_req("broadcast overhang [3,8] float32 tile 4x8", "float32", (3, 8), (4, 8), "rows", (0, 1)))
    out.append(_req("broadcast overhang GQA [2,3,16,64] bf16 wgmma_b", "bfloat16", (2, 3, 16, 64), (1, 2, 16, 64),
                    "wgmma_b", (1024, 0, 64, 1)))
    # odd tile extents: a direct plan of hundreds of boxes of a few bytes (its kernel walks the
    # tile's rows in a loop)
    out.append(_req("odd extents [2,5,3,5,5,8] uint8 tile [24,6,1,4,5,2]", "uint8", (2, 5, 3, 5, 5, 8),
                    (24, 6, 1, 4, 5, 2), "wgmma_a"))
    for dt in ("bool", "int16", "float64", "int64"):
        e = ESIZE[dt]
        out.append(_req(f"words {dt} [1000,{512 // e}]", dt, (1000, 512 // e), (64, 128 // e), "rows"))
        out.append(_req(f"words {dt} [8,100,{256 // e}] cols", dt, (8, 100, 256 // e), (1, 64, 64 // e), "cols"))
    return out


def tile_workloads() -> list[tuple[str, dict]]:
    seen, out = set(), []
    for name, req in [*gemm_operands(), *attention(), *cnn(), *high_rank(), *large_and_edge()]:
        key = repr(req["op"])
        if key in seen or name in {n for n, _ in out}:
            continue
        seen.add(key)
        out.append((name, req))
    return out


def library_cases() -> list[dict]:
    """The tile loads of attention and GEMM libraries and compiler tests as their kernels issue
    them with TMA (legalsat/testing/data/tile_suite_libraries.jsonl: FlashAttention-3's Q/K/V
    tiles by head dim and kBlockN, FlashInfer's paged and ragged KV, vLLM's fp8/int8 CUTLASS
    tiles, DeepGEMM's B operands and scale rows, FlashMLA, Triton's tensor-descriptor tests,
    CuTe's TMA tests): each its id, source, what its project does, and its request."""
    return _data_cases("tile_suite_libraries.jsonl")


def library_workloads() -> list[tuple[str, dict]]:
    """(id and source, request) of every library case."""
    return [(f"{c['id']} {c['source']}"[:200], {**c["request"], "request_id": c["id"]}) for c in library_cases()]


def box_count_workloads() -> list[tuple[str, dict]]:
    """One tensor each, tiles of 1 to 25 TMA boxes per stage (a tile extent that is not a power
    of two is cut into boxes of its largest power-of-two divisor): what a box per stage costs
    (benchmarks/bench_tiles.py run-boxes)."""
    out = []
    for t in (64, 128, 136, 144, 160, 176, 192, 200, 224, 240, 256):
        out.append(_req(f"rows [1048576,64] bf16 tile {t}x64", "bfloat16", (1048576, 64), (t, 64), {"kind": "rows"}))
    for t in (128, 144, 176, 192, 256):  # an attention K tile of head dim 128 as S = Q K^T's B operand
        # ([d, seq] with d contiguous: K-major), kBlockN as FA3 sizes it
        out.append(_req(f"wgmma_b K-major [128,524288] bf16 tile 128x{t}", "bfloat16", (128, 524288), (128, t),
                        {"kind": "wgmma_b", "major": "k"}, strides=(1, 128)))
    return [(name, {**req, "options": {"max_plans": 1}}) for name, req in out]


def small_tile_workloads() -> list[tuple[str, dict]]:
    """Walks of many small tiles over large tensors: few bytes in flight a stage, so the TMA
    round trip, not the bandwidth, bounds them (benchmarks/bench_tiles.py run-small: the data
    that fits the walk's `tma_latency_ns`)."""
    out = []
    for t in ((8, 8), (16, 16), (8, 64), (16, 32), (32, 32), (64, 64)):
        out.append(_req(f"rows [16384,16384] bf16 tile {t[0]}x{t[1]}", "bfloat16", (16384, 16384), t, {"kind": "rows"}))
    for t in ((8, 16), (16, 16)):
        out.append(_req(f"rows [8192,8192] fp32 tile {t[0]}x{t[1]}", "float32", (8192, 8192), t, {"kind": "rows"}))
    return [(name, {**req, "options": {"max_plans": 2}}) for name, req in out]


def edge_tile_workloads() -> list[tuple[str, dict]]:
    """Tiles at the edges of what TMA takes: views of one element (whatever strides torch gave
    them: the last dim is their contiguous one), and tiles widened past their tensor's row to
    whole 16-byte units as the planner's `inner_box_16B` reasons say to (a row pitch wider than
    the row, one-row tiles of power-of-two boxes) (benchmarks/bench_tiles.py run-edges)."""
    rows = {"kind": "rows"}
    return [_req("one element bf16 [1] tile 64", "bfloat16", (1,), (64,), rows),
            _req("one element bf16 [1] stride 4096 tile 64", "bfloat16", (1,), (64,), rows, strides=(4096,)),
            _req("one element fp32 [1,1] tile 8x8", "float32", (1, 1), (8, 8), rows),
            _req("one element fp8 [1,1,1] strides 7,3,5 tile 2x4x16", "float8_e4m3fn", (1, 1, 1), (2, 4, 16), rows,
                 strides=(7, 3, 5)),
            _req("one element bf16 [1,1] tile 64x64 wgmma_a", "bfloat16", (1, 1), (64, 64), {"kind": "wgmma_a"}),
            _req("int8 [128,24] pitch 32 tile 128x32", "int8", (128, 24), (128, 32), rows, strides=(32, 1)),
            _req("bf16 [64,3] pitch 8 tile 16x8", "bfloat16", (64, 3), (16, 8), rows, strides=(8, 1)),
            _req("fp8 [64,8] pitch 16 tile 32x16", "float8_e4m3fn", (64, 8), (32, 16), rows, strides=(16, 1)),
            _req("fp8 [100] tile 128", "float8_e5m2", (100,), (128,), rows),
            _req("bf16 [300] tile 320", "bfloat16", (300,), (320,), rows)]


def tensor_bytes(req: dict) -> int:
    from legalsat.terms.dtypes import ELEMENT_TYPES

    src = req["op"]["src"]
    span = 1 + sum((n - 1) * s for n, s in zip(src["shape"], src["strides"]))
    return span * ELEMENT_TYPES[src["dtype"]].storage_bits // 8


def tile_elements(req: dict) -> int:
    return prod(req["op"]["tile"])


def suite_cases() -> list[dict]:
    """The tile loads of CuTe's Hopper TMA tests and Triton's tensor-descriptor tests
    (legalsat/testing/data/tile_suite.jsonl; tools/tile_suite.py writes it)."""
    return _data_cases("tile_suite.jsonl")


def _data_cases(name: str) -> list[dict]:
    """The records of a JSON Lines file of legalsat/testing/data."""
    from importlib.resources import files

    text = files("legalsat.testing").joinpath("data", name).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def suite_request(case: dict) -> dict:
    """A suite case as an optimize request (the major-ness of a wgmma operand as the case
    names it)."""
    consumer: str | dict = case["consumer"]
    if case.get("major") and consumer.startswith("wgmma"):
        consumer = {"kind": consumer, "major": case["major"]}
    return {"request_id": case["id"], "target": "sm90",
            "op": {"kind": "load_tile", "tile": case["tile"], "consumer": consumer,
                   "src": {"dtype": case["dtype"], "shape": case["shape"], "strides": case["strides"],
                           "base_align": case.get("base_align", 16)}}}


def suite_workloads() -> list[tuple[str, dict]]:
    """(id, request) of every suite case a tensor in memory can hold (the ragged descriptors'
    virtual dims span more than 2^40 bytes: legalsat refuses them as tensors)."""
    from legalsat.terms.movement import MAX_BYTES

    out = []
    for case in suite_cases():
        req = suite_request(case)
        if tensor_bytes(req) < MAX_BYTES:
            out.append((case["id"], req))
    return out
