"""GET /docs (Swagger UI) and /redoc (ReDoc) from the service's own assets: they render on an
air-gapped machine. The assets live in legalsat/server/static/docs (viewer/build.mjs copies them
from the npm registry's swagger-ui-dist and redoc); the pages load nothing else."""

from __future__ import annotations

import html

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from legalsat.server.routers import answer_head

router = APIRouter(include_in_schema=False)

# Swagger UI and ReDoc set styles inline (React, styled-components) and ReDoc searches in a
# blob: worker; scripts, fonts and requests stay on the service.
DOCS_CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            "font-src 'self' data:; connect-src 'self'; worker-src blob:; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


def _page(title: str, head: str, body: str) -> HTMLResponse:
    return HTMLResponse(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>{head}</head><body>{body}</body></html>""",
                        headers={"Content-Security-Policy": DOCS_CSP})


def _urls(request: Request) -> tuple[str, str]:
    """(openapi URL, static prefix), relative to the docs page so that a path prefix works."""
    return html.escape(request.app.openapi_url.lstrip("/")), "static"


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    spec, static = _urls(request)
    return _page(f"{request.app.title} - Swagger UI",
                 f'<link rel="stylesheet" href="{static}/docs/swagger-ui.css">'
                 f'<link rel="icon" type="image/png" href="{static}/docs/favicon-32x32.png">',
                 f'<div id="swagger-ui" data-openapi-url="{spec}"></div>'
                 f'<script src="{static}/docs/swagger-ui-bundle.js"></script>'
                 f'<script src="{static}/docs/swagger-init.js"></script>')


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    spec, static = _urls(request)
    return _page(f"{request.app.title} - ReDoc", f'<link rel="icon" type="image/png" href="{static}/docs/favicon-32x32.png">',
                 f'<redoc spec-url="{spec}"></redoc><script src="{static}/docs/redoc.standalone.js"></script>')


answer_head(router)
