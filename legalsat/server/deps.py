"""FastAPI dependencies: the service's state, the bearer token, bodies read under the limit."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from legalsat.diagnostics import Code
from legalsat.server.cache import PlanCache
from legalsat.server.errors import ApiError, too_large
from legalsat.server.metrics import Metrics
from legalsat.server.pool import WorkerPool
from legalsat.settings import Settings


@dataclass
class ServiceState:
    """What the routes share; built by the app's lifespan."""

    settings: Settings
    pool: WorkerPool
    cache: PlanCache
    metrics: Metrics


async def service(request: Request) -> ServiceState:
    return request.app.state.service


_bearer = HTTPBearer(auto_error=False, description="required on /v1 routes when the server has "
                     "LEGALSAT_TOKEN set")


async def require_token(request: Request,
                  creds: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
    """(async: a sync dependency would cost a thread hop per request.) When a token is configured, every /v1 route needs `Authorization: Bearer <token>`."""
    token = request.app.state.settings.token
    if token is None:
        return
    given = creds.credentials if creds is not None else ""
    if not secrets.compare_digest(given.encode(), token.get_secret_value().encode()):
        raise ApiError(401, Code.UNAUTHORIZED, "missing or wrong bearer token" if given else
                       "this server requires a bearer token", headers={"WWW-Authenticate": "Bearer"})


async def read_body(request: Request) -> bytes:
    """The request body, refused with 413 past LEGALSAT_MAX_BODY_BYTES (checked on the
    declared length first, then on the bytes actually received)."""
    limit = request.app.state.settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes, what: str) -> object:
    """JSON text -> value, or a 422 that says where the text broke."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise ApiError(422, Code.INVALID_JSON, f"the body is not valid JSON: {e}",
                       f"send {what} as one JSON value (Content-Type: application/json)") from None
