"""Every TMA legality rule: a legal example, an illegal example that breaks exactly that
rule, and the violation's field / index / fix."""

from __future__ import annotations

import pytest

from legalsat.analyses.tma_legality import RULES, NoTma, check_descriptor
from legalsat.targets import SM90, SM100, resolve_target
from legalsat.terms.descriptor import TmaDescriptor

BASE = {"dtype": "bfloat16", "rank": 3, "global_address": 1 << 40,
        "global_dim": [256, 64, 8], "global_strides": [512, 32768], "box_dim": [64, 8, 4],
        "element_strides": [1, 1, 1], "interleave": "none", "swizzle": "128B",
        "l2_promotion": "128B", "oob_fill": "none"}


def desc(**kw) -> TmaDescriptor:
    return TmaDescriptor.from_fields(**(BASE | kw))


# rule -> (target, legal fields, illegal fields, expected field, expected index)
CASES = {
    "rank.range": ("sm90", {}, dict(rank=6, global_dim=[8] * 6, global_strides=[16] * 5,
                                    box_dim=[8] * 6, element_strides=[1] * 6, swizzle="none"),
                   "rank", None),
    "rank.interleave_min": ("sm90", dict(interleave="16B", swizzle="none", box_dim=[8, 8, 4]),
                            dict(rank=2, global_dim=[256, 64], global_strides=[512], box_dim=[8, 8],
                                 element_strides=[1, 1], interleave="16B", swizzle="none"),
                            "rank", None),
    "dtype.supported": ("sm90", {}, dict(dtype="16u4_align8b", box_dim=[128, 8, 4]), "dtype", None),
    "global_address.align": ("sm90", dict(global_address=(1 << 40) + 16),
                             dict(global_address=(1 << 40) + 8), "global_address", None),
    "global_address.range": ("sm90", dict(global_address=(1 << 57) - 16),
                             dict(global_address=1 << 57), "global_address", None),
    "global_dim.range": ("sm90", dict(global_dim=[256, 1 << 32, 8]),
                         dict(global_dim=[256, (1 << 32) + 1, 8]), "global_dim", 1),
    "global_dim.packed_multiple": ("sm100", dict(dtype="16u4_align8b", box_dim=[128, 8, 4]),
                                   dict(dtype="16u4_align8b", box_dim=[128, 8, 4],
                                        global_dim=[255, 64, 8]), "global_dim", 0),
    "global_strides.align": ("sm90", dict(global_strides=[528, 32768]),
                             dict(global_strides=[520, 32768]), "global_strides", 0),
    "global_strides.range": ("sm90", dict(global_strides=[512, (1 << 40) - 16]),
                             dict(global_strides=[512, 1 << 40]), "global_strides", 1),
    "box_dim.range": ("sm90", dict(box_dim=[64, 256, 1], swizzle="128B"),
                      dict(box_dim=[64, 257, 1]), "box_dim", 1),
    "box_dim.inner_bytes": ("sm90", dict(box_dim=[8, 8, 4]), dict(box_dim=[4, 8, 4]), "box_dim", 0),
    "box_dim.packed_inner": ("sm100", dict(dtype="16u4_align16b", global_dim=[256, 64, 8],
                                           global_strides=[512, 32768], box_dim=[128, 8, 4],
                                           global_address=1 << 40),
                             dict(dtype="16u4_align16b", box_dim=[64, 8, 4]), "box_dim", 0),
    "box_dim.swizzle_span": ("sm90", dict(swizzle="64B", box_dim=[32, 8, 4]),
                             dict(swizzle="64B", box_dim=[64, 8, 4]), "box_dim", 0),
    "box_dim.footprint": ("sm90", dict(dtype="float32", swizzle="none", box_dim=[256, 228, 1]),
                          dict(dtype="float32", swizzle="none", box_dim=[256, 229, 1]), "box_dim", 1),
    "element_strides.range": ("sm90", dict(element_strides=[1, 8, 1]),
                              dict(element_strides=[1, 9, 1]), "element_strides", 1),
    "swizzle.supported": ("sm90", dict(swizzle="128B"), dict(swizzle="128B_atom_32B"), "swizzle", None),
    "swizzle.interleave_32b": ("sm100", dict(interleave="32B", swizzle="32B", box_dim=[16, 8, 4]),
                               dict(interleave="32B", swizzle="64B", box_dim=[16, 8, 4]),
                               "swizzle", None),
    "swizzle.packed": ("sm100", dict(dtype="16u4_align16b", box_dim=[128, 8, 4], swizzle="128B"),
                       dict(dtype="16u4_align16b", box_dim=[128, 8, 4], swizzle="128B_atom_64B"),
                       "swizzle", None),
    "interleave.packed": ("sm100", dict(dtype="16u6_align16b", box_dim=[128, 8, 4], swizzle="none"),
                          dict(dtype="16u6_align16b", box_dim=[128, 8, 4], swizzle="none",
                               interleave="16B"), "interleave", None),
    "oob_fill.float_only": ("sm90", dict(oob_fill="nan_request_zero_fma"),
                            dict(dtype="int32", box_dim=[32, 8, 4], oob_fill="nan_request_zero_fma"),
                            "oob_fill", None),
}


def test_every_rule_has_an_example():
    assert {r.name for r in RULES} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_legal_and_illegal(name):
    target, legal, illegal, field, index = CASES[name]
    tgt = resolve_target(target)
    ok = check_descriptor(desc(**legal), tgt)
    assert ok.legal, ok.violations
    bad = check_descriptor(desc(**illegal), tgt)
    assert bad.rules == (name,), bad.violations
    v = bad.violations[0]
    assert (v.field, v.index) == (field, index)
    assert v.message and v.fix and v.fix != v.message


def test_fix_for_inner_box_names_the_element_multiple():
    v = check_descriptor(desc(box_dim=[4, 8, 4]), SM90).violations[0]
    assert "8 bytes" in v.message and "multiple of 8 for bfloat16" in v.fix


def test_footprint_counts_element_strides_with_integer_division():
    # 256 x 256 x 4 bytes would be 256 KiB; with element stride 2 on dim 1 only 128 rows move.
    assert check_descriptor(desc(dtype="float32", swizzle="none", box_dim=[256, 256, 1],
                                 element_strides=[1, 2, 1]), SM90).legal
    # a box smaller than its element stride counts zero elements: the driver accepts it
    assert check_descriptor(desc(dtype="float32", swizzle="none", box_dim=[256, 256, 3],
                                 element_strides=[1, 1, 4]), SM90).legal


def test_documented_interleave_swizzle_rule_is_not_enforced_on_sm90():
    d = desc(interleave="32B", swizzle="128B", box_dim=[16, 8, 4])
    assert check_descriptor(d, SM90).legal
    assert check_descriptor(d, SM100).rules == ("swizzle.interleave_32b",)


def test_all_violations_are_reported_not_just_the_first():
    v = check_descriptor(desc(global_address=8, box_dim=[4, 300, 4], element_strides=[1, 1, 0]), SM90)
    assert {"global_address.align", "box_dim.inner_bytes", "box_dim.range",
            "element_strides.range"} <= set(v.rules)


def test_target_without_tma():
    with pytest.raises(NoTma):
        check_descriptor(desc(), resolve_target("gfx942"))


@pytest.mark.parametrize("dim, fix", [
    (1 << 33, "8589934592 = 2 x 4294967296"),
    (3 << 32, "12884901888 = 3 x 4294967296"),
    ((1 << 33) + 1, "into parts of at most 4294967296 elements"),
])
def test_a_dim_past_2_32_gets_a_split_that_exists(dim, fix):
    """The fix said "e.g. n = a x b with both <= 2^32", its placeholders never filled in, also
    where no such split exists: it now gives the split from the extent's power-of-two part, or
    parts of the tensor."""
    found = check_descriptor(desc(global_dim=[256, dim, 8], global_strides=[512, 512 * dim]), SM90)
    (v,) = [v for v in found.violations if v.code.id == "global_dim.range"]
    assert fix in v.fix and "a x b" not in v.fix and "dimension 1" in v.fix
