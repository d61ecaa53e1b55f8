"""The FastAPI application factory.

    create_app(settings) -> FastAPI

The lifespan opens the plan cache and starts the worker pool before the first request and,
at shutdown (after uvicorn has finished the in-flight requests), stops the workers and
closes the cache. Routes are thin: the same models and functions as the command line.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

import legalsat
from legalsat.api import PLANNER_VERSION
from legalsat.server import openapi
from legalsat.server.cache import open_cache
from legalsat.server.deps import ServiceState, known_query_parameters, require_token
from legalsat.server.errors import HostAllowList, NoSniff, install_error_handlers
from legalsat.server.metrics import Metrics, MetricsMiddleware
from legalsat.server.pages import BuiltPages
from legalsat.server.pool import WorkerPool, WorkerStartError
from legalsat.server.routers import analyze, docs, egraphs, health, optimize, verify
from legalsat.settings import Settings, get_settings
from legalsat.targets import resolve_target

log = logging.getLogger("legalsat.server")
STATIC = Path(__file__).parent / "static"

DESCRIPTION = """legalsat plans GPU data movement: equality saturation over layouts, TMA
legality that agrees with the CUDA driver, bank conflicts that agree with Nsight Compute,
verified asynchronous protocols, islpy-proven lowering plans.

Every error is `{"error": {"code", "message", "fix", "field"}}`. When the server has a token,
every `/v1` route needs `Authorization: Bearer <token>`."""


class ShutdownClock:
    """A shutdown's grace (LEGALSAT_SHUTDOWN_GRACE_S), from the signal that began it. The
    server waits that long for the requests in flight, then cuts them (uvicorn answered such a
    request a plain-text 500); so a little before (`margin_s`) the jobs still awaited answer
    503 shutting_down (`ServiceState.stopping`), and the workers are given what is left of the
    grace, not a second one."""

    def __init__(self, grace_s: float):
        self.grace_s = grace_s
        self.margin_s = min(1.0, grace_s / 4)
        self.started: float | None = None
        self._armed: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def bind(self, loop: asyncio.AbstractEventLoop, stopping: asyncio.Event) -> None:
        self._armed = (loop, stopping)

    def begin(self) -> None:
        """The shutdown's signal (from its handler, outside the event loop: idempotent)."""
        if self.started is not None:
            return
        self.started = time.monotonic()
        if self._armed is not None:
            loop, stopping = self._armed
            loop.call_soon_threadsafe(loop.call_later, max(0.0, self.grace_s - self.margin_s), stopping.set)

    def remaining(self) -> float:
        """Of the grace, what is left (all of it before a signal)."""
        if self.started is None:
            return self.grace_s
        return max(0.0, self.started + self.grace_s - time.monotonic())


def create_app(settings: Settings | None = None) -> FastAPI:
    """A configured application; its workers start with the lifespan (i.e. under uvicorn or
    `with TestClient(app)`)."""
    settings = settings or get_settings()
    resolve_target(settings.target, field="LEGALSAT_TARGET")  # a misspelt default stops the start, named
    metrics = Metrics()
    clock = ShutdownClock(settings.shutdown_grace_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        cache = open_cache(settings, PLANNER_VERSION, on_state=metrics.cache_state_changed,
                           on_error=lambda op: metrics.cache_errors.labels(op).inc())
        pool = WorkerPool(settings.workers, settings.queue_size, settings.target,
                          on_restart=lambda reason: metrics.restarts.labels(reason).inc(),
                          memory_mb=settings.worker_memory_mb, egraph_max_bytes=settings.egraph_max_bytes)
        try:
            pool.start()
        except WorkerStartError as e:  # uvicorn logs it and exits; `serve` raises it for the command line
            app.state.start_error = e
            pool.close(0)  # the workers that did start
            cache.close()
            raise
        metrics.bind_pool(pool)
        metrics.bind_cache(cache)
        app.state.service = ServiceState(settings, pool, cache, metrics, BuiltPages(settings.egraph_pages_bytes))
        clock.bind(asyncio.get_running_loop(), app.state.service.stopping)
        log.info("legalsat %s ready: %d workers, cache %s (%d entries)", legalsat.__version__,
                 settings.workers, cache.describe(), len(cache))
        try:
            yield
        finally:
            pool.close(clock.remaining())
            cache.close()

    app = FastAPI(title="legalsat", version=legalsat.__version__, description=DESCRIPTION,
                  lifespan=lifespan, redirect_slashes=False,  # no redirect that reflects the Host header
                  docs_url=None, redoc_url=None)  # served from the package's own assets (routers.docs)
    app.state.settings = settings
    app.state.shutdown = clock
    install_error_handlers(app)
    v1 = [Depends(require_token), Depends(known_query_parameters)]
    for r in (optimize.router, analyze.router, verify.router, egraphs.router):
        app.include_router(r, dependencies=v1)
    app.include_router(health.router)
    app.include_router(docs.router)
    # the viewer's and the API docs' scripts and styles, shipped in the package (no CDN)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(HostAllowList, allowed_hosts=settings.allowed_hosts)
    app.add_middleware(NoSniff)  # outside the host check: its refusals carry the header too
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    openapi.install(app)
    return app


def serve(settings: Settings) -> None:
    """Run the service with uvicorn until SIGINT/SIGTERM (in-flight requests finish first).
    Raises WorkerStartError when the worker pool could not start (uvicorn exits the same way
    for an address it cannot bind, which is SystemExit)."""
    import uvicorn

    from legalsat.server.http import bounded_protocol

    # a request head over max_header_bytes or slower than head_timeout_s is refused while it
    # arrives (legalsat.server.http); connections may use every file descriptor the system lets
    # the process have, not the shell's soft limit
    _raise_open_files_limit()
    app = create_app(settings)
    config = uvicorn.Config(app, host=settings.host, port=settings.port,
                            http=bounded_protocol(settings.max_header_bytes, settings.head_timeout_s),
                            log_level=settings.log_level, log_config=_log_config(settings.log_level),
                            timeout_graceful_shutdown=settings.shutdown_grace_s,
                            access_log=False, ws="none")  # no WebSocket route: an upgrade is an HTTP request
    # the address first: one in use stops the start at once (SystemExit), before any worker
    # starts or "ready" is logged
    sock = config.bind_socket()

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:  # SIGINT / SIGTERM: the grace starts now
            app.state.shutdown.begin()
            super().handle_exit(sig, frame)

    try:
        Server(config).run(sockets=[sock])
    except SystemExit:  # uvicorn's exit code is the same for every start-up failure: say which it was
        start_error = getattr(app.state, "start_error", None)
        if start_error is not None:
            raise start_error from None
        raise


def _log_config(level: str) -> dict:
    """uvicorn's logging set-up, with legalsat's own loggers (the ready line, the plan cache's
    state, worker restarts) on its console handler at LEGALSAT_LOG_LEVEL: without it only their
    warnings reached stderr, through Python's last-resort handler, and the rest was lost."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["legalsat"] = {"handlers": ["default"], "level": "TRACE" if level == "trace" else level.upper(),
                                     "propagate": False}
    return config


def _raise_open_files_limit() -> None:
    """The soft limit on open files raised to the hard one (often 1,024 against 524,288):
    each connection holds a descriptor, and a slow client's stay is bounded by the head and
    body timeouts, not by this count."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20),
                                                        hard))
    except (ImportError, ValueError, OSError):  # not POSIX, or not allowed: keep the limit
        pass
