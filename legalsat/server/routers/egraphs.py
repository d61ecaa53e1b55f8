"""GET /v1/egraphs/{id} (JSON) and /v1/egraphs/{id}/view (the interactive viewer) for kept e-graphs."""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Path
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field

from legalsat.diagnostics import Code
from legalsat.schemas.base import compact_json
from legalsat.server.deps import ServiceState, service
from legalsat.server.egraph_view import VIEW_CSP, egraph_model, shown_classes, view_html
from legalsat.server.errors import ApiError, error_responses
from legalsat.server.routers import answer_head

router = APIRouter(prefix="/v1/egraphs", tags=["egraphs"])
_ERRORS = error_responses(401, 404, 422)
# the page is HTML; its errors are the JSON error shape like everywhere else
_VIEW_ERRORS = {k: {"description": v["description"], "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/ErrorBody"}}}} for k, v in _ERRORS.items()}
_ID = re.compile(r"^[0-9a-f]{32}$")
# the page's assets, relative to /v1/egraphs/{id}/view (so that a path prefix in front of the
# service keeps working)
_STATIC = "../../../static"


class EgraphDoc(BaseModel):
    """A kept e-graph: e-classes with their analysis values, e-nodes with their costs, the
    extracted plans located in it, the rejected candidates with their reasons."""

    id: str = Field(description="the e-graph's id (egraph.id of the optimize response that kept it)")
    report: dict | None = Field(description="the saturation report: per iteration and ruleset, as the response's "
                                "egraph.report")
    request_id: str | None = Field(description="the request_id of the request that kept it")
    target: str | None = Field(description="the target it was planned for")
    term: str | None = Field(description="the request's movement term")
    status: str | None = Field(description="the response's status: ok or infeasible")
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


def _load(state: ServiceState, egraph_id: str) -> dict:
    kept = state.cache.get_egraph(egraph_id) if _ID.match(egraph_id) else None
    if kept is None:
        raise ApiError(404, Code.NOT_FOUND, f"no kept e-graph has id {egraph_id!r} (the service keeps "
                       f"the last {state.settings.egraphs_kept})",
                       'plan the request again with "options": {"keep_egraph": true} and use the '
                       "egraph.id of its response", "egraph_id")
    response, snapshot = kept
    return egraph_model(egraph_id, response, snapshot)


_PathId = Path(description="egraph.id of an optimize response made with options.keep_egraph",
               max_length=64)


@router.get("/{egraph_id}", response_model=EgraphDoc, responses=_ERRORS, summary="A kept e-graph as JSON")
def get_egraph(egraph_id: str = _PathId, state: ServiceState = Depends(service)) -> Response:
    # serialized here, in the route's thread: FastAPI would encode the document on the event loop
    return Response(compact_json(_load(state, egraph_id)), media_type="application/json")


@router.get("/{egraph_id}/view", response_class=HTMLResponse, responses=_VIEW_ERRORS,
            summary="A kept e-graph in the interactive viewer")
def view_egraph(egraph_id: str = _PathId, state: ServiceState = Depends(service)) -> HTMLResponse:
    """E-classes holding their e-nodes, with analysis values and costs; the chosen plan, the
    other plans and the rejected candidates (with their reasons) one click away (URL anchors
    `#plan-N`, `#rejected-N`); search, collapse, pan and zoom; the saturation report per
    iteration. It opens on the LEGALSAT_VIEWER_FIRST_ECLASSES e-classes nearest the plans and
    draws at most LEGALSAT_VIEWER_MAX_ECLASSES; past LEGALSAT_VIEWER_COLLAPSE_ENODES e-nodes the
    e-classes start collapsed (the page says so). Its scripts and styles are the service's own (no CDN)."""
    model = _load(state, egraph_id)
    settings = state.settings
    shown = shown_classes(model, settings.viewer_max_eclasses)
    first = shown_classes(model, min(settings.viewer_first_eclasses, settings.viewer_max_eclasses))
    page = view_html(model, shown, first, settings.viewer_collapse_enodes, _STATIC)
    return HTMLResponse(page, headers={"Content-Security-Policy": VIEW_CSP})


answer_head(router)
