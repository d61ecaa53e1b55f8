"""The code that runs inside a planning worker process.

A worker owns its egglog e-graphs (they cannot cross processes or threads), answers one job
at a time from its pipe, and serializes the answer itself so that the service's event loop
only forwards bytes. Jobs and answers are plain tuples of builtins.

    job    = (kind, payload, budget_ms) kind: "optimize" | "verify_pipeline"; budget_ms: what is
                                        left of the job's time when it starts
    answer = (status, body_bytes, meta) status: HTTP status of the answer; meta: dict

An optimize body leaves out `request_id` (meta carries it): the service stores that body in
the plan cache as it is and splices the caller's id in front, with no JSON round trip in the
event loop.
"""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Callable

from legalsat.diagnostics import Code, InputError, internal_error
from legalsat.planner.reports import StopReason
from legalsat.planner.threads import one_thread_pools
from legalsat.schemas.base import compact_json, model_json
from legalsat.server.lifetime import tie_to_server

Answer = tuple[int, bytes, dict]

# A small request planned at start-up, so that a fresh worker's first real request does not
# pay for compiling the target's rulesets.
WARM_UP = {"op": {"kind": "copy",
                  "src": {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]},
                  "dst": {"dtype": "bfloat16", "shape": [64, 96], "strides": [1, 64]}}}


def _optimize(payload: dict, budget_ms: int | None = None, waited_ms: int = 0) -> Answer:
    from legalsat.api import optimize  # egglog loads after `prepare` set its threads
    from legalsat.planner.budget import DEADLINE_CAP, queue_cap

    # what is left of the server's deadline when the job starts (the pool's budget) and what
    # this worker's memory holds cap the request's own limits; a budget the queue shortened
    # says so (LEGALSAT_DEADLINE_MS was not what ran out)
    out = optimize(payload, max_timeout_ms=budget_ms, max_node_limit=_NODE_CAP,
                   timeout_cap=queue_cap(waited_ms) if waited_ms > 0 else DEADLINE_CAP)
    snapshot = out["egraph"].pop("snapshot", None)
    if snapshot is not None and _EGRAPH_MAX_BYTES is not None and len(snapshot) > _EGRAPH_MAX_BYTES:
        # what the service would keep (and rebuild on every view) grows with it: not sent, said so
        out.setdefault("warnings", []).append(Code.EGRAPH_TOO_LARGE.at(
            f"the e-graph ({out['egraph']['enodes']} e-nodes, {len(snapshot)} bytes) is over the "
            f"{_EGRAPH_MAX_BYTES} bytes the service keeps one (LEGALSAT_EGRAPH_MAX_BYTES): it was not kept").to_error())
        snapshot = None
    if snapshot is not None:  # keep_egraph: the service keeps it under this id
        out["egraph"]["id"] = uuid.uuid4().hex
    meta = {"request_id": out.pop("request_id"), "enodes": out["egraph"]["enodes"],
            "eclasses": out["egraph"]["eclasses"], "stop_reason": out["egraph"]["stop_reason"],
            "egraph_id": out["egraph"].get("id"), "snapshot": snapshot, "timed": ran_out_of_time(out)}
    return 200, compact_json(out), meta


# what a request's time budget cut short: its answer depends on how busy the machine was
_TIMED = {Code.PLANNING_DEADLINE.id, Code.PROOF_BUDGET.id, Code.SOLVER_TIMEOUT.id}


def ran_out_of_time(out: dict) -> bool:
    """Whether an optimize response is what the time budget left (saturation stopped by it,
    or a strategy rejected for want of time): another run, on a less busy machine or with
    more time, may answer better, so the service does not cache it."""
    return out["egraph"]["stop_reason"] == StopReason.TIME_LIMIT.value or any(
        r["rule"] in _TIMED for rej in out.get("rejected", ()) for r in rej["reasons"])


def _verify_pipeline(payload: dict, budget_ms: int | None = None, waited_ms: int = 0) -> Answer:
    from legalsat.api import verify_pipeline

    return 200, model_json(verify_pipeline(payload)), {}  # bounded by its work bound, not a clock


def _egraph_page(payload: dict, budget_ms: int | None = None, waited_ms: int = 0) -> Answer:
    """A kept e-graph's document (JSON), or its viewer page (HTML) when `payload["view"]` gives
    the viewer's settings: work that grows with the e-graph, done here, not in the service (a
    32 MiB e-graph's document held the event loop for 0.7 s between the GIL's switches)."""
    from legalsat.server.egraph_view import egraph_model, shown_classes, view_html

    model = egraph_model(payload["id"], payload["response"], payload["snapshot"])
    view = payload.get("view")
    if view is None:
        return 200, compact_json(model), {}
    shown = shown_classes(model, view["max_eclasses"])
    opening = min(view["first_eclasses"], view["max_eclasses"])
    # past the limit `shown` is breadth-first from the plans: its first e-classes are the opening's
    first = shown[:opening] if len(model["eclasses"]) > view["max_eclasses"] else shown_classes(model, opening)
    return 200, view_html(model, shown, first, view["collapse_enodes"], view["static"]).encode(), {}


# each job: (payload, its time budget in ms, the ms of it spent in the queue) -> its answer; the
# verifier and the e-graph page are bounded by their work, not a clock
JOBS: dict[str, Callable[[dict, int | None, int], Answer]] = {
    "optimize": _optimize, "verify_pipeline": _verify_pipeline, "egraph_page": _egraph_page}


def run_job(kind: str, payload: dict, budget_ms: int | None = None, waited_ms: int = 0) -> Answer:
    """One job -> its answer, planned within `budget_ms` when given (`waited_ms` of its time
    spent in the queue: a planning job's messages say so). Invalid input is a 422
    answer; anything else that goes wrong is a 500 answer carrying the exception (a bug in
    legalsat), never a dead worker."""
    try:
        return JOBS[kind](payload, budget_ms, waited_ms)
    except InputError as e:
        return 422, compact_json(e.to_dict()), {}
    except MemoryError:
        return 422, compact_json(memory_limit_error().to_dict()), {}
    except Exception as e:  # noqa: BLE001 - a planner bug must come back as an answer
        return 500, compact_json({"error": internal_error(e).to_error()}), {"traceback": traceback.format_exc(limit=20)}


def limit_memory(memory_mb: int | None) -> None:
    """Cap this process's data (heap and anonymous mappings) at `memory_mb`: past it an
    allocation fails (MemoryError) instead of the machine running out."""
    if not memory_mb:
        return
    import resource

    limit = memory_mb << 20
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def memory_limit_error() -> InputError:
    """The refusal of a job that ran out of this worker's memory: with the process's data cap
    (as `limit_memory` set it, read back) in bytes as its `limit` where one is set (what the
    job asked is unknown: `value` stays null)."""
    import resource

    cap, _ = resource.getrlimit(resource.RLIMIT_DATA)
    if cap == resource.RLIM_INFINITY:
        return Code.MEMORY_LIMIT.error()
    mb = cap >> 20
    return Code.MEMORY_LIMIT.error(f"the request needs more memory than a planning worker has: its data is capped "
                                   f"at {mb} MiB (LEGALSAT_WORKER_MEMORY_MB={mb})", limit=cap)


# e-graph nodes a worker plans with at most: what its memory limit holds beside what the
# warmed-up worker already uses. About 2.6 KB of resident memory a reported e-node were measured
# (rank-7 permute: 107k nodes 497 MB, 412k nodes 1283 MB); a request that asks for more stops
# at this limit (stop_reason node_limit) instead of failing an allocation.
BYTES_PER_ENODE = 3000
_NODE_CAP: int | None = None
_EGRAPH_MAX_BYTES: int | None = None  # of a kept e-graph's snapshot (the service's setting)


def process_status(pid: int | str = "self") -> dict[str, int]:
    """A process's numeric /proc status fields (Linux): kB fields (VmData, VmHWM) in bytes,
    counts (Threads) as they are."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            parts = value.split()
            if parts and parts[0].isdigit():
                out[key] = int(parts[0]) << 10 if parts[1:] == ["kB"] else int(parts[0])
    return out


def data_bytes() -> int:
    """This process's data as its memory limit (RLIMIT_DATA) counts it: VmData, which holds
    mapped but untouched buffers that resident memory leaves out (the warmed-up worker: 225 MiB
    of data, 178 resident)."""
    try:
        return process_status()["VmData"]
    except (OSError, KeyError):  # not Linux: the resident peak
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10


def node_cap(memory_mb: int, used: int) -> int:
    """The node limit that keeps a worker with `used` bytes of data under `memory_mb`, leaving
    half of the rest for the solver, the prover and the answer."""
    return max(1000, ((memory_mb << 20) - used) // 2 // BYTES_PER_ENODE)


def prepare(target: str, memory_mb: int | None = None) -> None:
    """What a worker does before it takes jobs: one thread in each native pool (it is one
    worker of one per CPU: legalsat.planner.threads), its data capped at `memory_mb`, the
    target's rulesets warmed up. A worker that cannot warm up within its limit cannot plan: it
    exits (SystemExit 1 for a MemoryError; an allocation inside egglog aborts the process), and
    the pool names the setting."""
    one_thread_pools()
    # the planner's libraries load (and start their pools) before the cap: numpy loaded under a
    # tight RLIMIT_DATA hung instead of failing
    from legalsat.api import optimize

    limit_memory(memory_mb)
    try:
        optimize({**WARM_UP, "target": target})
    except MemoryError:
        raise SystemExit(1) from None
    except Exception:  # noqa: BLE001 - an unknown default target only loses the warm-up
        pass


def worker_main(conn, target: str, memory_mb: int | None = None, egraph_max_bytes: int | None = None) -> None:
    """Process entry point: tie its life to the service, prepare, say ready, then answer jobs
    until told to stop (None) or the pipe closes."""
    global _NODE_CAP, _EGRAPH_MAX_BYTES
    _EGRAPH_MAX_BYTES = egraph_max_bytes
    tie_to_server()
    prepare(target, memory_mb)
    if memory_mb:
        _NODE_CAP = node_cap(memory_mb, data_bytes())
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send(run_job(*job))
