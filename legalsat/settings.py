"""legalsat's one settings object: environment variables `LEGALSAT_*`, then command-line flags.

Nothing else in the package reads the environment; components receive a `Settings`.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_worker_memory_mb() -> int:
    """A share of the machine's memory per planning worker: 3/4 of it over the workers."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    except (ValueError, OSError, AttributeError):
        return 4096
    return max(512, total * 3 // 4 // max(1, os.cpu_count() or 1))


def _default_cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "legalsat" / "plans.sqlite3")


class Settings(BaseSettings):
    """Every tunable, with its default. Flags passed to `get_settings` override the environment."""

    model_config = SettingsConfigDict(env_prefix="LEGALSAT_", extra="ignore", frozen=True)

    target: str = Field("sm90", description="default hardware target (sm90, sm100, gfx942)")
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=256,
                         description="worker processes for CPU-bound work (default: all cores)")
    worker_memory_mb: int = Field(default_factory=_default_worker_memory_mb, ge=256, le=1 << 20,
                                  description="memory (data) a planning worker may hold, MiB; a request needing "
                                              "more is answered memory_limit (default: 3/4 of the machine over "
                                              "its cores)")
    max_body_bytes: int = Field(1 << 20, ge=1024,
                                description="largest request body / JSON line accepted, bytes")
    # --- service (legalsat serve) ---
    host: str = Field("127.0.0.1", description="address the service listens on")
    allowed_hosts: list[str] = Field(["*"], description="Host header values the service answers (a "
                                     "JSON list; \"*\": any; \"*.example.com\": a domain's hosts)")
    max_header_bytes: int = Field(64 * 1024, ge=1024, le=16 << 20,
                                  description="largest request head (request line and headers), bytes")
    body_timeout_s: float = Field(30.0, gt=0, le=3600, description="time a client has to send a request's "
                                  "body; past it: 408")
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
    egraphs_kept: int = Field(64, ge=1, le=100_000,
                              description="e-graphs kept for the viewer (keep_egraph requests)")
    viewer_max_eclasses: int = Field(250, ge=10, le=100_000,
                                     description="e-classes drawn by the viewer before it collapses")
    max_batch_items: int = Field(256, ge=1, le=100_000, description="requests in one batch")
    token: SecretStr | None = Field(None, description="bearer token every /v1 route requires (unset: open)")
    shutdown_grace_s: float = Field(30.0, ge=0, description="how long shutdown waits for in-flight requests")
    log_level: str = Field("info", description="uvicorn log level")


def get_settings(**overrides: object) -> Settings:
    """Settings from the environment, with non-None `overrides` (command-line flags) on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
