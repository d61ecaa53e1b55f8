"""Every plan's kernels fit the target: random requests of every kind (and random
`options.smem_bytes`) are planned with all their candidates, and every kernel of every plan
is compiled for sm90 on the CPU (legalsat.clients.resources): it compiles, its shared memory
is within the plan's budget (so within the target's) and its registers fit a block. (Spills
cost time, not correctness: benchmarks time the kernels.)"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legalsat.testing.planner_suite import permuted, view
from tests.kernels.client import require_client

DTYPES = ["uint8", "bfloat16", "float32", "float64"]
EXTENTS = [1, 3, 7, 16, 33, 64, 100, 128, 255, 512, 1000, 4096]


@st.composite
def copies(draw):
    dt = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.sampled_from(EXTENTS), min_size=1, max_size=4))
    perm = draw(st.permutations(range(len(shape))))
    return {"kind": "copy", "src": view(dt, shape), "dst": permuted(dt, shape, perm)}


@st.composite
def gathers(draw):
    dt = draw(st.sampled_from(DTYPES))
    src = view(dt, [draw(st.sampled_from([7, 100, 1000, 16384])), draw(st.sampled_from([1, 3, 64, 100, 2048, 9001]))])
    count = draw(st.sampled_from([1, 31, 600, 4096, 65536]))
    if draw(st.booleans()):
        index = {"count": count, "distribution": "clustered", "groups": draw(st.sampled_from([2, 8, 60, 128, 256, 1000]))}
    else:
        index = {"count": count, "distribution": draw(st.sampled_from(["random", "sorted", "clustered", "warp_local"]))}
    return {"kind": "gather", "src": src, "axis": 0, "index": index}


@st.composite
def tile_loads(draw):
    dt = draw(st.sampled_from(["bfloat16", "float16", "float32", "float8_e4m3fn"]))
    shape = draw(st.lists(st.sampled_from([64, 100, 256, 1000, 4096]), min_size=2, max_size=2))
    tile = draw(st.lists(st.sampled_from([8, 16, 64, 128, 256]), min_size=2, max_size=2))
    consumer = draw(st.sampled_from(["rows", "cols", "wgmma_a", "wgmma_b"]))
    return {"kind": "load_tile", "src": view(dt, shape), "tile": tile, "consumer": consumer}


requests = st.fixed_dictionaries({
    "op": st.one_of(copies(), gathers(), tile_loads()),
    "options": st.fixed_dictionaries({"max_plans": st.just(5)},
                                     optional={"smem_bytes": st.sampled_from([1024, 4096, 16384, 49152, 100000])}),
})


def check_fits(response: dict) -> list[str]:
    """What exceeds its limit among the response's kernels (every plan, each variant it has)."""
    from legalsat.clients.resources import REGISTERS_PER_SM, plan_resources
    from legalsat.kernels import kernel_variants

    over = []
    for i, plan in enumerate(response["plans"]):
        for variant in kernel_variants(plan, True):
            try:
                kernels = plan_resources(response, variant, plan_index=i)
            except Exception as e:  # noqa: BLE001 - a kernel that does not compile is a finding
                over.append(f"plan {i} {plan['strategy']}/{variant}: does not compile: {type(e).__name__} "
                            f"{str(e).splitlines()[0][:200]}")
                continue
            for k in kernels:
                where = f"plan {i} {plan['strategy']}/{variant} {k.kernel}"
                if k.shared_bytes > plan["smem_budget_bytes"]:
                    over.append(f"{where}: {k.shared_bytes} B shared > budget {plan['smem_budget_bytes']}")
                if k.registers_per_block > REGISTERS_PER_SM:
                    over.append(f"{where}: {k.registers} registers x {32 * k.num_warps} threads")
    return over


def plan_and_check(req: dict) -> list[str]:
    """In the compiling process: plan `req`, then what exceeds its limit (a refused request
    has no plans, so nothing)."""
    from legalsat.api import optimize
    from legalsat.diagnostics import InputError

    try:
        return check_fits(optimize(req))
    except InputError:
        return []


@pytest.fixture(scope="module")
def compiler():
    """A process that compiles (these tests' own process interprets kernels: conftest.py)."""
    require_client()
    saved = os.environ.pop("TRITON_INTERPRET", None)
    try:
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        pool.submit(os.getpid).result()  # started without TRITON_INTERPRET
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved
    yield pool
    pool.shutdown()


@settings(max_examples=int(os.environ.get("LEGALSAT_RESOURCE_EXAMPLES", "24")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(requests)
def test_every_plans_kernels_fit_the_target(compiler, req):
    assert compiler.submit(plan_and_check, req).result() == [], json.dumps(req)


def test_large_moe_inspectors_fit(compiler):
    """128 and 256 experts, top-8 of 16384 tokens: each pass within the budget (its scan once
    took 262,144 bytes, over the H100's 232,448), and within a 16 KB budget when asked."""
    from legalsat.api import optimize

    for experts, smem in ((128, None), (256, None), (128, 16384)):
        req = {"op": {"kind": "gather", "src": view("bfloat16", [16384, 2048]), "axis": 0,
                      "index": {"count": 16384 * 8, "distribution": "clustered", "groups": experts}},
               "options": {"max_plans": 5, **({"smem_bytes": smem} if smem else {})}}
        first = optimize(req)["plans"][0]
        assert first["strategy"] == "inspector_executor"
        assert first["gather"]["inspector"]["smem_bytes"] <= (smem or 232448)
        assert compiler.submit(plan_and_check, req).result() == []


@pytest.mark.parametrize("dtype,smem", [("float32", 1024), ("float32", 4096), ("float64", 512), ("float64", 3072)])
def test_thin_transposed_boxes_of_wide_words_compile(compiler, dtype, smem):
    """4096 x 4096 transposes under small budgets: TMA boxes with 4 fp32 or 2-4 fp64 along a
    transposed dim, whose Gluon permute Triton 3.6 cannot lower (PassManager::run failed), run
    the tl kernel for either variant."""
    req = {"op": {"kind": "copy", "src": view(dtype, [4096, 4096]), "dst": permuted(dtype, [4096, 4096], (1, 0))},
           "options": {"max_plans": 5, "smem_bytes": smem}}
    assert compiler.submit(plan_and_check, req).result() == []


@pytest.mark.parametrize("dtype,shape,axis,count,smem", [
    ("float32", [2048, 4096], 1, 1000, None), ("float16", [333, 999], 1, 500, None),
    ("int8", [100, 3001], 1, 2000, None), ("float64", [7, 5, 1000], 2, 900, None),
    ("bfloat16", [64, 4096], 1, 9000, None), ("float32", [2, 3, 513], 2, 400, 4096)])
def test_staged_row_gathers_compile_within_the_budget(compiler, dtype, shape, axis, count, smem):
    """The Gluon variant of gathers along an inner axis (run bit-exact on the H100:
    benchmarks/gpu_plan_check_gathers.json): odd rows, 1- and 8-byte words, a 3-D slab, more
    entries than one step holds, a budget the padded row must fit."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    req = {"op": {"kind": "gather", "src": view(dtype, shape, strides), "axis": axis,
                  "index": {"count": count, "distribution": "random"}},
           "options": {"max_plans": 4, **({"smem_bytes": smem} if smem else {})}}
    assert compiler.submit(plan_and_check, req).result() == []
