"""GET /v1/egraphs/{id} (JSON) and /v1/egraphs/{id}/view (HTML + SVG) for kept e-graphs."""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Path
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from legalsat.diagnostics import Code
from legalsat.server.deps import ServiceState, service
from legalsat.server.egraph_view import egraph_model, render_svg, to_dot, view_html
from legalsat.server.errors import ApiError, error_responses

router = APIRouter(prefix="/v1/egraphs", tags=["egraphs"])
_ERRORS = error_responses(401, 404, 422)
# the page is HTML; its errors are the JSON error shape like everywhere else
_VIEW_ERRORS = {k: {"description": v["description"], "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/ErrorBody"}}}} for k, v in _ERRORS.items()}
_ID = re.compile(r"^[0-9a-f]{32}$")
# The page runs no script and loads nothing: whatever a request put in it stays text.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


class EgraphDoc(BaseModel):
    """A kept e-graph: e-classes with their analysis values, e-nodes with their costs, the
    extracted plans located in it, the rejected candidates with their reasons."""

    id: str
    request_id: str | None
    target: str | None
    term: str | None
    status: str | None
    stop_reason: str | None
    iterations: int | None
    eclass_count: int
    enode_count: int
    eclasses: list[dict]
    enodes: list[dict]
    extracted: list[dict]
    rejected: list[dict]
    target_facts: dict


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
def get_egraph(egraph_id: str = _PathId, state: ServiceState = Depends(service)) -> dict:
    return _load(state, egraph_id)


@router.get("/{egraph_id}/view", response_class=HTMLResponse, responses=_VIEW_ERRORS,
            summary="A kept e-graph as a picture")
def view_egraph(egraph_id: str = _PathId, state: ServiceState = Depends(service)) -> HTMLResponse:
    """E-classes as clusters labelled with their analysis values, the extracted plan
    highlighted, the rejected candidates and their reasons; large e-graphs are collapsed to
    the extracted plans' neighbourhood (the page says so)."""
    model = _load(state, egraph_id)
    dot, shown = to_dot(model, state.settings.viewer_max_eclasses)
    svg, why = render_svg(dot)
    return HTMLResponse(view_html(model, svg, shown, why), headers={"Content-Security-Policy": _CSP})
