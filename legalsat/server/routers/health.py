"""GET /healthz (liveness), /readyz (workers up), /metrics (Prometheus): open without a token."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse

from legalsat.api import PLANNER_VERSION
from legalsat.schemas.service import Health, Readiness
from legalsat.server.cache import call
from legalsat.server.deps import ServiceState, service
from legalsat.server.routers import answer_head

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="The service answers")
async def healthz() -> dict:
    return {"status": "ok"}


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}},
            summary="At least one planning worker is alive")
async def readyz(state: ServiceState = Depends(service)):
    alive = state.pool.alive
    body = {"status": "ready" if alive else "not_ready", "workers": state.pool.size, "workers_alive": alive,
            "busy": state.pool.busy, "queued": state.pool.queued, "worker_restarts": state.pool.restarts,
            "cached_plans": await call(state.cache, len, state.cache),
            "plan_cache": "up" if state.cache.available else "down", "planner": PLANNER_VERSION}
    return JSONResponse(body, status_code=200 if alive else 503)


@router.get("/metrics", response_class=Response, summary="Prometheus metrics",
            responses={200: {"content": {"text/plain": {}}}})
async def metrics(state: ServiceState = Depends(service)) -> Response:
    return Response(state.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")


answer_head(router)
