"""`legalsat batch --ray`: the batch's chunks answered by long-lived actors of a Ray cluster.

    RayExecutor(address, actors, fail) -> a concurrent.futures.Executor for run_stream

legalsat.clients.jsonl.run_stream does the batching, the input order and the bound on work in
flight; this module only swaps its process pool for Ray actors. Each actor is one Python
process that answers chunk after chunk with the same chunk job as a local worker, so its
planner stays warm (egglog programs, caches) and an e-graph never leaves it.

Failures: a chunk whose actor dies (killed, out of memory, its node lost) is sent to another
actor, and a replacement actor is started; a chunk still running `chunk_timeout_s` after it
began has its actor killed, which is the same case. After `max_attempts` the chunk's lines
are answered by `fail` (one error object per line), so the output keeps one line per input
line whatever happens. Per-request deadlines (`options.timeout_ms`) hold inside the actor as
they do in a local worker.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future

from legalsat.diagnostics import Code

log = logging.getLogger("legalsat.ray")

ChunkFailure = Callable[[int, list[bytes], str], bytes]  # (first line, lines, why) -> answers


def _ray():
    try:
        import ray
    except ImportError:
        raise Code.INVALID_INPUT.error(
            "--ray needs Ray, which is not installed", "pip install 'legalsat[ray]'", "ray") from None
    return ray


class _ChunkActor:
    """One warm process: runs chunk jobs (module-level functions, as for a process pool)."""

    def run(self, job, first: int, lines: list[bytes]) -> bytes:
        return job(first, lines)

    def pid(self) -> int:
        return os.getpid()


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """A "host:port" or "ray://host:port" address answers a TCP connection within `timeout_s`
    (ray.init retries an unreachable one for minutes); InputError naming --ray otherwise."""
    import socket

    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():  # "auto" and the like: Ray finds the cluster itself
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise Code.INVALID_INPUT.error(f"no Ray cluster answers at {address}: {e.strerror or e}",
                                       "start the cluster (ray start --head) and pass its address, or --ray local "
                                       "for a Ray instance on this machine", "--ray") from None


class RayExecutor(Executor):
    """`actors` Ray actors on the cluster at `address` ("local": a Ray instance started here,
    with `actors` CPUs; otherwise what `ray.init(address=...)` takes: "auto", "host:port",
    "ray://host:10001"); `actors` None: one per CPU of the cluster. `size` is the number of
    actors. submit(job, first, lines) returns a Future of the chunk's answers."""

    def __init__(self, address: str, actors: int | None, fail: ChunkFailure, *, max_attempts: int = 3,
                 chunk_timeout_s: float = 600.0, poll_s: float = 0.5):
        ray = _ray()
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            if address == "local":
                ray.init(num_cpus=actors, include_dashboard=False, log_to_driver=False,
                         configure_logging=False, logging_level=logging.WARNING)
            else:
                _reachable(address)
                try:
                    ray.init(address=address, log_to_driver=False, configure_logging=False,
                             logging_level=logging.WARNING)
                except (ValueError, ConnectionError) as e:  # an address Ray cannot read, or no cluster there
                    raise Code.INVALID_INPUT.error(
                        f"--ray {address!r}: {str(e)[:300]}", "pass local (a Ray instance on this machine), auto (the "
                        "cluster this machine belongs to), host:port or ray://host:10001", "--ray") from None
            self._started = True
        if actors is None:  # the cluster's, not this machine's, CPUs
            actors = int(ray.cluster_resources().get("CPU", 1))
        self._remote = ray.remote(num_cpus=1, max_restarts=0)(_ChunkActor)
        self.actors = [self._remote.remote() for _ in range(max(actors, 1))]
        self._load = {id(a): 0 for a in self.actors}
        self._fail, self._max_attempts, self._timeout = fail, max_attempts, chunk_timeout_s
        self._lock = threading.Lock()
        self._running: dict[int, tuple[float, object]] = {}  # task id -> (start, actor)
        self._ids = 0
        self._closed = threading.Event()
        self.retries = 0
        self._watchdog = threading.Thread(target=self._watch, args=(poll_s,), daemon=True)
        self._watchdog.start()

    @property
    def size(self) -> int:
        """Actors in use (a dead one is replaced, so this stays what was asked for)."""
        return len(self.actors)

    # --- concurrent.futures.Executor ---

    def submit(self, job, first: int, lines: list[bytes]) -> Future:  # type: ignore[override]
        result: Future = Future()
        self._send(result, job, first, lines, 1)
        return result

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed.set()
        for a in self.actors:
            self._ray.kill(a)
        if self._started:
            self._ray.shutdown()

    # --- scheduling ---

    def _pick(self):
        with self._lock:
            actor = min(self.actors, key=lambda a: self._load[id(a)])
            self._load[id(actor)] += 1
            return actor

    def _replace(self, dead) -> None:
        with self._lock:
            if dead in self.actors:
                self.actors.remove(dead)
                self._load.pop(id(dead), None)
                fresh = self._remote.remote()
                self.actors.append(fresh)
                self._load[id(fresh)] = 0
                log.warning("a Ray actor died; started a replacement (%d actors)", len(self.actors))

    def _send(self, result: Future, job, first: int, lines: list[bytes], attempt: int) -> None:
        actor = self._pick()
        with self._lock:
            self._ids += 1
            task = self._ids
            self._running[task] = (time.monotonic(), actor)
        ref = actor.run.remote(job, first, lines)

        def done(fut: Future) -> None:
            with self._lock:
                self._running.pop(task, None)
                if id(actor) in self._load:
                    self._load[id(actor)] -= 1
            try:
                result.set_result(fut.result())
                return
            except (self._ray.exceptions.RayActorError, self._ray.exceptions.ActorUnavailableError) as e:
                why = f"its Ray actor died ({type(e).__name__})"
            except Exception as e:  # a task error: the job itself raised (a bug), not the actor
                why = f"the chunk failed on its Ray actor: {type(e).__name__}: {e}"[:500]
                result.set_result(self._fail(first, lines, why))
                return
            self._replace(actor)
            if attempt < self._max_attempts and not self._closed.is_set():
                self.retries += 1
                self._send(result, job, first, lines, attempt + 1)
            else:
                result.set_result(self._fail(first, lines, f"{why}, {attempt} times"))

        ref.future().add_done_callback(done)

    def _watch(self, poll_s: float) -> None:
        """Kill the actor of a chunk running past the chunk timeout (its chunk is retried)."""
        while not self._closed.wait(poll_s):
            now = time.monotonic()
            with self._lock:
                stuck = [actor for start, actor in self._running.values() if now - start > self._timeout]
            for actor in {id(a): a for a in stuck}.values():
                log.warning("a Ray actor ran a chunk for over %.0f s; killing it", self._timeout)
                self._ray.kill(actor, no_restart=True)
