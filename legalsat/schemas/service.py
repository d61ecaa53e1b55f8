"""Models only the service adds: the error body, batch items, health. The request and
response models of each route are the ones the command line and Python API use."""

from __future__ import annotations

from pydantic import BaseModel, Field, RootModel

from legalsat.schemas.plan import OptimizeResponse


class ErrorDetailOut(BaseModel):
    code: str = Field(description="stable machine-readable code, e.g. invalid_input, deadline_exceeded")
    message: str = Field(description="what is wrong, in the caller's terms")
    fix: str = Field(description="what to do about it")
    field: str | None = Field(None, description="dotted path of the offending input field")
    details: list[dict] | None = Field(None, description="every problem, when there are several")


class ErrorBody(BaseModel):
    """The one error shape of every route: 4xx and 5xx alike."""

    error: ErrorDetailOut


class BatchItemError(BaseModel):
    """One batch item that has no plan response: invalid, past its deadline, or lost."""

    request_id: str | None
    status: str = Field(description='"error"')
    error: ErrorDetailOut


class BatchResponse(RootModel[list[OptimizeResponse | BatchItemError]]):
    """One entry per request, in request order."""


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str = Field(description='"ready" when at least one planning worker is alive')
    workers: int
    workers_alive: int
    queued: int
    worker_restarts: int
    cached_plans: int
    planner: str
