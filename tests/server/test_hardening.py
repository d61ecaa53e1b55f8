"""The service against hostile and careless clients: /healthz stays responsive while heavy
requests run, workers die with the server, memory stays under the workers' limit, the HTTP
limits hold (head size, body time, JSON only, Host allow-list, no redirects), a client that
goes away mid-body is no 500, and a batch item fails alone."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from legalsat.testing.live_server import LiveServer

from .conftest import SLOW, SMALL


def _copy(shape, dst_strides) -> dict:
    src = []
    acc = 1
    for n in reversed(shape):
        src.insert(0, acc)
        acc *= n
    return {"op": {"kind": "copy", "src": {"dtype": "float32", "shape": shape, "strides": src},
                   "dst": {"dtype": "float32", "shape": shape, "strides": dst_strides}}}


# rank-8 destinations whose strides are not nested: whether they overlap takes islpy ~0.1-0.2 s
NOT_NESTED = [([4, 2, 3, 2, 3, 2, 2, 4], [1, 4, 12, 36, 108, 432, 1296, 1867]),
              ([4, 2, 4, 2, 3, 2, 2, 3], [1, 4, 8, 32, 63, 192, 576, 1152]),
              ([3, 3, 3, 2, 4, 3, 3, 3], [1, 4, 12, 36, 108, 383, 1296, 3888]),
              ([3, 3, 2, 2, 3, 3, 2, 3], [1, 4, 16, 32, 64, 185, 576, 1728])]


def _healthz_while(url: str, work) -> float:
    """The slowest /healthz answer (s) while `work()` runs."""
    worst, done = 0.0, threading.Event()

    def poll():
        nonlocal worst
        with httpx.Client(base_url=url, timeout=30) as c:
            while not done.is_set():
                t = time.perf_counter()
                assert c.get("/healthz").status_code == 200
                worst = max(worst, time.perf_counter() - t)
                time.sleep(0.02)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        work()
    finally:
        done.set()
        poller.join()
    return worst


def test_healthz_answers_within_a_second_while_heavy_requests_run(server):
    big_walk = {"op": "load", "pattern": "cols", "vector": 1, "tile": {"dtype": "float32", "shape": [4096, 4096]}}
    batch = [_copy(*NOT_NESTED[k % 4]) for k in range(16)]

    def work():
        with httpx.Client(base_url=server.url, timeout=120) as c, ThreadPoolExecutor(6) as ex:
            walks = [ex.submit(c.post, "/v1/analyze/bank-conflicts", json=big_walk) for _ in range(4)]
            b = ex.submit(c.post, "/v1/optimize/batch", json=batch)
            for f in walks:
                r = f.result()
                assert r.status_code == 422 and r.json()["error"]["field"] == "tile"
            items = b.result().json()
            assert len(items) == 16 and all(it["status"] == "error" for it in items)
            assert all(it["error"]["field"] == "op.dst.strides" for it in items)

    assert _healthz_while(server.url, work) < 1.0


def test_bodies_of_many_small_values_do_not_stall_the_service(server):
    """A 1 MiB body of 340,000 empty objects is refused by a count, before any parsing (it took
    ~3 s of the event loop); bodies of 60,000 objects parse in a thread while /healthz answers."""
    many = b'{"pad": [' + b",".join([b'{"a": 0}'] * 60_000) + b"]}"
    too_many = b'{"pad": [' + b",".join([b"{}"] * 340_000) + b"]}"
    head = {"Content-Type": "application/json"}

    def work():
        with httpx.Client(base_url=server.url, timeout=120) as c, ThreadPoolExecutor(8) as ex:
            r = c.post("/v1/optimize", content=too_many, headers=head)
            assert r.status_code == 422 and "at most 131072" in r.json()["error"]["message"]  # values counted
            for f in [ex.submit(c.post, "/v1/optimize", content=many, headers=head) for _ in range(8)]:
                r = f.result()
                assert r.status_code == 422 and r.json()["error"]["field"] == "pad", r.text

    assert _healthz_while(server.url, work) < 1.0


def _alive(pids: list[int]) -> list[int]:
    out = []
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(p)
    return out


def test_kill_9_of_the_server_takes_every_worker_with_it(tmp_path):
    srv = LiveServer(workers=2, cache_path="", log_level="warning").start()
    try:
        tree = srv.descendants()
        assert len(tree) >= 3  # forkserver, two workers (and the resource tracker)
        def plan():
            with contextlib.suppress(httpx.HTTPError):  # the server goes away mid-answer
                httpx.post(srv.url + "/v1/optimize", json=SLOW, timeout=60)

        busy = threading.Thread(target=plan, daemon=True)
        busy.start()
        time.sleep(1.0)  # a worker is planning now
        os.kill(srv.proc.pid, signal.SIGKILL)  # the server only, as the OOM killer would
        srv.proc.wait()
        end = time.monotonic() + 5
        while _alive(tree) and time.monotonic() < end:
            time.sleep(0.1)
        assert _alive(tree) == []
    finally:
        srv.kill()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):  # the peak
            return int(line.split()[1]) / 1024
    return 0.0


def test_workers_keep_under_their_memory_limit_and_say_so():
    with LiveServer(workers=1, cache_path="", worker_memory_mb=1024, log_level="warning") as srv, \
            httpx.Client(base_url=srv.url, timeout=120) as c:
        proto = {"barriers": [{"name": "full", "count": 2}],
                 "roles": [{"name": "p", "blocks": [{"count": 4000, "ops": [
                     {"op": "expect_tx", "bar": "full", "bytes": 1024}] * 64}]}]}
        t = time.perf_counter()
        r = c.post("/v1/verify/pipeline", json=proto)
        assert r.status_code == 422 and "unrolls" in r.json()["error"]["message"]
        assert time.perf_counter() - t < 2
        big = {**SLOW, "options": {"node_limit": 10_000_000, "timeout_ms": 20_000}}
        r = c.post("/v1/optimize", json=big)
        assert r.status_code == 200, r.text
        assert r.json()["egraph"]["stop_reason"] == "node_limit"  # the cap its memory holds
        assert all(_rss_mb(p) < 1024 for p in srv.descendants()), [_rss_mb(p) for p in srv.descendants()]


def _raw(url: str, data: bytes, wait: float = 5.0) -> bytes:
    host, port = url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except TimeoutError:
            pass
    return out


def test_http_limits_hold_and_refusals_keep_the_error_shape():
    with LiveServer(workers=1, cache_path="", body_timeout_s=1, head_timeout_s=1, max_header_bytes=8192,
                    allowed_hosts='["127.0.0.1", "legalsat.local"]', log_level="warning") as srv, \
            httpx.Client(base_url=srv.url, timeout=30) as c:
        # a head that never ends, and a connection that never sends one, are cut off
        t = time.perf_counter()
        half = _raw(srv.url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a", wait=10)
        assert half.startswith(b"HTTP/1.1 408") and b'"head_timeout"' in half and time.perf_counter() - t < 5
        t = time.perf_counter()
        assert _raw(srv.url, b"", wait=10) == b"" and time.perf_counter() - t < 5
        for bad in (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nNo colon here\r\n\r\n",
                    b"POST /v1/optimize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 12a\r\n\r\n",
                    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"):
            answer = _raw(srv.url, bad)
            assert answer.startswith(b"HTTP/1.1 400") and b'"bad_http"' in answer, answer[:200]
        r = c.post("/v1/optimize", content=json.dumps(SMALL).encode())  # no Content-Type
        assert r.status_code == 415 and "no Content-Type" in r.json()["error"]["message"]
        t = time.perf_counter()
        head = _raw(srv.url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 431") and b'"headers_too_large"' in head
        assert b"x-content-type-options: nosniff" in head  # refused before the app: nosniff all the same
        assert time.perf_counter() - t < 2
        t = time.perf_counter()
        slow = _raw(srv.url, b"POST /v1/optimize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n{\"op\":", wait=10)
        assert slow.startswith(b"HTTP/1.1 408") and b'"body_timeout"' in slow and time.perf_counter() - t < 5
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                     "application/json; charset=utf-16", "application/+json"):  # misread, not converted
            r = c.post("/v1/optimize", content=b"{}", headers={"content-type": kind})
            assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
        for kind in ("application/json; charset=UTF-8", 'application/json;charset="utf-8"', "application/vnd.x+json"):
            assert c.post("/v1/optimize", json=SMALL, headers={"content-type": kind}).status_code == 200, kind
        r = c.post("/v1/optimize", json=SMALL, headers={"host": "evil.example:8080"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "bad_host"
        assert '"evil.example"' in r.json()["error"]["message"]  # the host it compared, said
        assert c.post("/v1/optimize", json=SMALL, headers={"host": "legalsat.local"}).status_code == 200
        body = json.dumps(SMALL).encode()
        for hosts in (b"Host: legalsat.local\r\nHost: evil.example", b"Host: evil.example\r\nHost: legalsat.local"):
            # the allow-list read the first alone
            dup = _raw(srv.url, b"POST /v1/optimize HTTP/1.1\r\n" + hosts + b"\r\nConnection: close\r\n"
                       b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
                       + b"\r\n\r\n" + body)
            assert dup.startswith(b"HTTP/1.1 400") and b"more than one Host" in dup, dup[:300]
        for target, status in ((b"http://evil.example/v1/optimize", b"400"), (b"http://legalsat.local:9/v1/optimize", b"200")):
            # an absolute-form target: its authority is the host (the Host header was compared instead)
            answer = _raw(srv.url, b"POST " + target + b" HTTP/1.1\r\nHost: legalsat.local\r\nConnection: close\r\n"
                          b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
                          + b"\r\n\r\n" + body)
            assert answer.startswith(b"HTTP/1.1 " + status), answer[:300]
        r = c.post("/v1/optimize/", json=SMALL, headers={"host": "legalsat.local"})
        assert r.status_code == 404 and "location" not in r.headers  # no redirect naming the Host
        # behind the host check the metrics still see each request's route
        metrics = c.get("/metrics").text
        assert 'method="POST",route="/v1/optimize",status="200"' in metrics and 'route="/healthz"' in metrics, metrics


def test_more_than_one_host_header_is_400_whatever_the_allow_list(server):
    """Refused only where LEGALSAT_ALLOWED_HOSTS was set; the default ("*") took the first."""
    body = json.dumps(SMALL).encode()
    dup = _raw(server.url, b"POST /v1/optimize HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n"
               b"Connection: close\r\nContent-Type: application/json\r\nContent-Length: "
               + str(len(body)).encode() + b"\r\n\r\n" + body)
    assert dup.startswith(b"HTTP/1.1 400") and b"more than one Host" in dup, dup[:300]


def test_a_client_gone_mid_body_is_not_a_500(server):
    host, port = server.url.split("//")[1].split(":")
    for _ in range(3):
        with socket.create_connection((host, int(port))) as s:
            s.sendall(b"POST /v1/optimize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 5000\r\n\r\n{\"op\": {")
    time.sleep(0.5)
    metrics = httpx.get(server.url + "/metrics").text
    assert 'status="500"' not in metrics


def test_a_batch_item_fails_alone(server):
    huge = {"dtype": "bfloat16", "shape": [1 << 30, 1 << 30], "strides": [1 << 30, 1]}
    items = [SMALL, {"op": {"kind": "copy", "src": huge, "dst": {**huge, "strides": [1, 1 << 30]}}},
             {"request_id": "deep", "op": [[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]}, "not an object", SMALL]
    r = httpx.post(server.url + "/v1/optimize/batch", json=items, timeout=60)
    assert r.status_code == 200
    out = r.json()
    assert [o["status"] for o in out] == ["ok", "error", "error", "error", "ok"]
    assert out[1]["error"]["field"] == "op.src.shape" and out[2]["request_id"] == "deep"


def test_a_deadline_answer_names_what_its_route_can_change():
    from legalsat.server.errors import deadline

    verify = deadline(30_000, False, "verify_pipeline").detail
    assert "iterations" in verify.fix and "node_limit" not in verify.fix and "verifying" in verify.message
    assert "node_limit" in deadline(30_000, False, "optimize").detail.fix
    assert "node_limit" not in deadline(30_000, True, "verify_pipeline").detail.fix  # waited: retry


def test_every_answer_says_nosniff(client):
    """Pages, data, assets and refusals alike: a browser takes each as the type it names."""
    answers = [client.get("/healthz"), client.get("/openapi.json"), client.get("/docs"),
               client.get("/static/viewer/viewer.js"), client.post("/v1/optimize", json={"op": 1}),
               client.get("/no/such/route")]
    assert [r.headers.get("x-content-type-options") for r in answers] == ["nosniff"] * len(answers)


def test_a_compressed_body_is_refused_by_its_encoding(client):
    import gzip
    import json

    body = json.dumps({"term": "(copy (view float32 (4 4) (4 1)) (view float32 (4 4) (1 4)))"}).encode()
    for coding, content in (("gzip", gzip.compress(body)), ("br", body)):
        r = client.post("/v1/optimize", content=content,
                        headers={"Content-Type": "application/json", "Content-Encoding": coding})
        assert r.status_code == 415 and "Content-Encoding" in r.json()["error"]["message"], r.text
    # an identity header first, gzip second (the second was not read)
    r = client.post("/v1/optimize", content=gzip.compress(body), headers=[
        ("Content-Type", "application/json"), ("Content-Encoding", "identity"), ("Content-Encoding", "gzip")])
    assert r.status_code == 415 and "gzip" in r.json()["error"]["message"], r.text


def test_what_two_readers_of_a_request_could_read_two_ways_is_refused(client, server):
    """Two Content-Type headers (the first was checked), two charsets in one, a query parameter
    given twice (the last counted) and a gzip transfer coding under chunked (ignored: the gzip
    bytes were read as JSON text) were each taken one way; each is refused, naming what."""
    import gzip
    import json

    body = json.dumps({"term": "(copy (view float32 (4 4) (4 1)) (view float32 (4 4) (1 4)))"}).encode()
    r = client.post("/v1/optimize", content=body, headers=[("Content-Type", "application/json"),
                                                           ("Content-Type", "text/plain")])
    assert r.status_code == 415 and "2 Content-Type" in r.json()["error"]["message"], r.text
    r = client.post("/v1/optimize", content=body,
                    headers={"Content-Type": "application/json; charset=utf-8; charset=latin1"})
    assert r.status_code == 415, r.text
    desc = {"dtype": "bfloat16", "global_address": 1 << 40, "global_dim": [64], "global_strides": [], "box_dim": [64]}
    for query in ("target=nope&target=sm90", "target=sm90&target=nope"):
        r = client.post(f"/v1/descriptors/validate?{query}", json=desc)
        assert r.status_code == 422 and r.json()["error"]["field"] == "target", r.text
    packed = gzip.compress(body)
    head = (b"POST /v1/optimize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n")
    answer = _raw(server.url, head + f"{len(packed):x}\r\n".encode() + packed + b"\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 415") and b"Transfer-Encoding" in answer, answer[:300]


def test_every_get_route_answers_head_without_a_body(server):
    """Load balancers, uptime checks and link checkers probe with HEAD: every GET route answers
    it with the GET's status and no body (/healthz and /readyz did; /metrics, /docs, /redoc and
    the e-graph routes answered 405)."""
    import importlib
    import pkgutil

    from fastapi.routing import APIRoute

    from legalsat.server import routers

    kept = "0" * 32  # an e-graph id of the right form that nothing kept: 404 for GET and HEAD alike
    modules = [importlib.import_module(f"{routers.__name__}.{m.name}") for m in pkgutil.iter_modules(routers.__path__)]
    paths = {r.path.replace("{egraph_id}", kept) for m in modules for r in m.router.routes
             if isinstance(r, APIRoute) and "GET" in r.methods}
    assert {"/healthz", "/readyz", "/metrics", "/docs", "/redoc", f"/v1/egraphs/{kept}/view"} <= paths
    for path in sorted(paths) + ["/openapi.json", "/static/docs/swagger-init.js"]:
        get, head = httpx.get(server.url + path), httpx.head(server.url + path)
        assert head.status_code == get.status_code and head.content == b"", (path, head.status_code, get.status_code)
        assert head.headers["content-type"] == get.headers["content-type"], path
    assert httpx.head(server.url + "/v1/optimize").status_code == 405  # a POST route stays one


def test_a_query_parameter_the_route_does_not_declare_is_refused_by_name(client):
    """`?explain=true` on an optimize request was ignored: the plan came back without the
    explanation asked for. A /v1 route refuses a query parameter it does not declare."""
    r = client.post("/v1/optimize?explain=true", json=SMALL)
    err = r.json()["error"]
    assert r.status_code == 422 and err["field"] == "explain" and "'explain'" in err["message"], r.text
    assert "JSON body" in err["fix"]
    desc = {"dtype": "float32", "global_address": 1 << 40, "global_dim": [64, 64], "global_strides": [256],
            "box_dim": [32, 32]}
    r = client.post("/v1/descriptors/validate?targt=sm90", json=desc)
    assert r.status_code == 422 and "did you mean 'target'" in r.json()["error"]["fix"], r.text
    assert client.post("/v1/descriptors/validate?target=sm90", json=desc).status_code == 200
    r = client.get("/v1/egraphs/" + "0" * 32 + "?format=svg")
    assert r.status_code == 422 and r.json()["error"]["field"] == "format", r.text
    assert client.get("/healthz?probe=lb").status_code == 200  # probes outside /v1 take what they are sent


def test_a_body_of_many_values_to_a_small_request_route_is_refused_by_a_count(client):
    """A descriptor of 500,000 dims held the event loop a second in validation."""
    body = b'{"dtype": "float32", "rank": 2, "global_dim": [' + b",".join([b"1"] * 500_000) + b"]}"
    r = client.post("/v1/descriptors/validate", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "at most 4096" in r.json()["error"]["message"], r.text


def test_a_large_protocol_is_judged_by_the_worker_with_its_field_named(client):
    """Bodies past 64 KiB are not validated in the service's process (pydantic holds the
    interpreter for as long as it takes); the worker's answer names the field all the same."""
    from legalsat.testing.protocols import racing_roles

    doc = json.loads(json.dumps(racing_roles(8, 16, 30)))  # its ops are shared: copied one by one
    doc["roles"][3]["blocks"][2]["ops"][5]["bar"] = "nope"
    body = json.dumps(doc).encode()
    assert len(body) > 64 * 1024
    r = client.post("/v1/verify/pipeline", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "roles[3].blocks[2].ops[5].bar", r.text
    # the same name misspelt in every operation: 3,840 problems, 32 of them listed
    doc = racing_roles(8, 16, 30)
    doc["roles"][0]["blocks"][0]["ops"][1]["bar"] = "nope"  # shared by every block's steps
    r = client.post("/v1/verify/pipeline", json=doc)
    err = r.json()["error"]
    assert r.status_code == 422 and len(err["details"]) == 32 and err["more_details"] > 3000, err.keys()


def test_a_batch_item_whose_json_is_refused_fails_alone(server):
    """NaN, a repeated key, a lone surrogate or nesting past the bound inside one item: that
    item's error, the others planned (the whole batch was a 422 naming "[1].options..."), and
    the error keeps the item's request_id (it came back null)."""
    small = json.dumps(SMALL)
    deep = "[" * 70 + "]" * 70
    body = (f'[{small}, {{"request_id": "keep1", "options": {{"max_plans": NaN}}}}, {{"request_id": "keep2", "op": 1, '
            f'"op": 2}}, {{"request_id": "\\ud800"}}, {{"request_id": "keep4", "op": {deep}}}, {small}]')
    r = httpx.post(server.url + "/v1/optimize/batch", content=body.encode(),
                   headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 200, r.text
    out = r.json()
    assert [o["status"] for o in out] == ["ok", "error", "error", "error", "error", "ok"]
    assert [o["error"]["code"] for o in out[1:5]] == ["invalid_json", "invalid_json", "invalid_input", "invalid_input"]
    assert out[1]["error"]["field"] == "options.max_plans" and out[4]["error"]["field"] == "op"
    # each keeps the request_id it named, as `legalsat batch` does (an id that is itself refused is not echoed)
    assert [o["request_id"] for o in out[1:5]] == ["keep1", "keep2", None, "keep4"]


def test_a_websocket_upgrade_is_an_http_request_like_any_other(server):
    """The service has no WebSocket route: an upgrade got uvicorn's bare 403 (text, no body, no
    nosniff, no Host check); it is routed as HTTP now, so it gets the service's own answer."""
    answer = _raw(server.url, b"GET /v1/anything HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
                              b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", wait=2)
    assert answer.startswith(b"HTTP/1.1 404") and b'"not_found"' in answer, answer[:300]
    assert b"x-content-type-options: nosniff" in answer.lower()
