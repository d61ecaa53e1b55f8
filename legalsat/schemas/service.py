"""Models only the service adds: the error body, batch items, health. The request and
response models of each route are the ones the command line and Python API use."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, RootModel

from legalsat.diagnostics import InputError
from legalsat.schemas.base import ErrorBodyOut
from legalsat.schemas.plan import OptimizeResponse


class ErrorBody(BaseModel):
    """The one error shape of every route: 4xx and 5xx alike."""

    error: ErrorBodyOut = Field(description="the problem (the first of several: see details)")


class BatchItemError(BaseModel):
    """One batch item (or JSON Lines request) that has no plan response: invalid, past its
    deadline, or lost."""

    request_id: str | None = Field(description="the item's request_id, when it has one")
    status: str = Field(description='"error"')
    error: ErrorBodyOut = Field(description="the problem")
    line: int | None = Field(None, description="`legalsat batch`: the input line it answers (from 1)")


def error_item(err: InputError, request_id: str | None = None, line: int | None = None) -> dict:
    """A batch item's (or `legalsat batch` line's) error object."""
    out = {"request_id": request_id, "status": "error", **err.to_dict()}
    if line is not None:
        out["line"] = line
    return out


class BatchResponse(RootModel[list[OptimizeResponse | BatchItemError]]):
    """One entry per request, in request order."""


class Health(BaseModel):
    status: str = Field(description='"ok": the service process answers (its workers are /readyz\'s)')


class Readiness(BaseModel):
    status: str = Field(description='"ready" when at least one planning worker is alive')
    workers: int = Field(description="planning worker processes the service runs (LEGALSAT_WORKERS)")
    workers_alive: int = Field(description="of them, those alive now (a dead one is being replaced)")
    busy: int = Field(description="workers planning or verifying a job now")
    queued: int = Field(description="jobs waiting for a worker")
    worker_restarts: int = Field(description="workers replaced since the start (killed past a deadline, or died)")
    cached_plans: int | None = Field(description="entries in the plan cache (a shared Redis cache: the keys in "
                                     "its database, every planner version's and the e-graphs); null when "
                                     "it did not answer in time")
    plan_cache: Literal["up", "down"] = Field(description='"down" while a shared cache is skipped after '
                                              "failing (requests are planned without it)")
    planner: str = Field(description="the planner version, which keys the plan cache (legalsat-planner/N)")
