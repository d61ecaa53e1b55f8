"""The viewer page in headless Chromium (Debian's, driven by Playwright): the SVG renders,
the extracted plan is highlighted, request text does not run as script."""

from __future__ import annotations

import pytest

from .conftest import SMALL, need

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAYLOAD = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"


def test_viewer_renders_highlights_and_does_not_execute_request_text(client, tmp_path):
    chromium = need("chromium", "/usr/bin/chromium")
    need("dot")
    sync_api = pytest.importorskip("playwright.sync_api")
    r = client.post("/v1/optimize", json={**SMALL, "request_id": PAYLOAD[:128],
                                          "options": {"keep_egraph": True}})
    assert r.status_code == 200, r.text
    url = f"{client.base_url}/v1/egraphs/{r.json()['egraph']['id']}/view"
    dialogs = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url)
            page.wait_for_selector("#graph svg")
            assert page.locator("#graph svg g.cluster").count() >= 3
            chosen = page.locator("#graph svg g.node.extracted")
            assert chosen.count() >= 3  # the plan, its movement, its dims
            assert chosen.first.locator("path, polygon").first.get_attribute("fill") == "gold"
            assert page.locator("tr.plan").count() == len(r.json()["plans"])
            assert page.locator("tr.rejected").count() == len(r.json()["rejected"])
            assert page.evaluate("window.__pwned === undefined")
            assert PAYLOAD[:40] in page.inner_text("body")  # shown as text
            page.screenshot(path=str(tmp_path / "viewer.png"), full_page=True)
        finally:
            browser.close()
    assert dialogs == []
