"""The Triton client's calls: a tensor passed again is not re-viewed as words, and a tensor
the caller drops is not kept alive by the kernel."""

from __future__ import annotations

import pytest


@pytest.fixture
def client():
    from tests.kernels.client import require_client

    require_client()


def test_a_dropped_tensor_takes_its_word_view_with_it(client):
    """The kernel keeps a word view per argument between calls, but not past the tensor."""
    import gc

    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import view

    flat = view("uint8", (4096,))
    k = build_kernel(optimize({"target": "sm90", "op": {"kind": "copy", "src": flat, "dst": flat}}))
    src = torch.zeros(4096, dtype=torch.uint8)
    first = k._words("src", src, 8)
    assert k._words("src", src, 8) is first  # the same tensor: the same view
    del src, first
    gc.collect()
    assert ("src", 8) not in k._views
