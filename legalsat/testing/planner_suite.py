"""The planner's request suite: LLM and CNN data movements.

    python -m legalsat.testing.planner_suite      # regenerate legalsat/testing/data/planner_suite.jsonl

Each line is an optimize request with a descriptive request_id. tests/test_planner_suite.py
plans every one (all must plan, or be infeasible with an explanation; every descriptor must
validate; every plan must carry a passing proof) and bench_planner.py times them.
"""

from __future__ import annotations

import json
from pathlib import Path

from legalsat.terms.movement import contiguous_strides


def contiguous(shape):
    return list(contiguous_strides(tuple(shape)))


def view(dtype, shape, strides=None, align=16):
    return {"dtype": dtype, "shape": list(shape), "strides": list(strides or contiguous(shape)),
            "base_align": align}


def permuted(dtype, shape, perm):
    """A view of logical `shape` stored contiguously in the order `perm` (perm[k] = the
    logical dim stored k-th, outermost first)."""
    stored = [shape[p] for p in perm]
    st = contiguous(stored)
    strides = [0] * len(shape)
    for k, p in enumerate(perm):
        strides[p] = st[k]
    return view(dtype, shape, strides)


# a rank-8 permute of fp32: tens of ms of planning, what the budget tests starve
RANK8_SHAPE, RANK8_PERM = [3, 5, 2, 7, 4, 3, 2, 6], [7, 2, 5, 0, 3, 6, 1, 4]
RANK8_PERMUTE = {"op": {"kind": "copy", "src": view("float32", RANK8_SHAPE),
                        "dst": permuted("float32", RANK8_SHAPE, RANK8_PERM)}}


def reordered_copy(dtype: str = "float32", shape=(64, 8, 5, 4, 3, 2, 2)) -> dict:
    """The op of a contiguous copy whose dims are listed innermost first: they coalesce only
    after the layout rules reorder them, so its e-graph grows with the orders of its dims
    (with a node limit far above the default, saturation rounds that each outlast a short
    deadline). The slow request of the service tests and the load test."""
    v = permuted(dtype, shape, tuple(range(len(shape)))[::-1])
    return {"kind": "copy", "src": v, "dst": v}


def copy(rid, src, dst, **options):
    return {"request_id": rid, "target": "sm90", "op": {"kind": "copy", "src": src, "dst": dst}, "options": options}


def gather(rid, src, axis, count, dist="random", **kw):
    index = {"count": count, "distribution": dist, **{k: v for k, v in kw.items() if k in ("page_size", "unique", "groups")}}
    return {"request_id": rid, "target": "sm90", "op": {"kind": "gather", "src": src, "axis": axis, "index": index}}


def tile(rid, src, t, consumer):
    return {"request_id": rid, "target": "sm90", "op": {"kind": "load_tile", "src": src, "tile": list(t), "consumer": consumer}}


def requests() -> list[dict]:
    r = []
    # transposes and copies of LLM matrices
    r.append(copy("transpose-8192sq-bf16", view("bfloat16", (8192, 8192)), permuted("bfloat16", (8192, 8192), (1, 0))))
    r.append(copy("transpose-4096sq-fp32", view("float32", (4096, 4096)), permuted("float32", (4096, 4096), (1, 0))))
    r.append(copy("copy-8192sq-bf16", view("bfloat16", (8192, 8192)), view("bfloat16", (8192, 8192))))
    r.append(copy("transpose-50257x4096-bf16", view("bfloat16", (50257, 4096)), permuted("bfloat16", (50257, 4096), (1, 0))))
    r.append(copy("transpose-4096x50257-bf16", view("bfloat16", (4096, 50257)), permuted("bfloat16", (4096, 50257), (1, 0))))
    r.append(copy("copy-50257x4096-bf16-ragged", view("bfloat16", (50257, 4097)), view("bfloat16", (50257, 4097))))
    r.append(copy("transpose-2048sq-fp64", view("float64", (2048, 2048)), permuted("float64", (2048, 2048), (1, 0))))
    r.append(copy("transpose-4096sq-uint8", view("uint8", (4096, 4096)), permuted("uint8", (4096, 4096), (1, 0))))
    r.append(copy("copy-1x2g-bf16-flat", view("bfloat16", (1 << 31,)), view("bfloat16", (1 << 31,))))
    r.append(copy("copy-int64-1m", view("int64", (1024, 1024)), view("int64", (1024, 1024))))
    # attention layouts, head dims 64 / 80 / 96 / 128
    for d in (64, 80, 96, 128):
        s = (8, 32, 2048, d)
        r.append(copy(f"bhsd-to-bhds-d{d}", view("bfloat16", s), permuted("bfloat16", s, (0, 1, 3, 2))))
    for d in (80, 128):
        s = (8, 32, 2048, d)  # logical (b, h, s, d); source stored BSHD
        r.append(copy(f"bshd-to-bhsd-d{d}", permuted("bfloat16", s, (0, 2, 1, 3)), view("bfloat16", s)))
    # CNN layouts
    r.append(copy("nchw-to-nhwc-32x64x56x56", view("bfloat16", (32, 64, 56, 56)), permuted("bfloat16", (32, 64, 56, 56), (0, 2, 3, 1))))
    r.append(copy("nchw-to-nhwc-16x3x224x224", view("bfloat16", (16, 3, 224, 224)), permuted("bfloat16", (16, 3, 224, 224), (0, 2, 3, 1))))
    r.append(copy("nhwc-to-nchw-32x64x56x56", permuted("float16", (32, 64, 56, 56), (0, 2, 3, 1)), view("float16", (32, 64, 56, 56))))
    # odd pitches (rows not 16-byte multiples), with and without allow_padding
    odd = view("bfloat16", (4096, 1000), (1003, 1))
    r.append(copy("odd-pitch-1003-bf16", odd, odd))
    r.append(copy("odd-pitch-1003-bf16-padding", odd, odd, allow_padding=True))
    oddf = view("float32", (1000, 1000), (1001, 1))
    r.append(copy("odd-pitch-transpose-fp32", oddf, view("float32", (1000, 1000), (1, 1001))))
    r.append(copy("odd-pitch-transpose-fp32-padding", oddf, view("float32", (1000, 1000), (1, 1001)), allow_padding=True))
    r.append(copy("odd-dst-pitch-fp16-padding", view("float16", (2048, 777)), view("float16", (2048, 777), (777, 1)), allow_padding=True))
    # rank-6/7 views that must coalesce to fit TMA's rank 5
    r.append(copy("rank6-contiguous-bf16", view("bfloat16", (2, 4, 8, 16, 32, 64)), view("bfloat16", (2, 4, 8, 16, 32, 64))))
    s7 = (2, 2, 3, 4, 5, 8, 64)
    r.append(copy("rank7-permute-inner-bf16", view("bfloat16", s7), permuted("bfloat16", s7, (0, 1, 2, 3, 4, 6, 5))))
    s6 = (4, 8, 16, 16, 32, 64)
    r.append(copy("rank6-group-swap-bf16", view("bfloat16", s6), permuted("bfloat16", s6, (2, 3, 0, 1, 4, 5))))
    r.append(copy("rank7-contiguous-fp32", view("float32", s7), view("float32", s7)))
    # strided slices
    r.append(copy("every-other-row-bf16", view("bfloat16", (4096, 8192), (16384, 1)), view("bfloat16", (4096, 8192))))
    r.append(copy("column-slice-bf16", view("bfloat16", (4096, 4096), (8192, 1)), view("bfloat16", (4096, 4096))))
    r.append(copy("every-other-element-fp32", view("float32", (1 << 20,), (2,)), view("float32", (1 << 20,))))
    # gathers: embeddings, paged KV caches, MoE routing
    r.append(gather("embedding-32000x4096-bf16", view("bfloat16", (32000, 4096)), 0, 8192))
    r.append(gather("embedding-50257x768-fp32", view("float32", (50257, 768)), 0, 4096))
    r.append(gather("embedding-128256x4096-bf16", view("bfloat16", (128256, 4096)), 0, 16384))
    r.append(gather("embedding-32000x4096-sorted", view("bfloat16", (32000, 4096)), 0, 8192, "sorted"))
    r.append(gather("embedding-32000x64-clustered", view("float32", (32000, 64)), 0, 8192, "clustered"))
    r.append(gather("paged-kv-page16-d128", view("bfloat16", (65536, 8, 128)), 0, 512, "paged", page_size=16, unique=True))
    r.append(gather("paged-kv-page32-d128", view("bfloat16", (65536, 8, 128)), 0, 256, "paged", page_size=32, unique=True))
    r.append(gather("paged-kv-page16-d64", view("float16", (131072, 32, 64)), 0, 1024, "paged", page_size=16))
    r.append(gather("moe-top2-of-8", view("bfloat16", (4096, 4096)), 0, 8192, groups=8))
    r.append(gather("moe-top2-of-64", view("bfloat16", (8192, 2048)), 0, 16384, groups=64))
    r.append(gather("warp-local-rows-fp32", view("float32", (4096, 32)), 0, 4096, "warp_local"))
    r.append(gather("gather-columns-axis1", view("float32", (1024, 4096)), 1, 512))
    # operand tiles for GEMM / attention
    r.append(tile("wgmma-a-128x64-bf16", view("bfloat16", (8192, 8192), align=128), (128, 64), "wgmma_a"))
    r.append(tile("wgmma-b-64x256-bf16", view("bfloat16", (8192, 8192), align=128), (64, 256), "wgmma_b"))
    r.append(tile("rows-64x64-fp32", view("float32", (4096, 4096)), (64, 64), "rows"))
    r.append(tile("cols-128x32-fp16", view("float16", (4096, 4096)), (128, 32), "cols"))
    r.append(tile("wgmma-a-headdim80", view("bfloat16", (8, 32, 2048, 80)), (1, 1, 128, 80), "wgmma_a"))
    r.append(tile("wgmma-a-odd-pitch", view("bfloat16", (4096, 1000), (1003, 1)), (64, 64), "wgmma_a"))
    return r


SUITE_PATH = Path(__file__).with_name("data") / "planner_suite.jsonl"


def load_suite() -> list[dict]:
    """The recorded suite (what the tests plan and bench_planner times)."""
    return [json.loads(line) for line in SUITE_PATH.read_text().splitlines() if line.strip()]


def suite_request(request_id: str) -> dict:
    """One request of the recorded suite, by its request_id."""
    return next(r for r in load_suite() if r["request_id"] == request_id)


if __name__ == "__main__":
    path = SUITE_PATH
    reqs = requests()
    path.write_text("".join(json.dumps(q) + "\n" for q in reqs))
    print(f"wrote {len(reqs)} requests to {path}")
