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


def skewed_response(response: dict) -> dict:
    """`response` (the small unaligned-rows transpose) with its staged plan as the planner
    gives destinations larger than L2: a 64 x 128 tile storing 16-byte vectors, which the
    emitter sector-skews (the planner's own choice for this small case is a plain tile)."""
    import copy

    out = copy.deepcopy(response)
    plan = next(p for p in out["plans"] if p["strategy"] == "staged_smem")
    piece = plan["pieces"][0]
    piece["tile"], piece["store_vector_bytes"] = [64, 128], 16
    out["plans"] = [plan]
    return out
