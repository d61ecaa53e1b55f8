"""The service's error shape: every failure is
`{"error": {"code", "message", "fix", "field"}}` with a status that says whose it is:
400 a Host this service does not answer, 401 token, 404 unknown e-graph, 408 a body that did not arrive
in time, 413 body over the limit, 415 a body not declared as JSON, 422 invalid input (naming the field),
429 queue full, 503 worker lost / shutting down, 504 past the deadline. A 500 is a bug."""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from legalsat.diagnostics import Code, InputError, internal_error
from legalsat.schemas.service import ErrorBody
from legalsat.schemas.validation import details_from_validation

log = logging.getLogger("legalsat.server")


# The error statuses as the OpenAPI document lists them; routes pick theirs with error_responses.
_ERROR_DOCS = {s: {"model": ErrorBody, "description": d} for s, d in (
    (401, "bearer token missing or wrong"), (404, "no such resource"),
    (408, "the body did not arrive within LEGALSAT_BODY_TIMEOUT_S"),
    (413, "body over LEGALSAT_MAX_BODY_BYTES"), (415, "the body is not declared as JSON"),
    (422, "invalid request: error.field names the field, error.fix says how to fix it"),
    (429, "queue full: retry later"), (503, "worker lost or shutting down: retry"),
    (504, "no answer within the request's deadline"))}


def error_responses(*statuses: int) -> dict:
    """`responses=` of a route that can answer these error statuses."""
    return {s: _ERROR_DOCS[s] for s in statuses}


class ApiError(Exception):
    """An error response: status, catalogue code, message, fix, field, extra headers."""

    def __init__(self, status: int, code: Code, message: str | None = None, fix: str | None = None,
                 field: str | None = None, headers: dict[str, str] | None = None, *, limit: int | None = None,
                 value: int | None = None):
        self.detail = code.at(message, fix, field=field, limit=limit, value=value)
        super().__init__(self.detail.message)
        self.status, self.headers = status, headers
        self._body: dict | None = None

    def __reduce__(self):  # survives pickling, as every legalsat exception does
        return (_rebuild_api_error, (self.status, self.detail, self.headers, self._body))

    @classmethod
    def answered(cls, status: int, body: dict) -> ApiError:
        """An error a worker already answered (its whole body, `details` included)."""
        err = body["error"]
        out = cls(status, Code.by_id(err["code"]), err["message"], err["fix"], err.get("field"))
        out._body = body
        return out

    def body(self) -> dict:
        return self._body or {"error": self.detail.to_error()}


def _rebuild_api_error(status: int, detail, headers: dict[str, str] | None, body: dict | None) -> ApiError:
    out = ApiError(status, detail.code, detail.message, detail.fix, detail.field, headers, limit=detail.limit,
                   value=detail.value)
    out._body = body
    return out


def error_json(status: int, body: dict, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


def too_large(limit: int, value: int | None = None) -> ApiError:
    """413: a body over `limit` bytes (`value`: its declared length, where it declared one;
    a body refused while it streams is not read to its end)."""
    return ApiError(413, Code.TOO_LARGE, f"the request body is over {limit} bytes",
                    "send a smaller body (split a batch), or raise LEGALSAT_MAX_BODY_BYTES on the server",
                    limit=limit, value=value)


def queue_full() -> ApiError:
    return ApiError(429, Code.QUEUE_FULL, headers={"Retry-After": "1"})


# what a client can change when its job ran past the deadline, per job kind (the catalogue's
# fix is an optimize request's: options.timeout_ms, options.node_limit)
_DEADLINE_FIX = {"verify_pipeline": "declare a smaller trip count (iterations): the pipeline's behaviour repeats "
                                    "with its stage period; or retry when the service is less busy",
                 "egraph_page": "retry when the service is less busy, or lower LEGALSAT_EGRAPH_MAX_BYTES (the "
                                "e-graphs kept after that are smaller)"}
# what a job spends its time on, as a deadline answer says it
_DOING = {"verify_pipeline": "verifying", "egraph_page": "building the e-graph's page"}


def deadline(ms: int, waited: bool, kind: str = "optimize", grace_ms: int = 0) -> ApiError:
    """504 for a job not answered within `ms`, `grace_ms` of which is the grace past the job's
    own budget (said apart: the budget is what the request and LEGALSAT_DEADLINE_MS set)."""
    where = "waiting for a worker" if waited else _DOING.get(kind, "planning")
    fix = "retry when the service is less busy" if waited else _DEADLINE_FIX.get(kind)
    limit = f"{ms - grace_ms} ms (+{grace_ms} ms grace)" if grace_ms else f"{ms} ms"
    return ApiError(504, Code.DEADLINE_EXCEEDED, f"no answer within the deadline of {limit} (spent {where})", fix)


def worker_lost() -> ApiError:
    return ApiError(503, Code.WORKER_LOST, "the planning worker handling this request stopped (it was killed "
                    "or ran out of memory); a replacement has been started", headers={"Retry-After": "1"})


def shutting_down() -> ApiError:
    return ApiError(503, Code.SHUTTING_DOWN, headers={"Retry-After": "1"})


class HostAllowList:
    """Starlette's TrustedHostMiddleware (LEGALSAT_ALLOWED_HOSTS, checked when the app is
    built), refusing in the service's error shape: 400 `bad_host`; so is a request with more
    than one Host header, whatever the allow-list (RFC 9112 3.2: the checker reads the first, a
    proxy may route by another)."""

    def __init__(self, app, allowed_hosts: list[str]):
        self.app, self.open = app, "*" in allowed_hosts
        self.checker = TrustedHostMiddleware(self._allowed, allowed_hosts=allowed_hosts, www_redirect=False)

    async def _allowed(self, scope, receive, _send):
        await self.app(scope, receive, scope["legalsat.send"])

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if sum(1 for k, _ in scope["headers"] if k == b"host") > 1:  # whatever the allow-list
            err = Code.BAD_HOST.at("the request has more than one Host header; a request names one host")
            return await error_json(400, {"error": err.to_error()})(scope, receive, send)
        if self.open:
            return await self.app(scope, receive, send)

        async def refused(message):  # only the checker's own refusal is sent through here
            if message["type"] == "http.response.start":
                host = Headers(scope=scope).get("host", "").split(":")[0]
                err = Code.BAD_HOST.at(f"the request's Host {json.dumps(host[:100])} (compared without its port) "
                                       "is not one this service answers" if host else
                                       "the request has no Host header; this service answers named hosts only")
                await error_json(400, {"error": err.to_error()})(scope, receive, send)

        scope["legalsat.send"] = send  # the scope itself, not a copy: the route it is matched to is
        await self.checker(scope, receive, refused)  # what the metrics outside read from it


class NoSniff:
    """`X-Content-Type-Options: nosniff` on every answer: a browser takes each as the type it
    names (JSON stays data, never a script or a page)."""

    _HEADER = (b"x-content-type-options", b"nosniff")

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_header(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), self._HEADER]}
            await send(message)

        await self.app(scope, receive, with_header)


def install_error_handlers(app: FastAPI) -> None:
    """Map every exception a route can raise to the error shape."""

    @app.exception_handler(ApiError)
    async def _api(_: Request, e: ApiError):
        return error_json(e.status, e.body(), e.headers)

    @app.exception_handler(InputError)
    async def _input(_: Request, e: InputError):
        return error_json(422, e.to_dict())

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, e: RequestValidationError):
        # a path or query parameter is named as the route names it ("egraph_id", not FastAPI's
        # "path.egraph_id"); bodies are validated by the routes themselves
        errors = [{**err, "loc": tuple(err.get("loc", ()))[1:]}
                  if tuple(err.get("loc", ()))[:1] in (("path",), ("query",), ("header",)) else err
                  for err in e.errors()]
        details = details_from_validation(errors) or [
            Code.INVALID_INPUT.at("invalid request", "see the route's schema at /docs")]
        return error_json(422, InputError(details).to_dict())

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, e: StarletteHTTPException):
        code = {404: Code.NOT_FOUND, 405: Code.METHOD_NOT_ALLOWED}.get(e.status_code, Code.HTTP_ERROR)
        headers = dict(getattr(e, "headers", None) or {})
        allow = [m.strip() for m in headers.get("Allow", "").split(",") if m.strip()]
        if "GET" in allow and "HEAD" not in allow:  # every GET route answers HEAD too: the Allow header says so
            headers["Allow"] = ", ".join([*allow, "HEAD"])
        return error_json(e.status_code, {"error": code.at(str(e.detail)).to_error()}, headers or None)

    @app.exception_handler(Exception)
    async def _bug(_: Request, e: Exception):
        log.exception("unhandled error")
        return error_json(500, {"error": internal_error(e).to_error()})
