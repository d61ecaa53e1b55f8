"""The planner's stages are things: each can be called alone, and its output dumped."""

from __future__ import annotations

import json

import pytest

from legalsat.api import dump_stages
from legalsat.diagnostics import InputError
from legalsat.planner import stages
from legalsat.schemas.optimize import parse_request
from legalsat.terms.strategy import Strategy

TRANSPOSE = {"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]},
                    "dst": {"dtype": "bfloat16", "shape": [64, 96], "strides": [1, 64]}}}


def test_each_stage_alone():
    req = parse_request(TRANSPOSE)
    with stages.saturate(req) as sat:
        cands = stages.extract(sat)
    assert {c.strategy for c in cands} >= {Strategy.DIRECT, Strategy.TMA, Strategy.STAGED_SMEM}
    staged = next(c for c in cands if c.strategy is Strategy.STAGED_SMEM)
    built = stages.solve(req, staged)
    assert built.pieces[0].smem is not None and built.tile == built.pieces[0].tile
    assert stages.verify(built).ok


def test_dumps_are_json_and_stop_where_asked():
    out = dump_stages(TRANSPOSE, "extract")
    assert set(out) == {"saturate", "extract"}
    assert out["saturate"]["stop_reason"] == "saturated"
    assert {c["strategy"] for c in out["extract"]} >= {"direct", "tma", "staged_smem"}
    full = dump_stages(TRANSPOSE)
    json.dumps(full)
    assert all(v["proof"]["equal"] and v["proof"]["injective"] for v in full["verify"])
    assert any("fields" in s and s["fields"]["pieces"][0]["dims"] for s in full["solve"])


def test_an_unknown_stage_is_named():
    with pytest.raises(InputError) as e:
        dump_stages(TRANSPOSE, "lower")
    assert e.value.headline.field == "stage"
