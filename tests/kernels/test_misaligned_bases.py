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


def test_a_view_into_a_buffer_that_starts_off_its_words_is_refused_by_name(monkeypatch):
    """A 16-byte aligned view (as planned) inside a numpy buffer whose memory starts a byte
    before a boundary: torch cannot view it as words, and the client raised torch's own
    RuntimeError from inside `words`."""
    import numpy as np
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    resp = optimize({"op": {"kind": "copy", "src": {"dtype": "uint8", "shape": [64], "strides": [1]},
                            "dst": {"dtype": "uint8", "shape": [64], "strides": [1]}}})
    arr = np.zeros(256, dtype=np.uint8)
    start = (-arr.ctypes.data) % 16 + 15
    view = torch.from_numpy(arr[start:start + 100])[1:65]
    assert view.data_ptr() % 16 == 0 and view.untyped_storage().data_ptr() % 16 == 15
    k = build_kernel(resp, variant="tl")
    with pytest.raises(InputError) as e:
        k(torch.arange(64, dtype=torch.uint8), view)
    assert e.value.details[0].field == "dst" and "clone" in e.value.details[0].fix
