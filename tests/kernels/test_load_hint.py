"""The tl copy and gather kernels load the moved data with `DATA_LOAD_HINT` (evict_last), once
a load; index and inspector loads, Gluon kernels and tile loads keep theirs; the hint sweep
measures the kernels without it against other hints."""

from __future__ import annotations

import pytest

from legalsat.kernels.source import (
    DATA_LOAD_CALL,
    DATA_LOAD_HINT,
    hint_data_loads,
    with_call_kwarg,
    without_data_load_hint,
)
from legalsat.testing.workloads import small_cases, workloads
from tools.hint_sweep import hinted


def test_the_hint_goes_on_each_data_load_once():
    src = ("    x = tl.load(src + so, mask=(ai < 4)[None, :])\n"
           "    iv = tl.load(index + k, mask=k < 9, other=0)\n"
           "    y = tl.load(src + f(a, (b)))\n")
    once = hint_data_loads(src)
    assert once.splitlines() == [f"    x = tl.load(src + so, mask=(ai < 4)[None, :], {DATA_LOAD_HINT})",
                                 "    iv = tl.load(index + k, mask=k < 9, other=0)",
                                 f"    y = tl.load(src + f(a, (b)), {DATA_LOAD_HINT})"]
    assert hint_data_loads(once) == once and hint_data_loads(src, "") == src
    assert without_data_load_hint(once) == src  # what the hint and PTX probes start from
    with pytest.raises(ValueError, match="unbalanced"):
        with_call_kwarg("x = tl.load(src + (", "tl.load(", DATA_LOAD_HINT)


CASES = [w for w in small_cases() + workloads()
         if w.name.startswith(("transpose 517", "AoS→SoA", "gather 74", "MoE top-2 300", "paged KV 16",
                               "embedding 7", "column slice"))]


@pytest.mark.parametrize("w", CASES, ids=[w.name for w in CASES])
def test_every_tl_copy_and_gather_kernel_hints_its_data_loads(w):
    from legalsat.api import optimize
    from legalsat.kernels import emit, kernel_variants

    for plan in optimize(w.request())["plans"]:
        for variant in kernel_variants(plan, sm90=True):
            source = emit(plan, variant).source
            loads = [line for line in source.splitlines() if "tl.load(" in line or "gl.load(" in line]
            data = [line for line in loads if DATA_LOAD_CALL in line]
            assert all(line.count(DATA_LOAD_HINT) == 1 for line in data), source
            assert all(DATA_LOAD_HINT not in line for line in loads if line not in data), source
            if variant == "gluon":
                assert DATA_LOAD_HINT not in source
            # the sweep's unhinted kernel is the emitted one without it, its hints in its place
            swept = hinted(source, 'eviction_policy="evict_first"', "")
            assert DATA_LOAD_HINT not in swept and swept.count("evict_first") == len(data)


def test_tile_loads_keep_their_kernels_unhinted():
    from legalsat.api import optimize
    from legalsat.kernels import emit

    req = {"request_id": "tile", "target": "sm90",
           "op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [256, 512], "strides": [512, 1]},
                  "tile": [64, 64], "consumer": "rows"}}
    plans = optimize(req)["plans"]
    assert plans and all(DATA_LOAD_HINT not in emit(p, "tl").source for p in plans)
