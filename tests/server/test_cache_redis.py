"""The shared plan cache on a real redis-server: keys and versions, bounds, timeouts and the
circuit breaker; then two real service replicas sharing it, through a Redis outage under load."""

from __future__ import annotations

import asyncio
import re
import shutil
import threading
import time

import httpx
import pytest

from legalsat.api import PLANNER_VERSION
from legalsat.server.cache import call, open_cache, request_key
from legalsat.settings import get_settings
from legalsat.testing.live_server import LiveServer
from legalsat.testing.redis_server import RedisServer

from .conftest import SMALL, need, required


@pytest.fixture(scope="module")
def redis_exe() -> str:
    try:
        import redis  # noqa: F401  the client (the `redis` extra)
    except ImportError:
        if required("redis"):
            pytest.fail("redis is required here (LEGALSAT_CI_REQUIRE) but the redis client is not installed")
        pytest.skip("the redis client is not installed (pip install 'legalsat[redis]')")
    return need("redis", shutil.which("redis-server"))


@pytest.fixture
def redis_server(redis_exe, tmp_path):
    with RedisServer(redis_exe, str(tmp_path)) as r:
        yield r


def backend(url: str, version: str = "v1", **kw):
    from legalsat.server.cache_redis import RedisPlanCache

    return RedisPlanCache(url, version, **kw)


def test_factory_picks_the_backend_from_the_settings(redis_server, tmp_path):
    from legalsat.server.cache_redis import RedisPlanCache

    shared = open_cache(get_settings(cache_url=redis_server.url, cache_timeout_ms=300, cache_retry_s=7), "v1")
    assert isinstance(shared, RedisPlanCache) and shared.remote and shared.available
    assert shared.breaker.reset_s == 7 and shared.client.connection_pool.connection_kwargs["socket_timeout"] == 0.3
    local = open_cache(get_settings(cache_url="", cache_path=str(tmp_path / "c.sqlite3")), "v1")
    assert not local.remote and local.describe().startswith("SQLite")
    with pytest.raises(ValueError, match="Redis URL"):
        get_settings(cache_url="http://cache:6379")


def test_the_log_never_shows_the_password():
    from legalsat.server.cache_redis import redacted

    assert redacted("redis://:s3cret@cache:6379/0") == "redis://:***@cache:6379/0"
    assert redacted("rediss://user:s3cret@cache/1") == "rediss://user:***@cache/1"
    assert redacted("redis://cache:6379/0") == "redis://cache:6379/0"
    # redis-py takes credentials as options too: they were logged in full
    assert redacted("redis://cache:6379/0?password=s3cret&db=1") == "redis://cache:6379/0?password=***&db=1"
    assert redacted("redis://u:p@cache/0?username=me") == "redis://u:***@cache/0?username=***"


@pytest.mark.parametrize("url, said", [
    # a password holding "/" reads as the path: its db check quoted the password
    ("redis://:/s3cret@cache:6379/0", "the database index (the URL's path"),
    # options redis-py refuses: a traceback and "choose a free --port", or a service whose cache never worked
    ("redis://cache:6379/0?max_connections=abc", "max_connections"),
    ("redis://cache:6379/0?ssl_cert_reqs=bogus", "ssl_cert_reqs"),
])
def test_a_cache_url_redis_cannot_use_is_refused_where_it_is_set_without_its_secret(url, said, redis_exe):
    with pytest.raises(ValueError) as e:
        get_settings(cache_url=url)
    message = e.value.errors()[0]["msg"]
    assert said in message and "s3cret" not in message


def test_plans_are_shared_and_versions_never_mix(redis_server):
    a, b = backend(redis_server.url), backend(redis_server.url)  # two replicas
    newer = backend(redis_server.url, "v2")
    key = request_key("v1", "optimize", SMALL)
    a.put(key, b'{"plans":[1]}')
    assert b.get(key) == b'{"plans":[1]}'
    assert newer.get(key) is None and newer.get(request_key("v2", "optimize", SMALL)) is None
    assert any(k.startswith(b"legalsat:v1:plan:") for k in a.client.keys())
    assert len(a) >= 1


def test_kept_egraphs_are_shared_and_bounded_fleet_wide(redis_server):
    a, b = backend(redis_server.url, egraphs_kept=3), backend(redis_server.url, egraphs_kept=3)
    for i in range(5):
        (a if i % 2 else b).put_egraph(f"{i:032x}", {"i": i}, '{"nodes":{}}')
    assert a.get_egraph(f"{0:032x}") is None and a.get_egraph(f"{1:032x}") is None
    assert b.get_egraph(f"{3:032x}") == ({"i": 3}, '{"nodes":{}}')
    assert a.has_egraph(f"{3:032x}") and not b.has_egraph(f"{0:032x}")  # a HEAD's question, the blob unread
    assert a.client.zcard("legalsat:v1:egraphs") == 3
    assert len([k for k in a.client.keys() if k.startswith(b"legalsat:v1:egraph:")]) == 3


def test_ttl_renewed_by_use(redis_server):
    c = backend(redis_server.url, ttl_s=100)
    c.put("k", b"{}")
    c.client.expire("legalsat:v1:plan:k", 10)
    assert c.get("k") == b"{}"
    assert 90 < c.client.ttl("legalsat:v1:plan:k") <= 100
    c.put_egraph("e" * 32, {}, "{}")
    assert 0 < c.client.ttl("legalsat:v1:egraph:" + "e" * 32) <= 100


def test_an_outage_is_a_miss_then_the_breaker_skips_redis_until_it_answers(redis_server):
    states, errors = [], []
    c = backend(redis_server.url, retry_s=0.2, on_state=lambda old, new: states.append(new),
                on_error=errors.append)
    c.put("k", b"{}")
    redis_server.kill()
    for _ in range(3):
        assert c.get("k") is None  # refused: a miss, not an exception
    c.put("k2", b"{}")  # skipped
    c.put_egraph("f" * 32, {}, "{}")
    assert c.get_egraph("f" * 32) is None
    assert states == ["open"] and not c.available and len(errors) == 3
    redis_server.start()
    c.put("k", b"{}")  # a write made while closed again comes back
    end = time.monotonic() + 30
    while c.get("k") is None and time.monotonic() < end:
        time.sleep(0.05)
        c.put("k", b"{}")
    assert c.get("k") == b"{}" and c.available and states[-1] == "closed"


def test_a_stalled_redis_costs_one_timeout_per_call_then_nothing(redis_server):
    c = backend(redis_server.url, timeout_s=0.3, retry_s=60)
    assert c.get("k") is None
    redis_server.pause()  # connections open, nothing answers
    try:
        t0 = time.monotonic()
        assert c.get("k") is None
        took = time.monotonic() - t0
        assert 0.25 < took < 1.2, took  # one short timeout: no retries, not redis-py's 5 s default
        c.get("k")
        c.get("k")
        assert not c.available
        t0 = time.monotonic()
        assert c.get("k") is None and c.put("k", b"{}") is None
        assert time.monotonic() - t0 < 0.2  # skipped without touching the socket
    finally:
        redis_server.resume()


def test_a_shared_cache_is_called_off_the_event_loop(redis_server):
    """While a lookup waits on a stalled Redis, the event loop keeps serving."""
    c = backend(redis_server.url, timeout_s=1.0)
    redis_server.pause()

    async def main():
        ticks, done = [], []

        async def ticker():
            while not done:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        async def lookup():
            try:
                return await call(c, c.get, "k")
            finally:
                done.append(time.monotonic())

        hit, _ = await asyncio.gather(lookup(), ticker())
        return hit, [t for t in ticks if t < done[0]]

    try:
        hit, before = asyncio.run(main())
    finally:
        redis_server.resume()
    assert hit is None and len(before) >= 3


# --- two real replicas ---

def _normal(obj):
    """A response without what differs between two plannings of one request (its timings)."""
    if isinstance(obj, dict):
        return {k: _normal(v) for k, v in obj.items() if k not in ("request_id", "timings_ms", "time_ms")}
    if isinstance(obj, list):
        return [_normal(v) for v in obj]
    return obj


def _request(i: int) -> dict:
    n = 96 + 16 * i
    return {"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, n], "strides": [n, 1]},
                   "dst": {"dtype": "bfloat16", "shape": [64, n], "strides": [1, 64]}}}


def _metric(url: str, name: str) -> float:
    text = httpx.get(url + "/metrics", timeout=30).text
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def test_replicas_share_plans_and_survive_a_redis_outage(redis_exe, tmp_path):
    with RedisServer(redis_exe, str(tmp_path)) as rs, \
            LiveServer(workers=1, cache_url=rs.url, cache_retry_s=0.5, cache_path="",
                       log_path=str(tmp_path / "a.log"), log_level="warning") as a, \
            LiveServer(workers=1, cache_url=rs.url, cache_retry_s=0.5, cache_path="",
                       log_path=str(tmp_path / "b.log"), log_level="warning") as b:
        reqs = [_request(i) for i in range(6)]
        expected = []
        with httpx.Client(timeout=120) as cl:
            for r in reqs:  # planned by one replica, a hit on the other
                first = cl.post(a.url + "/v1/optimize", json=r)
                second = cl.post(b.url + "/v1/optimize", json={**r, "request_id": "other"})
                assert first.status_code == second.status_code == 200
                assert (first.headers["x-legalsat-cache"], second.headers["x-legalsat-cache"]) == ("miss", "hit")
                assert second.json()["request_id"] == "other"
                assert _normal(second.json()) == _normal(first.json())
                expected.append(_normal(first.json()))
            # an e-graph kept by one replica is viewable on the other
            kept = cl.post(a.url + "/v1/optimize", json={**SMALL, "options": {"keep_egraph": True}})
            assert kept.headers["x-legalsat-cache"] == "kept"
            view = cl.get(f"{b.url}/v1/egraphs/{kept.json()['egraph']['id']}")
            assert view.status_code == 200 and view.json()["eclass_count"] > 0
        import redis

        keys = redis.Redis.from_url(rs.url).keys()  # this planner version's namespace only
        assert sum(k.startswith(f"legalsat:{PLANNER_VERSION}:plan:".encode()) for k in keys) == len(reqs)
        assert all(k.startswith(f"legalsat:{PLANNER_VERSION}:".encode()) for k in keys)

        # a stream of requests from a few threads, over both replicas, through the outage
        results: list[tuple[float, str, int, bool, str]] = []
        stop = threading.Event()

        def load(seed: int) -> None:
            with httpx.Client(timeout=120) as cl:
                i = seed
                while not stop.is_set():
                    srv = (a, b)[i % 2]
                    r = cl.post(srv.url + "/v1/optimize", json=reqs[i % len(reqs)])
                    ok = r.status_code == 200 and _normal(r.json()) == expected[i % len(reqs)]
                    results.append((time.monotonic(), srv.url, r.status_code, ok, r.headers.get("x-legalsat-cache")))
                    i += 1

        threads = [threading.Thread(target=load, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(1.0)
            killed = time.monotonic()
            rs.kill()
            end = killed + 120
            while time.monotonic() < end and not all(
                    _metric(s.url, "legalsat_plan_cache_up") == 0 for s in (a, b)):
                time.sleep(0.1)
            for s in (a, b):  # the breaker opened on both replicas; both still ready
                assert _metric(s.url, 'legalsat_plan_cache_breaker_changes_total{state="open"}') >= 1
                assert httpx.get(s.url + "/readyz", timeout=30).status_code == 200
            while time.monotonic() < end and sum(t > killed for t, *_ in results) < 20:
                time.sleep(0.1)
            restarting = time.monotonic()  # answers from here on may already see the new Redis
            rs.start()  # the same port, empty
            restarted = time.monotonic()
            while time.monotonic() < end and not all(
                    any(t > restarted and u == s.url and c == "hit" for t, u, _, _, c in list(results)) for s in (a, b)):
                time.sleep(0.1)
        finally:
            stop.set()
            for t in threads:
                t.join()

    failed = [r for r in results if r[2] != 200 or not r[3]]
    assert not failed, failed[:5]
    during = [r for r in results if killed < r[0] < restarting]
    after = [r for r in results if r[0] > restarted]
    assert len(during) >= 20 and all(r[4] == "miss" for r in during[-10:])  # planned while Redis was away
    for s in (a, b):  # recovered: hits again on both replicas
        assert any(r[1] == s.url and r[4] == "hit" for r in after)
    assert "answers again" in (tmp_path / "a.log").read_text()


# --- what a shared database, a slow or a refusing Redis, and a misread URL must not do ---

def test_a_value_legalsat_did_not_write_is_deleted_and_the_request_planned(redis_server):
    """Garbage, a truncated body, another program's JSON under a plan key were answered as
    hits by every replica; a corrupt kept e-graph was a 500. Each is now a miss, deleted."""
    errors: list[str] = []
    c = backend(redis_server.url, on_error=errors.append)
    c.put("good", b'{"plans":[]}')
    stored = c.client.get("legalsat:v1:plan:good")
    for name, value in (("garbage", b"garbage-not-json"), ("empty", b""), ("truncated", stored[:-3]),
                        ("foreign", b'{"foo": 1}'), ("moved", stored)):  # a sealed value under another key
        c.client.set(f"legalsat:v1:plan:{name}", value)
        assert c.get(name) is None, name
        assert c.client.exists(f"legalsat:v1:plan:{name}") == 0, name
    assert c.get("good") == b'{"plans":[]}' and errors == ["corrupt"] * 5
    c.put_egraph("a" * 32, {"i": 1}, "{}")
    assert c.get_egraph("a" * 32) == ({"i": 1}, "{}")
    c.client.hset("legalsat:v1:egraph:" + "b" * 32, mapping={"response": b"garbage", "snapshot": b"garbage"})
    assert c.get_egraph("b" * 32) is None and c.client.exists("legalsat:v1:egraph:" + "b" * 32) == 0
    assert c.available  # Redis answered every call: nothing for the breaker


def test_a_redis_that_refuses_writes_is_up_and_its_plans_still_served(redis_server, caplog):
    """Full under `noeviction`: each refused write counted against the breaker, which then
    skipped the reads too (hits fell from 17 % to 6 % in a load run)."""
    c = backend(redis_server.url)
    c.put("kept", b'{"plans":[]}')
    c.client.config_set("maxmemory-policy", "noeviction")
    c.client.config_set("maxmemory", str(c.client.info("memory")["used_memory"] + 4096))
    with caplog.at_level("WARNING", logger="legalsat.cache"):
        for i in range(10):
            c.put(f"k{i}", b"x" * 100_000)
    assert c.available and c.get("kept") == b'{"plans":[]}'
    refusals = [r for r in caplog.records if "refuses" in r.getMessage()]
    assert len(refusals) == 1 and "allkeys-lru" in refusals[0].getMessage()  # said once, with the fix


def test_a_redis_slow_enough_that_calls_queue_is_given_up_on_then_skipped(redis_server):
    """200 ms replies (under the socket timeout) queued calls in a 6-thread executor: 1 to 2 s
    a request, and the breaker never opened. A call is waited for at most its budget, queue
    included; overdue calls count as failures."""
    c = backend(redis_server.url, timeout_s=0.1, retry_s=60)
    real_get = c.client.get

    def slow_get(key):
        time.sleep(0.2)
        return real_get(key)

    c.client.get = slow_get

    async def many():
        t = time.monotonic()
        out = await asyncio.gather(*(call(c, c.get, f"k{i}") for i in range(100)))
        return out, time.monotonic() - t

    out, took = asyncio.run(many())
    assert out == [None] * 100 and took < 1.5, took  # not 100 x 0.2 s / 32 threads
    assert not c.available  # overdue calls opened the breaker: the next ones skip Redis at once


def test_url_options_that_would_override_the_timeouts_and_misread_parts_are_refused():
    """redis-py lets ?socket_timeout=10 beat LEGALSAT_CACHE_TIMEOUT_MS (a stalled Redis held a
    request 20 s); a database index 'abc' was taken as 0; a bad port crashed the start."""
    for url, words in (("redis://cache:6379/0?socket_timeout=10", "socket_timeout"),
                       ("redis://cache:6379/0?health_check_interval=30&retry_on_timeout=yes", "retry_on_timeout"),
                       ("redis://cache:6379/abc", "database index (the URL's path, or its db option) is not a number"),
                       ("unix:///run/redis.sock?db=x", "database index (the URL's path, or its db option) is not a number"),
                       ("redis://cache:notaport/0", "numeric port"),
                       ("redis://[::1/0", "IPv6")):
        with pytest.raises(ValueError, match=re.escape(words)):
            get_settings(cache_url=url)
    for url in ("redis://:pw@cache:6379/2", "unix:///run/redis.sock?db=2", "rediss://cache", "redis://cache"):
        assert get_settings(cache_url=url).cache_url == url


def test_a_redis_that_does_not_answer_at_start_is_named_with_a_fix(caplog):
    from legalsat.testing.live_server import free_port

    with caplog.at_level("ERROR", logger="legalsat.cache"):
        c = backend(f"redis://:s3cret@127.0.0.1:{free_port()}/0")
    (rec,) = [r for r in caplog.records if "at start" in r.getMessage()]
    assert "fix: check that LEGALSAT_CACHE_URL names a running Redis server" in rec.getMessage()
    assert "s3cret" not in rec.getMessage()
    assert c.get("k") is None  # and it plans without it


def test_keep_egraph_without_a_store_is_refused_not_answered_with_an_id_that_names_nothing(redis_exe, tmp_path):
    with RedisServer(redis_exe, str(tmp_path)) as rs, \
            LiveServer(workers=1, cache_url=rs.url, cache_retry_s=60, cache_path="",
                       log_path=str(tmp_path / "s.log"), log_level="warning") as srv:
        rs.kill()
        with httpx.Client(base_url=srv.url, timeout=120) as cl:
            for _ in range(4):  # the breaker opens on the way
                r = cl.post("/v1/optimize", json={**SMALL, "options": {"keep_egraph": True}})
                assert r.status_code == 503 and r.json()["error"]["code"] == "egraph_not_kept", r.text
            assert cl.post("/v1/optimize", json=SMALL).status_code == 200  # plans are still answered
            ready = cl.get("/readyz").json()
            assert ready["status"] == "ready" and ready["plan_cache"] == "down"
            # a kept e-graph asked for while the store is down: unknown, not "no such e-graph" (was a 404)
            r = cl.get("/v1/egraphs/" + "0" * 32)
            assert r.status_code == 503 and r.json()["error"]["code"] == "egraph_unavailable", r.text
