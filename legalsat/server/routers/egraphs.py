"""GET /v1/egraphs/{id} (JSON) and /v1/egraphs/{id}/view (the interactive viewer) for kept e-graphs."""

from __future__ import annotations

import asyncio
import json
import re

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field

from legalsat.diagnostics import Code
from legalsat.server.cache import call
from legalsat.server.deps import ServiceState, service
from legalsat.server.egraph_view import VIEW_CSP
from legalsat.server.errors import ApiError, error_responses
from legalsat.server.planning import answer_error, run_job
from legalsat.server.routers import answer_head

router = APIRouter(prefix="/v1/egraphs", tags=["egraphs"])
_ERRORS = error_responses(401, 404, 422, 429, 503, 504)  # a worker builds the page: its queue and deadline
# the page is HTML; its errors are the JSON error shape like everywhere else
_VIEW_ERRORS = {k: {"description": v["description"], "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/ErrorBody"}}}} for k, v in _ERRORS.items()}
_ID = re.compile(r"^[0-9a-f]{32}$")
# the page's assets, relative to /v1/egraphs/{id}/view (so that a path prefix in front of the
# service keeps working)
_STATIC = "../../../static"
_UNANSWERED = object()  # a shared cache's call past its budget


class EgraphDoc(BaseModel):
    """A kept e-graph: e-classes with their analysis values, e-nodes with their costs, the
    extracted plans located in it, the rejected candidates with their reasons."""

    id: str = Field(description="the e-graph's id (egraph.id of the optimize response that kept it)")
    report: dict | None = Field(description="the saturation report: per iteration and ruleset, as the response's "
                                "egraph.report")
    request_id: str | None = Field(description="the request_id of the request that kept it")
    target: str | None = Field(description="the target it was planned for")
    term: str | None = Field(description="the request's movement term")
    status: str | None = Field(description="the response's status: ok, infeasible or incomplete")
    stop_reason: str | None = Field(description="how saturation ended: saturated, node_limit, time_limit, "
                                    "iteration_limit")
    iterations: int | None = Field(description="completed saturation rounds")
    eclass_count: int = Field(description="e-classes of the term sorts (the response's egraph.eclasses)")
    enode_count: int = Field(description="e-nodes of the term sorts (the response's egraph.enodes)")
    eclasses: list[dict] = Field(description="each e-class: id, sort, its e-nodes and its analysis values")
    enodes: list[dict] = Field(description="each e-node: id, operator, children (e-class ids), its e-class and "
                               "cost in picoseconds of estimated kernel time (the extraction's unit; 1 us = "
                               "1,000,000 ps), where the cost model gives one")
    extracted: list[dict] = Field(description="the response's plans located in the e-graph (their e-nodes)")
    rejected: list[dict] = Field(description="strategies without a plan, with their reasons (as the response's "
                                 "rejected)")
    target_facts: dict = Field(description="the target's facts as the rules see them: a value (EffWidth w: the "
                               "per-mille share of copy bandwidth of w-byte accesses), or null for a fact that holds "
                               "without one (TmaUnit: the target has a TMA unit)")


async def _page(request: Request, state: ServiceState, egraph_id: str, view: dict | None) -> Response | bytes:
    """A kept e-graph's document or page, built by a worker (its work grows with the e-graph:
    not in the service's process) and kept for the next GET (`state.pages`); a HEAD learns
    that it exists and gets no body built."""
    if not _ID.match(egraph_id):  # no id the service hands out: said so, not "no kept e-graph has it"
        lower = _ID.match(egraph_id.lower())
        raise ApiError(422, Code.INVALID_INPUT, f"egraph_id {egraph_id[:64]!r} is not an e-graph id (32 lowercase "
                       "hexadecimal characters)", f"use {egraph_id.lower()!r}" if lower else "use the egraph.id of "
                       'an optimize response made with "options": {"keep_egraph": true}', "egraph_id")
    # a HEAD asks only whether it is kept (the blob is not read); a page built before is answered
    # while its e-graph is kept (that question alone); any other GET reads the blob once
    key = (egraph_id, json.dumps(view, sort_keys=True))
    built = state.pages.get(key) if request.method != "HEAD" else None
    if request.method == "HEAD" or built is not None:
        kept = await call(state.cache, state.cache.has_egraph, egraph_id, default=_UNANSWERED) or None
        if built is not None and kept is not None and kept is not _UNANSWERED:
            return built
    else:
        kept = (await call(state.cache, state.cache.get_egraph, egraph_id, default=_UNANSWERED) if state.cache.remote
                else await asyncio.to_thread(state.cache.get_egraph, egraph_id))  # a blob of megabytes, unpacked
    if kept is _UNANSWERED or (kept is None and not state.cache.available):  # a store that is down: not a 404
        raise ApiError(503, Code.EGRAPH_UNAVAILABLE, headers={"Retry-After": "5"})
    if kept is None:
        raise ApiError(404, Code.NOT_FOUND, f"no kept e-graph has id {egraph_id!r} (the service keeps "
                       f"the last {state.settings.egraphs_kept})",
                       'plan the request again with "options": {"keep_egraph": true} and use the '
                       "egraph.id of its response", "egraph_id")
    if request.method == "HEAD":
        # no body is built for a HEAD, so no length is known: none is sent (not the 0 of an empty
        # body, which a GET's page is not; RFC 9110 9.3.2 lets a HEAD leave it out)
        head = Response(media_type="text/html" if view else "application/json")
        del head.headers["content-length"]
        return head
    response, snapshot = kept
    status, body, meta = await run_job(state, "egraph_page", {"id": egraph_id, "response": response,
                                                              "snapshot": snapshot, "view": view},
                                       state.settings.deadline_ms)
    if status != 200:
        raise answer_error(status, body, meta)
    state.pages.put(key, body)
    return body


_PathId = Path(description="egraph.id of an optimize response made with options.keep_egraph (32 lowercase "
               "hexadecimal characters)", max_length=32, json_schema_extra={"pattern": "^[0-9a-f]{32}$"})


@router.get("/{egraph_id}", response_model=EgraphDoc, responses=_ERRORS, summary="A kept e-graph as JSON")
async def get_egraph(request: Request, egraph_id: str = _PathId, state: ServiceState = Depends(service)) -> Response:
    page = await _page(request, state, egraph_id, None)
    return page if isinstance(page, Response) else Response(page, media_type="application/json")


@router.get("/{egraph_id}/view", response_class=HTMLResponse, responses=_VIEW_ERRORS,
            summary="A kept e-graph in the interactive viewer")
async def view_egraph(request: Request, egraph_id: str = _PathId,
                      state: ServiceState = Depends(service)) -> Response:
    """E-classes holding their e-nodes, with analysis values and costs; the chosen plan, the
    other plans and the rejected candidates (with their reasons) one click away (URL anchors
    `#plan-N`, `#rejected-N`); search, collapse, pan and zoom; the saturation report per
    iteration. It opens on the LEGALSAT_VIEWER_FIRST_ECLASSES e-classes nearest the plans and
    draws at most LEGALSAT_VIEWER_MAX_ECLASSES; past LEGALSAT_VIEWER_COLLAPSE_ENODES e-nodes the
    e-classes start collapsed (the page says so). Its scripts and styles are the service's own (no CDN)."""
    settings = state.settings
    page = await _page(request, state, egraph_id, {
        "max_eclasses": settings.viewer_max_eclasses, "first_eclasses": settings.viewer_first_eclasses,
        "collapse_enodes": settings.viewer_collapse_enodes, "static": _STATIC})
    headers = {"Content-Security-Policy": VIEW_CSP}
    if isinstance(page, Response):
        page.headers.update(headers)
        return page
    return HTMLResponse(page, headers=headers)


answer_head(router)
