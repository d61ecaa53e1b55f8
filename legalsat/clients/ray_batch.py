"""`legalsat batch --ray`: the batch's chunks answered by long-lived actors of a Ray cluster.

    RayExecutor(address, actors, fail) -> a concurrent.futures.Executor for run_stream

legalsat.clients.jsonl.run_stream does the batching, the input order and the bound on work in
flight; this module only swaps its process pool for Ray actors. Each actor is one Python
process that answers chunk after chunk with the same chunk job as a local worker, so its
planner stays warm (egglog programs, caches) and an e-graph never leaves it.

Failures: a chunk whose actor dies (killed, out of memory, its node lost) is sent to another
actor, and a replacement actor is started (one not started within `start_timeout_s`, which a
lost node's never is, is let go: with no actor left, the remaining chunks are answered by
`fail`); a chunk still running `chunk_timeout_s` after it
began (not counting the time it waited behind its actor's earlier chunks) has its actor
killed, which is the same case; a chunk that had not begun when its actor died is not counted
as tried. Actors the cluster cannot place (more than its free CPUs) are let go at the start,
not waited for. After `max_attempts` the chunk's lines
are answered by `fail` (one error object per line), so the output keeps one line per input
line whatever happens. Per-request deadlines (`options.timeout_ms`) hold inside the actor as
they do in a local worker.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
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
    """One warm process: runs chunk jobs (module-level functions, as for a process pool), on
    one thread in each native pool (an actor takes one CPU: `legalsat.planner.threads`)."""

    def __init__(self):
        from legalsat.planner.threads import one_thread_pools

        one_thread_pools()

    def run(self, job, first: int, lines: list[bytes]) -> bytes:
        return job(first, lines)

    def pid(self) -> int:
        return os.getpid()


# the HTTP/2 connection preface and an empty SETTINGS frame (RFC 9113, 3.4)
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """A "host:port" or "ray://host:port" address answers a TCP connection within `timeout_s`
    and speaks gRPC there (ray.init retries an unreachable one, or another kind of server, for
    minutes); InputError naming --ray otherwise."""
    import socket

    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():  # "auto" and the like: Ray finds the cluster itself
        return
    fix = ("start the cluster (ray start --head) and pass its address, or --ray local for a Ray instance on this "
           "machine")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s) as conn:
            # Ray's GCS and its client server speak gRPC: an HTTP/2 server answers the connection
            # preface with its SETTINGS frame (ray.init retried another server for 10 minutes)
            conn.sendall(_HTTP2_PREFACE)
            head = b""
            while len(head) < 9:
                got = conn.recv(9 - len(head))
                if not got:
                    break
                head += got
    except OSError as e:
        raise Code.INVALID_INPUT.error(f"no Ray cluster answers at {address}: {e.strerror or e}", fix,
                                       "--ray") from None
    if len(head) < 9 or head[3] != 0x4:
        raise Code.INVALID_INPUT.error(f"{address} answers, but not as a Ray cluster (no gRPC server there)",
                                       fix + " (the GCS port, 6379 by default, or ray://host:10001)", "--ray")


class RayExecutor(Executor):
    """`actors` Ray actors on the cluster at `address` ("local": a Ray instance started here,
    with `actors` CPUs; otherwise what `ray.init(address=...)` takes: "auto", "host:port",
    "ray://host:10001"); `actors` None: one per CPU of the cluster. `size` is the number of
    actors. submit(job, first, lines) returns a Future of the chunk's answers."""

    def __init__(self, address: str, actors: int | None, fail: ChunkFailure, *, max_attempts: int = 3,
                 chunk_timeout_s: float = 600.0, poll_s: float = 0.5, start_timeout_s: float = 120.0,
                 start_grace_s: float = 15.0):
        import signal

        ray = _ray()
        self._ray = ray
        self._started = False
        # ray.init puts its own SIGTERM handler in (exit 15 with a stack dump): the command's
        # stays, so SIGTERM ends a --ray batch as Ctrl-C does
        in_main = threading.current_thread() is threading.main_thread()
        sigterm = signal.getsignal(signal.SIGTERM) if in_main else None
        if not ray.is_initialized():
            if address != "local":
                _reachable(address)
            try:
                if address == "local":  # a new instance here, even beside a running cluster or with RAY_ADDRESS set
                    ray.init(address="local", num_cpus=actors, include_dashboard=False, log_to_driver=False,
                             configure_logging=False, logging_level=logging.WARNING)
                else:
                    ray.init(address=address, log_to_driver=False, configure_logging=False,
                             logging_level=logging.WARNING)
            except (ValueError, ConnectionError) as e:  # an address Ray cannot read, or no cluster there
                ray.shutdown()
                raise Code.INVALID_INPUT.error(
                    f"--ray {address!r}: {str(e)[:300]}", "pass local (a Ray instance on this machine), auto (the "
                    "cluster this machine belongs to), host:port or ray://host:10001", "--ray") from None
            except BaseException:  # a Ctrl-C while Ray starts: the processes it started so far go with it
                ray.shutdown()
                raise
            self._started = True
        if in_main and sigterm is not None:
            signal.signal(signal.SIGTERM, sigterm)
        try:
            self._start_actors(actors, start_timeout_s, start_grace_s)
        except BaseException:  # interrupted or refused while starting: no Ray process stays behind
            self._kill_all()
            raise
        self._fail, self._max_attempts, self._timeout = fail, max_attempts, chunk_timeout_s
        self._start_timeout = start_timeout_s
        # replacement actors not yet started: id -> (when asked for, its ping, the actor)
        self._starting: dict[int, tuple[float, object, object]] = {}
        self._lock = threading.Lock()
        # task id -> (when its actor began it, or None while it waits behind the actor's earlier
        # chunks; the actor); an actor runs its chunks in order, one at a time
        self._running: dict[int, tuple[float | None, object]] = {}
        self._queues: dict[int, deque[int]] = {id(a): deque() for a in self.actors}
        self._ids = 0
        self._closed = threading.Event()
        self.retries = 0
        self._watchdog = threading.Thread(target=self._watch, args=(poll_s,), daemon=True)
        self._watchdog.start()

    def _start_actors(self, actors: int | None, timeout_s: float, grace_s: float = 15.0) -> None:
        """`actors` actors (None: one per CPU of the cluster), kept once each has answered: an
        actor the cluster cannot place (more asked for than it has free CPUs) waited for a CPU
        forever, with chunks queued on it. Once the first has started (within `timeout_s`:
        else an error naming --jobs), the others get `grace_s` more; those not started by then
        are let go."""
        ray = self._ray
        if actors is None:  # the cluster's CPUs, not this machine's
            actors = int(ray.cluster_resources().get("CPU", 1))
        self._remote = ray.remote(num_cpus=1, max_restarts=0)(_ChunkActor)
        self.actors = [self._remote.remote() for _ in range(max(actors, 1))]
        pings = {a.pid.remote(): a for a in self.actors}
        ready, waiting = ray.wait(list(pings), num_returns=1, timeout=timeout_s)
        if ready and waiting:
            more, _ = ray.wait(waiting, num_returns=len(waiting), timeout=grace_s)
            ready += more
        started = [pings[r] for r in ready]
        for a in self.actors:
            if a not in started:
                ray.kill(a)
        if not started:
            free = ray.available_resources().get("CPU", 0)
            raise Code.INVALID_INPUT.error(
                f"no Ray actor of the {len(self.actors)} asked for started within {timeout_s:g} s (the cluster has "
                f"{free:g} free CPUs; each actor takes one)", "lower --jobs, or free CPUs on the cluster", "--jobs")
        if len(started) < len(self.actors):
            log.warning("%d of %d Ray actors started (the cluster has too few free CPUs for the others): using %d",
                        len(started), len(self.actors), len(started))
        self.actors = started

    def _kill_all(self) -> None:
        for a in getattr(self, "actors", []):
            self._ray.kill(a)
        if self._started:
            self._ray.shutdown()

    @property
    def size(self) -> int:
        """Actors in use: those that started (a dead one is replaced, so this stays that)."""
        return len(self.actors)

    # --- concurrent.futures.Executor ---

    def submit(self, job, first: int, lines: list[bytes]) -> Future:  # type: ignore[override]
        result: Future = Future()
        self._send(result, job, first, lines, 1)
        return result

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed.set()
        self._kill_all()

    # --- scheduling ---

    def _replace(self, dead) -> None:
        """A dead actor's replacement (none while the batch shuts down); the watchdog lets it go
        if it has not started within the start timeout (`_watch_starts`)."""
        with self._lock:
            if dead not in self.actors:
                return
            self.actors.remove(dead)
            if self._closed.is_set():
                return
            fresh = self._remote.remote()
            self.actors.append(fresh)
            self._queues[id(fresh)] = deque()
            self._starting[id(fresh)] = (time.monotonic(), fresh.pid.remote(), fresh)
            count = len(self.actors)
        log.warning("a Ray actor died; started a replacement (%d actors)", count)

    def _send(self, result: Future, job, first: int, lines: list[bytes], attempt: int) -> None:
        with self._lock:  # the actor with the fewest chunks queued, this one queued on it
            if not self.actors:  # every replacement let go: the cluster places none (a node lost)
                result.set_result(self._fail(first, lines, "no Ray actor is left to answer it (the replacements "
                                             f"of dead ones did not start within {self._start_timeout:g} s)"))
                return
            actor = min(self.actors, key=lambda a: len(self._queues[id(a)]))
            self._ids += 1
            task = self._ids
            queue = self._queues[id(actor)]
            self._running[task] = (None if queue else time.monotonic(), actor)
            queue.append(task)
        ref = actor.run.remote(job, first, lines)
        errors = (self._ray.exceptions.RayActorError, self._ray.exceptions.ActorUnavailableError)

        def done(fut: Future) -> None:
            try:
                answers, died, why = fut.result(), False, ""
            except errors as e:
                answers, died, why = None, True, f"its Ray actor died ({type(e).__name__})"
            except Exception as e:  # a task error: the job itself raised (a bug), not the actor
                answers, died, why = None, False, f"the chunk failed on its Ray actor: {type(e).__name__}: {e}"[:500]
            with self._lock:
                began, _ = self._running.pop(task, (None, None))
                queue = self._queues.get(id(actor), deque())
                if task in queue:
                    queue.remove(task)
                if not died and queue and queue[0] in self._running:  # the actor's next chunk begins now
                    self._running[queue[0]] = (time.monotonic(), actor)
            if answers is not None:
                result.set_result(answers)
                return
            if not died:
                result.set_result(self._fail(first, lines, why))
                return
            self._replace(actor)
            # a chunk that was still waiting behind another when its actor died did not fail
            tried = attempt if began is not None else attempt - 1
            if tried < self._max_attempts and not self._closed.is_set():
                self.retries += 1
                self._send(result, job, first, lines, tried + 1)
            else:
                result.set_result(self._fail(first, lines, f"{why}, {tried} times"))

        ref.future().add_done_callback(done)

    def _watch_starts(self, now: float) -> None:
        """Let go of replacement actors not started within the start timeout (their node lost,
        or no free CPU for them: they would wait forever, their chunks with them, each cycle of
        the chunk timeout starting another): killed, their chunks go to the actors left, or are
        answered by `fail` when none is."""
        with self._lock:
            starting = list(self._starting.items())
        for key, (asked, ping, actor) in starting:
            ready, _ = self._ray.wait([ping], timeout=0)
            if not ready and now - asked <= self._start_timeout:
                continue
            with self._lock:
                self._starting.pop(key, None)
                if not ready and actor in self.actors:
                    self.actors.remove(actor)
                left = len(self.actors)
            if not ready:
                log.error("a replacement Ray actor did not start within %.0f s (the cluster cannot place it: a node "
                          "lost, or no free CPU); going on with %d actors", self._start_timeout, left)
                self._ray.kill(actor, no_restart=True)

    def _watch(self, poll_s: float) -> None:
        """Kill the actor of a chunk running past the chunk timeout (its chunk is retried), and
        let go of replacements that do not start (`_watch_starts`)."""
        while not self._closed.wait(poll_s):
            now = time.monotonic()
            self._watch_starts(now)
            with self._lock:
                stuck = [actor for began, actor in self._running.values()
                         if began is not None and now - began > self._timeout]
            for actor in {id(a): a for a in stuck}.values():
                log.warning("a Ray actor ran a chunk for over %.0f s; killing it", self._timeout)
                self._ray.kill(actor, no_restart=True)
