"""The shared plan cache: one Redis database for every replica of the service
(LEGALSAT_CACHE_URL=redis://host:port/db; the `redis` extra).

Keys (the planner version is in every key, so a new planner version never reads an older
version's entries; those are never read again and go with Redis's eviction or their TTL):

    legalsat:<version>:plan:<request key>    the body, without request_id (request_key())
    legalsat:<version>:egraph:<id>           hash {response, snapshot}, zlib-compressed
    legalsat:<version>:egraphs               sorted set of kept e-graph ids by time kept

Bounds: plans are bounded by Redis's own eviction (run it with `maxmemory` and
`maxmemory-policy allkeys-lru`; a read counts as a use) and, when LEGALSAT_CACHE_TTL_S is set,
expire that long after their last use. Kept e-graphs are shared too (the viewer of one replica
shows an e-graph kept by another): the fleet keeps the last LEGALSAT_EGRAPHS_KEPT, trimmed
atomically by a script when one is added.

Failure: every call has a short socket timeout (LEGALSAT_CACHE_TIMEOUT_MS) and no retry, and
goes through a circuit breaker (legalsat.server.breaker): after 3 failed calls in a row the
cache is skipped (lookups miss, writes are dropped) for LEGALSAT_CACHE_RETRY_S, then one call
tries it again. A Redis outage costs plans (every request is planned), never a failed or
stalled request. State changes are logged and counted (legalsat_plan_cache_up,
legalsat_plan_cache_breaker_changes_total).
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from legalsat.server.breaker import CLOSED, CircuitBreaker
from legalsat.server.cache import canonical_json

log = logging.getLogger("legalsat.cache")

FAILURES_TO_OPEN = 3

# KEYS: the e-graph's hash, the index; ARGV: id, response, snapshot, kept, ttl, key prefix.
# Scored by Redis's clock (one clock for every replica); the oldest past `kept` are deleted.
_PUT_EGRAPH = """
redis.call('HSET', KEYS[1], 'response', ARGV[2], 'snapshot', ARGV[3])
local t = redis.call('TIME')
redis.call('ZADD', KEYS[2], tonumber(t[1]) + tonumber(t[2]) / 1e6, ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if over > 0 then
  for _, old in ipairs(redis.call('ZRANGE', KEYS[2], 0, over - 1)) do
    redis.call('DEL', ARGV[6] .. old)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1)
end
if tonumber(ARGV[5]) > 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  redis.call('EXPIRE', KEYS[2], ARGV[5])
end
return over
"""


def redacted(url: str) -> str:
    """The URL without its password (for logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    user = f"{parts.username}:***@" if parts.username else ":***@"
    netloc = user + host + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RedisPlanCache:
    """A CacheBackend on Redis (see the module docstring). Thread-safe (redis-py's pool)."""

    remote = True

    def __init__(self, url: str, version: str, egraphs_kept: int = 64, timeout_s: float = 0.25,
                 retry_s: float = 5.0, ttl_s: int = 0,
                 on_state: Callable[[str, str], None] | None = None,
                 on_error: Callable[[str], None] | None = None):
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise RuntimeError("LEGALSAT_CACHE_URL names a Redis cache but the redis client is not "
                               "installed: pip install 'legalsat[redis]'") from None
        self.url = redacted(url)
        self.version = version
        self.egraphs_kept = egraphs_kept
        self.ttl_s = ttl_s
        self.prefix = f"legalsat:{version}:"
        self._on_state = on_state
        self._on_error = on_error
        self._errors = (redis.RedisError, OSError)
        # no retry: a failed call is a miss (the breaker decides when to try again)
        self.client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                           retry=Retry(NoBackoff(), 0), retry_on_timeout=False,
                                           health_check_interval=0)
        self.breaker = CircuitBreaker(FAILURES_TO_OPEN, retry_s, on_change=self._changed)
        self._put_egraph = self.client.register_script(_PUT_EGRAPH)
        self._size = 0
        self._run("ping", self.client.ping)  # only to log the state at start: never raises

    # --- the breaker around every call ---
    def _run(self, op: str, fn: Callable, *args: object, **kwargs: object):
        """fn(...) through the breaker; None when skipped or failed."""
        if not self.breaker.allow():
            return None
        try:
            out = fn(*args, **kwargs)
        except Exception as e:  # a cache failure is a miss, whatever it is
            log.warning("plan cache %s: %s failed: %s: %s", self.url, op, type(e).__name__, e,
                        exc_info=not isinstance(e, self._errors))
            self.breaker.record(False)
            if self._on_error is not None:
                self._on_error(op)
            return None
        except BaseException:
            self.breaker.record(False)  # never leave a half-open trial outstanding
            raise
        self.breaker.record(True)
        return out

    def _changed(self, old: str, new: str) -> None:
        if new == CLOSED:
            log.warning("plan cache %s answers again: in use", self.url)
        elif old == CLOSED:
            log.warning("plan cache %s failed %d calls in a row: skipped (requests are planned) and "
                        "tried again every %g s", self.url, FAILURES_TO_OPEN, self.breaker.reset_s)
        else:
            log.info("plan cache %s: breaker %s -> %s", self.url, old, new)
        if self._on_state is not None:
            self._on_state(old, new)

    @property
    def available(self) -> bool:
        return self.breaker.state == CLOSED

    def describe(self) -> str:
        return f"Redis {self.url} (shared, {self.breaker.state})"

    # --- plans ---
    def get(self, key: str) -> bytes | None:
        k = self.prefix + "plan:" + key
        if self.ttl_s:  # a hit renews the TTL: entries expire ttl_s after their last use
            return self._run("get", self.client.getex, k, ex=self.ttl_s)
        return self._run("get", self.client.get, k)

    def put(self, key: str, body: bytes) -> None:
        self._run("put", self.client.set, self.prefix + "plan:" + key, body, ex=self.ttl_s or None)

    def __len__(self) -> int:
        """Keys in the Redis database (every version's plans and e-graphs; the last known
        count while Redis is unavailable)."""
        n = self._run("size", self.client.dbsize)
        if n is not None:
            self._size = int(n)
        return self._size

    # --- e-graphs ---
    def put_egraph(self, egraph_id: str, response: dict, snapshot: str) -> None:
        self._run("put_egraph", self._put_egraph,
                  keys=[self.prefix + "egraph:" + egraph_id, self.prefix + "egraphs"],
                  args=[egraph_id, zlib.compress(canonical_json(response)), zlib.compress(snapshot.encode(), 1),
                        self.egraphs_kept, self.ttl_s, self.prefix + "egraph:"])

    def get_egraph(self, egraph_id: str) -> tuple[dict, str] | None:
        row = self._run("get_egraph", self.client.hmget, self.prefix + "egraph:" + egraph_id,
                        ["response", "snapshot"])
        if row is None or row[0] is None or row[1] is None:
            return None
        return json.loads(zlib.decompress(row[0])), zlib.decompress(row[1]).decode()

    def close(self) -> None:
        self.client.close()
