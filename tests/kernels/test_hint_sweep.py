"""tools/hint_sweep.py rewrites emitted kernels with cache hints: the rewrite puts the hint on
the data's loads and stores only, and the hinted kernels stay bit-exact (interpreter)."""

from __future__ import annotations

import dataclasses

import pytest

from legalsat.testing.workloads import small_cases
from tests.kernels.client import require_client
from tools.hint_sweep import LOAD_HINTS, STORE_HINTS, hinted, is_first_hints

LOAD, STORE = 'eviction_policy="evict_first"', 'cache_modifier=".cs"'


def test_hints_land_on_the_data_loads_and_stores_only():
    src = ("    x = tl.load(src + so, mask=(ai < 4)[None, :])\n"
           "    iv = tl.load(index + k, mask=k < 9, other=0)\n"
           "    tl.store(out + j[:, None] * 8 + sd[None, :], x, mask=mask)\n"
           "    tl.store(sorted_pos + pos, j, mask=m)\n")
    assert hinted(src, LOAD, STORE).splitlines() == [
        f"    x = tl.load(src + so, mask=(ai < 4)[None, :], {LOAD})",
        "    iv = tl.load(index + k, mask=k < 9, other=0)",
        f"    tl.store(out + j[:, None] * 8 + sd[None, :], x, mask=mask, {STORE})",
        "    tl.store(sorted_pos + pos, j, mask=m)"]


def test_the_baseline_is_each_plan_with_the_first_hints_asked_for():
    """With no unhinted variant asked for (`--loads evict_last --stores ,cs`) the sweep's table
    had no baseline and ended in a ValueError after timing every workload."""
    loads = {k: v for k, v in LOAD_HINTS.items() if k == "evict_last"}
    stores = dict(STORE_HINTS)
    assert [lab for lab in ("direct+evict_last", "direct+evict_last+cs", "staged_smem+evict_last")
            if is_first_hints(lab, loads, stores)] == ["direct+evict_last", "staged_smem+evict_last"]
    assert is_first_hints("direct", dict(LOAD_HINTS), stores)
    assert not is_first_hints("direct+cs", dict(LOAD_HINTS), stores)


CASES = [w for w in small_cases() if w.name.startswith(("transpose 517", "gather 74", "MoE top-2 300"))]


@pytest.mark.parametrize("w", CASES, ids=[w.name for w in CASES])
def test_hinted_kernels_are_bit_exact(w):
    require_client()
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import Kernel, build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    resp = optimize(w.request())
    inp = make_inputs(resp, w.__dict__, "cpu", torch.Generator().manual_seed(7))
    want = reference(inp)
    for i, _ in enumerate(resp["plans"]):
        base = build_kernel(resp, plan_index=i, variant="tl")
        source = hinted(base.source, LOAD, STORE)
        assert source.count(LOAD) >= 1 and source.count(STORE) >= 1, source
        k = Kernel(base.plan, dataclasses.replace(base.emitted, source=source), base.request_op)
        poison(inp)
        assert same_bits(inp.call(k), want), source
