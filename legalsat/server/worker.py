"""The code that runs inside a planning worker process.

A worker owns its egglog e-graphs (they cannot cross processes or threads), answers one job
at a time from its pipe, and serializes the answer itself so that the service's event loop
only forwards bytes. Jobs and answers are plain tuples of builtins.

    job    = (kind, payload)            kind: "optimize" | "verify_pipeline"
    answer = (status, body_bytes, meta) status: HTTP status of the answer; meta: dict

An optimize body leaves out `request_id` (meta carries it): the service stores that body in
the plan cache as it is and splices the caller's id in front, with no JSON round trip in the
event loop.
"""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Callable

from legalsat.api import optimize, verify_pipeline
from legalsat.diagnostics import InputError, internal_error
from legalsat.schemas.base import compact_json

Answer = tuple[int, bytes, dict]

# A small request planned at start-up, so that a fresh worker's first real request does not
# pay for compiling the target's rulesets.
WARM_UP = {"op": {"kind": "copy",
                  "src": {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]},
                  "dst": {"dtype": "bfloat16", "shape": [64, 96], "strides": [1, 64]}}}


def _optimize(payload: dict) -> Answer:
    out = optimize(payload)
    snapshot = out["egraph"].pop("snapshot", None)
    if snapshot is not None:  # keep_egraph: the service keeps it under this id
        out["egraph"]["id"] = uuid.uuid4().hex
    meta = {"request_id": out.pop("request_id"), "enodes": out["egraph"]["enodes"],
            "eclasses": out["egraph"]["eclasses"], "stop_reason": out["egraph"]["stop_reason"],
            "egraph_id": out["egraph"].get("id"), "snapshot": snapshot}
    return 200, compact_json(out), meta


def _verify_pipeline(payload: dict) -> Answer:
    return 200, verify_pipeline(payload).model_dump_json(exclude_unset=True).encode(), {}


JOBS: dict[str, Callable[[dict], Answer]] = {"optimize": _optimize, "verify_pipeline": _verify_pipeline}


def run_job(kind: str, payload: dict) -> Answer:
    """One job -> its answer. Invalid input is a 422 answer; anything else that goes wrong is
    a 500 answer carrying the exception (a bug in legalsat), never a dead worker."""
    try:
        return JOBS[kind](payload)
    except InputError as e:
        return 422, compact_json(e.to_dict()), {}
    except Exception as e:  # noqa: BLE001 - a planner bug must come back as an answer
        return 500, compact_json({"error": internal_error(e).to_error()}), {"traceback": traceback.format_exc(limit=20)}


def worker_main(conn, target: str) -> None:
    """Process entry point: warm up, say ready, then answer jobs until told to stop (None) or
    the pipe closes."""
    try:
        optimize({**WARM_UP, "target": target})
    except Exception:  # noqa: BLE001 - an unknown default target only loses the warm-up
        pass
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send(run_job(*job))
