"""FastAPI dependencies: the service's state, the bearer token, bodies read under the limit."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from dataclasses import dataclass, field

from fastapi import Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import ClientDisconnect

from legalsat.diagnostics import Code, InputError, shown
from legalsat.schemas.base import MAX_VALUES, check_json_value, load_json
from legalsat.schemas.optimize import check_request_id
from legalsat.schemas.validation import did_you_mean, json_kind
from legalsat.server.cache import CacheBackend
from legalsat.server.errors import ApiError, too_large
from legalsat.server.metrics import Metrics
from legalsat.server.pages import BuiltPages
from legalsat.server.pool import WorkerPool
from legalsat.settings import Settings


@dataclass
class ServiceState:
    """What the routes share; built by the app's lifespan."""

    settings: Settings
    pool: WorkerPool
    cache: CacheBackend
    metrics: Metrics
    pages: BuiltPages  # e-graph pages and documents built by the workers (routers.egraphs)
    # set when a shutdown's grace is all but spent: jobs still awaited answer 503 shutting_down
    # (legalsat.server.app.ShutdownClock), before the server would cut their connections
    stopping: asyncio.Event = field(default_factory=asyncio.Event)


async def service(request: Request) -> ServiceState:
    return request.app.state.service


_bearer = HTTPBearer(auto_error=False, description="required on /v1 routes when the server has "
                     "LEGALSAT_TOKEN set")


async def require_token(request: Request,
                  creds: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
    """(async: a sync dependency would cost a thread hop per request.) When a token is
    configured, every /v1 route needs one `Authorization: Bearer <token>` (two are refused: one
    proxy reads the first, another the last)."""
    token = request.app.state.settings.token
    if token is None:
        return
    if len(request.headers.getlist("authorization")) > 1:  # which one counts is not the sender's choice
        raise ApiError(401, Code.UNAUTHORIZED, "the request has more than one Authorization header",
                       "send one: Authorization: Bearer <token>", headers={"WWW-Authenticate": "Bearer"})
    given = creds.credentials if creds is not None else ""
    if not secrets.compare_digest(given.encode(), token.get_secret_value().encode()):
        raise ApiError(401, Code.UNAUTHORIZED, "missing or wrong bearer token" if given else
                       "this server requires a bearer token", headers={"WWW-Authenticate": "Bearer"})


async def known_query_parameters(request: Request) -> None:
    """A /v1 route's query names only the parameters it declares: `POST /v1/optimize?explain=true`
    would otherwise be planned without the explanation it asks for, silently. 422 naming the
    first unknown parameter, with the route's own (or where its options go)."""
    if not request.query_params:
        return
    names = [k for k, _ in request.query_params.multi_items()]
    twice = next((k for k in names if names.count(k) > 1), None)
    if twice is not None:  # as with a repeated JSON key: which value counts is not the sender's choice
        raise ApiError(422, Code.INVALID_INPUT, f"query parameter {shown(twice)} is given {names.count(twice)} times",
                       "give each query parameter once", twice[:64])
    declared = _declared_query(request.scope["route"])
    unknown = next((k for k in request.query_params if k not in declared), None)
    if unknown is None:
        return
    known = sorted(declared)
    fix = (f"use one of: {', '.join(known)}{did_you_mean(unknown, known)}" if known else
           "leave the query out: this route takes no parameters there" +
           ("; a request's options go in its JSON body (see /docs)" if request.method == "POST" else ""))
    raise ApiError(422, Code.INVALID_INPUT, f"unknown query parameter {shown(unknown)}", fix, unknown[:64])


def _declared_query(route: APIRoute) -> frozenset[str]:
    """The query parameters of a route and of every dependency it has."""
    names: set[str] = set()
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        names.update(p.alias for p in dependant.query_params)
        stack.extend(dependant.dependencies)
    return frozenset(names)


async def read_body(request: Request) -> bytes:
    """The request body: JSON only, uncompressed (415 for any other declared type or none, so
    that a web page cannot post a form, text or an untyped blob to the service, and for a
    Content-Encoding), refused with 413 past
    LEGALSAT_MAX_BODY_BYTES (checked on the declared length first, then on the bytes
    received), with 408 when it does not arrive within LEGALSAT_BODY_TIMEOUT_S."""
    settings = request.app.state.settings
    kinds = request.headers.getlist("content-type")
    if len(kinds) > 1:  # which one counts is not the sender's choice (one proxy reads the first, one the last)
        raise ApiError(415, Code.UNSUPPORTED_MEDIA_TYPE, f"the body is declared with {len(kinds)} Content-Type headers",
                       "send one: Content-Type: application/json")
    kind = kinds[0] if kinds else None
    if kind is None or not _is_json(kind):  # untyped too: a page's fetch of a bare Blob sends none
        raise ApiError(415, Code.UNSUPPORTED_MEDIA_TYPE, "the body has no Content-Type" if kind is None else
                       f"the body is declared as {kind[:80]!r}",
                       "send the body as JSON with Content-Type: application/json")
    # a transfer coding the server does not undo (gzip before chunked) is a compressed body too
    codings = [(header, c.strip().lower()) for header in ("Content-Encoding", "Transfer-Encoding")
               for h in request.headers.getlist(header) for c in h.split(",")]
    coding = next(((header, c) for header, c in codings if c not in ("identity", "", "chunked")
                   or (c == "chunked" and header == "Content-Encoding")), None)
    if coding is not None:  # a compressed body would be read as JSON text and misjudged
        raise ApiError(415, Code.UNSUPPORTED_MEDIA_TYPE, f"the body is declared as {coding[0]} {coding[1][:40]!r}",
                       "send the JSON body uncompressed (no Content-Encoding; Transfer-Encoding chunked at most)")
    limit = settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit, int(declared))
    chunks, size = [], 0
    try:
        async with asyncio.timeout(settings.body_timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise too_large(limit)
                chunks.append(chunk)
    except TimeoutError:
        raise ApiError(408, Code.BODY_TIMEOUT, f"the body did not arrive within {settings.body_timeout_s:g} s",
                       "send the whole body at once (or raise LEGALSAT_BODY_TIMEOUT_S)",
                       headers={"Connection": "close"}) from None  # the rest of the body is unread
    except ClientDisconnect:
        raise ApiError(499, Code.CLIENT_DISCONNECTED) from None
    return b"".join(chunks)


async def _disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


class Disconnection:
    """The client's disconnection, watched from the first `future()` on (a request answered
    from the cache never starts the watch): a task that completes when the client goes, for a
    route that has read its whole body (nothing else receives then)."""

    def __init__(self, request: Request) -> None:
        self._request = request
        self._task: asyncio.Task | None = None

    def future(self) -> asyncio.Future:
        if self._task is None:
            self._task = asyncio.ensure_future(_disconnect(self._request))
        return self._task

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


@contextlib.asynccontextmanager
async def disconnection(request: Request):
    """A route's `Disconnection`, its watch cancelled when the route is done."""
    watch = Disconnection(request)
    try:
        yield watch
    finally:
        watch.close()


def _is_json(content_type: str) -> bool:
    """application/json or application/SOMETHING+json, in UTF-8 (RFC 8259: JSON between
    systems is UTF-8; a body declared in another charset would be misread, not converted)."""
    media, *params = (p.strip().lower() for p in content_type.split(";"))
    if sum(p.startswith("charset=") for p in params) > 1:  # charset=utf-8; charset=latin1: which one?
        return False
    charset = next((p.split("=", 1)[1].strip().strip('"') for p in params if p.startswith("charset=")), "utf-8")
    json_type = media == "application/json" or (media.startswith("application/") and media.endswith("+json")
                                                and len(media) > len("application/+json"))
    return json_type and charset in ("utf-8", "utf8")


def _parse_body(body: bytes, label: str, max_values: int, kind: type) -> object:
    """`parse_json`'s work, off the event loop for a large body: a list's items are checked
    one by one, each refused item replaced by its InputError."""
    obj = load_json(body, label, max_values, check=kind is not list)
    if kind is not list or not isinstance(obj, list):
        return check_json_value(obj, label) if kind is list else obj
    out: list[object] = []
    for i, item in enumerate(obj):
        try:
            out.append(check_json_value(item, f"item {i}"))
        except InputError as e:
            e.request_id = _refused_item_id(item)  # its answer still names the item
            out.append(e)
    return out


def _refused_item_id(item: object) -> str | None:
    """The request_id of a batch item whose JSON was refused, when it names a valid one (an
    id that is itself what was refused, too long or not Unicode, is not echoed)."""
    rid = item.get("request_id") if isinstance(item, dict) else None
    try:
        return check_request_id(rid) if isinstance(rid, str) and rid.encode("utf-8") else None
    except (InputError, UnicodeEncodeError):
        return None


# a body past this many bytes is parsed (and checked) in a thread: the event loop goes on
# answering between the thread's turns (the GIL changes hands every few milliseconds)
LARGE_BODY = 64 * 1024


async def parse_json(body: bytes, what: str, kind: type = dict, max_values: int = MAX_VALUES) -> object:
    """JSON text -> a value of `kind` (an object, or a list for batches), or InputError (422)
    that says where the text broke, what it holds instead, or that it nests too deep, holds
    too many values or holds text that is not Unicode. A list's items are checked one by one:
    an item that nests too deep, repeats a key, holds NaN or a lone surrogate is replaced by
    its InputError (a batch item fails alone)."""
    label = f"the body ({what})"
    obj = await asyncio.to_thread(_parse_body, body, label, max_values, kind) if len(body) > LARGE_BODY else \
        _parse_body(body, label, max_values, kind)
    if not isinstance(obj, kind):
        shape = "a JSON array" if kind is list else "a JSON object"
        fix = f"send {what} as {shape}" + (" (not a string holding one)" if isinstance(obj, str) else "")
        if what == "an optimize request" and isinstance(obj, list):
            fix += "; several requests go as an array to POST /v1/optimize/batch"
        elif what == "a batch" and isinstance(obj, dict):
            fix += " of requests; one request goes to POST /v1/optimize"
        raise Code.INVALID_INPUT.error(f"the body is {json_kind(obj)}; {what} is {shape}", fix)
    return obj
