"""The HTTP client against a live `legalsat serve` (and, for retries, a stub that answers 429
first): bodies as the routes return them, the service's errors as InputError / ServiceError."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from legalsat.clients.http import Client, ServiceError
from legalsat.diagnostics import InputError
from legalsat.testing.live_server import LiveServer, free_port

COPY = {"op": {"kind": "copy",
               "src": {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]},
               "dst": {"dtype": "bfloat16", "shape": [64, 96], "strides": [1, 64]}}}
DESC = {"dtype": "bfloat16", "rank": 2, "global_address": 1 << 40, "global_dim": [4096, 1024],
        "global_strides": [8192], "box_dim": [64, 64], "swizzle": "128B"}
TOKEN = "s3cret-token"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("http")
    with LiveServer(workers=1, cache_path=str(d / "plans.sqlite3"), log_path=str(d / "server.log"),
                    log_level="warning", token=TOKEN) as srv:
        yield srv


@pytest.fixture(scope="module")
def svc(server):
    return Client(server.url, token=TOKEN)


def test_optimize_returns_the_plans_and_reports_the_cache(svc):
    first = svc.optimize({**COPY, "request_id": "http-1"})
    assert first["status"] == "ok" and first["plans"][0]["strategy"]
    assert svc.last.status == 200 and svc.last.cache == "miss"
    again = svc.optimize({**COPY, "request_id": "http-1"})
    assert svc.last.cache == "hit" and again["plans"] == first["plans"]


def test_pydantic_requests_are_sent_as_their_json(svc):
    from legalsat.schemas.optimize import OptimizeRequest

    resp = svc.optimize(OptimizeRequest.model_validate({**COPY, "request_id": "http-model"}))
    assert resp["request_id"] == "http-model" and resp["plans"]


def test_invalid_input_raises_the_same_input_error_as_in_process(svc):
    bad = {**COPY, "options": {"max_plans": 99}}
    with pytest.raises(InputError) as remote:
        svc.optimize(bad)
    with pytest.raises(InputError) as local:
        import legalsat

        legalsat.optimize(bad)
    assert remote.value.headline.field == local.value.headline.field == "options.max_plans"
    assert remote.value.headline.fix


def test_the_client_takes_what_the_in_process_api_takes(svc):
    """JSON text (str, bytes), numpy integers and a tuple of requests: the in-process API took
    them; the client refused a str, raised a bare TypeError for bytes and numpy integers, and
    sent None as a body without a Content-Type (a misleading 415)."""
    import json

    import numpy as np

    import legalsat

    text = json.dumps({**COPY, "request_id": "http-text"})
    for request in (text, text.encode()):
        assert svc.optimize(request)["plans"] == legalsat.optimize(text)["plans"]
    shaped = {"op": {**COPY["op"], "src": {**COPY["op"]["src"], "shape": [np.int64(64), np.int64(96)]}}}
    assert svc.optimize(shaped)["plans"] == legalsat.optimize(shaped)["plans"]
    assert len(svc.optimize_batch((COPY, COPY))) == 2
    with pytest.raises(InputError) as e:
        svc.optimize(None)
    assert "null" in e.value.headline.message
    with pytest.raises(InputError) as e:
        svc.optimize(b'{"op": ')
    assert e.value.headline.code.id == "invalid_json"


def test_batch_keeps_a_bad_item_to_itself(svc):
    out = svc.optimize_batch([{**COPY, "request_id": "b0"}, {"request_id": "b1", "op": {"kind": "copy"}}])
    assert out[0]["status"] == "ok"
    assert out[1]["status"] == "error" and out[1]["error"]["field"].startswith("op.")
    with pytest.raises(InputError) as e:
        svc.optimize_batch([])
    assert e.value.headline.field == "requests"


def test_analyses_routes(svc):
    assert svc.validate_descriptor(DESC)["legal"] is True
    verdict = svc.validate_descriptor({**DESC, "box_dim": [64, 512]}, target="sm90")
    assert not verdict["legal"] and verdict["violations"][0]["field"] == "box_dim"
    report = svc.analyze_bank_conflicts({"access_bytes": 4, "op": "load", "addresses": [128 * i for i in range(32)]})
    assert report["conflict_ways"] == 32.0
    protocols = [json.loads(x) for x in (ROOT / "examples" / "pipelines.jsonl").read_text().splitlines() if x.strip()]
    assert {svc.verify_pipeline(p)["ok"] for p in protocols} == {True, False}
    assert svc.health()["status"] == "ok" and svc.ready() is True


def test_kept_egraph(svc):
    resp = svc.optimize({**COPY, "request_id": "http-kept", "options": {"keep_egraph": True}})
    assert svc.last.cache == "kept"
    doc = svc.egraph(resp["egraph"]["id"])
    assert doc["request_id"] == "http-kept"
    with pytest.raises(ServiceError) as e:
        svc.egraph("0" * 32)  # of the form, kept by none
    assert e.value.status == 404
    with pytest.raises(InputError) as bad:  # of no form the service hands out: the client's input error
        svc.egraph("no-such-egraph")
    assert bad.value.headline.field == "egraph_id"


def test_token_and_reachability_errors(server):
    with pytest.raises(ServiceError) as e:
        Client(server.url).optimize(COPY)
    assert e.value.status == 401 and "LEGALSAT_TOKEN" in e.value.fix
    with pytest.raises(ServiceError) as e:
        Client(f"http://127.0.0.1:{free_port()}", timeout_s=2).health()
    assert e.value.status is None and e.value.code == "unreachable" and "legalsat serve" in e.value.fix
    with pytest.raises(InputError) as bad:
        Client("127.0.0.1:8000")
    assert bad.value.headline.field == "url"


class _Busy(BaseHTTPRequestHandler):
    """429 with Retry-After for the first `busy` requests, then 200."""

    busy = 2
    seen = 0

    def do_GET(self):  # noqa: N802 (the http.server handler name)
        type(self).seen += 1
        if type(self).seen <= type(self).busy:
            body = json.dumps({"error": {"code": "queue_full", "message": "queue full", "fix": "retry"}})
            self.send_response(429)
            self.send_header("Retry-After", "0")
        else:
            body = json.dumps({"status": "ok"})
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("retries, ok", [(2, True), (1, False)])
def test_queue_full_is_retried_then_raised(retries, ok):
    _Busy.seen = 0
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        svc = Client(f"http://127.0.0.1:{srv.server_address[1]}", retries=retries)
        if ok:
            assert svc.health() == {"status": "ok"} and svc.last.attempts == 3
        else:
            with pytest.raises(ServiceError) as e:
                svc.health()
            assert e.value.status == 429 and e.value.code == "queue_full"
    finally:
        srv.shutdown()


class _Odd(BaseHTTPRequestHandler):
    """Answers as servers that are not a legalsat service do."""

    def do_GET(self):  # noqa: N802
        if self.path == "/healthz":  # a web page
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html>not here</html>")
        elif self.path == "/readyz":  # busy for a long while
            self.send_response(429)
            self.send_header("Retry-After", "30")
            self.end_headers()
        else:  # an answer cut short
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"status"')

    def log_message(self, *args):
        pass


def test_answers_that_are_not_a_legalsat_services_are_service_errors():
    """A web page answered JSONDecodeError, a cut answer IncompleteRead, and a Retry-After of
    30 s was waited out twice past a timeout of 1 s."""
    import time

    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Odd)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        svc = Client(f"http://127.0.0.1:{srv.server_address[1]}", timeout_s=1, retries=2)
        for call, code in ((svc.health, "http_error"), (lambda: svc.egraph("x"), "http_error")):
            with pytest.raises(ServiceError) as e:
                call()
            assert e.value.code == code, e.value
        t = time.monotonic()
        with pytest.raises(ServiceError) as e:
            svc._call("GET", "/readyz", None)
        assert e.value.status == 429 and time.monotonic() - t < 1.5
    finally:
        srv.shutdown()


def test_the_client_refuses_settings_it_cannot_use():
    for kw, field in (({"timeout_s": 0}, "timeout_s"), ({"token": "a\nb"}, "token"), ({"token": "tökén"}, "token")):
        with pytest.raises(InputError) as e:
            Client("http://127.0.0.1:1", **kw)
        assert e.value.headline.field == field
    assert Client(f"http://127.0.0.1:{free_port()}").ready() is False  # nothing answers yet: not ready


def test_a_retry_after_date_is_read_as_one():
    import email.utils
    import time

    from legalsat.clients.http import _retry_after

    assert 8 < _retry_after(email.utils.formatdate(time.time() + 10, usegmt=True)) <= 10.5
    assert _retry_after("2") == 2 and _retry_after(None) == 0.5 and _retry_after("soon") == 0.5
