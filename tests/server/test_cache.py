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
        assert c.totals()[1] <= 1 << 20
    assert c.totals()[1] == len(c) * len(body) and len(c) >= 8
    assert c.get("k0") is not None and c.get("k1") is None and c.get("k14") is not None
    kept = len(c)
    c.put("big", b"y" * ((1 << 20) // 10 + 1))  # more than a tenth of the bound: not stored, nothing evicted
    assert c.get("big") is None and len(c) == kept


def test_bounds_hold_for_every_process_sharing_the_file(tmp_path):
    """Two caches on one file (two replicas on a host, a batch run beside the service): each
    counted only its own inserts, and the file held both processes' bound (20 plans under a
    bound of 10, 2 MB under 1 MB)."""
    path = str(tmp_path / "c.sqlite3")
    a, b = (PlanCache(path, "v1", max_entries=10, touch_every_s=0, max_bytes=1 << 20) for _ in range(2))
    body = b"x" * (60 << 10)
    for i in range(8):
        a.put(f"a{i}", body)
        b.put(f"b{i}", body)
    assert len(a) == len(b) <= 10 and a.totals() == b.totals()
    assert a.totals()[1] <= 1 << 20
    left = a.db.execute("SELECT count(*), sum(length(body)) FROM plans").fetchone()
    assert tuple(left) == a.totals(), "the kept totals are the table's"
    assert b.get("b7") is not None and a.get("a0") is None, "the least recently used go first, whoever stored them"


def test_a_file_from_before_the_totals_is_counted_once(tmp_path):
    import sqlite3

    path = str(tmp_path / "c.sqlite3")
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE plans (key TEXT PRIMARY KEY, version TEXT NOT NULL, body BLOB NOT NULL, "
                     "created REAL NOT NULL, used REAL NOT NULL);")
    db.executemany("INSERT INTO plans VALUES (?, 'v1', ?, 0, 0)", [(f"k{i}", b"x" * i) for i in range(5)])
    db.commit()
    db.close()
    c = PlanCache(path, "v1")
    assert c.totals() == (5, 10)
    assert PlanCache(path, "v1").totals() == (5, 10), "opened again: not counted twice"
    c.put("k9", b"yy")
    assert c.totals() == (6, 12)


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
