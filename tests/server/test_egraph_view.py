"""The e-graph document and the viewer page built from a real saturated e-graph."""

from __future__ import annotations

import json

import pytest

from legalsat.api import optimize
from legalsat.server.egraph_view import VIEW_CSP, egraph_model, shown_classes, view_html
from legalsat.testing.planner_suite import reordered_copy

from .conftest import SMALL

RANK7 = {"op": reordered_copy("float32", (2, 13, 11, 9, 7, 5, 3))}  # a large e-graph


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


TILE = {"op": {"kind": "load_tile", "tile": [128, 64], "consumer": "wgmma_a",
                "src": {"dtype": "bfloat16", "shape": [4096, 4096], "strides": [4096, 1]}}}
GATHER = {"op": {"kind": "gather", "axis": 0, "index": {"count": 777, "distribution": "random"},
                  "src": {"dtype": "bfloat16", "shape": [1000, 64], "strides": [64, 1]}}}


@pytest.mark.parametrize("req", [SMALL, TILE, GATHER], ids=["copy", "load_tile", "gather"])
def test_counts_and_report_agree_with_the_response(req):
    """Every term sort counts (a tile load's TDims classes were left out of the response's)."""
    out = optimize({**req, "options": {"keep_egraph": True}})
    model = egraph_model("f" * 32, out, out["egraph"].pop("snapshot"))
    assert (model["eclass_count"], model["enode_count"]) == (out["egraph"]["eclasses"], out["egraph"]["enodes"])
    assert model["report"] == out["egraph"]["report"] and model["report"]["steps"]


def test_large_egraphs_collapse_around_the_plans():
    big = _model(RANK7)
    assert big["eclass_count"] > 50
    keep = shown_classes(big, 20)
    assert len(keep) == 20
    assert set(big["extracted"][0]["eclasses"]) <= set(keep)
    page = view_html(big, keep, keep[:10], 150, "../static")
    assert f"draws at most 20 of its {big['eclass_count']} e-classes" in page
    assert "opens on the chosen plan" in page  # past 150 e-nodes
    island = _island(page)  # the page carries only what it can draw
    assert {c["id"] for c in island["eclasses"]} == set(keep) and island["enode_count"] == big["enode_count"]
    assert {n["eclass"] for n in island["enodes"]} <= set(keep)
    # the worker opens the page on a prefix of what it draws (one breadth-first walk, not two)
    assert all(shown_classes(big, n)[:k] == shown_classes(big, k) for n, k in ((40, 12), (20, 20), (30, 5)))


def _island(page: str) -> dict:
    start = page.index('<script id="egraph-data" type="application/json">') + len('<script id="egraph-data" type="application/json">')
    return json.loads(page[start:page.index("</script>", start)])


def test_page_escapes_request_text(small):
    page = view_html(small, [c["id"] for c in small["eclasses"]], [], 150, "../static")
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # the JSON island holds the text with < > & escaped: no string can close the element
    island = page[page.index('type="application/json">'):page.index("</script>", page.index('type="application/json">'))]
    assert "<" not in island[len('type="application/json">'):] and "\\u003cscript\\u003e" in island
    assert _island(page)["request_id"] == "<script>alert(1)</script>"


def test_page_loads_only_the_services_own_assets(small):
    page = view_html(small, [c["id"] for c in small["eclasses"]], [], 150, "../../../static")
    assert 'src="../../../static/viewer/viewer.js"' in page and "http" not in page.split("<script id=")[0]
    assert "script-src 'self'" in VIEW_CSP and "unsafe" not in VIEW_CSP


def test_document_is_plain_json(small):
    assert json.loads(json.dumps(small)) == small


def test_a_tile_walks_analyses_have_their_users_names_and_only_plans_carry_times():
    """TDims classes show tile_elements, tile_positions, ... (not TElems); the cost entries of
    non-plan e-nodes (term sizes, shown as 0.000 µs) are left out."""
    model = _model(TILE)
    walks = [c for c in model["eclasses"] if c["sort"] == "TDims" and c["nodes"]]
    assert walks and any({"tile_elements", "tile_positions", "tile_rank"} <= set(c["analyses"]) for c in walks)
    sort_of = {c["id"]: c["sort"] for c in model["eclasses"]}
    priced = {sort_of[n["eclass"]] for n in model["enodes"] if n["cost"] is not None}
    assert priced == {"Plan"}


def test_every_analysis_has_a_users_name_and_a_sort_time_is_in_us():
    """A grouped gather's e-class showed `SortPs 56097767` (picoseconds, no unit) and a
    transpose's `Run 256`, the rules' own names."""
    moe = _model({"op": {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [4096, 2048], "strides": [2048, 1]},
                         "axis": 0, "index": {"count": 32768, "groups": 64}}})
    keys = {k for c in moe["eclasses"] for k in c["analyses"]}
    assert "SortPs" not in keys and "group_sort_us" in keys
    sort_us = [c["analyses"]["group_sort_us"] for c in moe["eclasses"] if "group_sort_us" in c["analyses"]]
    assert max(sort_us) > 1 and max(sort_us) < 1000  # tens of µs, not tens of millions of ps
    staged = {k for c in _model(SMALL)["eclasses"] for k in c["analyses"]}
    assert "Run" not in staged and not {k for k in keys | staged if k[:1].isupper()}, keys | staged
