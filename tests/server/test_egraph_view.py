"""The e-graph document and picture built from a real saturated e-graph."""

from __future__ import annotations

import json

import pytest

from legalsat.api import optimize
from legalsat.server.egraph_view import egraph_model, render_svg, shown_classes, to_dot, view_html

from .conftest import SMALL
from .conftest import need as need_tool

RANK7 = {"op": {"kind": "copy",
                "src": {"dtype": "float32", "shape": [3, 5, 7, 9, 11, 13, 2],
                        "strides": [90090, 18018, 2574, 286, 26, 2, 1]},
                "dst": {"dtype": "float32", "shape": [3, 5, 7, 9, 11, 13, 2],
                        "strides": [90090, 18018, 2574, 286, 26, 2, 1]}}}


def _model(req: dict) -> dict:
    out = optimize({**req, "options": {"keep_egraph": True, "max_plans": 3}})
    snap = out["egraph"].pop("snapshot")
    return egraph_model("f" * 32, out, snap)


@pytest.fixture(scope="module")
def small():
    return _model({**SMALL, "request_id": "<script>alert(1)</script>"})


def test_every_plan_is_located_in_the_egraph(small):
    assert small["extracted"] and all(p["located"] for p in small["extracted"])
    by_node = {n["id"]: n for n in small["enodes"]}
    for p in small["extracted"]:
        top = by_node[p["enodes"][-1]]  # the walk ends at the plan's own e-node
        assert p["term"].startswith("(" + top["op"] + " ")


def test_analyses_are_attached_to_their_eclasses(small):
    root = next(c for c in small["eclasses"] if c["root"])
    assert set(root["analyses"]["strategies"]) == {"direct", "tma", "staged_smem"}
    assert root["analyses"]["tma_legal"] is True and root["analyses"]["transposing"] is True
    assert root["analyses"]["bytes"] == 64 * 96 * 2
    priced = [n for n in small["enodes"] if n["cost"] is not None]
    assert priced and all(isinstance(n["cost"], int) for n in priced)
    dims = [c for c in small["eclasses"] if c["sort"] == "Dims"]
    assert all("elements" in c["analyses"] and "strides_divisible_by" in c["analyses"] for c in dims)


def test_dot_draws_clusters_and_highlights_the_chosen_plan(small):
    dot, shown = to_dot(small, 1000)
    assert shown == small["eclass_count"]
    assert dot.count("subgraph cluster_") == shown
    assert 'class="extracted"' in dot and "<script>" not in dot


def test_large_egraphs_collapse_around_the_plans():
    big = _model(RANK7)
    assert big["eclass_count"] > 50
    keep = shown_classes(big, 20)
    assert len(keep) == 20
    assert set(big["extracted"][0]["eclasses"]) <= set(keep)
    page = view_html(big, None, 20, "test")
    assert f"showing 20 of {big['eclass_count']} e-classes" in page


def test_page_escapes_request_text(small):
    page = view_html(small, "<svg></svg>", small["eclass_count"], None)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_svg_renders_with_graphviz(small):
    need_tool("dot")
    svg, why = render_svg(to_dot(small, 1000)[0])
    assert why is None and svg.startswith("<svg") and "extracted" in svg
    json.dumps(small)  # the document is plain JSON
