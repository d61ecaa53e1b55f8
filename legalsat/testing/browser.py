"""The viewer and the API docs in headless Chromium (Debian's, driven by Playwright): what the
browser tests and benchmarks/bench_viewer.py share.

The two e-graphs the viewer is judged on: a rank-8 permute (a few hundred e-classes, a
thousand e-nodes) and the 8192 x 8192 bf16 transpose (a handful).
"""

from __future__ import annotations

import time

from legalsat.testing.planner_suite import permuted, view

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

_RANK8 = (4, 3, 5, 2, 3, 2, 4, 3)
VIEWER_CASES = {
    "rank8-permute": {"op": {"kind": "copy", "src": view("float32", _RANK8),
                             "dst": permuted("float32", _RANK8, tuple(range(8))[::-1])}},
    "transpose-8192": {"op": {"kind": "copy", "src": view("bfloat16", (8192, 8192)),
                              "dst": permuted("bfloat16", (8192, 8192), (1, 0))}},
}


def open_page(page, url: str, ready: str = "body[data-ready='1']", timeout_ms: float = 60_000) -> float:
    """Load `url` and wait for the `ready` selector; the seconds from navigation to ready."""
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(ready, state="attached", timeout=timeout_ms)
    return time.perf_counter() - t0


class PageLog:
    """Every request a page makes, its console errors and uncaught exceptions."""

    def __init__(self, page):
        self.requests: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def off_service(self, base_url) -> list[str]:
        """The requests that went anywhere but the service (data: URLs stay in the page, blob:
        URLs of the service's origin are its own pages' workers)."""
        base = str(base_url).rstrip("/") + "/"
        return [u for u in self.requests if not u.startswith((base, "blob:" + base, "data:"))]
