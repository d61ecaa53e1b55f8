"""The plan cache: canonical keys, version isolation, bounds, recovery from a damaged file."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from legalsat.server.cache import PlanCache, request_key, splice_request_id

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids,
                                                                                      max_size=4),
                           max_leaves=20)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6), st.integers(0, 1000), st.text(max_size=10))
def test_key_ignores_member_order_and_request_id(obj, seed, rid):
    items = list(obj.items())
    random.Random(seed).shuffle(items)
    shuffled = dict(items)
    assert request_key("v1", "optimize", obj) == request_key("v1", "optimize", {**shuffled, "request_id": rid})
    assert request_key("v1", "optimize", obj) != request_key("v2", "optimize", obj)


@given(st.dictionaries(st.text(max_size=6).filter(lambda k: k != "request_id"), json_values, max_size=5),
       st.text(max_size=20))
def test_splice_puts_the_request_id_first(body, rid):
    stored = json.dumps(body, separators=(",", ":")).encode()  # as a worker serializes it
    assert json.loads(splice_request_id(stored, rid)) == {"request_id": rid, **body}
    assert list(json.loads(splice_request_id(stored, rid)))[0] == "request_id"


def test_bounded_least_recently_used_first(tmp_path):
    c = PlanCache(str(tmp_path / "c.sqlite3"), "v1", max_entries=10, touch_every_s=0)
    for i in range(10):
        c.put(f"k{i}", b"{}")
    c.get("k0")  # recently used: survives the eviction
    for i in range(10, 15):
        c.put(f"k{i}", b"{}")
    assert len(c) <= 10
    assert c.get("k0") is not None and c.get("k1") is None and c.get("k14") is not None


@pytest.mark.parametrize("path", ["", "c.sqlite3"])
def test_bounded_in_bytes_least_recently_used_first(tmp_path, path):
    """An in-memory cache of distinct 10 MB answers grew the service to 1.7 GB (and a file
    cache to 1 GB on disk) under a bound of 100,000 entries: the bytes are bounded too."""
    c = PlanCache(path and str(tmp_path / path), "v1", touch_every_s=0, max_bytes=1 << 20)
    body = b"x" * (100 << 10)
    for i in range(10):
        c.put(f"k{i}", body)
    c.get("k0")  # recently used: survives the eviction
    for i in range(10, 15):
        c.put(f"k{i}", body)
        assert c._bytes <= 1 << 20
    assert c._bytes == len(c) * len(body) and len(c) >= 8
    assert c.get("k0") is not None and c.get("k1") is None and c.get("k14") is not None
    kept = len(c)
    c.put("big", b"y" * ((1 << 20) // 10 + 1))  # more than a tenth of the bound: not stored, nothing evicted
    assert c.get("big") is None and len(c) == kept


def test_kept_egraphs_are_bounded(tmp_path):
    c = PlanCache(str(tmp_path / "c.sqlite3"), "v1", egraphs_kept=3)
    for i in range(5):
        c.put_egraph(f"{i:032x}", {"i": i}, '{"nodes":{}}')
    assert c.get_egraph(f"{0:032x}") is None and c.get_egraph(f"{4:032x}")[0] == {"i": 4}
    # what a HEAD asks, without reading the blob
    assert c.has_egraph(f"{4:032x}") and not c.has_egraph(f"{0:032x}")


def test_damaged_file_is_moved_aside_and_the_cache_starts_empty(tmp_path):
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    c = PlanCache(str(path), "v1")
    assert len(c) == 0 and c.integrity() == "ok"
    c.put("k", b"{}")
    assert c.get("k") == b"{}"
    assert list(tmp_path.glob("c.sqlite3.corrupt-*"))


def test_in_memory_cache():
    c = PlanCache("", "v1")
    c.put("k", b'{"a":1}')
    assert c.get("k") == b'{"a":1}' and len(c) == 1


def test_worker_error_answers_pass_through_whole(caplog):
    """A worker's 422 keeps every detail; a 500's traceback reaches the service log."""
    import json

    from legalsat.server.planning import answer_error

    body = {"error": {"code": "invalid_input", "message": "a", "fix": "b", "field": "op.src",
                      "details": [{"code": "invalid_input", "message": "c", "fix": "d", "field": "op.dst"}]}}
    assert answer_error(422, json.dumps(body).encode(), {}).body() == body
    with caplog.at_level("ERROR", logger="legalsat.server"):
        e = answer_error(500, json.dumps({"error": {"code": "internal", "message": "KeyError: 1", "fix": "x",
                                                    "field": None}}).encode(), {"traceback": "Traceback: here"})
    assert e.status == 500 and "Traceback: here" in caplog.text
