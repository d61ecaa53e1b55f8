"""A pool of planning worker processes with hard per-job deadlines.

Why not concurrent.futures: saturation is CPU-bound and cannot be interrupted from inside
(a signal does not stop a running egglog iteration), so a job past its deadline must be
stopped by killing its process; ProcessPoolExecutor cannot kill one worker without breaking
the whole pool. Here each worker has a slot thread that feeds it one job at a time, waits
for the answer until the job's deadline, and on overrun SIGKILLs the worker and starts a
replacement. The service keeps serving meanwhile on the other slots.

Invariants:
- every submitted job's future is resolved exactly once: with an Answer, DeadlineExceeded
  (the deadline passed, queued or running) or WorkerLost (the worker died mid-job);
- the jobs the pool holds (submitted, not yet resolved) are at most `queue_size` plus its
  workers; past that, submit raises QueueFull;
- workers start from a forkserver that has already imported most of the planner (not egglog:
  see PRELOAD), and warm their target's rulesets before they take jobs; a replacement takes
  ~1.5 s on two cores, while the other slots keep serving.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from legalsat.planner.threads import one_thread_pools

log = logging.getLogger("legalsat.pool")

PRELOAD = ["legalsat.planner.build", "legalsat.planner.reasons", "legalsat.schemas.convert", "legalsat.schemas.optimize",
           "legalsat.schemas.protocol"]


class WorkerStartError(RuntimeError):
    """A worker that did not come up: what happened (`message`) and what to change (`fix`)."""

    def __init__(self, message: str, fix: str):
        super().__init__(f"{message} (fix: {fix})")
        self.message, self.fix = message, fix


class WorkerStartTimeout(WorkerStartError):
    """A worker that did not say ready within the pool's start timeout (not retried at start:
    a second start would wait as long again)."""


class QueueFull(Exception):
    """The waiting queue holds `queue_size` jobs already."""


class DeadlineExceeded(Exception):
    """The job's deadline passed before its answer came (it waited, or it ran too long)."""

    def __init__(self, waited: bool):
        self.waited = waited
        super().__init__("deadline passed while queued" if waited else "deadline passed while planning")


class WorkerLost(Exception):
    """The worker process died while it held the job (killed from outside, out of memory)."""


class PoolClosed(Exception):
    """The pool is shutting down and takes no new jobs."""


@dataclass
class _Job:
    kind: str
    payload: dict
    deadline: float  # time.monotonic()
    grace: float = 0.0  # seconds of the deadline past the job's own time budget
    future: Future = field(default_factory=Future)
    created: float = field(default_factory=time.monotonic)
    # queued behind other jobs (none waiting and a worker free when it came: it waits only for the
    # hand-off to that worker's thread, and a budget shorter than that, timeout_ms 1, still plans,
    # with 1 ms, instead of a 504 that blames a busy service)
    behind: bool = True



_STOP = object()


class _Slot:
    """One worker process and the thread that feeds it."""

    def __init__(self, pool: WorkerPool, index: int):
        self.pool = pool
        self.index = index
        self.proc: mp.process.BaseProcess | None = None
        self.conn = None
        self.busy_since: float | None = None
        self.start_error: WorkerStartError | None = None
        self.thread = threading.Thread(target=self._loop, name=f"legalsat-slot-{index}", daemon=True)

    def spawn_once(self) -> None:
        """`spawn`, a failure kept (`start_error`) for the pool to retry or surface (not a
        thread's traceback)."""
        try:
            self.spawn()
        except WorkerStartError as e:
            self.start_error = e

    def spawn(self) -> None:
        parent, child = self.pool.ctx.Pipe()
        from legalsat.server.worker import worker_main  # imported in the worker, not here

        proc = self.pool.ctx.Process(target=worker_main, args=(child, self.pool.target, self.pool.memory_mb,
                                                                   self.pool.egraph_max_bytes),
                                     name=f"legalsat-worker-{self.index}", daemon=True)
        proc.start()
        child.close()
        # the worker says "ready" once its rulesets are compiled; a worker that dies while
        # warming up is retried by the caller's next spawn
        if not parent.poll(self.pool.start_timeout_s):
            proc.kill()
            proc.join()
            raise WorkerStartTimeout(f"worker {self.index} did not start within {self.pool.start_timeout_s} s",
                                   "start fewer workers (LEGALSAT_WORKERS) on a machine this loaded")
        try:
            parent.recv()
        except EOFError:
            proc.join()
            raise WorkerStartError(
                f"worker {self.index} exited during start-up (exit code {proc.exitcode})",
                f"raise LEGALSAT_WORKER_MEMORY_MB ({self.pool.memory_mb} MiB now; a worker holds 225 MiB of "
                "data once warmed up, and exits so when it runs out while warming up)" if self.pool.memory_mb
                else "see the worker's error logged above") from None
        self.proc, self.conn = proc, parent

    def kill(self) -> None:
        """Stop the worker. Safe from the pool's close and the slot's own thread at once (each
        takes the process and pipe it stops: the other finds them gone, or stops them again)."""
        proc, conn = self.proc, self.conn
        self.proc = self.conn = None
        if proc is not None:
            proc.kill()
            proc.join()
        if conn is not None:
            conn.close()

    def _respawn(self, reason: str) -> None:
        self.kill()
        self.pool.restarts += 1
        if self.pool.on_restart is not None:
            self.pool.on_restart(reason)
        while not self.pool.closing:
            try:
                self.spawn()
                return
            except Exception as e:  # noqa: BLE001 - keep trying: the slot must come back
                log.error("restarting worker %d failed: %s", self.index, e)
                time.sleep(1.0)

    def _loop(self) -> None:
        while True:
            try:
                job = self.pool.jobs.get(timeout=1.0)
            except queue.Empty:
                if self.proc is not None and not self.proc.is_alive() and not self.pool.closing:
                    self._respawn("died_idle")
                continue
            if job is _STOP:
                break
            self._run(job)
        if self.conn is not None:
            try:
                self.conn.send(None)
                self.proc.join(timeout=5)
            except OSError:
                pass
            self.kill()

    def _run(self, job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return  # the caller gave up (client went away) before a worker was free
        if self.proc is None or not self.proc.is_alive():
            self._respawn("died_idle")
            if self.proc is None:  # shutting down: no replacement came
                job.future.set_exception(WorkerLost("the pool is shutting down"))
                return
        remaining = job.deadline - time.monotonic()
        # the time the job has left, not what it asked for: one that waited in the queue plans
        # in what is left of its deadline (and says what it could not finish), instead of
        # planning its full budget and having its worker killed at the deadline
        left = remaining - job.grace
        if left <= 0 and (remaining <= 0 or job.behind):
            job.future.set_exception(DeadlineExceeded(waited=True))  # all of its time went waiting
            return
        budget_ms = max(1, round(left * 1000))
        self.busy_since = time.monotonic()
        # what the budget lost to the queue (a job that found a worker free lost only its hand-off)
        waited_ms = round((self.busy_since - job.created) * 1000) if job.behind else 0
        try:
            self.conn.send((job.kind, job.payload, budget_ms, waited_ms))
            if self.conn.poll(remaining):
                answer = self.conn.recv()
                job.future.set_result(answer)
                return
            # overran: the only way to stop an egglog iteration is to stop its process (killed
            # before the answer goes out, so that no caller sees a doomed worker as alive)
            self.kill()
            job.future.set_exception(DeadlineExceeded(waited=False))
            self._respawn("deadline")
        except (EOFError, OSError, BrokenPipeError):
            self.kill()
            job.future.set_exception(WorkerLost(f"worker {self.index} died while planning"))
            self._respawn("died_busy")
        finally:
            self.busy_since = None


class WorkerPool:
    """`size` planning processes behind a bounded queue (see the module docstring)."""

    def __init__(self, size: int, queue_size: int, target: str = "sm90",
                 on_restart: Callable[[str], None] | None = None, start_timeout_s: float = 120.0,
                 memory_mb: int | None = None, egraph_max_bytes: int | None = None):
        self.size = size
        self.memory_mb = memory_mb
        self.egraph_max_bytes = egraph_max_bytes
        self.target = target
        self.on_restart = on_restart
        self.start_timeout_s = start_timeout_s
        self.queue_size = queue_size
        # unbounded: admission counts the jobs the pool holds (`_held`: submitted, not yet
        # resolved), so that a job waiting the moment before an idle worker takes it holds no
        # place (the queue's own bound refused a batch of queue plus workers on an idle pool)
        self.jobs: queue.Queue = queue.Queue()
        self._held = 0
        self._held_lock = threading.Lock()
        self.restarts = 0
        self.closing = False
        self.ctx = mp.get_context("forkserver")
        # the forkserver imports the planner once; every worker forks from it and inherits its
        # memory: its native pools start with one thread (legalsat.planner.threads: each helper
        # thread of numpy's OpenBLAS, one per CPU less one, took 40 MiB of every worker's limit). egglog stays out of it: forking
        # after its import leaves its thread pool dead in the child (hangs).
        one_thread_pools()
        self.ctx.set_forkserver_preload(PRELOAD)
        self.slots = [_Slot(self, i) for i in range(size)]

    def start(self) -> None:
        """Start every worker (in parallel) and its slot thread; returns when all are ready."""
        starters = [threading.Thread(target=s.spawn_once) for s in self.slots]
        for t in starters:
            t.start()
        for t in starters:
            t.join()
        for s in self.slots:
            if s.proc is None and isinstance(s.start_error, WorkerStartTimeout):
                raise s.start_error  # a second start would wait its timeout again
            if s.proc is None:
                s.spawn()  # one retry of a worker that exited while starting; surfaces its error
            s.thread.start()

    def submit(self, kind: str, payload: dict, deadline: float, grace_s: float = 0.0) -> Future:
        """Queue a job; its future resolves to an Answer or raises one of this module's
        exceptions. Raises QueueFull or PoolClosed at once. The worker gets what is left
        of the deadline less `grace_s` as the job's time budget when it starts it."""
        if self.closing:
            raise PoolClosed()
        free = self.jobs.qsize() == 0 and any(s.busy_since is None for s in self.slots)
        job = _Job(kind, payload, deadline, grace_s, behind=not free)
        with self._held_lock:
            if self._held >= self.capacity:
                raise QueueFull()
            self._held += 1
        job.future.add_done_callback(self._released)  # answered, failed or cancelled while queued
        self.jobs.put_nowait(job)  # a cancelled job's place is free at once; a worker skips it
        return job.future

    def _released(self, _future: Future) -> None:
        with self._held_lock:
            self._held -= 1

    @property
    def queued(self) -> int:
        """Jobs waiting for a worker (not those whose callers gave up)."""
        with self.jobs.mutex:
            return sum(1 for j in self.jobs.queue if j is not _STOP and not j.future.cancelled())

    @property
    def busy(self) -> int:
        """Workers holding a job now."""
        return sum(1 for s in self.slots if s.busy_since is not None)

    @property
    def capacity(self) -> int:
        """Jobs the pool holds at most at once: a place in the queue or a worker each."""
        return self.queue_size + self.size

    @property
    def capacity_left(self) -> int:
        """Jobs that can be accepted right now: free queue places plus idle workers (the jobs
        submitted and not yet resolved, taken from what the pool holds)."""
        return self.capacity - self._held

    @property
    def alive(self) -> int:
        return sum(1 for s in self.slots if s.proc is not None and s.proc.is_alive())

    def close(self, timeout_s: float = 30.0) -> None:
        """Finish queued and running jobs (each still bounded by its deadline), then stop the
        workers. Idempotent."""
        if self.closing:
            return
        self.closing = True
        for _ in self.slots:
            self.jobs.put(_STOP)
        end = time.monotonic() + timeout_s
        for s in self.slots:
            if s.thread.is_alive():
                s.thread.join(timeout=max(0.0, end - time.monotonic()))
        for s in self.slots:
            s.kill()
