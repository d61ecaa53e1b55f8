"""The persistent plan cache and the e-graph store, in one SQLite file.

Why SQLite in WAL mode with synchronous=NORMAL: a committed plan survives the service being
killed (`kill -9`) — WAL never leaves a torn database after a process crash, only an OS crash
can lose the last commits — and a lookup (primary-key read plus the LRU touch) costs ~60 µs.

Invariants:
- a key is the SHA-256 of the planner version and the request's canonical JSON (sorted keys,
  no whitespace, `request_id` left out): identical requests share a key, and a new planner
  version never reads an older version's plans (they are also deleted when the file opens);
- bodies are stored without `request_id` (the worker serializes them so); `splice_request_id`
  puts the caller's in front;
- at most `max_entries` plans (least recently used are evicted) and `egraphs_kept` e-graphs
  (oldest first) are kept;
- a file that fails SQLite's quick_check is moved aside (`.corrupt-<time>`) and a new one
  started: a damaged cache costs plans, never the service.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import zlib
from pathlib import Path

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


class PlanCache:
    """Plans and kept e-graphs (see the module docstring). Thread-safe."""

    def __init__(self, path: str, version: str, max_entries: int = 100_000, egraphs_kept: int = 64,
                 touch_every_s: float = 60.0):
        self.path = path
        # the LRU order is kept to this resolution: a hit rewrites `used` only when it is older
        # (an UPDATE on every hit cost 6x the lookup, on the event loop)
        self.touch_every_s = touch_every_s
        self.version = version
        self.max_entries = max_entries
        self.egraphs_kept = egraphs_kept
        self._lock = threading.Lock()
        self.db = self._open()
        self.db.execute("DELETE FROM plans WHERE version != ?", (version,))
        self.db.execute("DELETE FROM egraphs WHERE version != ?", (version,))
        self._count = self.db.execute("SELECT count(*) FROM plans").fetchone()[0]

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
                db.executescript(_SCHEMA)
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
        db.executescript(_SCHEMA)
        return db

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
        """Store a body (without request_id); evicts the least recently used past the bound."""
        now = time.time()
        with self._lock:
            cur = self.db.execute(
                "INSERT OR IGNORE INTO plans(key, version, body, created, used) VALUES (?,?,?,?,?)",
                (key, self.version, body, now, now))
            self._count += cur.rowcount
            if self._count > self.max_entries:
                # evict a tenth at a time so that a full cache does not delete on every insert
                drop = self._count - self.max_entries + max(1, self.max_entries // 10)
                self.db.execute("DELETE FROM plans WHERE key IN (SELECT key FROM plans ORDER BY used "
                                "LIMIT ?)", (drop,))
                self._count = self.db.execute("SELECT count(*) FROM plans").fetchone()[0]

    def __len__(self) -> int:
        return self._count

    # --- e-graphs ---
    def put_egraph(self, egraph_id: str, response: dict, snapshot: str) -> None:
        """Keep a request's e-graph snapshot and its response (without the snapshot)."""
        with self._lock:
            self.db.execute(
                "INSERT OR REPLACE INTO egraphs(id, version, created, response, snapshot) VALUES (?,?,?,?,?)",
                (egraph_id, self.version, time.time(), zlib.compress(canonical_json(response)),
                 zlib.compress(snapshot.encode(), 1)))
            self.db.execute("DELETE FROM egraphs WHERE id IN (SELECT id FROM egraphs ORDER BY created "
                            "DESC LIMIT -1 OFFSET ?)", (self.egraphs_kept,))

    def get_egraph(self, egraph_id: str) -> tuple[dict, str] | None:
        """(response, snapshot JSON) of a kept e-graph, or None."""
        with self._lock:
            row = self.db.execute("SELECT response, snapshot FROM egraphs WHERE id = ?",
                                  (egraph_id,)).fetchone()
        if row is None:
            return None
        return json.loads(zlib.decompress(row[0])), zlib.decompress(row[1]).decode()

    def integrity(self) -> str:
        """SQLite's quick_check verdict ("ok" when sound)."""
        with self._lock:
            return self.db.execute("PRAGMA quick_check").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self.db.close()
