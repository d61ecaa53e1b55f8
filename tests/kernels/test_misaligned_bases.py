"""Tensors a caller passes off the alignment a plan was made for: every plan of every small
case, its source and destination moved one element past a 16-byte boundary (a slice past a
buffer's first element, a view into a packed buffer). Each kernel either runs bit-exact or is
refused with an error naming the tensor and the fix; none faults or writes wrong bits."""

from __future__ import annotations

import pytest

from legalsat.testing.workloads import small_cases
from tests.kernels.client import require_client
from tests.kernels.test_interpreted import response

CASES = [w for w in small_cases() if w.request()["op"]["src"]["dtype"] not in ("complex128",)]


@pytest.mark.parametrize("w", CASES, ids=[w.name for w in CASES])
def test_a_misaligned_tensor_runs_exact_or_is_refused_by_name(w):
    require_client()
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError
    from legalsat.testing.torch_reference import make_inputs, misaligned, poison, reference, same_bits

    resp = response(w)
    inp = make_inputs(resp, w.__dict__, "cpu", torch.Generator().manual_seed(11))
    want = reference(inp)
    es = inp.src.element_size()
    if es >= 16:
        pytest.skip("a 16-byte element is never off a 16-byte boundary")
    moved = misaligned(inp, es)
    for i, plan in enumerate(resp["plans"]):
        k = build_kernel(resp, plan_index=i, variant="tl")
        poison(moved)
        try:
            got = moved.call(k)
        except InputError as e:
            d = e.headline
            assert d.field in ("src", "dst", "out") and "aligned" in d.message and d.fix, e.details
            continue
        assert same_bits(got, want), f"{plan['strategy']} plan {i} differs from PyTorch off alignment\n{k.source}"
