"""Every route through a real uvicorn server: answers, error statuses and shapes, metrics."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from legalsat.schemas.plan import validate_response
from legalsat.schemas.service import ErrorBody, Readiness

from .conftest import RANK7_OP, SMALL

ROOT = Path(__file__).resolve().parents[2]
JSON = {"Content-Type": "application/json"}
DESC = {"dtype": "bfloat16", "global_address": 1 << 40, "global_dim": [4096, 1024],
        "global_strides": [8192], "box_dim": [64, 64], "swizzle": "128B"}


def wait_idle(client, within_s: float = 60.0) -> None:
    """Until no worker holds a job and none waits (`/readyz`)."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        ready = Readiness.model_validate(client.get("/readyz").json())
        if ready.busy == 0 and ready.queued == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"workers still busy after {within_s} s")


def error(r, status: int, code: str, field: str | None = ...) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = ErrorBody.model_validate(r.json()).error
    assert body.code == code and body.message and body.fix
    if field is not ...:
        assert body.field == field
    return r.json()["error"]


def test_an_answer_the_time_budget_cut_short_is_not_cached(client):
    """15 ms for the rank-7 slow request (about 90 ms to its node limit): saturation stops at
    the time limit; the next ask plans again (it may have more time), never a hit of the
    cut-short answer. Asked of idle workers: a job whose budget runs out while it waits in the
    queue is a 504 (with a 1 ms budget and workers still busy with an earlier test's jobs,
    this test failed now and then)."""
    req = {"op": RANK7_OP, "options": {"timeout_ms": 15}, "request_id": "rushed"}
    for _ in range(2):
        wait_idle(client)
        r = client.post("/v1/optimize", json=req)
        assert r.status_code == 200 and r.json()["egraph"]["stop_reason"] == "time_limit"
        assert r.headers["x-legalsat-cache"] == "miss"


@pytest.mark.parametrize("rule,timed", [("planning_deadline", True), ("proof_budget", True),
                                          ("solver_timeout", True), ("rank", False)])
def test_a_strategy_rejected_for_want_of_time_marks_the_answer_as_cut_short(rule, timed):
    """Saturation finished but a candidate ran out of time: not the request's answer for good,
    so not cached (the rule names were compared with the catalogue's tuples, never equal)."""
    from legalsat.server.worker import ran_out_of_time

    out = {"egraph": {"stop_reason": "saturated"}, "rejected": [{"strategy": "tma", "reasons": [{"rule": rule}]}]}
    assert ran_out_of_time(out) is timed


def test_optimize_plans_then_answers_from_the_cache(client):
    req = {**SMALL, "options": {"max_plans": 2}, "request_id": "first"}
    r = client.post("/v1/optimize", json=req)
    assert r.status_code == 200 and r.headers["x-legalsat-cache"] == "miss"
    out = r.json()
    validate_response(out)
    assert out["request_id"] == "first" and out["status"] == "ok" and out["plans"]
    r2 = client.post("/v1/optimize", content=json.dumps({**req, "request_id": "second"}, indent=3),
                     headers=JSON)
    assert r2.headers["x-legalsat-cache"] == "hit"
    again = r2.json()
    validate_response(again)
    assert again["request_id"] == "second"
    assert again["plans"] == out["plans"] and again["rejected"] == out["rejected"]


def test_optimize_term_form_and_invalid_inputs_name_the_field(client):
    r = client.post("/v1/optimize", json={"term": "(copy (view bfloat16 (64 96) (96 1) 16) "
                                                  "(view bfloat16 (64 96) (1 64) 16))"})
    assert r.status_code == 200 and r.json()["status"] == "ok"
    bad = json.loads(json.dumps(SMALL))
    bad["op"]["src"]["dtype"] = "bfloat61"
    e = error(client.post("/v1/optimize", json=bad), 422, "invalid_input", "op.src.dtype")
    assert "bfloat16" in e["message"]
    error(client.post("/v1/optimize", content=b"{not json", headers=JSON), 422, "invalid_json")
    error(client.post("/v1/optimize", json=[1, 2]), 422, "invalid_input")
    e = error(client.post("/v1/optimize", json={**SMALL, "options": {"max_plan": 2}}), 422, "invalid_input")
    assert "max_plans" in e["message"]  # did-you-mean


def test_body_over_the_limit_is_413(client):
    r = client.post("/v1/optimize", content=b" " * ((1 << 20) + 1), headers=JSON)
    # the limit and the declared length, as numbers a client can act on (not only in the message)
    assert error(r, 413, "too_large") | {} == {**r.json()["error"], "limit": 1 << 20, "value": (1 << 20) + 1}
    # a chunked body without a length is counted as it arrives: not read to its end
    r = client.post("/v1/descriptors/validate", content=iter([b" " * 65536] * 20), headers=JSON)
    body = error(r, 413, "too_large")
    assert body["limit"] == 1 << 20 and body["value"] is None


def test_a_refusal_by_a_limit_carries_the_limit(client):
    """The limits were in the messages only: a client that splits a batch read them from text."""
    from legalsat.testing.planner_suite import view

    item = {"op": {"kind": "copy", "src": view("float32", (4,)), "dst": view("float32", (4,))}}
    body = error(client.post("/v1/optimize/batch", json=[item] * 257), 422, "invalid_input")
    assert (body["limit"], body["value"]) == (256, 257)
    body = error(client.post("/v1/descriptors/validate", content=b"[" + b"0," * 5000 + b"0]", headers=JSON), 422,
                 "invalid_input")
    assert (body["limit"], body["value"]) == (4096, 5001)
    # an error that is no limit's has neither
    assert "limit" not in error(client.post("/v1/optimize", json={"op": 3}), 422, "invalid_input")


def test_batch_answers_in_order_with_per_item_errors(client):
    items = [SMALL, {"op": {"kind": "copy"}}, {**SMALL, "request_id": "third"}, "nope"]
    r = client.post("/v1/optimize/batch", json=items)
    assert r.status_code == 200
    out = r.json()
    assert [x["status"] for x in out] == ["ok", "error", "ok", "error"]
    validate_response(out[0])
    assert out[1]["error"]["field"].startswith("op") and out[2]["request_id"] == "third"
    error(client.post("/v1/optimize/batch", json=[]), 422, "invalid_input", None)  # no field: the body itself
    error(client.post("/v1/optimize/batch", json={"requests": []}), 422, "invalid_input")


def test_validate_descriptor(client):
    r = client.post("/v1/descriptors/validate", json=DESC)
    assert r.status_code == 200 and r.json() == {"legal": True, "violations": []}  # no "error": null, as the CLI
    r = client.post("/v1/descriptors/validate", json={**DESC, "box_dim": [64, 512]})
    v = r.json()
    assert r.status_code == 200 and v["legal"] is False
    assert any(x["field"] == "box_dim" and x["index"] == 1 for x in v["violations"])
    error(client.post("/v1/descriptors/validate", json={**DESC, "swizzle": "129B"}), 422, "invalid_input", "swizzle")
    error(client.post("/v1/descriptors/validate", params={"target": "gfx942"}, json=DESC), 422, "no_tma", "target")
    error(client.post("/v1/descriptors/validate", params={"target": "sm91"}, json=DESC), 422, "unknown_target")


def test_bank_conflicts(client):
    r = client.post("/v1/analyze/bank-conflicts",
                    json={"access_bytes": 4, "op": "load", "addresses": [128 * i for i in range(32)]})
    assert r.status_code == 200 and r.json()["conflict_ways"] == 32.0
    assert "error" not in r.json() and "accesses" not in r.json()  # set fields only, as the CLI writes them
    r = client.post("/v1/analyze/bank-conflicts", json={"op": "load", "pattern": "cols", "vector": 8, "tile": {
        "dtype": "bfloat16", "shape": [64, 64], "swizzle": "128B"}})
    assert r.status_code == 200 and r.json()["accesses"]
    error(client.post("/v1/analyze/bank-conflicts", json={"access_bytes": 4, "op": "load",
                                                          "addresses": [2] * 32}), 422, "invalid_input")


def test_verify_pipeline(client):
    lines = (ROOT / "examples" / "pipelines.jsonl").read_text().splitlines()
    verdicts = [client.post("/v1/verify/pipeline", content=line, headers=JSON) for line in lines if line.strip()]
    assert all(r.status_code == 200 for r in verdicts)
    assert {r.json()["ok"] for r in verdicts} == {True, False}  # the examples include broken protocols
    error(client.post("/v1/verify/pipeline", json={"roles": []}), 422, "invalid_input")


def test_kept_egraph_as_json_and_html(client):
    r = client.post("/v1/optimize", json={**SMALL, "options": {"keep_egraph": True}})
    assert r.status_code == 200 and r.headers["x-legalsat-cache"] == "kept"
    out = r.json()
    validate_response(out)
    eid = out["egraph"]["id"]
    assert "snapshot" not in out["egraph"] and eid  # kept on the server, not inlined
    head = client.head(f"/v1/egraphs/{eid}")  # kept: found without reading or building anything
    assert head.status_code == 200 and head.content == b""
    assert "content-length" not in head.headers  # it said 0, the GET's body being 6,558 bytes
    doc = client.get(f"/v1/egraphs/{eid}").json()
    assert doc["eclass_count"] > 0 and doc["extracted"][0]["located"]
    assert doc["extracted"][0]["strategy"] == out["plans"][0]["strategy"]
    root = [c for c in doc["eclasses"] if c["root"]]
    assert root and "strategies" in root[0]["analyses"] and "tma_legal" in root[0]["analyses"]
    page = client.get(f"/v1/egraphs/{eid}/view")
    assert page.status_code == 200 and 'id="egraph-data"' in page.text and "/static/viewer/viewer.js" in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    # the page's assets are the service's own, served without a token
    for asset in ("viewer/viewer.js", "viewer/viewer.css", "docs/swagger-ui-bundle.js", "docs/redoc.standalone.js"):
        got = client.get(f"/static/{asset}")
        assert got.status_code == 200 and len(got.content) > 1000, asset
    error(client.get("/v1/egraphs/" + "0" * 32), 404, "not_found", "egraph_id")
    error(client.get("/v1/egraphs/" + "0" * 32 + "/view"), 404, "not_found")


def test_an_egraph_over_the_size_the_service_keeps_is_answered_not_kept():
    """A keep_egraph request's e-graph was kept whatever its size (a rank-8 copy with a high
    node limit: 616,815 e-nodes, about 245 MB in the service, rebuilt on every view while the
    event loop waited). Past LEGALSAT_EGRAPH_MAX_BYTES the plans are answered, with a warning
    naming options.keep_egraph, and the e-graph is neither sent by the worker nor kept."""
    import httpx

    from legalsat.testing.live_server import LiveServer

    with LiveServer(workers=1, cache_path="", egraph_max_bytes=1 << 16, log_level="warning") as srv, \
            httpx.Client(base_url=srv.url, timeout=120) as c:
        r = c.post("/v1/optimize", json={"op": RANK7_OP, "options": {"keep_egraph": True}})
        assert r.status_code == 200 and r.headers["x-legalsat-cache"] == "not-kept", r.text[:300]
        out = r.json()
        validate_response(out)
        assert out["plans"] and not out["egraph"].get("id") and "snapshot" not in out["egraph"]
        (w,) = [w for w in out["warnings"] if w["code"] == "egraph_too_large"]
        assert w["field"] == "options.keep_egraph" and "node_limit" in w["fix"] and str(1 << 16) in w["message"]
        small = c.post("/v1/optimize", json={**SMALL, "options": {"keep_egraph": True}})
        assert small.headers["x-legalsat-cache"] == "kept" and small.json()["egraph"]["id"]
        assert c.get(f"/v1/egraphs/{small.json()['egraph']['id']}").json()["eclass_count"] > 0


def test_health_ready_metrics_openapi(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = Readiness.model_validate(client.get("/readyz").json())
    assert ready.status == "ready" and ready.workers_alive == ready.workers == 2
    client.post("/v1/optimize", json=SMALL)
    client.post("/v1/optimize", json=SMALL)  # a hit, whichever tests ran before
    assert client.get("/static/viewer/viewer.js").status_code == 200
    # the static assets under their mount (they were counted as route="unmatched"); a request is
    # counted once its answer is sent, so the count may come a moment after the body
    static = 'legalsat_http_requests_total{method="GET",route="/static",status="200"}'
    for _ in range(50):
        text = client.get("/metrics").text
        if static in text:
            break
        time.sleep(0.05)
    assert static in text
    assert 'legalsat_http_requests_total{method="POST",route="/v1/optimize",status="200"}' in text
    assert 'legalsat_plan_cache_lookups_total{result="hit"}' in text
    assert "legalsat_egraph_enodes_bucket" in text and "legalsat_workers_alive 2.0" in text
    assert 'legalsat_http_request_duration_seconds_count{method="POST",route="/v1/optimize",status="200"}' in text
    doc = client.get("/openapi.json").json()
    for path in ("/v1/optimize", "/v1/optimize/batch", "/v1/descriptors/validate", "/v1/analyze/bank-conflicts",
                 "/v1/verify/pipeline", "/v1/egraphs/{egraph_id}", "/v1/egraphs/{egraph_id}/view",
                 "/healthz", "/readyz", "/metrics"):
        assert path in doc["paths"], path
    body = doc["paths"]["/v1/optimize"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/OptimizeRequest"}
    assert "OptimizeRequest" in doc["components"]["schemas"]
    assert client.get("/docs").status_code == 200
    error(client.get("/v2/optimize"), 404, "not_found")
    error(client.get("/v1/optimize"), 405, "method_not_allowed")
    # a GET route answers HEAD too, and its 405 says so (Allow: GET only, before)
    assert client.delete("/healthz").headers["allow"].replace(" ", "").split(",") == ["GET", "HEAD"]


def test_the_api_docs_example_of_a_request_plans(client):
    """What "Try it out" in /docs sends (the schema's example) is a request that plans: it sent
    `"op": null, "term": null` before the schema had one."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    example = schemas["OptimizeRequest"]["examples"][0]
    r = client.post("/v1/optimize", json=example)
    assert r.status_code == 200 and r.json()["status"] == "ok", r.text


def test_every_operation_documents_the_refusals_made_before_routing(client):
    """400 bad_http / bad_host, 408 head_timeout and 431 come from the HTTP layer, before any
    route: the document lists them on every operation (schemathesis found them undocumented)."""
    doc = client.get("/openapi.json").json()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert {"400", "408", "431"} <= set(op["responses"]), (method, path)


@pytest.mark.parametrize("req", [
    {**SMALL, "options": {"max_plans": 0}, "request_id": 5},
    {"term": "(", "request_id": "x" * 200},
    {"term": "x" * 70_000, "zzz": 1},
    {"term": "x" * 70_000, "op": SMALL["op"]},
], ids=["request_id-and-options", "request_id-and-term", "unknown-and-overlong-term", "overlong-term-and-op"])
def test_a_request_with_several_problems_is_named_alike_by_the_service_and_the_library(client, req):
    """The service checks a request's shape and request_id before it queues it; the library
    checks them first too, so both name the same problem (they named request_id against
    options.max_plans, zzz against the term, ...)."""
    import legalsat
    from legalsat.diagnostics import InputError

    with pytest.raises(InputError) as e:
        legalsat.optimize(req)
    body = error(client.post("/v1/optimize", json=req), 422, e.value.headline.code.id)
    assert body["field"] == e.value.headline.field and body["message"] == e.value.headline.message


def test_a_path_parameter_is_named_as_the_route_names_it(client):
    """An e-graph id past 64 characters was named `path.egraph_id` (FastAPI's location), one
    within them `egraph_id`."""
    error(client.get("/v1/egraphs/" + "a" * 65), 422, "invalid_input", "egraph_id")
    # past an id's 32 characters the fix says so (it said "at most 64", and 33 to 64 were refused)
    assert "at most 32 characters" in error(client.get("/v1/egraphs/" + "a" * 40), 422, "invalid_input",
                                            "egraph_id")["fix"]
    # an id of no form the service hands out was "no kept e-graph has id ..." (404)
    error(client.get("/v1/egraphs/" + "a" * 64), 422, "invalid_input", "egraph_id")
    assert "'" + "a" * 32 + "'" in error(client.get("/v1/egraphs/" + "A" * 32), 422, "invalid_input")["fix"]
    error(client.get("/v1/egraphs/" + "a" * 32), 404, "not_found", "egraph_id")


def test_an_empty_request_id_comes_back_as_sent(client):
    """`"request_id": ""` (valid: at most 128 characters) was answered with a random id, on a
    cache hit and a miss alike."""
    body = {**SMALL, "request_id": ""}
    for _ in range(2):  # a miss, then a hit
        r = client.post("/v1/optimize", json=body)
        assert r.status_code == 200 and r.json()["request_id"] == "", r.text


def test_an_array_and_an_object_sent_to_the_wrong_route_are_pointed_to_the_right_one(client):
    """An array posted to /v1/optimize was told to send "a JSON object (not a string holding
    one)"; the batch route takes it."""
    e = error(client.post("/v1/optimize", json=[SMALL]), 422, "invalid_input")
    assert "/v1/optimize/batch" in e["fix"] and "string" not in e["fix"], e
    e = error(client.post("/v1/optimize/batch", json=SMALL), 422, "invalid_input")
    assert "POST /v1/optimize" in e["fix"], e
    e = error(client.post("/v1/optimize", json="{}"), 422, "invalid_input")
    assert "not a string holding one" in e["fix"], e
