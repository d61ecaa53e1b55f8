"""Built e-graph pages kept for the next GET (legalsat.server.pages): a page is built by a
worker once per view and answered from the service's process after, while its e-graph is kept."""

from __future__ import annotations

from fastapi.testclient import TestClient

from legalsat.server.pages import BuiltPages

from .conftest import SMALL


def test_built_pages_are_bounded_by_bytes_least_recently_used_out():
    pages = BuiltPages(10)
    pages.put(("a", ""), b"1234")
    pages.put(("b", ""), b"5678")
    assert pages.get(("a", "")) == b"1234"  # a used: b is now the least recent
    pages.put(("c", ""), b"90ab")
    assert pages.get(("b", "")) is None and pages.get(("a", "")) and pages.get(("c", "")) and pages.bytes == 8
    pages.put(("d", ""), b"x" * 11)  # over the whole bound: not kept, nothing evicted for it
    assert pages.get(("d", "")) is None and len(pages) == 2
    none = BuiltPages(0)  # LEGALSAT_EGRAPH_PAGES_BYTES=0: every GET builds its page
    none.put(("e", ""), b"x")
    assert len(none) == 0


def test_a_second_get_of_a_page_is_not_built_again_and_an_evicted_egraph_is_not_served(tmp_path, monkeypatch):
    """Each GET of /v1/egraphs/{id}/view ran a worker job over the whole snapshot (about 2.4 s
    for the largest kept e-graph on the 2-core machine)."""
    from legalsat.server.app import create_app
    from legalsat.server.routers import egraphs
    from legalsat.settings import Settings

    jobs = []
    real = egraphs.run_job

    async def counted(state, kind, *args, **kw):
        jobs.append(kind)
        return await real(state, kind, *args, **kw)

    monkeypatch.setattr(egraphs, "run_job", counted)
    app = create_app(Settings(workers=1, cache_path=str(tmp_path / "c.sqlite3"), egraphs_kept=1))
    with TestClient(app) as c:
        eid = c.post("/v1/optimize", json={**SMALL, "options": {"keep_egraph": True}}).json()["egraph"]["id"]
        first = c.get(f"/v1/egraphs/{eid}/view")
        again = c.get(f"/v1/egraphs/{eid}/view")
        assert first.status_code == again.status_code == 200 and first.content == again.content
        assert jobs.count("egraph_page") == 1
        doc = c.get(f"/v1/egraphs/{eid}")  # another view of it: built once too
        assert doc.status_code == 200 and c.get(f"/v1/egraphs/{eid}").content == doc.content
        assert jobs.count("egraph_page") == 2
        # another kept e-graph pushes it out of the store (egraphs_kept 1): its page is not served
        c.post("/v1/optimize", json={**SMALL, "request_id": "other", "options": {"keep_egraph": True}})
        assert c.get(f"/v1/egraphs/{eid}/view").status_code == 404
