"""The kernel tests' one requirement: the `client` extra (torch + triton)."""

from __future__ import annotations

import os

import pytest


def require_client() -> None:
    """Skip (or, where CI lists "triton" in LEGALSAT_CI_REQUIRE, fail) without torch / triton."""
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        if "triton" in os.environ.get("LEGALSAT_CI_REQUIRE", "").split(","):
            pytest.fail(f"the client extra is required here (LEGALSAT_CI_REQUIRE): {e}")
        pytest.skip(f"the client extra is not installed: {e}")
