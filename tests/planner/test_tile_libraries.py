"""The tile loads attention and GEMM libraries and compiler tests issue with TMA
(legalsat/testing/data/tile_suite_libraries.jsonl: FlashAttention-3, FlashInfer, vLLM,
DeepGEMM, FlashMLA, Triton's tensor-descriptor tests, CuTe's TMA tests, each case with what
its project does): each gets a TMA plan first, with descriptors the driver-verified model
accepts, a proven walk and a verified pipeline, conflict-free for its consumer; a wgmma operand
the tensor core reads lands in the swizzle its project uses. Their probes ran bit-exact on the
H100 (tests/kernels/test_tile_hardware.py replays that run)."""

from __future__ import annotations

import pytest

import legalsat
from legalsat.testing.tile_workloads import library_cases, library_workloads

CASES = {c["id"]: c for c in library_cases()}
REQUESTS = {req["request_id"]: req for _, req in library_workloads()}
SWIZZLE = {0: "none", 32: "32B", 64: "64B", 128: "128B"}


def test_the_corpus_holds_each_library_and_the_shapes_that_matter():
    sources = {c["source"].split()[0] for c in CASES.values()}
    assert {"Dao-AILab/flash-attention", "flashinfer-ai/flashinfer", "vllm-project/vllm", "deepseek-ai/DeepGEMM",
            "deepseek-ai/FlashMLA", "NVIDIA/cutlass", "triton-lang/triton"} <= sources
    # every one a TMA load in its project, but FA3's fp8 V as an MN-major operand (which FA3 transposes in
    # shared memory because wgmma cannot read it: the plan loads it and warns)
    assert len(CASES) >= 330 and all(c["project"]["strategy"].startswith(("tma", "n/a")) for c in CASES.values())
    ops = [c["request"]["op"] for c in CASES.values()]
    assert any(t > s for op in ops for t, s in zip(op["tile"], op["src"]["shape"]))  # tiles past the tensor
    assert any(op["src"]["dtype"].startswith("float8") for op in ops) and any(max(op["tile"]) > 256 for op in ops)


@pytest.mark.parametrize("cid", sorted(REQUESTS))
def test_a_library_tile_gets_the_tma_plan_its_project_uses(cid):
    out = legalsat.optimize(REQUESTS[cid])
    plan = out["plans"][0]
    assert plan["strategy"] == "tma", out["rejected"]
    assert all(legalsat.validate_descriptor(d).legal for d in plan["descriptors"])
    assert plan["proof"]["verified"] and plan["async"]["verified"]
    tl, op = plan["tile_load"], REQUESTS[cid]["op"]
    # conflict-free, but for row reads across the source's contiguous dim (a K tile read along the
    # sequence: no layout TMA lands gives them 16-byte vectors; its wgmma reads are conflict-free)
    if not (tl["consumer"] == "rows" and op["src"]["strides"][-1] != 1):
        assert tl["read_conflict_ways"] == 1.0
    if tl["consumer"].startswith("wgmma") and tl["wgmma"] is not None:
        assert tl["layout"]["swizzle"] == SWIZZLE[CASES[cid]["project"]["swizzle"]], (tl["layout"], CASES[cid])
    if CASES[cid]["project"]["strategy"].startswith("n/a"):  # wgmma cannot read it: said at the top
        assert any(w["code"] == "wgmma_unreadable" for w in out["warnings"])
