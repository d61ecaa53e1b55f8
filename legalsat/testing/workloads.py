"""The kernel benchmark's workloads: the optimize request of each, and the PyTorch op it is
measured against (see benchmarks/bench_kernels.py and benchmarks/RESULTS.md).

Each workload is a request (sent to the planner with max_plans=5, so every candidate
strategy becomes a plan and a kernel) and a name: LLM and CNN transposes and permutes, an
array-of-structs split, row gathers, a paged KV cache, MoE routing and a padded pitch.
`small_cases()` are small, odd and ragged shapes of the same kinds (CI runs them in the
interpreter; the GPU run checks them too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from legalsat.testing.planner_suite import permuted, view

PLANS = 5


@dataclass(frozen=True)
class Workload:
    """One benchmark row: `op` is the optimize request's op; `torch_op` names the
    reference (see legalsat.testing.torch_reference); `extra` carries what the op leaves out
    (the number of experts for MoE)."""

    name: str
    op: dict
    torch_op: str
    allow_padding: bool = False
    extra: dict = field(default_factory=dict)

    def request(self) -> dict:
        return {"request_id": self.name, "target": "sm90", "op": self.op,
                "options": {"max_plans": PLANS, "allow_padding": self.allow_padding}}


def _copy(src: dict, dst: dict) -> dict:
    return {"kind": "copy", "src": src, "dst": dst}


def _gather(src: dict, count: int, dist: str, **index) -> dict:
    return {"kind": "gather", "src": src, "axis": 0, "index": {"count": count, "distribution": dist, **index}}


def transpose(name: str, dtype: str, rows: int, cols: int) -> Workload:
    return Workload(name, _copy(view(dtype, (rows, cols)), permuted(dtype, (rows, cols), (1, 0))), "copy")


def permute(name: str, dtype: str, shape: tuple[int, ...], perm: tuple[int, ...]) -> Workload:
    """out = x.permute(perm).contiguous() for a contiguous x of `shape`: a copy over the
    output's shape from a permuted view of x into a contiguous destination."""
    out_shape = tuple(shape[p] for p in perm)
    inv = [perm.index(k) for k in range(len(shape))]  # logical out dim holding stored dim k
    src = permuted(dtype, out_shape, tuple(inv))
    return Workload(name, _copy(src, view(dtype, out_shape)), "copy")


def workloads() -> list[Workload]:
    """The issue's workloads at full size."""
    return [
        transpose("transpose 8192² bf16", "bfloat16", 8192, 8192),
        transpose("transpose 4096² fp32", "float32", 4096, 4096),
        transpose("transpose 50257×4096 bf16", "bfloat16", 50257, 4096),
        transpose("AoS→SoA 16M×8 fp32", "float32", 1 << 24, 8),
        permute("BSHD→BHSD 8×32×4096×128 bf16", "bfloat16", (8, 4096, 32, 128), (0, 2, 1, 3)),
        permute("BHSD→BHDS 8×32×4096×128 bf16", "bfloat16", (8, 32, 4096, 128), (0, 1, 3, 2)),
        permute("NCHW→NHWC 32×256×56×56 bf16", "bfloat16", (32, 256, 56, 56), (0, 2, 3, 1)),
        permute("NCHW→NHWC 32×96×112×112 fp16", "float16", (32, 96, 112, 112), (0, 2, 3, 1)),
        Workload("gather 128 B rows random 4M", _gather(view("bfloat16", (1 << 22, 64)), 1 << 22, "random"),
                 "index_select"),
        Workload("gather 128 B rows sorted 4M", _gather(view("bfloat16", (1 << 22, 64)), 1 << 22, "sorted"),
                 "index_select"),
        Workload("gather 128 B rows warp-local 4M", _gather(view("float32", (1 << 22, 32)), 1 << 22, "warp_local"),
                 "index_select"),
        Workload("embedding 8 KiB rows vocab 128256", _gather(view("bfloat16", (128256, 4096)), 16384, "random"),
                 "index_select"),
        Workload("paged KV 16 tok×8×128 bf16 unique pages",
                 _gather(view("bfloat16", (16384 * 16, 8, 128)), 8192, "paged", page_size=16, unique=True),
                 "paged_index_select"),
        Workload("MoE top-2 permute 32768×4096 bf16 64 experts",
                 _gather(view("bfloat16", (32768, 4096)), 65536, "clustered", groups=64),
                 "moe_permute", extra={"top_k": 2}),
        Workload("copy into padded pitch 16384×50257 bf16",
                 _copy(view("bfloat16", (16384, 50257)), view("bfloat16", (16384, 50257), (50264, 1))), "copy"),
        # 1-byte and 8-byte elements; odd and small shapes whose edges are a large share
        transpose("transpose 8192² uint8", "uint8", 8192, 8192),
        transpose("transpose 32768×8192 fp8", "float8_e4m3fn", 32768, 8192),
        transpose("transpose 4096² fp64", "float64", 4096, 4096),
        transpose("transpose 1023×4097 bf16", "bfloat16", 1023, 4097),
        transpose("transpose 517×33 bf16", "bfloat16", 517, 33),
        # CNN layouts with few channels, both directions, and a 3-D rotation
        permute("NCHW→NHWC 64×3×224×224 fp16", "float16", (64, 3, 224, 224), (0, 2, 3, 1)),
        permute("NHWC→NCHW 32×56×56×256 bf16", "bfloat16", (32, 56, 56, 256), (0, 3, 1, 2)),
        permute("NHWC→NCHW 64×224×224×3 fp16", "float16", (64, 224, 224, 3), (0, 3, 1, 2)),
        permute("rotate (A,B,C)→(C,A,B) 256×512×1024 bf16", "bfloat16", (256, 512, 1024), (2, 0, 1)),
        # x[:, 1:4097] of an 8192×4098 bf16 matrix: rows 2-byte aligned
        Workload("column slice 8192×4096 of 4098 bf16, base 2 B aligned",
                 _copy(view("bfloat16", (8192, 4096), (4098, 1), align=2), view("bfloat16", (8192, 4096))), "copy"),
        # gathers along an inner axis and of short rows
        Workload("gather axis 1: 1000 of 4096 fp32 columns × 2048 rows",
                 {"kind": "gather", "src": view("float32", (2048, 4096)), "axis": 1,
                  "index": {"count": 1000, "distribution": "random"}}, "index_select"),
        Workload("gather 64 B rows random 4M", _gather(view("bfloat16", (1 << 22, 32)), 1 << 22, "random"),
                 "index_select"),
        # paged KV caches: vLLM's NHD pages of 32 and 64 tokens, and HND blocks (block, head, token, dim)
        Workload("paged KV 32 tok×8×128 bf16 unique pages",
                 _gather(view("bfloat16", (8192 * 32, 8, 128)), 4096, "paged", page_size=32, unique=True),
                 "paged_index_select"),
        Workload("paged KV 64 tok×8×128 bf16 unique pages",
                 _gather(view("bfloat16", (4096 * 64, 8, 128)), 2048, "paged", page_size=64, unique=True),
                 "paged_index_select"),
        Workload("paged KV HND 8×32 tok×128 bf16 unique blocks",
                 _gather(view("bfloat16", (8192, 8, 32, 128)), 4096, "random", unique=True), "index_select"),
        # MoE top-8 routing: Qwen3-MoE-like (128 experts, hidden 2048), DeepSeek-V3-like (256, 7168)
        Workload("MoE top-8 permute 16384×2048 bf16 128 experts",
                 _gather(view("bfloat16", (16384, 2048)), 16384 * 8, "clustered", groups=128),
                 "moe_permute", extra={"top_k": 8}),
        Workload("MoE top-8 permute 4096×7168 bf16 256 experts",
                 _gather(view("bfloat16", (4096, 7168)), 4096 * 8, "clustered", groups=256),
                 "moe_permute", extra={"top_k": 8}),
        Workload("embedding 7 KiB rows vocab 151936", _gather(view("bfloat16", (151936, 3584)), 16384, "random"),
                 "index_select"),
    ]


def small_cases() -> list[Workload]:
    """Small and odd shapes of every workload kind (CI runs them in the interpreter; the GPU
    run checks them too): ragged extents, odd strides, unaligned rows, tails."""
    return [
        transpose("transpose 40×72 bf16", "bfloat16", 40, 72),
        transpose("transpose 33×130 fp32", "float32", 33, 130),
        transpose("transpose 257×96 bf16", "bfloat16", 257, 96),
        transpose("transpose 64×48 fp64", "float64", 64, 48),
        transpose("transpose 96×40 uint8", "uint8", 96, 40),
        transpose("transpose 601×96 bf16 (unaligned rows)", "bfloat16", 601, 96),
        transpose("transpose 517×33 bf16 (unaligned rows)", "bfloat16", 517, 33),
        transpose("AoS→SoA 1000×8 fp32", "float32", 1000, 8),
        transpose("AoS→SoA 777×4 bf16", "bfloat16", 777, 4),
        permute("BSHD→BHSD 2×64×3×32 bf16", "bfloat16", (2, 64, 3, 32), (0, 2, 1, 3)),
        permute("BHSD→BHDS 2×3×40×32 bf16", "bfloat16", (2, 3, 40, 32), (0, 1, 3, 2)),
        permute("NCHW→NHWC 2×24×7×9 fp16", "float16", (2, 24, 7, 9), (0, 2, 3, 1)),
        permute("transpose 24×40 of 16-byte elements (8 bf16)", "bfloat16", (24, 40, 8), (1, 0, 2)),
        Workload("copy into padded pitch 33×70 bf16",
                 _copy(view("bfloat16", (33, 70)), view("bfloat16", (33, 70), (72, 1))), "copy"),
        Workload("copy 50×4097 bf16 ragged", _copy(view("bfloat16", (50, 4097)), view("bfloat16", (50, 4097))), "copy"),
        Workload("gather 128 B rows 777 of 1000", _gather(view("bfloat16", (1000, 64)), 777, "random"), "index_select"),
        Workload("gather 74 B rows 333 of 999", _gather(view("float16", (999, 37)), 333, "random"), "index_select"),
        Workload("gather axis 1 of 10×50×3 bf16", {"kind": "gather", "src": view("bfloat16", (10, 50, 3)), "axis": 1,
                                                    "index": {"count": 17, "distribution": "random"}}, "index_select"),
        Workload("gather axis 1: 45 of 70 fp32 columns × 33 rows",
                 {"kind": "gather", "src": view("float32", (33, 70)), "axis": 1,
                  "index": {"count": 45, "distribution": "random"}}, "index_select"),
        Workload("gather last axis: 300 of 517 of 5×7×517 bf16",
                 {"kind": "gather", "src": view("bfloat16", (5, 7, 517)), "axis": 2,
                  "index": {"count": 300, "distribution": "random"}}, "index_select"),
        Workload("transpose 33×47 uint8", _copy(view("uint8", (33, 47)), permuted("uint8", (33, 47), (1, 0))), "copy"),
        Workload("paged 40 of 64 pages ×16×8×128 bf16",
                 _gather(view("bfloat16", (64 * 16, 8, 128)), 40, "paged", page_size=16, unique=True),
                 "paged_index_select"),
        Workload("gather warp-local 1000 of 700 fp32 rows", _gather(view("float32", (700, 40)), 1000, "warp_local"),
                 "index_select"),
        Workload("gather clustered 3001 of 5000 fp32", _gather(view("float32", (5000, 24)), 3001, "clustered"),
                 "index_select"),
        Workload("MoE top-2 300×256 bf16 8 experts", _gather(view("bfloat16", (300, 256)), 600, "clustered", groups=8),
                 "moe_permute", extra={"top_k": 2}),
        # slabs wider than one program's tile: moved in steps (a ragged last step)
        Workload("gather 36 KB rows 45 of 90×9001 fp32", _gather(view("float32", (90, 9001)), 45, "random"),
                 "index_select"),
        Workload("gather warp-local 100 of 90×5003 bf16 rows", _gather(view("bfloat16", (90, 5003)), 100, "warp_local"),
                 "index_select"),
        Workload("MoE top-3 40×9001 fp32 300 experts",
                 _gather(view("float32", (40, 9001)), 120, "clustered", groups=300), "moe_permute",
                 extra={"top_k": 3}),
    ]
