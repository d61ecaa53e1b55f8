"""Protocol input: any JSON-shaped input gets a verdict; problems name their field."""

from __future__ import annotations

import json
import os
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import legalsat
from legalsat.schemas.pipeline import PipelineVerdictOut, protocol_to_dict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "extract"))
from protocols import warp_specialized  # noqa: E402

anything = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5000) | st.text(max_size=10),
    lambda c: st.lists(c, max_size=5) | st.dictionaries(
        st.sampled_from(["name", "op", "bar", "buffer", "roles", "blocks", "ops", "count",
                         "barriers", "buffers", "phase", "bytes", "iterations", "x"]), c, max_size=5),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(anything)
def test_verdict_never_crashes(obj):
    out = legalsat.verify_pipeline(obj)
    assert isinstance(out, PipelineVerdictOut)
    assert out.ok == (not out.violations and out.error is None)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 40), st.integers(0, 3))
def test_mutated_valid_protocols_never_crash(n_ops, role):
    d = protocol_to_dict(warp_specialized(2))
    ops = d["roles"][role % 2]["blocks"][0]["ops"]
    if n_ops < len(ops):
        del ops[n_ops]
    d["iterations"] = n_ops
    assert isinstance(legalsat.verify_pipeline(json.dumps(d)), PipelineVerdictOut)


def test_undeclared_names_are_reported_with_their_path():
    d = protocol_to_dict(warp_specialized(2))
    d["roles"][1]["blocks"][0]["ops"][0]["bar"] = "fulll"
    out = legalsat.verify_pipeline(d)
    assert not out.ok and out.error["field"] == "roles[1].blocks[0].ops[0].bar"
    assert "not declared" in out.error["message"]


def test_missing_operand_is_reported():
    d = protocol_to_dict(warp_specialized(2))
    del d["roles"][0]["blocks"][0]["ops"][0]["phase"]
    out = legalsat.verify_pipeline(d)
    assert out.error["field"] == "roles[0].blocks[0].ops[0].phase"


def test_shorthands():
    proto = {"barriers": [{"name": "bar"}], "buffers": [{"name": "buf", "bytes": 4096}],
             "setup": [{"op": "init", "bar": "bar"}],
             "roles": [{"name": "main", "blocks": [{"count": "N", "ops": [
                 {"op": "expect_tx", "bar": "bar", "bytes": 4096},
                 {"op": "tma_load", "bar": "bar", "buffer": "buf", "bytes": 4096},
                 {"op": "wait", "bar": "bar", "phase": {}},
                 {"op": "consume", "buffer": "buf"}]}]}]}
    out = legalsat.verify_pipeline(proto)
    assert out.ok, out
    proto["roles"][0]["blocks"][0]["ops"][0]["bytes"] = 4000
    assert [v.rule for v in legalsat.verify_pipeline(proto).violations] == ["tx_mismatch"]
