"""Every plan of every small case (odd, ragged and unaligned shapes of each workload kind),
planned live, emitted, run in Triton's interpreter and compared bit for bit with PyTorch
over the whole poisoned destination."""

from __future__ import annotations

import pytest

from legalsat.testing.workloads import small_cases
from tests.kernels.client import interpreted, require_client, skewed_response

CASES = small_cases()
_RESPONSES: dict[str, dict] = {}


def response(w) -> dict:
    from legalsat.api import optimize

    if w.name not in _RESPONSES:
        _RESPONSES[w.name] = optimize(w.request())
    return _RESPONSES[w.name]


@pytest.mark.parametrize("w", CASES, ids=[w.name for w in CASES])
def test_every_plan_is_bit_exact(w):
    require_client()
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    resp = response(w)
    assert resp["plans"], resp["rejected"]
    inp = make_inputs(resp, w.__dict__, "cpu", torch.Generator().manual_seed(7))
    want = reference(inp)
    for i, plan in enumerate(resp["plans"]):
        k = build_kernel(resp, plan_index=i, variant="tl")
        poison(inp)
        assert same_bits(inp.call(k), want), f"{plan['strategy']} plan {i} differs from PyTorch\n{k.source}"


def test_sector_skewed_tile_is_bit_exact():
    """The skewed staged kernel (what a misaligned destination larger than L2 gets), run in
    the interpreter on the small unaligned-rows case."""
    require_client()
    w = next(w for w in CASES if "unaligned rows" in w.name)
    k = interpreted(skewed_response(response(w)), w.__dict__, seed=9)  # asserts bit-exact
    assert "tl.gather" in k.source


def test_every_strategy_is_covered():
    """Each of the five strategies has a small case it is checked on."""
    seen = {p["strategy"] for w in CASES for p in response(w)["plans"]}
    assert seen == {"direct", "tma", "staged_smem", "shuffle", "inspector_executor"}


def test_ragged_copy_uses_core_and_tail_pieces():
    """The plan's core + tail pieces become separate launches of their own widths, no blanket mask."""
    require_client()
    from legalsat.kernels import emit

    w = next(w for w in CASES if "ragged" in w.name)
    plan = response(w)["plans"][0]
    assert len(plan["pieces"]) == 2
    em = emit(plan)
    core_word, tail_word = (ln.word for ln in em.launches)
    assert core_word == 8 and tail_word < 8  # 16-byte core, the tail in what its bytes allow
    core = em.source.split("def direct_copy_0(")[1].split("@triton.jit")[0]
    assert "if pid < " in core and "    x = tl.load(src + so, eviction_policy=\"evict_last\")\n" in core  # full blocks run unmasked


def test_window_gather_is_exact_when_indices_break_the_promise():
    """A warp_local plan promises each 32 entries lie within 32 rows; entries that do not are
    read directly, so arbitrary indices still give PyTorch's result."""
    require_client()
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    w = next(w for w in CASES if "warp-local" in w.name)
    resp = response(w)
    shuffle = next(i for i, p in enumerate(resp["plans"]) if p["strategy"] == "shuffle")
    inp = make_inputs(resp, w.__dict__, "cpu", torch.Generator().manual_seed(11))
    inp.index = torch.randint(0, 700, (1000,), generator=torch.Generator().manual_seed(12))
    want = reference(inp)
    k = build_kernel(resp, plan_index=shuffle)
    poison(inp)
    assert same_bits(inp.call(k), want)


@pytest.mark.parametrize("dtype,shape,src_strides,dst_strides,smem", [
    ("bfloat16", [3], [0], [1], None),            # torch.tensor(x).expand(3).contiguous()
    ("float32", [5, 7], [0, 0], [7, 1], None),    # a scalar expanded to 5 x 7
    ("uint8", [1000, 3], [0, 1], [3, 1], None),   # a row repeated: partly broadcast
    # a column repeated into a padded pitch, under a shared-memory budget that makes the staged
    # tile one row: its source offset had no term of the block's broadcast dim (a scalar
    # pointer under a block mask: the kernel did not run)
    ("float64", [2, 17], [1, 0], [105, 1], 256),
    ("float32", [6, 40], [1, 0], [40, 1], 128),
], ids=["expand-1d", "scalar-2d", "row-repeated", "column-repeated-pitch", "column-repeated"])
def test_a_broadcast_source_copies_bit_exact(dtype, shape, src_strides, dst_strides, smem):
    """Every source stride 0: the direct kernel's source offset was the scalar 0, and its
    masked last block did not build (a block mask on a scalar pointer)."""
    require_client()
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    view = lambda strides: {"dtype": dtype, "shape": shape, "strides": strides}  # noqa: E731
    resp = optimize({"op": {"kind": "copy", "src": view(src_strides), "dst": view(dst_strides)},
                     "options": {"max_plans": 5, **({"smem_bytes": smem} if smem else {})}})
    assert resp["plans"], resp["rejected"]
    inp = make_inputs(resp, {}, "cpu", torch.Generator().manual_seed(3))
    want = reference(inp)
    for i, plan in enumerate(resp["plans"]):
        poison(inp)
        assert same_bits(inp.call(build_kernel(resp, plan_index=i, variant="tl")), want), plan["strategy"]


@pytest.mark.parametrize("rows,count", [(23, 70), (23, 24), (5, 3)])
def test_a_grouped_gathers_plans_are_exact_when_slots_do_not_divide_the_rows(monkeypatch, rows, count):
    """An MoE gather of `count` slots over `rows` rows with no top_k given: the inputs take
    ceil(count / rows) slots a row (count // rows put 70 slots over 23 rows past the last
    row: the reference raised IndexError), and every plan matches PyTorch."""
    require_client()
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    req = {"op": {"kind": "gather", "src": {"dtype": "int64", "shape": [rows, 1], "strides": [1, 1], "base_align": 8},
                  "axis": 0, "index": {"count": count, "distribution": "sorted", "groups": 2}},
           "options": {"max_plans": 8}}
    resp = optimize(req)
    inp = make_inputs(resp, {"torch_op": "index_select", "extra": {}}, "cpu", torch.Generator().manual_seed(3))
    assert int(inp.index.max()) < rows
    want = reference(inp)
    for i in range(len(resp["plans"])):
        poison(inp)
        assert same_bits(inp.call(build_kernel(resp, plan_index=i, variant="tl")), want), resp["plans"][i]["strategy"]


@pytest.mark.parametrize("dtype", ["float8_e4m3fnuz", "float8_e5m2fnuz", "complex64"])
def test_amd_fp8_and_complex_elements_move_bit_exact(monkeypatch, dtype):
    """The fp8 encodings of gfx942 and complex64 were refused as unknown dtypes (one suggested
    float8_e4m3fn, another encoding); they move as words of their width: a ragged transpose and
    a gather, every plan, bit-exact in the interpreter."""
    require_client()
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for request, workload in (
            ({"op": {"kind": "copy", "src": {"dtype": dtype, "shape": [37, 29], "strides": [29, 1]},
                     "dst": {"dtype": dtype, "shape": [37, 29], "strides": [1, 37]}}, "options": {"max_plans": 4}},
             {"torch_op": "copy"}),
            ({"op": {"kind": "gather", "src": {"dtype": dtype, "shape": [50, 24], "strides": [24, 1]}, "axis": 0,
                     "index": {"count": 33}}}, {"torch_op": "index_select"})):
        resp = optimize(request)
        assert resp["plans"], resp["rejected"]
        inp = make_inputs(resp, workload, "cpu", torch.Generator().manual_seed(3))
        want = reference(inp)
        for i, plan in enumerate(resp["plans"]):
            poison(inp)
            assert same_bits(inp.call(build_kernel(resp, plan_index=i, variant="tl")), want), (dtype, plan["strategy"])


@pytest.mark.parametrize("align", [2, 4, 8])
def test_a_misaligned_bases_plans_claim_no_vector_wider_than_it(monkeypatch, align):
    """A 2-, 4- or 8-byte aligned base got staged and shuffle plans of 16-byte vectors: a
    compiler emitting them faults on the misaligned address. Every plan's vectors fit the
    alignment, and each runs bit-exact from such a base."""
    require_client()
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    view = {"dtype": "bfloat16", "shape": [48, 40], "base_align": align}
    resp = optimize({"op": {"kind": "copy", "src": {**view, "strides": [40, 1]}, "dst": {**view, "strides": [1, 48]}},
                     "options": {"max_plans": 4}})
    assert resp["plans"]
    for p in resp["plans"]:
        for piece in p["pieces"]:
            assert max(piece["vector_bytes"], piece.get("store_vector_bytes") or 0) <= max(align, 2), p["strategy"]
    inp = make_inputs(resp, {"torch_op": "copy"}, "cpu", torch.Generator().manual_seed(align))
    want = reference(inp)
    for i, p in enumerate(resp["plans"]):
        poison(inp)
        assert same_bits(inp.call(build_kernel(resp, plan_index=i, variant="tl")), want), p["strategy"]
