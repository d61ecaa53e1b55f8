"""The viewer and the API docs in headless Chromium (Debian's, driven by Playwright), against a
live service: the pages work with nothing but the service (no CDN), request text never runs,
and the viewer's controls do what they say. How fast the viewer becomes interactive is
measured by benchmarks/bench_viewer.py, not asserted here."""

from __future__ import annotations

import pytest

from legalsat.testing.browser import CHROMIUM, CHROMIUM_ARGS, VIEWER_CASES, PageLog, open_page

from .conftest import need

PAYLOAD = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"


@pytest.fixture(scope="module")
def browser():
    chromium = need("chromium", CHROMIUM)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.on("dialog", lambda d: d.dismiss())
    yield pg
    ctx.close()


def _kept(client, case: str) -> dict:
    r = client.post("/v1/optimize", json={**VIEWER_CASES[case], "request_id": PAYLOAD[:128],
                                          "options": {"keep_egraph": True}})
    assert r.status_code == 200, r.text
    return r.json()


_IN_VIEW = """(ids) => { const cy = window.legalsatViewer.cy; const w = cy.width(), h = cy.height();
  return ids.map((id) => { const n = cy.getElementById('n:' + id); if (n.empty()) return 'missing ' + id;
    const b = n.renderedBoundingBox(); return b.x1 >= -1 && b.y1 >= -1 && b.x2 <= w + 1 && b.y2 <= h + 1 ? 'ok' : 'outside ' + id; }); }"""


@pytest.mark.parametrize("case", list(VIEWER_CASES))
def test_viewer_goes_to_the_plan_collapses_searches_and_stays_on_the_service(client, page, case):
    resp = _kept(client, case)
    doc = client.get(f"/v1/egraphs/{resp['egraph']['id']}").json()
    log = PageLog(page)
    open_page(page, f"{client.base_url}/v1/egraphs/{resp['egraph']['id']}/view")
    viewer = "window.legalsatViewer"
    # (functions, not expressions: Playwright evaluates expressions with eval, which the CSP refuses)

    # counts agree with the response
    summary = page.inner_text("#summary")
    assert f"{resp['egraph']['eclasses']} / {resp['egraph']['enodes']}" in summary
    assert page.locator("#candidates > li").count() == len(resp["plans"]) + len(resp["rejected"])

    # "go to plan": every e-node of the chosen plan is drawn, gold, and inside the first screen
    page.evaluate(f"{viewer}.cy.fit()")  # start from elsewhere
    page.click("#go-plan")
    page.wait_for_function("() => location.hash === '#plan-0'")
    chosen = doc["extracted"][0]["enodes"]
    assert chosen and page.evaluate(_IN_VIEW, chosen) == ["ok"] * len(chosen)
    assert page.evaluate(f"{viewer}.cy.nodes('.enode.chosen').length") == len(set(chosen))
    assert page.evaluate(f"{viewer}.cy.getElementById('n:{chosen[-1]}').style('background-color')") == "rgb(255,215,0)"

    # collapsing: double-clicking the plan's e-class closes it to one node and opens it again
    cls = doc["extracted"][0]["eclasses"][-1]
    size = len(next(c for c in doc["eclasses"] if c["id"] == cls)["nodes"])

    def dblclick_class(open_: bool):
        box = page.locator("#graph").bounding_box()
        # an open e-class's centre may be one of its e-nodes: aim inside its padding, below its
        # top left corner; a collapsed one is a plain node: aim at its centre
        bb = page.evaluate(f"{viewer}.cy.getElementById('c:{cls}').renderedBoundingBox({{includeLabels: false}})")
        x, y = (bb["x1"] + 3, bb["y1"] + 3) if open_ else ((bb["x1"] + bb["x2"]) / 2, (bb["y1"] + bb["y2"]) / 2)
        page.mouse.dblclick(box["x"] + x, box["y"] + y)
        page.wait_for_timeout(300)

    dblclick_class(open_=True)
    page.wait_for_function(f"() => {viewer}.collapsed.has('{cls}')")
    assert page.evaluate(f"{viewer}.cy.nodes('[eclass = \"{cls}\"]').length") == 1
    dblclick_class(open_=False)
    page.wait_for_function(f"() => !{viewer}.collapsed.has('{cls}')")
    assert page.evaluate(f"{viewer}.cy.nodes('[eclass = \"{cls}\"]').length") == 1 + size

    # search by operator: every matching e-node (or its collapsed e-class) is marked
    page.fill("#search", "Copy")
    page.press("#search", "Enter")
    page.wait_for_function("() => document.getElementById('search-result').textContent !== ''")
    copies = [n for n in doc["enodes"] if "copy" in n["op"].lower()]
    assert page.inner_text("#search-result").startswith(f"{len(copies)} e-node(s)")
    assert page.evaluate(f"{viewer}.cy.nodes('.match').length") >= 1

    # a rejected candidate's anchor shows its reasons
    if resp["rejected"]:
        page.evaluate("location.hash = 'rejected-0'")
        page.wait_for_function("() => document.querySelector('#details h3').textContent.startsWith('rejected')")
        assert resp["rejected"][0]["reasons"][0]["rule"] in page.inner_text("#details")

    # request text is shown as text, never run; nothing left the service; the CSP held
    assert page.evaluate("window.__pwned === undefined")
    assert PAYLOAD[:40] in page.inner_text("#summary")
    assert log.off_service(client.base_url) == []
    assert log.errors == []


def test_viewer_opens_on_a_candidate_anchor(client, page):
    resp = _kept(client, "transpose-8192")
    open_page(page, f"{client.base_url}/v1/egraphs/{resp['egraph']['id']}/view#plan-1")
    assert page.locator("#candidates li.current > a").inner_text().startswith(resp["plans"][1]["strategy"])


@pytest.mark.parametrize("path, ready", [("/docs", ".swagger-ui .opblock"), ("/redoc", "[data-section-id]")])
def test_api_docs_render_offline(client, page, path, ready):
    log = PageLog(page)
    open_page(page, f"{client.base_url}{path}", ready=ready)
    assert "legalsat" in page.inner_text("body")
    if path == "/docs":
        assert page.locator(".swagger-ui .opblock").count() >= 8  # every route of the API
    assert log.off_service(client.base_url) == []
    assert log.errors == []


def test_draw_all_then_expand_all_lays_every_node_out(client, page):
    """All of a rank-8 permute's e-classes, drawn and then opened: a layered layout of compound
    nodes with edges into them (dagre failed on it and left every node on one point)."""
    resp = _kept(client, "rank8-permute")
    log = PageLog(page)
    open_page(page, f"{client.base_url}/v1/egraphs/{resp['egraph']['id']}/view")
    page.click("#draw-all")
    page.wait_for_function("() => window.legalsatViewer.idle()")
    page.click("#expand-all")
    page.wait_for_function("() => window.legalsatViewer.idle()", timeout=60_000)
    spread = page.evaluate("""() => { const ps = window.legalsatViewer.cy.nodes('.enode').map((n) => n.position());
        return [ps.length, new Set(ps.map((p) => Math.round(p.x) + ',' + Math.round(p.y))).size]; }""")
    assert spread[0] > 500 and spread[1] > spread[0] // 2, spread
    assert log.errors == []


def test_a_rejected_strategy_outside_the_egraph_keeps_the_graph(client, page):
    """A copy's TMA is rejected before it becomes a term: going to it leaves the drawing as it
    was (it used to clear it) and says why nothing is marked."""
    resp = _kept(client, "rank8-permute")
    k = next(i for i, r in enumerate(resp["rejected"]) if r["strategy"] == "tma")
    open_page(page, f"{client.base_url}/v1/egraphs/{resp['egraph']['id']}/view")
    before = page.evaluate("() => window.legalsatViewer.cy.nodes().length")
    page.evaluate(f"location.hash = 'rejected-{k}'")
    page.wait_for_function("() => document.querySelector('#details h3').textContent.startsWith('rejected')")
    page.wait_for_function("() => window.legalsatViewer.idle()")
    assert page.evaluate("() => window.legalsatViewer.cy.nodes().length") == before > 0
    assert page.evaluate("() => window.legalsatViewer.cy.nodes(':selected').length") == 0
    assert "not in the e-graph" in page.inner_text("#details")


def test_a_candidate_link_clicked_again_goes_there_again_and_a_redraw_clears_the_search(client, page):
    """Clicking a candidate's link a second time after panning away did nothing (the same hash
    fires no hashchange); after Expand all the search's count stayed while its highlights were
    gone."""
    resp = _kept(client, "transpose-8192")
    open_page(page, f"{client.base_url}/v1/egraphs/{resp['egraph']['id']}/view")
    link = page.locator("#candidates li[data-anchor='plan-1'] > a")
    link.click()
    page.wait_for_function("() => window.legalsatViewer.idle()")
    page.evaluate("() => window.legalsatViewer.cy.pan({x: -5000, y: -5000})")
    link.click()
    page.wait_for_function("() => window.legalsatViewer.idle()")
    ids = [n for n in resp["plans"][1].get("enodes", [])] or page.evaluate(
        "() => window.legalsatViewer.cy.nodes(':selected').map((n) => n.id().slice(2))")
    assert ids and page.evaluate(_IN_VIEW, ids) == ["ok"] * len(ids)
    page.fill("#search", "Lower")
    page.evaluate("() => window.legalsatViewer.runSearch()")
    page.wait_for_function("() => window.legalsatViewer.idle()")
    assert page.inner_text("#search-result")
    page.click("#expand-all")
    page.wait_for_function("() => window.legalsatViewer.idle()")
    assert page.inner_text("#search-result") == ""


def test_a_plan_order_that_is_not_by_estimate_is_explained_on_the_page(client, page):
    """A 64 x 64 fp32 transpose's chosen plan is the costliest listed (the launch-bound order
    put it first) and the page never said why."""
    term = "(copy (view float32 (64 64) (64 1) 16) (view float32 (64 64) (1 64) 16))"
    r = client.post("/v1/optimize", json={"term": term, "options": {"keep_egraph": True}})
    times = [p["cost"]["estimated_us"] for p in r.json()["plans"]]
    assert times != sorted(times)
    open_page(page, f"{client.base_url}/v1/egraphs/{r.json()['egraph']['id']}/view")
    assert page.locator("#rank-note").is_visible() and "largest program" in page.inner_text("#rank-note")
    ordered = _kept(client, "transpose-8192")
    open_page(page, f"{client.base_url}/v1/egraphs/{ordered['egraph']['id']}/view")
    assert not page.locator("#rank-note").is_visible()
