"""Bank-conflict requests: any JSON-shaped input gets a report or an InputError naming its field."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import legalsat
from legalsat.diagnostics import InputError
from legalsat.schemas.bank import BankReportOut

anything = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 40), 1 << 40) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=70) | st.dictionaries(st.text(max_size=10), c, max_size=5),
    max_leaves=80)
plausible = st.fixed_dictionaries({}, optional={
    "target": st.sampled_from(["sm90", "gfx942", "sm100", "sm7", None]),
    "access_bytes": st.sampled_from([4, 8, 16, 12, "16"]),
    "op": st.sampled_from(["load", "store", "ld"]),
    "addresses": st.lists(st.one_of(st.none(), st.integers(-4, 1 << 33)), max_size=70),
    "pattern": st.sampled_from(["rows", "cols", "ldmatrix", "diag"]),
    "vector": st.integers(-1, 20),
    "tile": st.fixed_dictionaries({}, optional={
        "dtype": st.sampled_from(["bfloat16", "float32", "uint8", "16u4_align8b"]),
        "shape": st.lists(st.integers(-1, 300), max_size=3),
        "row_pitch_bytes": st.integers(-1, 5000), "swizzle": st.sampled_from(["none", "128B", "7B"])}),
})


@settings(max_examples=400, deadline=None)
@given(st.one_of(anything, plausible))
def test_report_never_crashes(obj):
    try:
        out = legalsat.analyze_bank_conflicts(obj)
    except InputError as e:
        assert all(d.fix and d.message for d in e.details)
        return
    assert isinstance(out, BankReportOut)
    assert out.wavefronts >= 0 and out.ideal_wavefronts >= 0


def test_raw_errors_name_the_lane():
    addrs = [16 * i for i in range(32)]
    addrs[3] = 20
    with pytest.raises(InputError) as e:
        legalsat.analyze_bank_conflicts({"access_bytes": 16, "op": "load", "addresses": addrs})
    assert e.value.headline.field == "addresses[3]"


def test_lane_count_follows_the_target():
    with pytest.raises(InputError) as e:
        legalsat.analyze_bank_conflicts({"target": "gfx942", "access_bytes": 4, "op": "load",
                                         "addresses": [4 * i for i in range(32)]})
    assert e.value.headline.field == "addresses" and "64 lanes" in e.value.headline.message


def test_structured_report_has_per_access_breakdown():
    out = legalsat.analyze_bank_conflicts({"op": "load", "pattern": "cols", "vector": 8,
                                           "tile": {"dtype": "bfloat16", "shape": [64, 64]}})
    assert out.error is None and len(out.accesses) == 16 and out.conflict_ways == 8.0


@pytest.mark.parametrize("change,field", [
    ({"access_bytes": 16.0}, "access_bytes"),        # Literal[4, 8, 16] compared 16.0 equal
    ({"target": ""}, "target"),                      # was the server's default target
    ({"addresses": [1 << 31] + [16 * i for i in range(1, 32)]}, "addresses[0]"),  # past shared memory
], ids=["float-width", "empty-target", "address-past-smem"])
def test_raw_requests_outside_what_the_hardware_has_are_named(change, field):
    req = {"op": "load", "access_bytes": 16, "addresses": [16 * i for i in range(32)], **change}
    with pytest.raises(InputError) as e:
        legalsat.analyze_bank_conflicts(req)
    assert e.value.headline.field == field and e.value.headline.fix


def test_a_tile_with_two_pitches_that_disagree_is_refused_by_its_padding():
    """row_pitch_bytes 128 with padding_bytes 2 for a [64, 64] bf16 tile: the padding was
    ignored in silence (rows of 128 bytes padded by 2 are 130 apart); pitches that agree pass."""
    def tile(**pitches):
        return {"op": "load", "pattern": "rows", "vector": 8,
                "tile": {"dtype": "bfloat16", "shape": [64, 64], **pitches}}

    with pytest.raises(InputError) as e:
        legalsat.analyze_bank_conflicts(tile(padding_bytes=2, row_pitch_bytes=128))
    assert e.value.headline.field == "tile.padding_bytes" and "130" in e.value.headline.message
    agree = legalsat.analyze_bank_conflicts(tile(padding_bytes=16, row_pitch_bytes=144))
    assert agree == legalsat.analyze_bank_conflicts(tile(padding_bytes=16))


@pytest.mark.parametrize("obj", [{}, {"target": "sm90"}, {"op": "load"}])
def test_a_request_of_neither_form_names_both(obj):
    """{} was told "access_bytes: Field required" (the raw form's), where the structured form
    needs no access_bytes."""
    with pytest.raises(InputError) as e:
        legalsat.analyze_bank_conflicts(obj)
    assert '"access_bytes"' in e.value.headline.fix and '"tile"' in e.value.headline.fix
