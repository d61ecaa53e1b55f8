"""POST /v1/verify/pipeline: asynchronous copy protocols, checked on the worker pool (the
state-space exploration is CPU-bound and bounded by the request deadline)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request, Response

from legalsat.schemas.protocol import PipelineVerdictOut, ProtocolIn, parse_protocol
from legalsat.server.deps import LARGE_BODY, ServiceState, disconnection, parse_json, read_body, service
from legalsat.server.errors import error_responses
from legalsat.server.openapi import json_body
from legalsat.server.planning import answer_error, run_job

ERRORS = error_responses(401, 408, 413, 415, 422, 429, 503, 504)

router = APIRouter(tags=["analyses"])


@router.post("/v1/verify/pipeline", response_model=None, openapi_extra=json_body(ProtocolIn),
             responses={200: {"model": PipelineVerdictOut, "description": "ok, or the violations "
                              "with the role, operation and iteration where each happens"}, **ERRORS},
             summary="Check an asynchronous copy protocol")
async def verify_pipeline(request: Request, state: ServiceState = Depends(service)) -> Response:
    """Deadlocks, expect-tx mismatches, phase reuse, buffer hazards, missing proxy fences and
    store reuse in an mbarrier/TMA protocol, for every trip count that matters."""
    body = await read_body(request)
    obj = await parse_json(body, "a protocol")
    # InputError -> 422 without occupying a worker: in a thread (its size check can take a while);
    # a large body is checked by the worker instead (pydantic holds the interpreter's lock while
    # it validates one, for up to a second: the event loop would stall)
    if len(body) <= LARGE_BODY:
        await asyncio.to_thread(parse_protocol, obj)
    async with disconnection(request) as gone:
        status, body, meta = await run_job(state, "verify_pipeline", obj, state.settings.deadline_ms,
                                           gone=gone.future())
    if status != 200:
        raise answer_error(status, body, meta)
    return Response(body, media_type="application/json")
