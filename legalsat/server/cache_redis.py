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
tries it again. A call the service gave up on (legalsat.server.cache.call: a Redis slow enough
that calls queue) counts as failed too. A Redis outage costs plans (every request is planned),
never a failed or stalled request. State changes are logged and counted
(legalsat_plan_cache_up, legalsat_plan_cache_breaker_changes_total). A Redis that answers but
refuses writes (full under `noeviction`, a read-only replica, an ACL without the commands) is
up: its reads are still used, and the refusal is logged once with what to change.

Integrity: every value is sealed with a digest of its key and bytes. A value this service did
not write under that key (truncated, corrupt, another program's, an older format) is deleted
and counted, and the request is planned: a shared database cannot feed one replica's garbage
to every other.
"""

from __future__ import annotations

import hashlib
import json
import logging
import zlib
from collections.abc import Callable

from legalsat.server.breaker import CLOSED, CircuitBreaker
from legalsat.server.cache import canonical_json
from legalsat.settings import redacted

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


SEAL_BYTES = 16  # the BLAKE2b digest in front of every stored value


def sealed(key: str, value: bytes) -> bytes:
    """`value` as stored under `key`: a digest of both, then the value."""
    return hashlib.blake2b(key.encode() + b"\0" + value, digest_size=SEAL_BYTES).digest() + value


def unsealed(key: str, stored: bytes) -> bytes | None:
    """The value `sealed` stored under `key`, or None for bytes it did not write there."""
    value = stored[SEAL_BYTES:]
    return value if len(stored) >= SEAL_BYTES and sealed(key, value) == stored else None


# the fix for a Redis that answers but refuses a write, by redis-py's error class
_REFUSAL_FIX = {"OutOfMemoryError": "run Redis with maxmemory-policy allkeys-lru (or give it more maxmemory): "
                                    "it is full and its policy evicts nothing",
                "ReadOnlyError": "point LEGALSAT_CACHE_URL at the primary, not a read-only replica",
                "NoPermissionError": "let LEGALSAT_CACHE_URL's user run GET, GETEX, SET, DEL, HSET, HMGET, "
                                     "EVALSHA and DBSIZE on the legalsat:* keys"}


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
        # Redis answered, refusing: it is up (a breaker failure would also skip the reads)
        self._refusals = (redis.exceptions.OutOfMemoryError, redis.exceptions.ReadOnlyError,
                          redis.exceptions.NoPermissionError)
        self._refusals_logged: set[str] = set()
        # queue included, how long the service waits on one call (cache.call): a connect and a
        # reply, each within the socket timeout
        self.call_budget_s = 2 * timeout_s + 0.05
        # no retry: a failed call is a miss (the breaker decides when to try again)
        self.client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                           retry=Retry(NoBackoff(), 0), retry_on_timeout=False,
                                           health_check_interval=0)
        self.breaker = CircuitBreaker(FAILURES_TO_OPEN, retry_s, on_change=self._changed)
        self._put_egraph = self.client.register_script(_PUT_EGRAPH)
        self._size = 0
        self._check_at_start()

    def _check_at_start(self) -> None:
        """One PING, to say at start what is wrong in LEGALSAT_CACHE_URL if anything (never
        raises: the service starts and plans without the cache, which it keeps trying)."""
        try:
            self.client.ping()
        except Exception as e:  # noqa: BLE001  logged, named; the breaker takes it from here
            text = str(e)
            fix = ("correct the password (or user) in LEGALSAT_CACHE_URL" if "AUTH" in text.upper()
                   or type(e).__name__ == "AuthenticationError" else
                   "use a database index the server has (redis.conf `databases`, 16 by default)"
                   if "DB index" in text else
                   "check that LEGALSAT_CACHE_URL names a running Redis server (scheme, host, port; "
                   "rediss:// only for a TLS server)")
            log.error("plan cache %s does not answer at start: %s: %s\n  fix: %s (requests are planned "
                      "without the shared cache meanwhile; it is tried again every %g s)", self.url,
                      type(e).__name__, text, fix, self.breaker.reset_s)
            self.breaker.failed_outside()
        else:
            log.info("plan cache %s answers", self.url)

    # --- the breaker around every call ---
    def _run(self, op: str, fn: Callable, *args: object, **kwargs: object):
        """fn(...) through the breaker; None when skipped or failed."""
        ticket = self.breaker.allow()
        if not ticket:
            return None
        try:
            out = fn(*args, **kwargs)
        except self._refusals as e:
            self.breaker.record(True, ticket)
            self._refused(op, e)
            return None
        except Exception as e:  # a cache failure is a miss, whatever it is
            log.warning("plan cache %s: %s failed: %s: %s", self.url, op, type(e).__name__, e,
                        exc_info=not isinstance(e, self._errors))
            self.breaker.record(False, ticket)
            if self._on_error is not None:
                self._on_error(op)
            return None
        except BaseException:
            self.breaker.record(False, ticket)  # never leave a half-open trial outstanding
            raise
        self.breaker.record(True, ticket)
        return out

    def _refused(self, op: str, e: Exception) -> None:
        kind = type(e).__name__
        if kind not in self._refusals_logged:  # once per kind: every write would repeat it
            self._refusals_logged.add(kind)
            log.warning("plan cache %s refuses %s: %s (its reads are still used; this is logged once)\n"
                        "  fix: %s", self.url, op, e, _REFUSAL_FIX.get(kind, "see Redis's reply"))
        if self._on_error is not None:
            self._on_error(op)

    def overdue(self) -> None:
        """A call the service stopped waiting for (cache.call): a failure for the breaker."""
        self.breaker.failed_outside()
        if self._on_error is not None:
            self._on_error("overdue")

    def _discard(self, key: str, what: str) -> None:
        """Delete a value this service did not write (see Integrity), and say so."""
        log.warning("plan cache %s: the %s under %s is not one legalsat wrote there (corrupt, truncated, "
                    "foreign or of an older format): deleted; the request is planned", self.url, what, key)
        self._run("discard", self.client.delete, key)
        if self._on_error is not None:
            self._on_error("corrupt")

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
            stored = self._run("get", self.client.getex, k, ex=self.ttl_s)
        else:
            stored = self._run("get", self.client.get, k)
        if stored is None:
            return None
        body = unsealed(k, stored)
        if body is None:
            self._discard(k, "plan")
        return body

    def put(self, key: str, body: bytes) -> None:
        k = self.prefix + "plan:" + key
        self._run("put", self.client.set, k, sealed(k, body), ex=self.ttl_s or None)

    def __len__(self) -> int:
        """Keys in the Redis database (every version's plans and e-graphs; the last known
        count while Redis is unavailable)."""
        n = self._run("size", self.client.dbsize)
        if n is not None:
            self._size = int(n)
        return self._size

    # --- e-graphs ---
    def put_egraph(self, egraph_id: str, response: dict, snapshot: str) -> bool:
        k = self.prefix + "egraph:" + egraph_id
        over = self._run("put_egraph", self._put_egraph, keys=[k, self.prefix + "egraphs"],
                         args=[egraph_id, sealed(k + "/response", zlib.compress(canonical_json(response))),
                               sealed(k + "/snapshot", zlib.compress(snapshot.encode(), 1)),
                               self.egraphs_kept, self.ttl_s, self.prefix + "egraph:"])
        return over is not None

    def get_egraph(self, egraph_id: str) -> tuple[dict, str] | None:
        k = self.prefix + "egraph:" + egraph_id
        row = self._run("get_egraph", self.client.hmget, k, ["response", "snapshot"])
        if row is None or row[0] is None or row[1] is None:
            return None
        response, snapshot = unsealed(k + "/response", row[0]), unsealed(k + "/snapshot", row[1])
        try:
            if response is not None and snapshot is not None:
                return json.loads(zlib.decompress(response)), zlib.decompress(snapshot).decode()
        except (zlib.error, ValueError):  # sealed but unreadable: written by a build that erred
            pass
        self._discard(k, "e-graph")
        return None

    def has_egraph(self, egraph_id: str) -> bool:
        # the key alone: an entry whose seal does not hold is found out (and dropped) by the GET
        return bool(self._run("has_egraph", self.client.exists, self.prefix + "egraph:" + egraph_id))

    def close(self) -> None:
        self.client.close()
