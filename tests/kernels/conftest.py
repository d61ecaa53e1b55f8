"""Kernel tests run emitted Triton kernels in Triton's interpreter on the CPU (bit-exact
against PyTorch). CI sets LEGALSAT_CI_REQUIRE to include "triton", so a missing client extra
fails there instead of skipping."""

from __future__ import annotations

import os

import pytest

# before triton is imported anywhere: the kernels the tests load must be interpreted
os.environ.setdefault("TRITON_INTERPRET", "1")


def require_client() -> None:
    """Skip (or, in CI, fail) when torch / triton (the `client` extra) are missing."""
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        if "triton" in os.environ.get("LEGALSAT_CI_REQUIRE", "").split(","):
            pytest.fail(f"the client extra is required here (LEGALSAT_CI_REQUIRE): {e}")
        pytest.skip(f"the client extra is not installed: {e}")
