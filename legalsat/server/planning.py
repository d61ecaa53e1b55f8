"""Planning requests through the cache and the worker pool (what the optimize routes do).

Flow of one request: validation in the event loop, every check whose cost is bounded (422
without occupying a worker) -> cache lookup by canonical JSON (in the event loop for the SQLite
cache, in a thread for a shared one; a hit is answered without a worker) -> a worker job with
a hard deadline, which parses the request in full -> the answer is stored (plans) or its
e-graph kept (keep_egraph requests, never served from the cache). A shared cache that fails
answers a miss and drops the write.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid

from legalsat.api import PLANNER_VERSION
from legalsat.diagnostics import Code
from legalsat.planner.request import PlanOptions
from legalsat.schemas.optimize import check_request_id, check_request_shape
from legalsat.server.cache import call, request_key, splice_request_id
from legalsat.server.deps import Disconnection, ServiceState
from legalsat.server.errors import ApiError, deadline, queue_full, shutting_down, worker_lost
from legalsat.server.pool import DeadlineExceeded, PoolClosed, QueueFull, WorkerLost

log = logging.getLogger("legalsat.server")


async def run_job(state: ServiceState, kind: str, payload: dict, deadline_ms: int, grace_ms: int = 0,
                  gone: asyncio.Future | None = None) -> tuple[int, bytes, dict]:
    """A worker job under a hard deadline (`grace_ms` of it past the job's own time budget);
    pool outcomes become ApiErrors. When `gone` completes (the client disconnected) while
    the job is still queued, the job is dropped: 499, which no one reads."""
    try:
        fut = state.pool.submit(kind, payload, time.monotonic() + deadline_ms / 1000, grace_ms / 1000)
    except QueueFull:
        raise queue_full() from None
    except PoolClosed:
        raise shutting_down() from None
    waiter = asyncio.wrap_future(fut)
    stop = asyncio.ensure_future(state.stopping.wait())  # a shutdown's grace all but spent
    try:
        try:
            # a job still queued at its deadline is answered then, not when a worker frees up
            async with asyncio.timeout(deadline_ms / 1000):
                watched = {waiter, stop} | ({gone} if gone is not None else set())
                while not waiter.done():
                    await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
                    if waiter.done():
                        break
                    if stop.done():  # answered now: the server is about to cut the connection
                        fut.cancel()
                        raise shutting_down()
                    if gone is not None and gone.done():
                        if fut.cancel():  # still queued: dropped
                            raise ApiError(499, Code.CLIENT_DISCONNECTED)
                        watched.discard(gone)  # running: its answer is awaited (and cached) as before
                return await asyncio.shield(waiter)
        except TimeoutError:
            if fut.cancel():
                raise deadline(deadline_ms, True, kind, grace_ms) from None
            return await waiter  # running: its slot resolves it at the deadline (kill) or before
    except DeadlineExceeded as e:
        if not e.waited:  # a worker was killed for it: worth a line in the log
            log.warning("%s job ran past its deadline of %d ms; its worker was replaced", kind, deadline_ms)
        raise deadline(deadline_ms, e.waited, kind, grace_ms) from None
    except WorkerLost:
        raise worker_lost() from None
    except asyncio.CancelledError:
        fut.cancel()  # the client went away: a queued job is dropped before it runs
        raise
    finally:
        stop.cancel()


def answer_error(status: int, body: bytes, meta: dict) -> ApiError:
    """A worker's error answer as it came (422 details kept); a bug's traceback goes to the log."""
    if meta.get("traceback"):
        log.error("worker job failed (%d):\n%s", status, meta["traceback"])
    return ApiError.answered(status, json.loads(body))


async def plan_one(state: ServiceState, obj: object, gone: Disconnection | None = None) -> tuple[bytes, str]:
    """One optimize request -> (response body, "hit" | "miss" | "kept" | "not-kept"). Raises ApiError or
    InputError for everything that is not a plan response. `gone`: the client's
    disconnection, watched once a job is queued (a queued job is then dropped)."""
    if not isinstance(obj, dict):  # a batch item: a string would be parsed as JSON text again
        raise Code.INVALID_INPUT.error("a request must be a JSON object", 'send {"target": ..., "op": {...}}')
    # only valid requests are cached and the key is all but the request_id: a hit checks that
    # alone; a miss is parsed in full by the worker (its cost grows with the input)
    check_request_shape(obj)  # unknown fields and an overlong term: 422 here, not after a wait for a worker
    if "target" not in obj:  # the server's target (LEGALSAT_TARGET), as the analysis routes take it
        obj = {**obj, "target": state.settings.target}
    rid = check_request_id(obj.get("request_id"))
    opts = obj.get("options") if isinstance(obj.get("options"), dict) else {}
    keep = opts.get("keep_egraph") is True
    key = request_key(PLANNER_VERSION, "optimize", obj)
    if not keep:
        hit = await call(state.cache, state.cache.get, key)
        if hit is not None:
            state.metrics.cache.labels("hit").inc()
            return splice_request_id(hit, rid if rid is not None else uuid.uuid4().hex[:16]), "hit"
        state.metrics.cache.labels("miss").inc()
    # the worker plans within min(timeout_ms, the server's deadline) and says what it could
    # not finish in it; it is killed only past that budget plus a grace
    asked = opts.get("timeout_ms")
    asked = asked if type(asked) is int and asked > 0 else PlanOptions.timeout_ms
    budget = min(asked, state.settings.deadline_ms)
    grace = state.settings.deadline_grace_ms
    status, body, meta = await run_job(state, "optimize", obj, budget + grace, grace,
                                       gone.future() if gone is not None else None)
    if status != 200:
        raise answer_error(status, body, meta)
    state.metrics.saturation(meta)
    full = splice_request_id(body, meta["request_id"])
    if keep:  # never cached; kept unless too large (the body's egraph_too_large warning says so)
        if meta["snapshot"] is None:
            return full, "not-kept"
        if not await call(state.cache, state.cache.put_egraph, meta["egraph_id"], json.loads(full),
                          meta["snapshot"], default=False):  # an id that names nothing is worse than no answer
            raise ApiError(503, Code.EGRAPH_NOT_KEPT, headers={"Retry-After": "5"})
        return full, "kept"
    if not meta.get("timed"):  # an answer the time budget cut short is not the request's answer for good
        await call(state.cache, state.cache.put, key, body)  # the worker's body has no request_id: stored as it is
    return full, "miss"
