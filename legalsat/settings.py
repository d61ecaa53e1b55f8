"""legalsat's one settings object: environment variables `LEGALSAT_*`, then command-line flags.

Nothing else in the package reads the environment; components receive a `Settings`.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def _cgroup_dirs(root: str, proc_cgroup: str) -> list[Path]:
    """This process's cgroup v2 directory and its ancestors up to `root` (a limit anywhere on
    the way applies). In a container (its own cgroup namespace) that is `root` alone."""
    base = Path(root)
    try:
        rel = next((line[3:] for line in Path(proc_cgroup).read_text().splitlines() if line.startswith("0::")), "/")
    except OSError:
        rel = "/"
    d = base / rel.strip().lstrip("/")
    if not d.is_dir():
        d = base
    dirs = [d]
    while d != base and base in d.parents:
        d = d.parent
        dirs.append(d)
    return dirs


def cgroup_limits(root: str | None = None, proc_cgroup: str | None = None) -> tuple[int | None, int | None]:
    """(CPUs, bytes) the cgroup v2 limits allow this process: the CPU quota `cpu.max`
    ("quota period", rounded up, at least 1) and `memory.max`, the smallest on the way to the
    root; None where nothing is limited (or there is no cgroup v2)."""
    cpus = mem = None
    for d in _cgroup_dirs(root or CGROUP_ROOT, proc_cgroup or PROC_CGROUP):
        try:
            quota, period = (d / "cpu.max").read_text().split()[:2]
            if quota != "max":
                n = max(1, math.ceil(int(quota) / int(period)))
                cpus = n if cpus is None else min(cpus, n)
        except (OSError, ValueError, ZeroDivisionError):
            pass
        try:
            text = (d / "memory.max").read_text().strip()
            if text != "max":
                mem = int(text) if mem is None else min(mem, int(text))
        except (OSError, ValueError):
            pass
    return cpus, mem


def usable_cpus(root: str | None = None, proc_cgroup: str | None = None) -> int:
    """The CPUs this process may use: its affinity mask (`taskset`, `docker --cpuset-cpus`),
    capped by its cgroup's CPU quota (`docker --cpus`, a Kubernetes CPU limit); at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = cgroup_limits(root, proc_cgroup)[0]
    return max(1, min(n, quota) if quota else n)


def _default_worker_memory_mb() -> int:
    """A share of the memory this process may use per planning worker: 3/4 of the machine's
    (or of its cgroup's `memory.max`, when smaller) over the CPUs it may use."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4096
    limit = cgroup_limits()[1]
    if limit:
        total = min(total, limit)
    return max(512, (total >> 20) * 3 // 4 // usable_cpus())


def _default_cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "legalsat" / "plans.sqlite3")


class Settings(BaseSettings):
    """Every tunable, with its default. Flags passed to `get_settings` override the environment."""

    model_config = SettingsConfigDict(env_prefix="LEGALSAT_", extra="ignore", frozen=True)

    target: str = Field("sm90", description="default hardware target of every route (a request's own target "
                        "comes first): sm90, sm100, gfx942")
    workers: int = Field(default_factory=lambda: min(256, usable_cpus()), ge=1, le=256,
                         description="worker processes for CPU-bound work (default: the CPUs the process "
                                     "may use: its affinity mask capped by its cgroup CPU quota)")
    # a warmed-up worker holds 225 MiB of data before it plans anything, whatever the host's CPUs
    # (its native pools run one thread), and starts under no less (benchmarks/worker_memory.json)
    worker_memory_mb: int = Field(default_factory=_default_worker_memory_mb, ge=512, le=1 << 20,
                                  description="memory (data) a planning worker may hold, MiB; a request needing "
                                              "more is answered memory_limit (default: 3/4 of the machine's, or "
                                              "its cgroup's, memory over the CPUs it may use)")
    max_body_bytes: int = Field(1 << 20, ge=1024, le=1 << 31,
                                description="largest request body / JSON line accepted, bytes")
    # --- service (legalsat serve) ---
    host: str = Field("127.0.0.1", description="address the service listens on")
    allowed_hosts: list[str] = Field(["*"], description="Host header values the service answers (a "
                                     "JSON list; \"*\": any; \"*.example.com\": a domain's hosts)")
    max_header_bytes: int = Field(64 * 1024, ge=1024, le=16 << 20,
                                  description="largest request head (request line and headers), bytes")
    body_timeout_s: float = Field(30.0, gt=0, le=3600, description="time a client has to send a request's "
                                  "body; past it: 408")
    head_timeout_s: float = Field(10.0, gt=0, le=3600, description="time a client has to send a request's "
                                  "line and headers, from its first byte (or from connecting); past it: 408, "
                                  "and the connection is closed")
    port: int = Field(8000, ge=0, le=65535, description="TCP port of the service")
    queue_size: int = Field(256, ge=1, le=1 << 20,
                            description="planning jobs that may wait for a worker; past it: 429")
    deadline_ms: int = Field(30_000, ge=10, le=3_600_000,
                             description="hard deadline of one request (an optimize request's own "
                                         "options.timeout_ms is used when smaller); past it: 504 "
                                         "and the worker is replaced")
    deadline_grace_ms: int = Field(1000, ge=0, le=600_000,
                                   description="added to a request's planning budget before its worker is "
                                               "killed (process overhead; the planner itself keeps to the budget)")
    cache_path: str = Field(default_factory=_default_cache_path,
                            description='SQLite file of the plan cache; "" keeps it in memory only')
    cache_max_entries: int = Field(100_000, ge=1, description="plans kept in the cache (least "
                                   "recently used go first)")
    cache_max_bytes: int = Field(512 << 20, ge=1 << 20, description="bytes of plans kept in the cache (least "
                                 "recently used go first; an answer of more than a tenth is not stored): what "
                                 "plans take of an in-memory cache's memory or a file cache's disk (kept e-graphs "
                                 "are bounded apart: egraphs_kept x egraph_max_bytes)")
    cache_url: str = Field("", description='a plan cache shared by replicas: "redis://host:port/db" '
                           '(or rediss://, unix://; needs the redis extra); "" uses the SQLite file '
                           "cache_path")
    cache_timeout_ms: int = Field(250, ge=1, le=60_000, description="shared cache: how long one call may "
                                  "wait on Redis before it counts as failed (the request is planned)")
    cache_retry_s: float = Field(5.0, gt=0, le=3600, description="shared cache: after 3 failed calls in a "
                                 "row it is skipped this long, then tried again")
    cache_ttl_s: int = Field(0, ge=0, description="shared cache: entries expire this long after their last "
                             "use (0: only Redis's own maxmemory eviction bounds them)")
    egraphs_kept: int = Field(64, ge=1, le=100_000,
                              description="e-graphs kept for the viewer (keep_egraph requests)")
    egraph_pages_bytes: int = Field(64 << 20, ge=0, le=1 << 34,
                                    description="bytes of built e-graph pages and documents the service keeps for "
                                    "the next GET (least recently used out; 0: each GET builds its page)")
    egraph_max_bytes: int = Field(32 << 20, ge=1 << 16, le=1 << 31,
                                  description="bytes of one kept e-graph (egglog's JSON of it, about 390 an "
                                  "e-node) at most: a larger one is answered without being kept (warning "
                                  "egraph_too_large), and the viewer's work on each one stays bounded")
    viewer_max_eclasses: int = Field(400, ge=10, le=100_000,
                                     description="e-classes the viewer draws; past it, the plans' neighbourhood")
    viewer_first_eclasses: int = Field(120, ge=1, le=100_000,
                                       description="e-classes the viewer draws when it opens (nearest the plans)")
    viewer_collapse_enodes: int = Field(150, ge=0, le=1_000_000,
                                        description="e-nodes past which the viewer starts with e-classes collapsed")
    max_batch_items: int = Field(256, ge=1, le=100_000, description="requests in one batch")
    token: SecretStr | None = Field(None, description="bearer token every /v1 route requires (unset: open)")
    shutdown_grace_s: float = Field(30.0, ge=0, le=3600, description="how long shutdown waits for in-flight requests")
    log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = Field(
        "info", description="uvicorn log level: critical, error, warning, info, debug or trace")

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        if not v.strip():  # uvicorn would listen on every interface
            raise ValueError('the address is empty, which would listen on every interface; give "127.0.0.1" '
                             '(this machine only, the default) or "0.0.0.0" to listen on all of them')
        return v

    @field_validator("token")
    @classmethod
    def _token(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and not v.get_secret_value().strip():  # would match an empty Authorization
            raise ValueError("the token is empty, which any request without one would match; unset the "
                             "variable to run the service open, or give a secret")
        return v

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError('the list is empty: every request would be refused (bad_host); give the host names '
                             'clients use, or ["*"] for any')
        # the Host header is compared up to its first ':' (Starlette's TrustedHostMiddleware):
        # an entry with a port, or an IPv6 literal, would never match and refuse every request
        for h in v:
            if ":" in h:
                raise ValueError(f"the entry {h[:100]!r} holds a ':'; the Host header is compared without its "
                                 f"port: write {h.split(':')[0][:100]!r}" + (" (an IPv6 literal cannot be matched: "
                                 "use a host name)" if h.startswith("[") else ""))
        return v

    @field_validator("cache_url")
    @classmethod
    def _cache_url(cls, v: str) -> str:
        if v and not v.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError('LEGALSAT_CACHE_URL is a Redis URL ("redis://host:port/db", rediss://, '
                             'unix://) or "" for the SQLite file cache')
        if v:
            _check_redis_url(v)
        return v


# credentials redis-py also takes as URL options (?password=, ?username=)
_QUERY_SECRETS = re.compile(r"([?&](?:password|username)=)[^&#]*", re.IGNORECASE)


def redacted(url: str) -> str:
    """A cache URL without its password (for logs and messages), whether or not it parses:
    `user:***@host`, or `***@host` where the user part may be the password alone, and the
    `password` and `username` options masked. The credentials end at the last `@` (a password
    may hold `/`, `?` or `#`)."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return _QUERY_SECRETS.sub(r"\1***", url)
    userinfo, _, after = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    return _QUERY_SECRETS.sub(r"\1***", f"{scheme}://{user + ':***' if colon else '***'}@{after}")


# redis-py lets these URL options override the service's own timeouts (a stalled Redis then
# held each request for their value, not LEGALSAT_CACHE_TIMEOUT_MS)
_REDIS_URL_TIMEOUTS = ("socket_timeout", "socket_connect_timeout", "timeout", "retry_on_timeout", "retry_on_error",
                       "health_check_interval")


def _check_redis_url(url: str) -> None:
    """What redis-py would misread in LEGALSAT_CACHE_URL, refused (messages never quote the
    URL: it may hold a password): a port or database index that is not a number (the index
    was silently taken as 0), a broken IPv6 host, options that override the timeouts."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  parsing it is the check
    except ValueError:  # its text may quote part of the password: not repeated
        raise ValueError("its host and port cannot be read; write redis://[user:password@]host:port/db with a "
                         "numeric port, an IPv6 host in [brackets] and a password holding / ? # percent-encoded") from None
    query = parse_qs(parts.query)
    db = query.get("db", [parts.path.lstrip("/")] if parts.scheme != "unix" else [""])[-1]
    if db and not db.isdigit():  # not quoted: a password holding "/" is read as the path
        raise ValueError("the database index (the URL's path, or its db option) is not a number (redis-py would "
                         "use database 0); write /0, /1, ..., and percent-encode a / in the password")
    fixed = sorted(set(query) & set(_REDIS_URL_TIMEOUTS))
    if fixed:
        raise ValueError(f"the option(s) {', '.join(fixed)} would override the service's own timeouts; "
                         "leave them out and set LEGALSAT_CACHE_TIMEOUT_MS")
    try:  # the options as redis-py builds a connection from them (nothing is connected)
        import redis
    except ImportError:  # the service says so when it opens the cache
        return
    try:
        redis.ConnectionPool.from_url(url).make_connection()
    except (ValueError, TypeError) as e:  # its message names the option, never the password
        raise ValueError(f"redis-py cannot use its options: {str(e)[:200]}; leave the option out or give "
                         "it a value of its type") from None


# the settings a command other than `serve` reads (the rest are the service's)
COMMAND_LINE_SETTINGS = frozenset({"target", "workers", "max_body_bytes"})


def get_settings(**overrides: object) -> Settings:
    """Settings from the environment, with non-None `overrides` (command-line flags) on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
