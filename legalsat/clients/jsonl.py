"""JSON Lines processing shared by the streaming commands.

One answer per input line, in order, whatever the line holds: a line that cannot be judged
gets an error object on its output line (never a crash, never a dropped line).

Large files are split into chunks answered by worker processes (answers are still written
in input order); a pipe is answered line by line and flushed, so an interactive caller that
writes one line and waits gets its answer.
"""

from __future__ import annotations

import functools
import io
import multiprocessing as mp
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import BrokenExecutor, Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO

from legalsat.diagnostics import Code, InputError

LineHandler = Callable[[bytes], bytes]
ErrorShaper = Callable[[InputError], bytes]
# A chunk job: (first line number, lines) -> the answers, newline-terminated. It must be a
# module-level function (or a functools.partial of one) so worker processes can receive it.
ChunkJob = Callable[[int, list[bytes]], bytes]

CHUNK_LINES = 4000
PARALLEL_MIN_BYTES = 1 << 20


HEAD_BYTES = 4096  # of an oversize line, kept for its error object


class Oversize(bytes):
    """A line past the byte limit, read past without being kept: empty, with its length and
    its first HEAD_BYTES (where a request names its request_id, for its error object)."""

    length: int
    head: bytes

    def __new__(cls, length: int, head: bytes = b"") -> Oversize:
        out = super().__new__(cls, b"")
        out.length, out.head = length, head
        return out

    def __reduce__(self):  # travels to a worker in a chunk
        return (Oversize, (self.length, self.head))



READ_STEP = 1 << 20  # bytes an oversize line is read past in, a step at a time
# bytes of one line past which the input is not JSON Lines (/dev/zero, a binary file): reading
# stops there with an error, where it read on for ever, answering nothing
ENDLESS_LINE_BYTES = 1 << 30


def bounded_lines(f: BinaryIO, max_line_bytes: int) -> Iterable[bytes]:
    """The lines of `f` (with their newlines), each read at most `max_line_bytes` + 2 bytes
    at a time: a longer one is read past in READ_STEP steps, dropped, and yielded as an
    `Oversize` of its length, so no line costs more memory than the limit (a file of no
    newline, /dev/zero, grew a process by gigabytes)."""
    while True:
        line = f.readline(max_line_bytes + 2)
        if not line:
            return
        if line.endswith(b"\n") or len(line) <= max_line_bytes + 1:
            yield line
            continue
        length, head = len(line), line[:HEAD_BYTES]
        while not line.endswith(b"\n"):
            if length > ENDLESS_LINE_BYTES:
                name = getattr(f, "name", None)
                raise Code.LINE_TOO_LONG.error(
                    f"a line of {'the input' if not isinstance(name, str) else name} runs past {ENDLESS_LINE_BYTES} "
                    "bytes without a newline: it is not JSON Lines, and reading stopped there",
                    "pass a JSON Lines file (one request per line); the lines before it were answered",
                    limit=ENDLESS_LINE_BYTES)
            line = f.readline(READ_STEP)
            if not line:
                break
            length += len(line)
        yield Oversize(length - line.endswith(b"\n"), head)  # the line's own bytes, as an in-memory line's


def process_lines(lines: Iterable[bytes], out: BinaryIO, handle: LineHandler,
                  shape_error: ErrorShaper, max_line_bytes: int, first_line: int = 1,
                  flush_each: bool = False) -> int:
    """Write handle(line) for every line of `lines` to `out`; return the number of lines.

    Invariant: exactly one output line per input line. `handle` may raise InputError
    (shaped by `shape_error`, which finds the line's number and text on it as `line` and
    `text`); any other exception is a bug and propagates.
    """
    n = 0
    write = out.write
    for raw in lines:
        line = b"" if isinstance(raw, Oversize) else raw.strip()
        try:
            if isinstance(raw, Oversize) or len(line) > max_line_bytes:
                length = raw.length if isinstance(raw, Oversize) else len(line)
                raise Code.LINE_TOO_LONG.error(
                    f"line {first_line + n} has {length} bytes; the limit is {max_line_bytes}",
                    limit=max_line_bytes, value=length)
            if not line:
                raise Code.EMPTY_LINE.error(f"line {first_line + n} is empty")
            answer = handle(line)
        except InputError as e:
            # where it happened, for shapers that say so (an oversize line: its first bytes)
            e.line, e.text = first_line + n, raw.head if isinstance(raw, Oversize) else line
            answer = shape_error(e)
        write(answer + b"\n")
        n += 1
        if flush_each:
            out.flush()
    return n


def answer_chunk(handle: LineHandler, shape_error: ErrorShaper, max_line_bytes: int,
                 first_line: int, lines: list[bytes]) -> bytes:
    """process_lines over an in-memory chunk, returning its output."""
    buf = io.BytesIO()
    process_lines(lines, buf, handle, shape_error, max_line_bytes, first_line)
    return buf.getvalue()


def _chunks(f: BinaryIO, size: int, max_line_bytes: int) -> Iterable[tuple[int, list[bytes]]]:
    first, chunk = 1, []
    for line in bounded_lines(f, max_line_bytes):
        chunk.append(line)
        if len(chunk) == size:
            yield first, chunk
            first, chunk = first + size, []
    if chunk:
        yield first, chunk


def is_regular_file(f: BinaryIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # no descriptor: a stream in memory
        return False


def run_stream(f: BinaryIO, out: BinaryIO, job: ChunkJob, make_handler: Callable[[], LineHandler],
               shape_error: ErrorShaper, max_line_bytes: int, workers: int, *,
               chunk_lines: int = CHUNK_LINES, parallel_min_bytes: int = PARALLEL_MIN_BYTES,
               interactive_pipes: bool = True, progress: Callable[[int], None] | None = None,
               start_method: str = "fork", executor: Callable[[], Executor] | None = None,
               lost: Callable[[int, list[bytes], str], bytes] | None = None) -> int:
    """Answer every line of `f` on `out`, in order; return the number of lines.

    Input of at least `parallel_min_bytes` (a regular file; any pipe when not
    `interactive_pipes`) is answered by `workers` processes running `job` on chunks of
    `chunk_lines` (at most 2 chunks per worker in flight, so memory stays bounded); any other
    input is answered here, line by line, flushing after each line of a pipe. `progress`
    is called with the number of lines answered so far after each chunk is written.
    Cheap per-line work (validation) wants large chunks and a size threshold; expensive work
    (planning) wants chunks of one line and workers from the first line. `start_method`
    "forkserver" is for callers whose process may hold native thread pools (egglog, z3),
    which a fork would copy mid-flight. `executor` makes the pool another
    concurrent.futures.Executor of `workers` workers, or of its own `size` when it has one
    (legalsat.clients.ray_batch: actors of a Ray cluster); everything else, the order and the
    bound on work in flight (two chunks a worker) included, is this same code. `lost(first,
    lines, why)` answers a chunk whose local worker process died `LOCAL_ATTEMPTS` times (the
    pool is restarted after each death; default: `lost_answers` with `shape_error`).
    """
    regular = is_regular_file(f)
    size = os.fstat(f.fileno()).st_size if regular else 0
    interactive = not regular and interactive_pipes
    to_file = is_regular_file(out)  # else a reader (a pipe, a terminal) sees each answer as it is written
    if interactive or (executor is None and workers <= 1) or (regular and size < parallel_min_bytes):
        # each answer flushed for a caller that waits on it (input and output both pipes or
        # terminals); a file read into a pipe or /dev/null is written in buffered blocks
        return process_lines(bounded_lines(f, max_line_bytes), out, make_handler(), shape_error, max_line_bytes,
                             flush_each=interactive and not to_file)
    n = done = 0
    pending: deque[_Chunk] = deque()
    make_pool = executor or (lambda: ProcessPoolExecutor(workers, mp_context=mp.get_context(start_method),
                                                         initializer=_worker_start))
    pool = make_pool()
    generation = 0  # pools started so far, less one: a chunk broken on an older pool did not break this one

    def answers(c: _Chunk) -> bytes:
        """The oldest chunk's answers. A local worker that died (killed, out of memory, a native
        crash) breaks its whole pool: a fresh one is started and each chunk the break took is
        run again alone, so the chunk that kills its worker is the one retried and, after
        `LOCAL_ATTEMPTS`, answered by `lost` (the others are answered as usual)."""
        nonlocal pool, generation
        while True:
            try:
                return c.future.result()
            except BrokenExecutor:
                if executor is not None:  # an executor of its own retries (Ray)
                    raise
            if c.generation == generation:  # it was running when this pool broke
                c.attempts += 1
                _stop(pool)
                pool, generation = make_pool(), generation + 1
                if c.attempts >= LOCAL_ATTEMPTS:
                    why = f"its worker process died {c.attempts} times"
                    return (lost or functools.partial(lost_answers, shape_error))(c.first, c.lines, why)
            c.future, c.generation = submit(c.first, c.lines), generation

    def submit(first: int, lines: list[bytes]) -> Future:
        """pool.submit, a pool a dead worker broke answered as a broken future (answers() then
        starts a fresh one; submit itself raised, past the retries, while input was read)."""
        try:
            return pool.submit(job, first, lines)
        except BrokenExecutor as e:
            if executor is not None:
                raise
            broken: Future = Future()
            broken.set_exception(e)
            return broken

    def write_oldest() -> None:
        nonlocal done
        c = pending.popleft()
        out.write(answers(c))
        done += len(c.lines)
        if progress:
            progress(done)
        if not to_file:
            out.flush()

    try:
        inflight = 2 * getattr(pool, "size", workers)  # an executor that sizes itself (a Ray cluster) says so
        for first, chunk in _chunks(f, chunk_lines, max_line_bytes):
            pending.append(_Chunk(first, chunk, submit(first, chunk), generation))
            n += len(chunk)
            while len(pending) >= inflight or (pending and pending[0].future.done()):  # answers as they are ready
                write_oldest()
        while pending:
            write_oldest()
    except BaseException:  # interrupted, or the output failed: stop the workers, do not wait for them
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    return n


LOCAL_ATTEMPTS = 3  # runs of a chunk whose worker process dies before its lines are answered as lost


def lost_answers(shape_error: ErrorShaper, first: int, lines: list[bytes], why: str,
                 fix: str = "run the line again") -> bytes:
    """A chunk that could not be answered: one `worker_lost` error object per line, shaped as
    the command shapes its errors."""
    out = []
    for k, line in enumerate(lines):
        err = Code.WORKER_LOST.error(f"line {first + k} was not answered: {why}", fix)
        err.line, err.text = first + k, line.head if isinstance(line, Oversize) else line.strip()
        out.append(shape_error(err) + b"\n")
    return b"".join(out)


@dataclass(eq=False)
class _Chunk:
    """Lines in flight: where they start, their future, the pool generation it belongs to."""

    first: int
    lines: list[bytes]
    future: Future
    generation: int
    attempts: int = 0


def _worker_start() -> None:
    """A worker leaves Ctrl-C (SIGINT to the whole process group) to the parent, which stops
    it: a worker interrupted inside the pool's result queue would hold its lock and hang the
    parent's shutdown. And it dies with the parent, as the service's workers do: after kill -9
    (a build farm's timeout, the OOM killer) or SIGHUP of `legalsat batch`, its workers and the
    forkserver lived on, holding the command's stdout open, so a pipeline around it never ended.
    Its native pools run one thread: it is one worker of one per CPU (`legalsat.planner.threads`)."""
    import signal

    from legalsat.planner.threads import one_thread_pools
    from legalsat.server.lifetime import tie_to_server

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tie_to_server()
    one_thread_pools()


def _stop(pool: Executor) -> None:
    """Cancel what has not started and end the workers now (a worker may be minutes into a
    request): no process outlives an interrupted stream."""
    # 3.11-3.13: by hand, with the processes taken before shutdown() forgets them (it sets
    # `_processes` to None: read after it, no worker was stopped and the exit waited for them)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14's ProcessPoolExecutor
    if terminate is not None:
        terminate()
        return
    for proc in procs:
        proc.terminate()
