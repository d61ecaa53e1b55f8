"""The pipeline probe (tools/pipeline_probe.py): its persistent, software-pipelined variants of a
staged kernel cover every tile once, bit-exact (interpreter); the skewed tile's load leaves its
branch; and the H100 run it recorded (benchmarks/pipeline_probe.json) had the planned kernel
faster than every pipelined one, which is why the emitter keeps one program a tile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legalsat.api import optimize
from legalsat.testing.workloads import small_cases
from tests.kernels.client import require_client, skewed_response

ROOT = Path(__file__).resolve().parents[2]
CASES = {w.name: w for w in small_cases()}
SKEWED = "transpose 601×96 bf16 (unaligned rows)"


def _staged(response: dict) -> dict:
    return next(p for p in response["plans"] if p["strategy"] == "staged_smem")


@pytest.mark.parametrize("name,skew", [("transpose 257×96 bf16", False), (SKEWED, True)])
def test_every_pipelined_variant_stays_bit_exact(name, skew, monkeypatch):
    require_client()
    import torch

    import legalsat.clients.triton as client
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits
    from tools.pipeline_probe import VARIANTS, variants

    monkeypatch.setattr(client, "_sm_count", lambda dev: 1)  # few programs, each looping over tiles
    w = CASES[name]
    resp = optimize(w.request())
    if skew:
        resp = skewed_response(resp)
    plan = _staged(resp)
    k = build_kernel(resp, plan_index=resp["plans"].index(plan), variant="tl")
    assert k.emitted.launches[0].grid > 1
    tried = variants(k, plan["pieces"][0])
    assert len(tried) == 1 + sum(per_sm * k.emitted.launches[0].num_warps <= 64 for _, per_sm in VARIANTS)
    inp = make_inputs(resp, w.__dict__, "cpu", torch.Generator().manual_seed(3))
    want = reference(inp)
    for label, kk in tried:
        poison(inp)
        assert same_bits(inp.call(kk), want), f"{label} differs from PyTorch\n{kk.source}"


def test_the_skewed_tiles_load_is_made_once_before_its_branch():
    from legalsat.kernels import emit
    from tools.pipeline_probe import hoisted, pipelined

    src = emit(_staged(skewed_response(optimize(CASES[SKEWED].request())))).source
    assert src.count("tl.load(") == 2  # interior and edge arms
    text = hoisted(src)
    assert text.count("tl.load(") == 1
    lines = text.splitlines()
    load = next(i for i, ln in enumerate(lines) if "tl.load(" in ln)
    branch = next(i for i, ln in enumerate(lines) if ln.strip().startswith("if "))
    assert load < branch and "mask=" in lines[load]
    # a ragged plain tile's interior and edge arms alike; a kernel without the branch unchanged
    plain = emit(_staged(optimize(CASES["transpose 257×96 bf16"].request()))).source
    assert plain.count("tl.load(") == 2 and hoisted(plain).count("tl.load(") == 1
    whole = "def k(src, dst):\n    x = tl.load(src + so)\n    tl.store(dst + do, x)\n"
    assert hoisted(whole) == whole
    with pytest.raises(ValueError, match="persistent"):
        pipelined(src, 3)  # a kernel that is not persistent has no loop to pipeline


def test_the_recorded_run_had_the_planned_kernel_faster_than_every_pipelined_one():
    probe = json.loads((ROOT / "benchmarks" / "pipeline_probe.json").read_text())
    assert probe["env"]["gpu"].startswith("NVIDIA H100")
    assert len(probe["workloads"]) >= 12
    for w in probe["workloads"]:
        us = {k["variant"]: k["us"] for k in w["kernels"]}
        eager = {k["variant"]: k["eager_us"] for k in w["kernels"]}
        pipelined = [v for v in us if "S=" in v and "S=1" not in v]
        assert pipelined, w["workload"]
        assert all(us["planned"] < us[v] and eager["planned"] < eager[v] for v in pipelined), w["workload"]
