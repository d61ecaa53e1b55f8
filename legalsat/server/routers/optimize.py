"""POST /v1/optimize and /v1/optimize/batch: lowering plans (see legalsat.api)."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Depends, Request, Response

from legalsat.diagnostics import Code, InputError, internal_error
from legalsat.schemas.base import compact_json
from legalsat.schemas.optimize import OptimizeRequest
from legalsat.schemas.plan import OptimizeResponse
from legalsat.schemas.service import BatchResponse, error_item
from legalsat.server.deps import Disconnection, ServiceState, disconnection, parse_json, read_body, service
from legalsat.server.errors import ApiError, error_responses, queue_full
from legalsat.server.openapi import json_body
from legalsat.server.planning import plan_one

ERRORS = error_responses(401, 408, 413, 415, 422, 429, 503, 504)
router = APIRouter(prefix="/v1/optimize", tags=["optimize"])
log = logging.getLogger("legalsat.server")



@router.post("", response_model=None, openapi_extra=json_body(OptimizeRequest),
             responses={200: {"model": OptimizeResponse, "description": "plans, best first, or status "
                              "infeasible (or incomplete: a limit cut planning short) with the rejected "
                              "strategies' reasons"}, **ERRORS},
             summary="Plan one data movement")
async def optimize(request: Request, state: ServiceState = Depends(service)) -> Response:
    """Plans, best first, for a copy, gather or tile load. Identical requests are answered from
    the plan cache (header `X-Legalsat-Cache: hit`); `options.keep_egraph` keeps the e-graph for
    `GET /v1/egraphs/{id}` instead of returning it inline."""
    obj = await parse_json(await read_body(request), "an optimize request")
    async with disconnection(request) as gone:
        body, cache = await plan_one(state, obj, gone)
    return Response(body, media_type="application/json", headers={"X-Legalsat-Cache": cache})


async def _item(state: ServiceState, obj: object, gone: Disconnection) -> bytes:
    """One batch item's answer; whatever it raises, it fails alone."""
    rid = obj.get("request_id") if isinstance(obj, dict) and isinstance(obj.get("request_id"), str) else None
    if isinstance(obj, InputError):  # its JSON was refused (deps.parse_json), its request_id kept
        return compact_json(error_item(obj, getattr(obj, "request_id", None)))
    try:
        return (await plan_one(state, obj, gone))[0]
    except InputError as e:
        body = error_item(e, rid)
    except ApiError as e:
        body = {"request_id": rid, "status": "error", **e.body()}
    except Exception as e:  # a bug: logged, answered for this item only  # noqa: BLE001
        log.exception("batch item failed")
        body = error_item(InputError([internal_error(e)]), rid)
    return compact_json(body)


@router.post("/batch", response_model=None,
             openapi_extra=json_body(OptimizeRequest, array=True, description="a JSON array of optimize requests"),
             responses={200: {"model": BatchResponse, "description": "one entry per request, in order: "
                              "a response, or an error object for that item"}, **ERRORS},
             summary="Plan many data movements")
async def optimize_batch(request: Request, state: ServiceState = Depends(service)) -> Response:
    """A list of requests in, a list of responses or per-item errors out, in the same order.
    Items are planned in parallel on the worker pool, each under its own deadline."""
    items = await parse_json(await read_body(request), "a batch", list)
    limit = state.settings.max_batch_items
    if not items:
        raise ApiError(422, Code.INVALID_INPUT, "a batch is a non-empty JSON array of optimize requests",
                       "send [{...}, {...}]; for one request use POST /v1/optimize")
    if len(items) > limit:
        raise ApiError(422, Code.INVALID_INPUT, f"the batch has {len(items)} requests; at most {limit}",
                       f"split it into batches of at most {limit} (LEGALSAT_MAX_BATCH_ITEMS)", limit=limit,
                       value=len(items))
    if len(items) > state.pool.capacity:  # never accepted, however long the client waits: not a 429
        cap = state.pool.capacity
        raise ApiError(422, Code.INVALID_INPUT, f"the batch has {len(items)} requests; this service holds at most "
                       f"{cap} at once (LEGALSAT_QUEUE_SIZE places and LEGALSAT_WORKERS workers)",
                       f"split it into batches of at most {cap}, or raise LEGALSAT_QUEUE_SIZE", limit=cap,
                       value=len(items))
    if len(items) > state.pool.capacity_left:
        raise queue_full()
    async with disconnection(request) as gone:
        parts = await asyncio.gather(*(_item(state, obj, gone) for obj in items))
    return Response(b"[" + b",".join(parts) + b"]", media_type="application/json")
