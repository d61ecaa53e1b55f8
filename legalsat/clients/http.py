"""A Python client of the legalsat service, standard library only (a compiler can call it
from any environment, with neither the planner's nor the server's dependencies).

    from legalsat.clients.http import Client
    svc = Client("http://127.0.0.1:8000")          # token=... when the server sets LEGALSAT_TOKEN
    resp = svc.optimize(request)                   # the HTTP response, as a dict
    k = legalsat.clients.triton.build_kernel(resp) # and its kernel

Each method mirrors one route and returns its JSON body unchanged. Failures keep the
service's error catalogue:

- 413 and 422 (the request is wrong) raise `legalsat.InputError`, exactly as the
  in-process API does: `e.headline.field` names the field and `e.headline.fix` says what to
  change, so one `except InputError` serves both.
- Every other failure raises `ServiceError` with the status, the service's code, message and
  fix. 429 (queue full) and 503 (worker lost, shutting down) are retried after the
  server's Retry-After, `retries` times, before they are raised; 504 (past the request's
  deadline) is not, since the same request would miss it again.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from legalsat.diagnostics import Code, Diagnostic, InputError
from legalsat.schemas.base import check_json_value, compact_json, load_json

RETRIED = (429, 503)


@dataclass(frozen=True)
class CallInfo:
    """What the last call's response said besides its body."""

    status: int | None  # None: no HTTP answer came (unreachable, timed out, not HTTP)
    cache: str | None  # X-Legalsat-Cache of an optimize answer: "hit", "miss", "kept" or "not-kept"
    seconds: float
    attempts: int


class ServiceError(Exception):
    """The service could not answer: not reachable, a token problem, a queue that stayed
    full, a deadline, or a failure on its side. `status` is None when nothing answered."""

    def __init__(self, status: int | None, code: str, message: str, fix: str, field: str | None = None):
        self.status, self.code, self.message, self.fix, self.field = status, code, message, fix, field
        super().__init__(f"{message} (fix: {fix})" if fix else message)

    def __reduce__(self):  # survives pickling (a caller's worker processes)
        return (type(self), (self.status, self.code, self.message, self.fix, self.field))


def _body_of(obj: object) -> bytes:
    """JSON bytes of what the in-process API takes: a dict / list (numpy integers and tuples
    as the JSON they stand for), a pydantic model (its JSON form, unset fields left out), or JSON
    text (str / bytes, checked here as the service would). None is refused here, by name."""
    if obj is None:
        raise Code.INVALID_INPUT.error("the request is null, not a JSON object",
                                       'pass a request object, e.g. {"op": {...}}')
    if isinstance(obj, (str, bytes, bytearray)):
        obj = load_json(obj, "the request")
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json", exclude_none=True)
    elif isinstance(obj, list):
        obj = [o.model_dump(mode="json", exclude_none=True) if hasattr(o, "model_dump") else o for o in obj]
    return compact_json(check_json_value(obj, "the request"))


def _error_of(status: int, raw: bytes) -> Exception:
    """The exception for an error answer: InputError for the caller's mistakes, else ServiceError."""
    try:
        err = json.loads(raw)["error"]
        detail = _diagnostic(err)
        extra = [_diagnostic(d) for d in err.get("details", [])[1:]]
    except (ValueError, KeyError, TypeError):
        text = raw[:300].decode("utf-8", "replace")
        return ServiceError(status, "http_error", f"the service answered {status}: {text}",
                            "check the URL points at a legalsat service")
    if status in (413, 422):
        return InputError([detail, *extra])
    return ServiceError(status, err["code"], detail.message, detail.fix, detail.field)


def _diagnostic(err: dict) -> Diagnostic:
    """An error object of the service as a catalogue diagnostic (a code this client does not
    know, from a newer service, reads as invalid_input with the service's message)."""
    try:
        code = Code.by_id(err["code"])
    except KeyError:
        code = Code.INVALID_INPUT
    return code.at(err["message"], err.get("fix") or "", field=err.get("field"))


class Client:
    """One legalsat service. Calls may come from several threads: it keeps no connection
    state (one HTTP/1.1 request per call); `last` describes the most recent call of any
    thread. `timeout_s` bounds each call's wait for an answer; it does not set a plan's
    deadline (that is the request's `options.timeout_ms`, capped by the server's
    LEGALSAT_DEADLINE_MS)."""

    def __init__(self, url: str = "http://127.0.0.1:8000", token: str | None = None,
                 timeout_s: float = 120.0, retries: int = 3):
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise Code.INVALID_INPUT.error(f"url {url!r} is not an http(s) URL",
                                           "pass the service's address, e.g. http://127.0.0.1:8000", "url")
        if retries < 0:
            raise Code.INVALID_INPUT.error(f"retries is {retries}", "pass 0 or more", "retries")
        if not timeout_s > 0:
            raise Code.INVALID_INPUT.error(f"timeout_s is {timeout_s}", "pass a positive number of seconds", "timeout_s")
        if token is not None and (not token.isascii() or not token.isprintable() or " " in token):
            raise Code.INVALID_INPUT.error("token holds characters a bearer token cannot (non-ASCII, spaces or "
                                           "control characters)", "pass the server's LEGALSAT_TOKEN as it is set",
                                           "token")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.retries = retries
        self.last: CallInfo | None = None

    # ------------------------------------------------------------------ the routes
    def optimize(self, request) -> dict:
        """POST /v1/optimize: plans best first, or status "infeasible" / "incomplete" with reasons."""
        return self._call("POST", "/v1/optimize", request)

    def optimize_batch(self, requests: list) -> list:
        """POST /v1/optimize/batch: per request, in order, its response or its error object
        (`{"status": "error", "error": {...}}`); a bad item does not fail the others."""
        if isinstance(requests, tuple):
            requests = list(requests)
        if not isinstance(requests, list) or not requests:
            raise Code.INVALID_INPUT.error("optimize_batch takes a non-empty list of requests",
                                           "pass [request, ...]; for one request use optimize", "requests")
        return self._call("POST", "/v1/optimize/batch", requests)

    def validate_descriptor(self, descriptor, target: str | None = None) -> dict:
        """POST /v1/descriptors/validate: {"legal": ..., "violations": [...]} (the target
        defaults to the server's)."""
        query = f"?{urllib.parse.urlencode({'target': target})}" if target else ""
        return self._call("POST", "/v1/descriptors/validate" + query, descriptor)

    def analyze_bank_conflicts(self, request) -> dict:
        """POST /v1/analyze/bank-conflicts: wavefronts and conflict ways of one access."""
        return self._call("POST", "/v1/analyze/bank-conflicts", request)

    def verify_pipeline(self, protocol) -> dict:
        """POST /v1/verify/pipeline: ok, or the violations of an asynchronous copy protocol."""
        return self._call("POST", "/v1/verify/pipeline", protocol)

    def egraph(self, egraph_id: str) -> dict:
        """GET /v1/egraphs/{id}: an e-graph kept by `options.keep_egraph`."""
        return self._call("GET", "/v1/egraphs/" + urllib.parse.quote(egraph_id, safe=""), None)

    def health(self) -> dict:
        """GET /healthz."""
        return self._call("GET", "/healthz", None)

    def ready(self) -> bool:
        """GET /readyz: whether the workers are up (False while the service starts, drains, or
        does not answer yet; a wrong URL reads the same: `health()` says why)."""
        try:
            self._call("GET", "/readyz", None, retries=0)
        except ServiceError as e:
            if e.status == 503 or e.code == "unreachable":
                return False
            raise
        return True

    # ------------------------------------------------------------------ transport
    def _call(self, method: str, path: str, payload, retries: int | None = None):
        data = None if method == "GET" else _body_of(payload)  # a POST of None is the caller's mistake, named
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        left = self.retries if retries is None else retries
        start, attempt = time.monotonic(), 0
        while True:
            attempt += 1
            req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                    raw, status, cache = r.read(), r.status, r.headers.get("X-Legalsat-Cache")
            except urllib.error.HTTPError as e:
                raw, status = e.read(), e.code
                wait = _retry_after(e.headers.get("Retry-After"))
                # a retry's wait counts against timeout_s: a Retry-After of 30 s did not stop at 1
                if status in RETRIED and left > 0 and time.monotonic() - start + wait < self.timeout_s:
                    left -= 1
                    time.sleep(wait)
                    continue
                self.last = CallInfo(status, None, time.monotonic() - start, attempt)
                raise _error_of(status, raw) from None
            except (urllib.error.URLError, ConnectionError) as e:
                self.last = CallInfo(None, None, time.monotonic() - start, attempt)
                reason = getattr(e, "reason", e)
                raise ServiceError(None, "unreachable", f"no legalsat service answers at {self.url}: {reason}",
                                   "start one with `legalsat serve`, or pass the service's URL") from None
            except TimeoutError:
                self.last = CallInfo(None, None, time.monotonic() - start, attempt)
                raise ServiceError(None, "timeout", f"{method} {path} got no answer within {self.timeout_s} s",
                                   "raise timeout_s, or lower the request's options.timeout_ms") from None
            except http.client.HTTPException as e:  # a server that is not HTTP, or a cut answer
                self.last = CallInfo(None, None, time.monotonic() - start, attempt)
                raise ServiceError(None, "http_error", f"{method} {path}: the answer from {self.url} is not a "
                                   f"whole HTTP response ({type(e).__name__})",
                                   "check that the URL is a legalsat service's") from None
            self.last = CallInfo(status, cache, time.monotonic() - start, attempt)
            try:
                return json.loads(raw)
            except ValueError:  # UnicodeDecodeError included
                raise ServiceError(status, "http_error", f"{method} {path}: the answer from {self.url} is not JSON "
                                   f"({raw[:60]!r})", "check that the URL is a legalsat service's") from None


def _retry_after(value: str | None) -> float:
    """Seconds to wait from a Retry-After header: delay-seconds or an HTTP-date (RFC 9110,
    10.2.3), kept within [0.05, 30]; 0.5 when absent or unreadable."""
    if not value:
        return 0.5
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return 0.5
    return min(max(seconds, 0.05), 30.0)
