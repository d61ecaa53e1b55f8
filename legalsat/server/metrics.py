"""Prometheus metrics of one service instance (its own registry, so that several apps in one
process, as in tests, do not share counters)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_SIZE_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20)


class Metrics:
    """Request counts and latencies per route and status, saturation sizes, cache results and
    the cache's state, worker restarts, queue depth."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter("legalsat_http_requests", "HTTP requests answered",
                                ["route", "method", "status"], registry=r)
        self.latency = Histogram("legalsat_http_request_duration_seconds", "time to answer a request",
                                 ["route", "method", "status"], buckets=_LATENCY_BUCKETS, registry=r)
        self.enodes = Histogram("legalsat_egraph_enodes", "e-nodes of a saturated e-graph",
                                buckets=_SIZE_BUCKETS, registry=r)
        self.eclasses = Histogram("legalsat_egraph_eclasses", "e-classes of a saturated e-graph",
                                  buckets=_SIZE_BUCKETS, registry=r)
        self.stop_reasons = Counter("legalsat_saturation_stops", "why saturation stopped", ["reason"],
                                    registry=r)
        self.cache = Counter("legalsat_plan_cache_lookups", "plan cache lookups", ["result"], registry=r)
        self.cache_up = Gauge("legalsat_plan_cache_up", "1 while the plan cache is in use, 0 while it is "
                              "skipped (a shared cache's circuit breaker is open)", registry=r)
        self.cache_breaker = Counter("legalsat_plan_cache_breaker_changes", "state changes of the shared "
                                     "plan cache's circuit breaker, by the state entered", ["state"], registry=r)
        self.cache_errors = Counter("legalsat_plan_cache_errors", "failed calls to the shared plan cache",
                                    ["operation"], registry=r)
        self.restarts = Counter("legalsat_worker_restarts", "planning workers replaced", ["reason"],
                                registry=r)
        self.queue = Gauge("legalsat_queue_depth", "planning jobs waiting for a worker", registry=r)
        self.alive = Gauge("legalsat_workers_alive", "planning workers alive", registry=r)

    def bind_pool(self, pool) -> None:
        """Gauges read from the pool at scrape time."""
        self.queue.set_function(lambda: pool.queued)
        self.alive.set_function(lambda: pool.alive)

    def bind_cache(self, cache) -> None:
        """The cache's state, read at scrape time."""
        self.cache_up.set_function(lambda: 1.0 if cache.available else 0.0)

    def cache_state_changed(self, old: str, new: str) -> None:
        self.cache_breaker.labels(new).inc()

    def saturation(self, meta: dict) -> None:
        """The e-graph figures of one planned request (an optimize worker's meta)."""
        self.enodes.observe(meta["enodes"])
        self.eclasses.observe(meta["eclasses"])
        self.stop_reasons.labels(meta["stop_reason"]).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Pure ASGI middleware (no per-request task or body copy): counts and times every HTTP
    request by its route template (`/v1/egraphs/{egraph_id}`, not the concrete path)."""

    def __init__(self, app, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        status = [500]

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            # a mount (the static assets) sets no route: its own path, which the matched mount put
            # in root_path (a bounded set of labels, as the routes' templates are)
            path = getattr(route, "path", None) or scope.get("root_path") or "unmatched"
            self.metrics.requests.labels(path, scope["method"], str(status[0])).inc()
            self.metrics.latency.labels(path, scope["method"], str(status[0])).observe(
                time.perf_counter() - start)
