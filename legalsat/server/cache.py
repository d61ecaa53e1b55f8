"""The plan cache and the e-graph store: the backend interface, the SQLite backend (the
default: one file per service) and the factory that picks a backend from the settings (a
`LEGALSAT_CACHE_URL` of `redis://...` shares one cache among replicas: legalsat.server.cache_redis).

Every backend keeps the same keys (below) and the same planner-version rule. A shared
backend, whose store is another machine, answers a miss (and drops a write) rather than raise
or wait when that store fails: an outage costs plans, never requests.

The SQLite backend. Why SQLite in WAL mode with synchronous=NORMAL: a committed plan survives the service being
killed (`kill -9`) — WAL never leaves a torn database after a process crash, only an OS crash
can lose the last commits — and a lookup (primary-key read plus the LRU touch) costs ~60 µs.

Invariants:
- a key is the SHA-256 of the planner version and the request's canonical JSON (sorted keys,
  no whitespace, `request_id` left out): identical requests share a key, and a new planner
  version never reads an older version's plans (they are also deleted when the file opens);
- bodies are stored without `request_id` (the worker serializes them so); `splice_request_id`
  puts the caller's in front;
- at most `max_entries` plans of at most `max_bytes` bytes of bodies (least recently used are
  evicted) and `egraphs_kept` e-graphs (oldest first) are kept, in the file: processes that
  share it share the bounds;
- a file that fails SQLite's quick_check is moved aside (`.corrupt-<time>`) and a new one
  started: a damaged cache costs plans, never the service.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from legalsat.settings import Settings

log = logging.getLogger("legalsat.cache")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (
    key TEXT PRIMARY KEY, version TEXT NOT NULL, body BLOB NOT NULL,
    created REAL NOT NULL, used REAL NOT NULL);
CREATE INDEX IF NOT EXISTS plans_used ON plans(used);
CREATE TABLE IF NOT EXISTS egraphs (
    id TEXT PRIMARY KEY, version TEXT NOT NULL, created REAL NOT NULL,
    response BLOB NOT NULL, snapshot BLOB NOT NULL);
"""

# the plans' count and bytes, kept in the file by triggers: every process that opens the file
# (replicas on one host, a batch run beside the service) sees and bounds the same totals (a
# count kept per process let each fill the file to the whole bound). A file written before the
# table existed is counted once when the table is made, in the same transaction as its triggers.
_TOTALS = """
CREATE TABLE IF NOT EXISTS totals (
    id INTEGER PRIMARY KEY CHECK (id = 0), count INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO totals(id, count, bytes)
    SELECT 0, count(*), coalesce(sum(length(body)), 0) FROM plans;
CREATE TRIGGER IF NOT EXISTS plans_counted AFTER INSERT ON plans BEGIN
    UPDATE totals SET count = count + 1, bytes = bytes + length(NEW.body) WHERE id = 0; END;
CREATE TRIGGER IF NOT EXISTS plans_uncounted AFTER DELETE ON plans BEGIN
    UPDATE totals SET count = count - 1, bytes = bytes - length(OLD.body) WHERE id = 0; END;
"""


def canonical_json(obj: object) -> bytes:
    """Sorted keys, no whitespace: equal JSON values give equal bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def request_key(version: str, kind: str, obj: dict) -> str:
    """The cache key of a request object (its `request_id` does not count)."""
    body = {k: v for k, v in obj.items() if k != "request_id"}
    return hashlib.sha256(version.encode() + b"\0" + kind.encode() + b"\0" + canonical_json(body)).hexdigest()


def splice_request_id(body: bytes, request_id: str) -> bytes:
    """Put `request_id` back as the first member of a stored body."""
    rid = json.dumps(request_id).encode()
    return b'{"request_id":' + rid + (b"," + body[1:] if body != b"{}" else b"}")


@runtime_checkable
class CacheBackend(Protocol):
    """What the service needs of a plan cache. Bodies are stored without `request_id`; keys
    come from `request_key`; a backend never returns another planner version's entries."""

    #: True when calls go over the network: the service makes them off the event loop
    remote: bool
    #: remote backends: how long the service waits on one call, queue included (`call`)
    call_budget_s: float

    @property
    def available(self) -> bool:
        """False while the store is unreachable (calls are skipped: misses, writes not made)."""

    def describe(self) -> str:
        """Where the cache lives, for the log (no password)."""

    def get(self, key: str) -> bytes | None:
        """The stored body, or None (not stored, or the store is unavailable)."""

    def put(self, key: str, body: bytes) -> None:
        """Store a body; bounded by the backend's own eviction."""

    def put_egraph(self, egraph_id: str, response: dict, snapshot: str) -> bool:
        """Keep a request's e-graph snapshot and its response (without the snapshot); False
        when it could not be kept (the store is unavailable)."""

    def get_egraph(self, egraph_id: str) -> tuple[dict, str] | None:
        """(response, snapshot JSON) of a kept e-graph, or None."""

    def has_egraph(self, egraph_id: str) -> bool:
        """Whether an e-graph is kept (False too while the store is unavailable), without
        reading it: what a HEAD asks."""

    def overdue(self) -> None:
        """Told of a call the service stopped waiting for (remote backends: a failure)."""

    def __len__(self) -> int:
        """Entries held (for /readyz)."""

    def close(self) -> None: ...


# the threads that make a remote cache's calls: their own, so that a slow store queues its
# calls here and not in the loop's default executor, which other work shares
_REMOTE_CALLS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="legalsat-cache")


async def call(cache: CacheBackend, method: Callable, *args: object, default: object = None):
    """Call a cache method from the event loop: directly for a local backend (a SQLite lookup
    costs less than a thread hop), in a thread for a remote one (a slow network never stalls
    the loop). A remote call is waited for at most `cache.call_budget_s`, queue included: past
    it the answer is `default` (a miss, a write not made), the call is dropped if it has not
    started, and the backend is told (`overdue`, a failure for its breaker): a store slow
    enough that calls queue costs plans, never seconds per request."""
    if not cache.remote:
        return method(*args)
    job = asyncio.get_running_loop().run_in_executor(_REMOTE_CALLS, functools.partial(method, *args))
    try:
        async with asyncio.timeout(cache.call_budget_s):
            return await job
    except TimeoutError:
        cache.overdue()
        return default


def open_cache(settings: Settings, version: str,
               on_state: Callable[[str, str], None] | None = None,
               on_error: Callable[[str], None] | None = None) -> CacheBackend:
    """The backend the settings ask for: Redis for a `redis://`, `rediss://` or `unix://`
    LEGALSAT_CACHE_URL, else the SQLite file LEGALSAT_CACHE_PATH. `on_state(old, new)` is
    told of a shared cache's breaker changes and `on_error(operation)` of its failed calls."""
    if settings.cache_url:
        from legalsat.server.cache_redis import RedisPlanCache

        return RedisPlanCache(settings.cache_url, version, egraphs_kept=settings.egraphs_kept,
                              timeout_s=settings.cache_timeout_ms / 1000, retry_s=settings.cache_retry_s,
                              ttl_s=settings.cache_ttl_s, on_state=on_state, on_error=on_error)
    return PlanCache(settings.cache_path, version, settings.cache_max_entries, settings.egraphs_kept,
                     max_bytes=settings.cache_max_bytes)


class PlanCache:
    """The SQLite backend: plans and kept e-graphs (see the module docstring). Thread-safe."""

    remote = False
    available = True
    call_budget_s = 0.0  # called directly (`call`)

    def __init__(self, path: str, version: str, max_entries: int = 100_000, egraphs_kept: int = 64,
                 touch_every_s: float = 60.0, max_bytes: int = 512 << 20):
        self.path = path
        # the LRU order is kept to this resolution: a hit rewrites `used` only when it is older
        # (an UPDATE on every hit cost 6x the lookup, on the event loop)
        self.touch_every_s = touch_every_s
        self.version = version
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.egraphs_kept = egraphs_kept
        self._lock = threading.Lock()
        self.db = self._open()
        self.db.execute("DELETE FROM plans WHERE version != ?", (version,))
        self.db.execute("DELETE FROM egraphs WHERE version != ?", (version,))

    def totals(self) -> tuple[int, int]:
        """(plans, bytes of their bodies) in the file, whichever process stored them."""
        with self._lock:
            return self._totals()

    def _totals(self) -> tuple[int, int]:
        return self.db.execute("SELECT count, bytes FROM totals WHERE id = 0").fetchone()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path or ":memory:", check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA busy_timeout=5000")
        if self.path:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _open(self) -> sqlite3.Connection:
        if self.path:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            db = self._connect()
            ok = db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
            if ok:
                self._create(db)
                return db
            db.close()
        except sqlite3.DatabaseError as e:  # not a database, or torn beyond repair
            log.error("plan cache %s is unreadable (%s)", self.path, e)
        aside = f"{self.path}.corrupt-{int(time.time())}"
        log.error("plan cache %s failed its integrity check; moved to %s", self.path, aside)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.replace(self.path + suffix, aside + suffix)
        db = self._connect()
        self._create(db)
        return db

    @staticmethod
    def _create(db: sqlite3.Connection) -> None:
        db.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} {_TOTALS} COMMIT;")

    def describe(self) -> str:
        return f"SQLite {self.path}" if self.path else "SQLite in memory"

    # --- plans ---
    def get(self, key: str) -> bytes | None:
        """The stored body (without request_id), or None."""
        with self._lock:
            row = self.db.execute("SELECT body, used FROM plans WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            now = time.time()
            if now - row[1] >= self.touch_every_s:
                self.db.execute("UPDATE plans SET used = ? WHERE key = ?", (now, key))
            return row[0]

    def put(self, key: str, body: bytes) -> None:
        """Store a body (without request_id); evicts the least recently used past the bounds.
        A body of more than a tenth of `max_bytes` is not stored (it would evict a tenth)."""
        if len(body) > self.max_bytes // 10:
            return
        now = time.time()
        with self._lock:
            # one write transaction: another process's inserts cannot pass the bounds between
            # this insert, the totals it reads and the eviction
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute("INSERT OR IGNORE INTO plans(key, version, body, created, used) VALUES (?,?,?,?,?)",
                                (key, self.version, body, now, now))
                count, nbytes = self._totals()
                if count > self.max_entries or nbytes > self.max_bytes:
                    # down by a tenth of the bound passed, so that a full cache does not delete on every insert
                    entries, size = self.max_entries, self.max_bytes
                    if count > entries:
                        entries -= max(1, entries // 10)
                    if nbytes > size:
                        size -= size // 10
                    self._evict(count, nbytes, entries, size)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _evict(self, count: int, nbytes: int, entries: int, size: int) -> None:
        """Drop the least recently used plans until at most `entries` plans of at most `size`
        bytes remain (of `count` plans of `nbytes` now): the `used` index walked from its oldest
        end only as far as it takes (a window over the table reads and sorts every row, under
        the lock)."""
        keys, freed = [], 0
        for key, n in self.db.execute("SELECT key, length(body) FROM plans ORDER BY used"):
            if count - len(keys) <= entries and nbytes - freed <= size:
                break
            keys.append(key)
            freed += n
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            self.db.execute(f"DELETE FROM plans WHERE key IN ({','.join('?' * len(chunk))})", chunk)

    def __len__(self) -> int:
        return self.totals()[0]

    # --- e-graphs ---
    def put_egraph(self, egraph_id: str, response: dict, snapshot: str) -> bool:
        """Keep a request's e-graph snapshot and its response (without the snapshot)."""
        with self._lock:
            self.db.execute(
                "INSERT OR REPLACE INTO egraphs(id, version, created, response, snapshot) VALUES (?,?,?,?,?)",
                (egraph_id, self.version, time.time(), zlib.compress(canonical_json(response)),
                 zlib.compress(snapshot.encode(), 1)))
            self.db.execute("DELETE FROM egraphs WHERE id IN (SELECT id FROM egraphs ORDER BY created "
                            "DESC LIMIT -1 OFFSET ?)", (self.egraphs_kept,))
        return True

    def get_egraph(self, egraph_id: str) -> tuple[dict, str] | None:
        """(response, snapshot JSON) of a kept e-graph, or None."""
        with self._lock:
            row = self.db.execute("SELECT response, snapshot FROM egraphs WHERE id = ?",
                                  (egraph_id,)).fetchone()
        if row is None:
            return None
        return json.loads(zlib.decompress(row[0])), zlib.decompress(row[1]).decode()

    def has_egraph(self, egraph_id: str) -> bool:
        with self._lock:
            return self.db.execute("SELECT 1 FROM egraphs WHERE id = ?", (egraph_id,)).fetchone() is not None

    def overdue(self) -> None:  # never: its calls are made directly
        pass

    def integrity(self) -> str:
        """SQLite's quick_check verdict ("ok" when sound)."""
        with self._lock:
            return self.db.execute("PRAGMA quick_check").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self.db.close()
