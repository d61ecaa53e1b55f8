"""Descriptor input: arbitrary JSON-shaped input gets a verdict or an InputError, and every
problem names its field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import legalsat
from legalsat.diagnostics import InputError
from legalsat.schemas.descriptors import VerdictOut, parse_descriptor

FIELDS = ["dtype", "rank", "global_address", "global_dim", "global_strides", "box_dim",
          "element_strides", "interleave", "swizzle", "l2_promotion", "oob_fill"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=6)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20)

# Objects with the right keys and values of plausible and implausible types.
plausible = st.fixed_dictionaries({}, optional={
    k: st.one_of(json_values, st.integers(min_value=0, max_value=(1 << 64) + 5),
                 st.lists(st.integers(min_value=-2, max_value=(1 << 64) + 5), max_size=7),
                 st.sampled_from(["bfloat16", "float32", "none", "128B", "32B", "16B", "bf16"]))
    for k in FIELDS + ["unknown"]})


@settings(max_examples=400, deadline=None)
@given(st.one_of(json_values, plausible))
def test_verdict_never_crashes_on_json_shaped_input(obj):
    try:
        out = legalsat.validate_descriptor(obj)
    except InputError as e:
        assert all(d.fix and d.message for d in e.details)
        return
    assert isinstance(out, VerdictOut)
    assert out.legal == (not out.violations)
    for v in out.violations:
        assert v.rule and v.message and v.fix


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_verdict_never_crashes_on_arbitrary_bytes(raw):
    try:
        assert isinstance(legalsat.validate_descriptor(raw), VerdictOut)
    except InputError as e:
        assert e.headline.code.id in ("invalid_input", "invalid_json")


def test_problems_name_their_field_and_index():
    line = json.dumps({"dtype": "bfloat16", "global_address": 0, "global_dim": [8, -1],
                       "global_strides": [16], "box_dim": [8, "8"]})
    try:
        parse_descriptor(line)
    except InputError as e:
        fields = [d.field for d in e.details]
    assert fields == ["global_dim[1]", "box_dim[1]"]


def test_list_lengths_must_match_rank():
    with pytest.raises(InputError) as e:
        legalsat.validate_descriptor({"dtype": "float16", "rank": 2, "global_address": 0,
                                      "global_dim": [8, 8], "global_strides": [16, 16], "box_dim": [8, 8]})
    assert e.value.headline.field == "global_strides"
    assert "rank-1" in e.value.headline.message or "rank 2 needs 1" in e.value.headline.message


def test_rank_and_element_strides_may_be_omitted():
    out = legalsat.validate_descriptor({"dtype": "float16", "global_address": 1 << 20,
                                        "global_dim": [64, 64], "global_strides": [128],
                                        "box_dim": [64, 8]})
    assert out.legal, out


def test_misspelt_field_gets_a_suggestion():
    with pytest.raises(InputError) as e:
        legalsat.validate_descriptor({"dtype": "bf16", "global_address": 0, "global_dim": [8],
                                      "global_strides": [], "box_dim": [8], "swizle": "none"})
    messages = " ".join(d.message for d in e.value.details)
    assert "did you mean 'bfloat16'" in messages and "did you mean 'swizzle'" in messages


@pytest.mark.parametrize("request_", [
    {"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [4096, 4096], "strides": [4096, 1]},
            "dst": {"dtype": "bfloat16", "shape": [4096, 4096], "strides": [1, 4096]}}},
    {"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [1000, 4096], "strides": [4096, 1]},
            "tile": [128, 64], "consumer": "wgmma_a"}},
], ids=["transpose", "wgmma_a"])
def test_a_plans_descriptors_validate_as_they_stand(request_):
    plans = [p for p in legalsat.optimize(request_)["plans"] if p["descriptors"]]
    assert plans
    for p in plans:
        for d in p["descriptors"]:
            assert d["role"] in ("load", "store")
            assert legalsat.validate_descriptor(d).legal, d


def test_role_is_checked_like_any_field():
    with pytest.raises(InputError) as e:
        legalsat.validate_descriptor({"dtype": "float16", "global_address": 1 << 20, "global_dim": [64, 64],
                                      "global_strides": [128], "box_dim": [64, 8], "role": "both"})
    assert e.value.headline.field == "role"


def test_a_megabyte_value_is_quoted_short_and_matched_against_nothing():
    """A 1 MB dtype: the message quotes 64 characters of it (it quoted all of it), and no
    "did you mean" runs over it (difflib's set-up on the whole string held the service's
    event loop for a tenth of a second per request)."""
    from legalsat.schemas.validation import did_you_mean

    word = "x" * 1_000_000
    assert did_you_mean(word, ["bfloat16", "float16"]) == ""
    assert did_you_mean("bfloat61", ["bfloat16", "float16"]) == "; did you mean 'bfloat16'?"
    with pytest.raises(InputError) as e:
        parse_descriptor({"dtype": word, "global_address": 1 << 40, "global_dim": [64, 64], "global_strides": [128],
                          "box_dim": [64, 64]})
    assert e.value.headline.field == "dtype" and len(e.value.headline.message) < 200


def test_python_values_are_taken_as_the_json_they_stand_for():
    """A torch.Size or a tuple for a list, a numpy integer for an int: refused as 'valid list'
    and 'send a JSON integer' by the Python API; the caller's value is left as it was."""
    import numpy as np

    import legalsat

    desc = {"dtype": "bfloat16", "global_address": np.int64(1 << 40), "global_dim": (4096, 1024),
            "global_strides": [np.uint32(8192)], "box_dim": (64, 64), "swizzle": "128B"}
    assert legalsat.validate_descriptor(desc).legal
    assert desc["global_dim"] == (4096, 1024) and isinstance(desc["global_address"], np.int64)
    req = {"op": {"kind": "copy", "src": {"dtype": "float32", "shape": (8, 8), "strides": (8, 1)},
                  "dst": {"dtype": "float32", "shape": (8, 8), "strides": (np.int64(1), 8)}}}
    assert legalsat.optimize(req)["status"] == "ok"


def test_an_omitted_element_strides_is_not_named_for_a_short_box_dim():
    """element_strides left out (all ones) was sized by box_dim: a box_dim one entry short named
    element_strides too, a field the input did not have."""
    d = {"dtype": "bfloat16", "global_address": 0, "global_dim": [4096, 1024], "global_strides": [8192],
         "box_dim": [64]}
    with pytest.raises(InputError) as e:
        legalsat.validate_descriptor(d)
    assert [x.field for x in e.value.details] == ["box_dim"]


def test_a_target_inside_a_descriptor_is_pointed_beside_it_as_given():
    """The fix said ?target=sm90 whatever target the descriptor held, and named no Python form."""
    d = {"target": "sm100", "dtype": "bfloat16", "global_address": 0, "global_dim": [64, 64],
         "global_strides": [128], "box_dim": [64, 64]}
    with pytest.raises(InputError) as e:
        legalsat.validate_descriptor(d)
    assert e.value.headline.field == "target"
    assert "target='sm100'" in e.value.headline.fix and "--target sm100" in e.value.headline.fix


def test_a_rank_of_no_descriptor_is_named_before_any_list_is_sized_by_it():
    """element_strides, when omitted, is sized by the rank: a rank of 4·10^9 must be refused
    before (as the rank), not allocated."""
    d = {"dtype": "bfloat16", "global_address": 0, "global_dim": [64, 64], "global_strides": [128],
         "box_dim": [64, 64], "rank": 4_000_000_000}
    with pytest.raises(InputError) as e:
        legalsat.validate_descriptor(d)
    assert e.value.headline.field == "rank"
