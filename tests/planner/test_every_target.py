"""Every target plans every movement kind at every element width, or says why not: the cost
rules' divisions hold for every target's cost facts (a 1-D gather of 1-byte elements on sm100
and gfx942 divided by a row efficiency that integer division took to 0: an egglog panic, a
500 over HTTP)."""

from __future__ import annotations

import pytest

from legalsat.api import optimize
from legalsat.targets import TARGETS
from legalsat.testing.planner_suite import permuted, view

DTYPES = ("uint8", "bfloat16", "float32", "float64")


def requests(dtype: str) -> dict[str, dict]:
    def gather(shape, axis=0, **index):
        return {"op": {"kind": "gather", "src": view(dtype, shape), "axis": axis, "index": index}}

    return {
        "transpose": {"op": {"kind": "copy", "src": view(dtype, [96, 80]), "dst": permuted(dtype, [96, 80], [1, 0])}},
        "copy": {"op": {"kind": "copy", "src": view(dtype, [7, 130]), "dst": view(dtype, [7, 130])}},
        "gather 1-D": gather([64], count=1),
        "gather rows": gather([1000, 48], count=300),
        "gather sorted": gather([1000, 48], count=300, distribution="sorted"),
        "gather warp-local": gather([1000, 48], count=300, distribution="warp_local"),
        "gather axis 1": gather([20, 300], axis=1, count=77),
        "paged": gather([64 * 16, 8, 16], count=20, page_size=16, unique=True),
        "moe": gather([300, 64], count=600, groups=8),
        "load_tile": {"op": {"kind": "load_tile", "src": view(dtype, [256, 256]), "tile": [64, 64],
                             "consumer": "rows"}},
    }


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_kind_plans_or_says_why_not(target, dtype):
    for name, req in requests(dtype).items():
        out = optimize({**req, "target": target})
        assert out["plans"] or out["rejected"], (name, out)
        for r in out["rejected"]:
            assert all(reason["message"] and reason["fix"] for reason in r["reasons"]), (name, r)
