"""The planner suite: every request plans (or is infeasible with an explanation), every
returned descriptor validates, every plan carries a passing islpy proof, TMA plans carry a
verified protocol, and every response matches the published schema."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import legalsat
from legalsat.api import optimize
from legalsat.schemas.plan import validate_response
from legalsat.terms.descriptor import Swizzle
from legalsat.testing.planner_suite import load_suite

REQUESTS = load_suite()


@functools.cache
def response(rid: str) -> dict:
    return optimize(next(q for q in REQUESTS if q["request_id"] == rid))


def test_suite_is_large_enough():
    assert len(REQUESTS) >= 40


@pytest.mark.parametrize("rid", [q["request_id"] for q in REQUESTS])
def test_suite_request(rid):
    out = response(rid)
    validate_response(out)
    assert out["request_id"] == rid
    if out["status"] == "infeasible":
        assert out["rejected"] and all(r["reasons"] for r in out["rejected"])
    else:
        assert out["plans"]
    strategies = [p["strategy"] for p in out["plans"]]
    assert len(strategies) == len(set(strategies)), "top-K must be distinct strategies"
    for plan in out["plans"]:
        assert plan["proof"]["verified"], plan["proof"]
        for d in plan["descriptors"]:
            fields = {k: v for k, v in d.items() if k != "role"}
            verdict = legalsat.validate_descriptor(fields, out["target"])
            assert verdict.legal, verdict
        if plan["strategy"] == "tma":
            assert plan["descriptors"] and plan["async"]["verified"]
    # a proof failure is a planner bug, never a legitimate rejection
    assert not any(r["reasons"][0]["rule"] == "proof" for r in out["rejected"])


def test_expected_choices():
    """Structure the suite must show (not costs, which the kernels issue calibrates)."""
    assert response("transpose-8192sq-bf16")["plans"][0]["strategy"] in ("staged_smem", "tma")
    assert "tma" not in [p["strategy"] for p in response("odd-pitch-1003-bf16")["plans"]]
    padded = response("odd-pitch-1003-bf16-padding")["plans"]
    assert any(p["strategy"] == "tma" and p["relayout"] for p in padded)
    rank7 = response("rank7-contiguous-fp32")
    tma = next(p for p in rank7["plans"] if p["strategy"] == "tma")
    assert all(d["rank"] <= 5 for d in tma["descriptors"])
    moe = [p["strategy"] for p in response("moe-top2-of-8")["plans"]]
    assert "inspector_executor" in moe
    paged = response("paged-kv-page16-d128")["plans"][0]
    assert paged["gather"]["unit"] == 16
    ragged = response("copy-50257x4096-bf16-ragged")["plans"][0]
    assert len(ragged["pieces"]) == 2 and ragged["pieces"][0]["element_bytes"] == 16
    why = response("odd-pitch-1003-bf16")["rejected"]
    tma_why = next(r for r in why if r["strategy"] == "tma")["reasons"]
    assert any(r["rule"] == "allow_padding" for r in tma_why)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data(),
       st.sampled_from(["uint8", "bfloat16", "float32", "float64"]))
def test_every_plan_of_a_random_permutation_is_proven(exps, data, dtype):
    """Random permuted copies: the planner returns only proven plans and never produces a
    formulation whose proof fails."""
    shape = [2 ** e + data.draw(st.integers(0, 1)) for e in exps]
    perm = data.draw(st.permutations(range(len(shape))))
    stored = [shape[p] for p in perm]
    st_ = [1] * len(shape)
    acc = 1
    for p in reversed(perm):
        st_[p] = acc
        acc *= shape[p]
    contig, acc = [], 1
    for n in reversed(shape):
        contig.append(acc)
        acc *= n
    contig.reverse()
    assert stored
    out = optimize({"op": {"kind": "copy", "src": {"dtype": dtype, "shape": shape, "strides": contig},
                           "dst": {"dtype": dtype, "shape": shape, "strides": st_}}})
    assert out["status"] == "ok"
    assert all(p["proof"]["verified"] for p in out["plans"])
    assert not any(r["reasons"][0]["rule"] == "proof" for r in out["rejected"])


@pytest.mark.parametrize("rid", ["transpose-8192sq-bf16", "transpose-4096sq-fp32", "bhsd-to-bhds-d128",
                                 "nchw-to-nhwc-32x64x56x56", "transpose-2048sq-fp64"])
def test_tma_transposes_use_swizzled_boxes(rid):
    """A transposing TMA plan permutes each box through shared memory; its load and store
    boxes span exactly their swizzle (both sides of a long transpose are swizzled), and the
    plan's smem swizzle is the load descriptor's."""
    tma = [p for p in response(rid)["plans"] if p["strategy"] == "tma"]
    assert tma, f"{rid} has no TMA plan"
    for piece in tma[0]["pieces"]:
        eb = min(piece["element_bytes"], 8)
        for d in piece["descriptors"]:
            span = Swizzle(d["swizzle"]).span_bytes
            assert span, d
            assert d["box_dim"][0] * eb == span, d
        load = next(d for d in piece["descriptors"] if d["role"] == "load")
        assert piece["smem"]["swizzle"] == load["swizzle"]


def test_aos_to_soa_tma_keeps_long_destination_rows():
    """A source row shorter than the swizzle span (8 fp32) leaves the store box unswizzled and
    as long as the budget allows: capping it would only shrink the box."""
    req = {"request_id": "aos", "target": "sm90", "op": {
        "kind": "copy", "src": {"dtype": "float32", "shape": [1 << 20, 8], "strides": [8, 1]},
        "dst": {"dtype": "float32", "shape": [1 << 20, 8], "strides": [1, 1 << 20]}}}
    tma = [p for p in optimize(req)["plans"] if p["strategy"] == "tma"]
    assert tma
    store = next(d for d in tma[0]["pieces"][0]["descriptors"] if d["role"] == "store")
    assert store["swizzle"] == "none" and store["box_dim"][0] * 4 > 128


def test_boxes_do_not_depend_on_what_was_planned_before():
    """z3 may return any of several optima; the box objective breaks every tie, so a worker
    that planned other requests first answers exactly as a fresh process does."""
    import subprocess
    import sys

    rid = "bshd-to-bhsd-d128"
    code = ("import json; from legalsat.api import optimize; "
            "from legalsat.testing.planner_suite import suite_request; "
            f"q = suite_request({rid!r}); "
            "print(json.dumps([d['box_dim'] for p in optimize(q)['plans'] for x in p['pieces'] "
            "for d in x.get('descriptors', [])]))")
    fresh = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                      check=True).stdout)
    for other in REQUESTS[:12]:
        response(other["request_id"])
    here = [d["box_dim"] for p in response(rid)["plans"] for x in p["pieces"] for d in x.get("descriptors", [])]
    assert fresh and here == fresh
