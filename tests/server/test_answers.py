"""Every answer is right or a named error: every target plans every movement kind (or says
why not), a cache hit is validated like a miss, fields are the request's own paths, the
OpenAPI document states the enforced limits, strides that look like bytes get a warning,
options.smem_bytes binds every strategy, every legalsat exception survives pickling, and a
budget the queue shortened is said as the wait."""

from __future__ import annotations

import pickle

import pytest

from legalsat.testing.planner_suite import RANK8_PERMUTE, permuted, view

from .conftest import SMALL

GATHER = {"op": {"kind": "gather", "src": view("bfloat16", [1000, 64]), "axis": 0,
                 "index": {"count": 300, "distribution": "clustered", "groups": 8}}}
TILE = {"op": {"kind": "load_tile", "src": view("bfloat16", [256, 256]), "tile": [64, 64], "consumer": "rows"}}


def test_a_budget_the_queue_shortened_names_the_wait_not_the_deadline():
    """A job that waited 1997 ms of its 2000 for a worker was told "the LEGALSAT_DEADLINE_MS cap
    (3 ms, below the request's timeout_ms)" with a 30-second deadline, and to raise it."""
    import json

    from legalsat.server.worker import _optimize

    # 1 ms left of 2000: the rank-8 permute takes tens of ms to plan, whatever the machine
    _, body, _ = _optimize({**RANK8_PERMUTE, "options": {"timeout_ms": 2000, "max_plans": 5}}, budget_ms=1,
                           waited_ms=1999)
    out = json.loads(body)
    reasons = [r for x in out["rejected"] for r in x["reasons"] if r["rule"] in ("planning_deadline", "not_reached")]
    assert any("1999 ms it waited for a worker" in r["message"] for r in reasons), reasons
    for r in reasons:
        assert "LEGALSAT_DEADLINE_MS cap" not in r["message"]
        assert "less busy" in r["fix"] and "raise it where the service runs" not in r["fix"]


@pytest.mark.parametrize("target", ["sm90", "sm100", "gfx942"])
@pytest.mark.parametrize("request_", [SMALL, GATHER, TILE], ids=["copy", "gather", "load_tile"])
def test_every_target_plans_every_kind(client, target, request_):
    r = client.post("/v1/optimize", json={**request_, "target": target})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["plans"], out["rejected"]
    if target == "gfx942":  # no TMA unit: TMA is rejected by name, the rest plan
        assert all(p["strategy"] != "tma" for p in out["plans"])
        tma = [x for x in out["rejected"] if x["strategy"] == "tma"]
        assert tma and all(reason["fix"] for x in tma for reason in x["reasons"])


def test_a_cache_hit_is_validated_like_a_miss(client):
    assert client.post("/v1/optimize", json=SMALL).status_code == 200  # now cached
    r = client.post("/v1/optimize", json={**SMALL, "request_id": "x" * 1_000_000})
    assert r.status_code in (413, 422)
    r = client.post("/v1/optimize", json={**SMALL, "options": {"max_plans": -1}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "options.max_plans"


def test_fields_are_the_requests_own_paths(client):
    bad = {"op": {"kind": "copy", "src": {**SMALL["op"]["src"], "shape": [0, 4]}, "dst": SMALL["op"]["dst"]}}
    r = client.post("/v1/optimize", json=bad)
    assert r.status_code == 422 and r.json()["error"]["field"].startswith("op.src.")
    r = client.post("/v1/optimize", json={"op": {"kind": "gather", "src": view("float32", [4, 4]), "axis": 0,
                                                  "index": {"count": "many"}}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "op.index.count"


def test_openapi_states_the_enforced_limits(client, server):
    doc = client.get("/openapi.json").json()
    body = doc["paths"]["/v1/optimize/batch"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert schema.get("maxItems") == 256
    assert "bytes" in body.get("description", "")
    # a copy's and a gather's views take 8 dims, a tile load's source 16, an index 65,536 groups
    # (the schema said 16 dims for every view and 2^62 groups)
    defs = doc["components"]["schemas"]
    assert defs["ViewIn"]["properties"]["shape"]["maxItems"] == defs["ViewIn"]["properties"]["strides"]["maxItems"] == 8
    assert defs["TileSourceIn"]["properties"]["shape"]["maxItems"] == 16
    assert defs["LoadTileOp"]["properties"]["src"]["$ref"].endswith("/TileSourceIn")
    assert defs["IndexIn"]["properties"]["groups"]["maximum"] == 65536
    # extents below 2^40, as enforced (the schema said at most 2^40, which is refused); strides
    # unbounded there, as an extent-1 dim's may be (one past 2^40 was refused by the schema alone)
    for model in ("ViewIn", "TileSourceIn"):
        assert defs[model]["properties"]["shape"]["items"]["exclusiveMaximum"] == 1 << 40
        assert "maximum" not in defs[model]["properties"]["strides"]["items"]
    edge = {"op": {"kind": "copy", "src": view("int8", [1 << 40]), "dst": view("int8", [1 << 40])}}
    r = client.post("/v1/optimize", json=edge)
    assert r.status_code == 422 and "2^40 (1 TiB) or more" in r.json()["error"]["message"]
    for n, dims in ((8, 200), (9, 422), (16, 422)):  # what the server takes is what the schema says
        shape = [1] * (n - 2) + [4, 4]
        copy = {"op": {"kind": "copy", "src": view("float32", shape), "dst": view("float32", shape)}}
        assert client.post("/v1/optimize", json=copy).status_code == dims
        tile = {"op": {"kind": "load_tile", "src": view("float32", shape), "tile": [1] * (n - 2) + [4, 4],
                       "consumer": "rows"}}
        assert client.post("/v1/optimize", json=tile).status_code == 200


def test_strides_given_in_bytes_get_a_warning(client):
    # a bf16 [64, 96] view whose strides are the byte strides: no dim has stride 1
    src = {"dtype": "bfloat16", "shape": [64, 96], "strides": [192, 2]}
    r = client.post("/v1/optimize", json={"op": {"kind": "copy", "src": src, "dst": view("bfloat16", [64, 96])}})
    assert r.status_code == 200
    warnings = r.json().get("warnings") or []
    assert [w["code"] for w in warnings] == ["strides_in_bytes"] and warnings[0]["field"] == "op.src.strides"
    clean = client.post("/v1/optimize", json={"op": {"kind": "copy", "src": view("bfloat16", [64, 96]),
                                                     "dst": permuted("bfloat16", [64, 96], [1, 0])}})
    assert not clean.json().get("warnings")
    # torch's strides of a column slice ([4096, 1] of a [4096, 128] tensor: the extent-1 dim's
    # stride 1 is no byte count), a strided column and a broadcast one (read as bytes, no dim of
    # them would be contiguous either): no warning (each had one, the first "[64, 0]")
    for odd in ({"shape": [4096, 1], "strides": [128, 1]}, {"shape": [4096], "strides": [128]},
                {"shape": [4096, 128], "strides": [128, 0]}):
        src = {"dtype": "bfloat16", **odd}
        r = client.post("/v1/optimize", json={"op": {"kind": "copy", "src": src,
                                                     "dst": view("bfloat16", odd["shape"])}})
        assert r.status_code == 200 and not r.json().get("warnings"), (odd, r.json().get("warnings"))
    # an all-broadcast source (strides 0) has no stride that could be bytes
    bcast = {"dtype": "bfloat16", "shape": [64, 96], "strides": [0, 0]}
    r = client.post("/v1/optimize", json={"op": {"kind": "copy", "src": bcast, "dst": view("bfloat16", [64, 96])}})
    assert r.status_code == 200 and not r.json().get("warnings")


def test_smem_bytes_binds_every_strategy():
    from legalsat.api import optimize

    transpose = {"op": {"kind": "copy", "src": view("bfloat16", [512, 512]),
                        "dst": permuted("bfloat16", [512, 512], [1, 0])}, "options": {"max_plans": 5}}
    for budget in (64, 4096, 20000):
        out = optimize({**transpose, "options": {"max_plans": 5, "smem_bytes": budget}})
        for p in out["plans"]:
            for piece in p["pieces"]:
                smem = piece.get("smem")
                if smem:
                    used = smem["bytes_per_stage"] * smem["stages"] + (smem.get("store_buffer_bytes") or 0)
                    assert used <= budget, (budget, p["strategy"], smem)
        # a budget smaller than the measured-best tile takes a smaller tile, down to 64 bytes
        staged = next(p for p in out["plans"] if p["strategy"] == "staged_smem")
        assert staged["pieces"][0]["smem"]["bytes_per_stage"] <= budget


def test_every_legalsat_exception_survives_pickling():
    from legalsat.clients.http import ServiceError
    from legalsat.diagnostics import Code
    from legalsat.planner.solve import Infeasible
    from legalsat.server.errors import ApiError

    errors = [Code.INVALID_INPUT.error("op.src.shape has 0 dims", "give 1 to 8 dims", "op.src.shape"),
              Infeasible([Code.SMEM_BUDGET.at("too big", "raise options.smem_bytes")]),
              ApiError(429, Code.QUEUE_FULL, headers={"Retry-After": "1"})]
    errors.append(ServiceError(503, "queue_full", "the queue stayed full", "retry later", None))
    for e in errors:
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e)


def test_a_deadline_answer_names_the_budget_and_the_grace_apart():
    """--deadline-ms 30 with 200 ms of grace answered 'no answer within the deadline of 230 ms'."""
    from legalsat.server.errors import deadline

    msg = deadline(230, False, "optimize", 200).detail.message
    assert "deadline of 30 ms (+200 ms grace)" in msg and "230" not in msg
    assert "deadline of 30 ms (spent" in deadline(30, True).detail.message


def test_messages_speak_of_what_was_sent(client):
    """An empty HTTP body was told that "an empty file or stdin holds none", and an unknown
    target's fix repeated its message without naming the field."""
    r = client.post("/v1/optimize", content=b"", headers={"content-type": "application/json"})
    assert r.status_code == 422 and "stdin" not in r.json()["error"]["fix"]
    r = client.post("/v1/optimize", json={**SMALL, "target": "sm91"})
    err = r.json()["error"]
    assert r.status_code == 422 and err["field"] == "target" and err["message"].startswith("target: unknown target")
    assert err["fix"].startswith("set target to one of:")
