"""How fast the e-graph viewer becomes interactive, in headless Chromium against a live service.

    python -m benchmarks.bench_viewer     # prints the table, writes benchmarks/viewer_results.json
                                          # and the README's screenshots (docs/images/viewer-*.png)

For each e-graph of legalsat.testing.browser.VIEWER_CASES (a rank-8 permute, the 8192 x 8192
bf16 transpose), the viewer page is opened RUNS times in a fresh browser context (no cache) and
timed from navigation until the page says it is ready (laid out, the chosen plan in view,
every control bound): the median and the worst are reported, with the page's own figure
(from its script starting to ready). Needs Debian's Chromium and Playwright (the `test` extra).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
from pathlib import Path

import httpx

from legalsat.testing.browser import CHROMIUM, CHROMIUM_ARGS, VIEWER_CASES, open_page
from legalsat.testing.live_server import LiveServer

HERE = Path(__file__).resolve().parent
IMAGES = HERE.parent / "docs" / "images"
RUNS = 7
VIEWPORT = {"width": 1400, "height": 900}


def main() -> None:
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as d, \
            LiveServer(workers=1, cache_path=os.path.join(d, "plans.sqlite3"), log_path=os.path.join(d, "log"),
                       log_level="warning") as srv, \
            httpx.Client(base_url=srv.url, timeout=120) as client, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, req in VIEWER_CASES.items():
            resp = client.post("/v1/optimize", json={**req, "request_id": name,
                                                     "options": {"keep_egraph": True}}).json()
            url = f"{srv.url}/v1/egraphs/{resp['egraph']['id']}/view"
            wall, page_ms = [], []
            for i in range(RUNS):
                ctx = browser.new_context(viewport=VIEWPORT)
                page = ctx.new_page()
                wall.append(open_page(page, url) * 1000)
                page_ms.append(page.evaluate("() => window.legalsatViewer.readyMs"))
                if i == RUNS - 1:
                    drawn = page.evaluate("() => window.legalsatViewer.cy.nodes().length")
                    IMAGES.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(IMAGES / f"viewer-{name}.png"))
                ctx.close()
            rows.append({"case": name, "eclasses": resp["egraph"]["eclasses"], "enodes": resp["egraph"]["enodes"],
                         "drawn_nodes": drawn, "ready_ms_median": round(statistics.median(wall)),
                         "ready_ms_max": round(max(wall)), "script_ms_median": round(statistics.median(page_ms))})
        browser.close()
    env = {"cpus": os.cpu_count(), "python": platform.python_version(), "chromium": CHROMIUM,
           "machine": platform.machine()}
    (HERE / "viewer_results.json").write_text(json.dumps({"environment": env, "runs": RUNS, "results": rows},
                                                         indent=1) + "\n")
    print(f"viewer, {RUNS} loads each, {env['cpus']} CPUs")
    print(f"{'case':16} {'e-classes':>9} {'e-nodes':>8} {'drawn':>6} {'ready ms':>9} {'max ms':>7} {'script ms':>9}")
    for r in rows:
        print(f"{r['case']:16} {r['eclasses']:>9} {r['enodes']:>8} {r['drawn_nodes']:>6} {r['ready_ms_median']:>9} "
              f"{r['ready_ms_max']:>7} {r['script_ms_median']:>9}")


if __name__ == "__main__":
    main()
