"""The `legalsat` command line. Every subcommand mirrors an HTTP route and uses the same models.

    legalsat validate-descriptor [--target sm90] [FILE|-]   JSON Lines in, one verdict per line out
    legalsat bank-conflicts [--target sm90] [FILE|-]        JSON Lines in, one report per line out
    legalsat verify-pipeline [FILE|-]                       JSON Lines in, one verdict per line out
    legalsat optimize [REQUEST.json|-]                      one planning request in, its response out
    legalsat batch IN.jsonl -o OUT.jsonl [--jobs N]         many requests, planned in parallel, in order
    legalsat schema [request|response]                      the published JSON Schemas
    legalsat serve [--host H] [--port P] [--workers N] ...  the HTTP service (FastAPI + uvicorn)
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable

from legalsat.clients.entry import EXIT_INTERRUPTED
from legalsat.diagnostics import Code, InputError, internal_error, shown
from legalsat.schemas.base import compact_json, model_json
from legalsat.settings import COMMAND_LINE_SETTINGS, Settings, get_settings, redacted

MAX_SHOWN_PROBLEMS = 8  # problems of one usage error printed (the first is the headline)


def _settings(flags: dict[str, str], uses_target: bool = True, service: bool = False,
              reads: frozenset[str] = COMMAND_LINE_SETTINGS, **overrides: object) -> Settings:
    """`get_settings`, its validation errors as InputError naming the flag (`flags`: setting
    -> the command's flag) or the LEGALSAT_ variable each bad value came from; the target is
    resolved only for a command that `uses_target`. A command other than `serve` (`service`)
    is refused only for the settings it `reads` (default COMMAND_LINE_SETTINGS): a bad
    LEGALSAT_PORT is said in a note and left to serve, a bad LEGALSAT_WORKERS to the commands
    that start workers."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from legalsat.targets import resolve_target

    try:
        settings = get_settings(**overrides)
        # InputError naming it (the flag that set it, or the variable), with the targets there are
        if uses_target:
            resolve_target(settings.target, field=flags.get("target", "LEGALSAT_TARGET")
                           if overrides.get("target") is not None else "LEGALSAT_TARGET")
        elif not service and "LEGALSAT_TARGET" in os.environ:  # said, as other settings this command does not read
            try:
                resolve_target(settings.target, field="LEGALSAT_TARGET")
            except InputError:
                print(f"legalsat: note: LEGALSAT_TARGET is not valid ({shown(settings.target)} is no target); this "
                      "command does not read it", file=sys.stderr)
        return settings
    except SettingsError as e:  # a variable that is not even of its type's syntax (a list not in JSON)
        m = re.search(r'field "(\w+)"', str(e))
        var = f"LEGALSAT_{m.group(1).upper()}" if m else "a LEGALSAT_ variable"
        if m and not service and m.group(1) not in reads and var in os.environ:
            # a service-only variable: said, and read as unset (as a bad value of its type is)
            print(f"legalsat: note: {var} cannot be read; this command does not read it", file=sys.stderr)
            value = os.environ.pop(var)
            try:
                return _settings(flags, uses_target, service, reads, **overrides)
            finally:
                os.environ[var] = value
        raise Code.INVALID_INPUT.error(f"{var} cannot be read: {e}", f"give {var} as the JSON its type needs "
                                       '(a list as ["a", "b"])', var) from None
    except ValidationError as e:
        errors = e.errors(include_url=False)
        unread = {str(err["loc"][0]) for err in errors if err.get("loc")} - reads
        if not service and unread and all(err.get("loc") and str(err["loc"][0]) in unread for err in errors):
            for name in sorted(unread):
                print(f"legalsat: note: LEGALSAT_{name.upper()} is not valid; this command does not read it",
                      file=sys.stderr)
            defaults = {name: Settings.model_fields[name].get_default(call_default_factory=True) for name in unread}
            return _settings(flags, uses_target, service, reads, **{**overrides, **defaults})
        problems = []
        for err in errors:
            name = str(err["loc"][0]) if err.get("loc") else ""
            where = flags[name] if overrides.get(name) is not None and name in flags else f"LEGALSAT_{name.upper()}"
            field = Settings.model_fields.get(name)
            what = field.description if field is not None and field.description else name
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            given = err.get("input")  # never a secret: the token hidden, the cache URL's password masked
            given = ("(hidden)" if name == "token" else repr(redacted(given)) if name == "cache_url"
                     and isinstance(given, str) else repr(given))
            problems.append(Code.INVALID_INPUT.at(f"{where} is {given}: {msg}",
                                                  f"give {where} a valid value: {what}", field=where))
        raise InputError(problems) from None


def _named(e: OSError, name: str) -> OSError:
    """`e` naming `name` as its file, where the error names none (a read or write failing
    after its open: EIO on /proc/self/mem or /proc/version, a failing disk)."""
    return type(e)(e.errno, e.strerror, name) if e.filename is None and e.errno is not None else e


class _NamedInput:
    """An input file whose read errors name it (a read can fail where an open did not: EIO on
    /proc/self/mem, a failing disk), so the CLI's message says which file."""

    def __init__(self, f, name: str, owned: bool = True):
        self._f, self._name, self._owned = f, name, owned  # stdin is not ours to close

    def _named(self, e: OSError) -> OSError:
        return _named(e, self._name)

    def read(self, *size: int) -> bytes:
        try:
            return self._f.read(*size)
        except OSError as e:
            raise self._named(e) from None

    def readline(self, *size: int) -> bytes:
        try:
            return self._f.readline(*size)
        except OSError as e:
            raise self._named(e) from None

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._f)
        except OSError as e:
            raise self._named(e) from None

    def seek(self, *args: int) -> int:
        return self._f.seek(*args)

    def fileno(self) -> int:
        return self._f.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self._owned:
            self._f.close()


def _open_input(path: str) -> _NamedInput:
    if path != "-":
        return _NamedInput(open(path, "rb"), path)
    if sys.stdin is None:  # started with stdin closed (`<&-`, as daemons and some build systems start tools)
        raise Code.INVALID_INPUT.error("the input is - (stdin), but stdin is closed",
                                       "pass the input as a file argument, or give the command a stdin", "file")
    return _NamedInput(sys.stdin.buffer, "stdin", owned=False)


_LEGAL = compact_json({"legal": True, "violations": []})


def _judged_line_error(shape: Callable[[InputError], dict], err: InputError) -> bytes:
    """An analysis' answer to a JSON Lines line it could not judge: its verdict-shaped error
    (`shape`) and the line's number."""
    return compact_json({**shape(err), "line": getattr(err, "line", None)})


@functools.cache
def _descriptor_handler(target_name: str) -> Callable[[bytes], bytes]:
    from legalsat import api
    from legalsat.targets import resolve_target

    resolve_target(target_name, need_tma=True)  # a bad target is a usage error, before any input

    def handle(line: bytes) -> bytes:
        verdict = api.validate_descriptor(line, target_name)
        return _LEGAL if verdict.legal else model_json(verdict)

    return handle


def _descriptor_error(err: InputError) -> bytes:
    from legalsat.schemas.descriptors import error_line

    return _judged_line_error(error_line, err)


@functools.cache
def _bank_handler(target_name: str) -> Callable[[bytes], bytes]:
    from legalsat import api
    from legalsat.targets import resolve_target

    resolve_target(target_name)  # an unknown default target is a usage error

    def handle(line: bytes) -> bytes:
        return model_json(api.analyze_bank_conflicts(line, target_name))

    return handle


def _bank_error(err: InputError) -> bytes:
    from legalsat.schemas.bank import error_line

    return _judged_line_error(error_line, err)


@functools.cache
def _pipeline_handler(target_name: str) -> Callable[[bytes], bytes]:
    from legalsat import api

    def handle(line: bytes) -> bytes:  # protocols are target-independent
        return model_json(api.verify_pipeline(line))

    return handle


def _pipeline_error(err: InputError) -> bytes:
    from legalsat.schemas.protocol import error_line

    return _judged_line_error(error_line, err)


@functools.cache
def _plan_handler(target_name: str) -> Callable[[bytes], bytes]:
    from legalsat import api

    def handle(line: bytes) -> bytes:
        try:
            return compact_json(api.optimize(_with_target(line, target_name)))
        except InputError:
            raise
        except Exception as e:  # a planner bug must not stop the batch: report it on its line
            raise InputError([internal_error(e)]) from None

    return handle  # requests that name no target get `target_name`


def _plan_error(err: InputError) -> bytes:
    """A batch line's error object: its request_id (when the line is an object that names one)
    and its line number."""
    from legalsat.schemas.service import error_item

    return compact_json(error_item(err, _request_id_of(getattr(err, "text", b"") or b""),
                                   getattr(err, "line", None)))


_REQUEST_ID = re.compile(rb'"request_id"\s*:\s*("(?:[^"\\]|\\.){0,256}")')


def _request_id_of(text: bytes) -> str | None:
    """The request_id a line names, however broken the rest of it is: parsed leniently (any
    number, NaN, repeated keys), else (a line nesting too deep to parse) the first
    `"request_id": "..."` in it; None where it is not Unicode text (a lone surrogate), which
    the error object could not carry faithfully (the service's batch answers null too)."""
    rid = _lenient_request_id(text)
    if rid is not None:
        try:
            rid.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return rid


def _lenient_request_id(text: bytes) -> str | None:
    obj = None
    try:
        obj = json.loads(text, parse_int=lambda s: 0, parse_constant=lambda s: None)
    except (ValueError, UnicodeDecodeError, RecursionError):
        m = _REQUEST_ID.search(text[:1 << 20])
        if m:
            try:
                return json.loads(m.group(1))[:256]
            except (ValueError, UnicodeDecodeError):
                return None
    if isinstance(obj, dict) and isinstance(obj.get("request_id"), str):
        return obj["request_id"][:256]
    return None


def lost_chunk(first: int, lines: list[bytes], why: str) -> bytes:
    """Answers for a chunk whose workers kept dying: one error object per line."""
    from legalsat.clients.jsonl import lost_answers

    return lost_answers(_plan_error, first, lines, why,
                        "run the line again; if it fails again, lower its options.node_limit")


_ERROR_LINE = re.compile(rb'^\{"request_id":(?:null|"(?:[^"\\]|\\.)*"),"status":"error"')


# an analysis command's error object: its verdict's fields, then "error" (a key: inside a JSON
# string the quotes would be escaped)
_ANALYSIS_ERROR_LINE = re.compile(rb',"error":\{"code":"')


class _BatchOutput:
    """A streaming command's output, counting the error lines it writes (`pattern`: how an
    error line starts, or where its error object is)."""

    def __init__(self, raw, pattern: re.Pattern[bytes] = _ERROR_LINE, name: str = "stdout"):
        self.raw, self.errors, self.pattern, self.name = raw, 0, pattern, name

    def _named(self, e: OSError) -> OSError:  # a write error names where (-o /proc/version: "Input/output error")
        return _named(e, self.name)

    def write(self, data: bytes) -> int:
        self.errors += sum(bool(self.pattern.search(line)) for line in data.splitlines())
        try:
            return self.raw.write(data)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._named(e) from None

    def flush(self) -> None:
        try:
            self.raw.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._named(e) from None

    def fileno(self) -> int:  # where it writes (run_stream flushes each answer unless it is a file)
        return self.raw.fileno()


# command -> (per-line handler factory (cached per process), shaper of input errors)
_STREAMS: dict[str, tuple[Callable[[str], Callable[[bytes], bytes]], Callable[[InputError], bytes]]] = {
    "validate-descriptor": (_descriptor_handler, _descriptor_error),
    "bank-conflicts": (_bank_handler, _bank_error),
    "verify-pipeline": (_pipeline_handler, _pipeline_error),
    "batch": (_plan_handler, _plan_error),
}


def plan_chunk_job(target_name: str, max_line_bytes: int):
    """The chunk job of `legalsat batch` (what a worker process or a Ray actor runs on each
    chunk): (first line number, lines) -> one answer per line."""
    return functools.partial(_stream_chunk, "batch", target_name, max_line_bytes)


def _stream_chunk(command: str, target_name: str, max_line_bytes: int, first: int,
                  lines: list[bytes]) -> bytes:
    """A chunk of a streaming command, answered in a worker process."""
    from legalsat.clients.jsonl import answer_chunk

    handler, shape_error = _STREAMS[command]
    return answer_chunk(handler(target_name), shape_error, max_line_bytes, first, lines)


def _run_stream(args: argparse.Namespace) -> int:
    """Answer a JSON Lines stream for any command of _STREAMS."""
    from legalsat.clients.jsonl import run_stream

    settings = _settings({"target": "--target", "workers": "--workers"}, args.command != "verify-pipeline",
                         target=args.target, workers=args.workers)
    handler, shape_error = _STREAMS[args.command]
    out = _BatchOutput(sys.stdout.buffer, _ANALYSIS_ERROR_LINE)
    with _open_input(args.file) as f:
        run_stream(f, out, functools.partial(_stream_chunk, args.command, settings.target, settings.max_body_bytes),
                   lambda: handler(settings.target), shape_error, settings.max_body_bytes, settings.workers)
    out.flush()
    return BATCH_LINES_FAILED if out.errors else 0  # a verdict (legal or not, ok or not) is an answer


def _add_stream_args(p: argparse.ArgumentParser, target_help: str | None) -> None:
    if target_help:
        p.add_argument("--target", default=None, help=target_help)
    else:
        p.set_defaults(target=None)
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes for large files (default: LEGALSAT_WORKERS, the CPUs the process may use)")
    p.add_argument("file", nargs="?", default="-", help="JSON Lines file, or - for stdin (default)")
    p.set_defaults(run=_run_stream)


def _with_target(data: bytes, target: str) -> dict:
    """The request, parsed once as the service parses a body (strict JSON: UTF-8 without a
    byte order mark, no repeated key, no NaN, bounded nesting; a JSON object, not a string
    holding one), with `target` where it names none."""
    from legalsat.schemas.base import load_json
    from legalsat.schemas.validation import json_kind

    obj = load_json(data, "the request")
    if not isinstance(obj, dict):
        raise Code.INVALID_INPUT.error(f"the request is {json_kind(obj)}, not a JSON object",
                                       'send one request object, {"op": {...}} (not a string holding one)')
    return obj if "target" in obj else {**obj, "target": target}


def _json_lines_hint(data: bytes, name: str, command: str = "optimize") -> None:
    """Raise a clear error when what did not parse as one JSON value is a JSON Lines file
    (several requests, or `batch`'s answers) given to `optimize` or `emit`."""
    from legalsat.schemas.base import load_json
    from legalsat.schemas.validation import STREAM_COMMANDS, input_kind

    lines = [ln for ln in data.splitlines() if ln.strip()]
    if len(lines) < 2:
        return
    try:
        first = [load_json(ln) for ln in lines[:3]]
    except InputError:
        return
    where = "stdin" if name == "-" else name
    kind = input_kind(first[0])
    stream = STREAM_COMMANDS.get(kind)  # responses (batch's output) have none: `emit` takes one of them
    if stream is not None and not (command == "optimize" and kind == "optimize"):
        # another command's inputs (descriptors given to optimize, requests to emit): the command that takes them
        raise Code.INVALID_JSON.error(
            f"{where} holds {len(lines)} lines of JSON Lines, the first a {kind} input, not one "
            f"{'request' if command == 'optimize' else 'response'}",
            f"answer them all with `legalsat {stream} {name}` (one answer per line, in order)")
    if command == "emit":
        raise Code.INVALID_JSON.error(
            f"{where} holds {len(lines)} lines of JSON Lines, not one response: `emit` turns one optimize response "
            "(or one plan) into a kernel",
            f"pick one line, e.g. `sed -n 2p {name} | legalsat emit -` for the second")
    raise Code.INVALID_JSON.error(
        f"{where} holds {len(lines)} lines of JSON Lines, not one request: `optimize` plans one JSON object",
        f"plan them all with `legalsat batch {name} -o OUT.jsonl` (one answer per line, in order), "
        "or pass one request")


def _optimize(args: argparse.Namespace) -> int:
    from legalsat.api import optimize

    if args.stage and args.format == "summary":  # before any input is read
        raise Code.INVALID_INPUT.error(f"--stage {args.stage} prints what the stages produced as JSON; --format "
                                       "summary summarises a response, which --stage does not make",
                                       "leave out --format summary to see the stages, or --stage to see the summary",
                                       "--format")
    settings = _settings({"target": "--target"}, reads=frozenset({"target", "max_body_bytes"}), target=args.target)
    limit = settings.max_body_bytes
    with _open_input(args.file) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise Code.TOO_LARGE.error(f"the request is over {limit} bytes",
                                   "send a smaller request, or raise LEGALSAT_MAX_BODY_BYTES", limit=limit)
    try:
        request = _with_target(data, settings.target)
    except InputError:
        _json_lines_hint(data, args.file)  # the likelier mistake, when it is one
        raise
    if args.target and isinstance(request.get("target"), str) and request["target"] != args.target:
        print(f"legalsat: note: the request names target {request['target'][:20]!r}; --target {args.target} is "
              "for requests that name none", file=sys.stderr)
    options = request.get("options", {})
    # the table's "why" is the planner's explain; options, or an explain, of another type are
    # left as sent, to be refused as they are under --format json
    if args.format == "summary" and isinstance(options, dict) and type(options.get("explain", False)) is bool:
        request = {**request, "options": {**options, "explain": True}}
    if args.stage:
        from legalsat.api import dump_stages

        if isinstance(options, dict) and "timeout_ms" in options:
            print(f"legalsat: note: --stage runs each stage whole; the request's timeout_ms "
                  f"({shown(options['timeout_ms'])}) applies to its answer without --stage", file=sys.stderr)
        sys.stdout.write(json.dumps(dump_stages(request, args.stage), indent=None if args.compact else 2) + "\n")
        return 0
    out = optimize(request)
    if args.format == "summary":
        from legalsat.clients.summary import summary

        sys.stdout.write(summary(out))
    else:
        sys.stdout.write(json.dumps(out, indent=None if args.compact else 2) + "\n")
    return 0 if out["status"] == "ok" else 3


def _codes(args: argparse.Namespace) -> int:
    from legalsat.diagnostics import catalogue

    rows = catalogue()
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    for r in rows:
        sys.stdout.write(f"{r['code']:28s} {r['category']:9s} {r['summary']}\n{'':38s}fix: {r['fix']}\n")
    return 0


BATCH_LINES_FAILED = 4  # a streaming command (batch, the analyses) answered every line, and some with an error object


def _batch(args: argparse.Namespace) -> int:
    """Plan a JSON Lines file: the streaming machinery of the other commands, with chunks
    of one request (planning is ~10-300 ms a line) and workers even for a pipe."""
    from legalsat.clients.jsonl import run_stream

    settings = _settings({"workers": "--jobs", "target": "--target"}, workers=args.jobs, target=args.target)
    total = 0
    start = time.monotonic()
    bar = not args.quiet and sys.stderr.isatty()  # frames only on a terminal

    def progress(done: int) -> None:
        elapsed = time.monotonic() - start
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"{(total - done) / rate:.0f} s left" if total and rate else ""
        filled = "#" * (30 * done // total) if total else ""  # stdin: length unknown
        print(f"\rlegalsat batch [{filled:<30}] {done}/{total or '?'} {rate:.1f}/s {eta}   ", end="",
              file=sys.stderr, flush=True)

    if args.output != "-" and _same_file("/dev/stdin" if args.file == "-" else args.file, args.output):
        raise Code.INVALID_INPUT.error(f"-o {args.output} is the input file: writing it would erase the requests "
                                       "before they are read", "write the answers to another file", "-o")
    # the input opened and the Ray cluster joined before the output is: a typo or an unreachable
    # cluster leaves an existing output file as it was
    with _open_input(args.file) as f:
        ray_pool = None
        answers = None  # stdout's own descriptor, when Ray may print on file descriptor 1
        if args.ray is not None:  # the same streaming path, with Ray actors for the process pool
            import os

            from legalsat.clients.ray_batch import RayExecutor

            if args.output == "-":  # Ray prints its notices ("(raylet) A worker died ...") on stdout:
                sys.stdout.flush()  # the answers keep the real stdout, descriptor 1 becomes stderr's
                answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
                os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

            # actors: --jobs; else a local instance gets the usable CPUs, a cluster one actor per CPU
            ray_pool = RayExecutor(args.ray, args.jobs or (settings.workers if args.ray == "local" else None),
                                   lost_chunk)
        try:
            raw = answers or sys.stdout.buffer if args.output == "-" else open(args.output, "wb")
        except BaseException:
            if ray_pool is not None:
                ray_pool.shutdown()
            raise
        out = _BatchOutput(raw, name="stdout" if args.output == "-" else f"-o {args.output}")
        try:
            if bar and args.file != "-":  # the bar's length, counted a step at a time (a line may be huge)
                last = b"\n"
                for block in iter(lambda: f.read(1 << 20), b""):
                    total += block.count(b"\n")
                    last = block[-1:]
                total += last != b"\n"  # a last line without its newline is a line
                f.seek(0)
            lines = run_stream(f, out, plan_chunk_job(settings.target, settings.max_body_bytes),
                               lambda: _plan_handler(settings.target), _plan_error, settings.max_body_bytes,
                               settings.workers, chunk_lines=1, parallel_min_bytes=0, interactive_pipes=False,
                               progress=progress if bar else None, start_method="forkserver",
                               executor=ray_pool and (lambda: ray_pool), lost=lost_chunk)
        finally:
            if bar:
                print(file=sys.stderr)
            if raw is not sys.stdout.buffer:
                raw.close()
    if not args.quiet:
        took = time.monotonic() - start
        print(f"legalsat batch: {lines} line{'s' * (lines != 1)} answered, {out.errors} "
              f"error{'s' * (out.errors != 1)}, {took:.1f} s "
              f"({lines / took if took > 0 else 0:.1f} lines/s)", file=sys.stderr)
    return BATCH_LINES_FAILED if out.errors else 0


def _schema(args: argparse.Namespace) -> int:
    from legalsat.schemas.optimize import OptimizeRequest
    from legalsat.schemas.plan import OptimizeResponse

    model = OptimizeRequest if args.which == "request" else OptimizeResponse
    sys.stdout.write(json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n")
    return 0


def _emit(args: argparse.Namespace) -> int:
    from legalsat.clients.plan_checks import check_plan, check_request
    from legalsat.kernels import (
        GLUON_FORMS,
        chosen_variant,
        emit,
        fields_as_passed,
        response_target,
        select_plan,
    )
    from legalsat.schemas.base import load_json

    limit = _settings({}, uses_target=False, reads=frozenset({"max_body_bytes"})).max_body_bytes
    with _open_input(args.file) as f:
        text = f.read(limit + 1)  # a response is far under the limit: /dev/zero is not read whole
    if len(text) > limit:
        raise Code.LINE_TOO_LONG.error(f"{args.file} holds more than {limit} bytes; an optimize response is far "
                                       "smaller", "pass one optimize response (or one plan) as JSON, or raise "
                                       "LEGALSAT_MAX_BODY_BYTES", "file")
    try:
        obj = load_json(text, "stdin" if args.file == "-" else args.file)
    except InputError:
        _json_lines_hint(text, args.file, "emit")  # batch's output, the likelier mistake when it is one
        raise
    plan, op = select_plan(obj, args.plan, index_name="--plan")  # the flag the user typed, not the argument
    target = response_target(obj)
    with fields_as_passed(obj, args.plan):
        # what build_kernel checks before it builds: the same plans fail here
        if op is not None:
            check_request(plan, op)
        check_plan(plan, op, target)
        # auto: what build_kernel runs by default on a GPU of the plan's target
        variant = chosen_variant(args.variant, plan, (target or "sm90") == "sm90", target, "--variant")
        emitted = emit(plan, variant)
    sys.stdout.write(emitted.source)
    if emitted.variant != variant:  # asked for Gluon, given tl: said even with --quiet
        print(f"# the plan's {emitted.strategy} pieces have no Gluon form (Gluon kernels are emitted for "
              f"{GLUON_FORMS}): this is its {emitted.variant} kernel", file=sys.stderr)
    if not args.quiet:
        for ln in emitted.launches:
            grid = ln.grid if ln.grid != "persistent" else f"persistent over {ln.tiles} tiles"
            print(f"# launch {ln.kernel}[{grid}](" + ", ".join(ln.args) + f"), num_warps={ln.num_warps}",
                  file=sys.stderr)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from legalsat.server import serve
    from legalsat.server.pool import WorkerStartError

    settings = _settings({k: "--" + k.replace("_", "-") for k in Settings.model_fields}, service=True,
                         host=args.host, port=args.port, workers=args.workers,
                         queue_size=args.queue_size, deadline_ms=args.deadline_ms,
                         cache_path=args.cache_path, token=args.token, log_level=args.log_level,
                         target=args.target)
    if settings.cache_path and not settings.cache_url:
        _check_writable(settings.cache_path, "--cache-path" if args.cache_path is not None else "LEGALSAT_CACHE_PATH")
    try:
        serve(settings)
    except WorkerStartError as e:  # logged above by uvicorn too
        print(f"legalsat: the service could not start: {e.message}\n  fix: {e.fix}", file=sys.stderr)
        return 2
    except SystemExit as e:  # uvicorn could not bind (an address in use, a host it cannot resolve): logged above
        if e.code not in (None, 0):
            print("legalsat: the service could not start (the reason is logged above)\n  fix: choose a free "
                  "--port and a --host this machine has", file=sys.stderr)
            return 2
    return 0


def _same_file(a: str, b: str) -> bool:
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:  # the output does not exist yet (or the input does not: reported when it is opened)
        return False


def _check_writable(path: str, name: str) -> None:
    """The plan cache's file can be created or opened for writing, before the service starts."""
    from pathlib import Path

    try:
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        with open(Path(path).expanduser(), "ab"):
            pass
    except OSError as e:
        raise Code.INVALID_INPUT.error(f"{name} {path!r} cannot be written: {e.strerror or e}",
                                       f'give {name} a file in a writable directory, or "" to keep the cache in '
                                       "memory", name) from None


class _Version(argparse.Action):
    """`--version`: the package and the planner version (which keys the plan cache); the
    planner's version is imported only when asked for."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        import legalsat
        from legalsat.api import PLANNER_VERSION

        print(f"legalsat {legalsat.__version__} ({PLANNER_VERSION})")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = argparse.ArgumentParser(
        prog="legalsat",
        description="Plans GPU data movement: TMA legality, layouts, lowering plans.")
    p.add_argument("--version", action=_Version, help="print legalsat's and its planner's versions")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    v = sub.add_parser(
        "validate-descriptor",
        help="judge cuTensorMapEncodeTiled arguments (JSON Lines in, one verdict per line out)",
        description="Reads one descriptor object per line (fields as cuTensorMapEncodeTiled "
                    "takes them, innermost first) and writes one verdict per line, in order.")
    _add_stream_args(v, "hardware target (default: LEGALSAT_TARGET or sm90)")
    b = sub.add_parser(
        "bank-conflicts",
        help="shared-memory wavefronts per warp instruction (JSON Lines in, one report per line)",
        description='Reads one request per line: raw {"access_bytes", "op", "addresses"} or '
                    'structured {"tile", "pattern", "vector", "op"}, and writes one report per '
                    "line, in order.")
    _add_stream_args(b, "target for requests that name none (default: LEGALSAT_TARGET or sm90)")
    vp = sub.add_parser(
        "verify-pipeline",
        help="check asynchronous copy protocols (JSON Lines in, one verdict per line out)",
        description="Reads one protocol per line (barriers, buffers, roles with their "
                    "programs) and writes one verdict per line: deadlocks, tx-count "
                    "mismatches, phase reuse, buffer hazards, missing fences, store reuse.")
    _add_stream_args(vp, None)
    o = sub.add_parser("optimize", help="plan one data movement (JSON request in, response out)",
                       description="Reads one request ({\"target\", \"op\" | \"term\", \"options\"}) and "
                                   "prints the response: plans best first, rejected strategies with "
                                   "reasons, e-graph statistics, stage timings. Exit 3: no plan (status infeasible, or "
                                   "incomplete: a limit cut planning short).")
    o.add_argument("file", nargs="?", default="-", help="request JSON file, or - for stdin (default)")
    o.add_argument("--compact", action="store_true", help="one-line JSON")
    o.add_argument("--format", choices=["json", "summary"], default="json",
                   help="json (the response, default) or summary (a short table: each plan, its time and "
                        "why; each rejected strategy and why)")
    o.add_argument("--target", default=None,
                   help="target for a request that names none (default: LEGALSAT_TARGET or sm90)")
    o.add_argument("--stage", choices=["saturate", "extract", "solve", "verify"], default=None,
                   help="instead of the response, print what each planner stage produced, up to this one")
    o.set_defaults(run=_optimize)
    cd = sub.add_parser("codes", help="print the diagnostic catalogue (every error, rule and reason code)",
                        description="Every code legalsat reports: its category, what it means and the fix.")
    cd.add_argument("--json", action="store_true", help="as a JSON array")
    cd.set_defaults(run=_codes)
    bt = sub.add_parser("batch", help="plan many requests in parallel (JSON Lines in and out, in order)",
                        description="Plans one request per line in worker processes and writes one "
                                    "response or one error object per line, in input order.")
    bt.add_argument("file", help="JSON Lines file of requests, or - for stdin")
    bt.add_argument("-o", "--output", default="-", help="output JSON Lines file (default: stdout)")
    bt.add_argument("--jobs", type=int, default=None,
                    help="worker processes, or Ray actors with --ray (default: LEGALSAT_WORKERS or the usable CPUs; "
                         "with --ray ADDRESS, one actor per CPU of that cluster)")
    bt.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="answer on a Ray cluster's actors: ADDRESS as ray.init takes it (auto, host:port, "
                         "ray://host:10001), or local (the default: a Ray instance on this machine); needs "
                         "pip install 'legalsat[ray]'")
    bt.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    bt.add_argument("--target", default=None,
                    help="target for requests that name none (default: LEGALSAT_TARGET or sm90)")
    bt.set_defaults(run=_batch)
    sc = sub.add_parser("schema", help="print the JSON Schema of optimize requests or responses",
                        description="Prints the JSON Schema of an optimize request (the default) or response.")
    sc.add_argument("which", nargs="?", choices=["request", "response"], default="request", metavar="request|response",
                    help="which schema: request (the default) or response")
    sc.set_defaults(run=_schema)
    em = sub.add_parser("emit", help="print the Triton kernel source of a plan",
                        description="Reads a plan (or a whole optimize response: its --plan-th plan) and "
                                    "prints the emitted Triton module; the launches go to stderr. "
                                    "legalsat.clients.triton.build_kernel(plan, variant=V) compiles and runs the "
                                    "same source; its default (variant auto) is --variant auto's on an sm90 GPU.")
    em.add_argument("file", nargs="?", default="-", help="plan or response JSON file, or - for stdin (default)")
    em.add_argument("--plan", type=int, default=0, help="which plan of a response (default 0, the best)")
    em.add_argument("--variant", choices=["tl", "gluon", "auto"], default="tl",
                    help="tl (any GPU, and the interpreter; the default), gluon (sm90 TMA plans), or auto: the one "
                         "build_kernel runs by default on a GPU of the response's target (a plan alone: sm90)")
    em.add_argument("--quiet", action="store_true", help="no launch summary on stderr")
    em.set_defaults(run=_emit)
    sv = sub.add_parser("serve", help="run the HTTP service (routes mirror these commands; see /docs)",
                        description="Runs the FastAPI service with uvicorn: planning in worker processes "
                                    "with hard deadlines, a persistent plan cache, the e-graph viewer. "
                                    "Every flag has a LEGALSAT_* environment variable; flags win.")
    sv.add_argument("--host", default=None, help="listen address (LEGALSAT_HOST, default 127.0.0.1)")
    sv.add_argument("--port", type=int, default=None, help="TCP port (LEGALSAT_PORT, default 8000)")
    sv.add_argument("--workers", type=int, default=None, help="planning processes (LEGALSAT_WORKERS, default: cores)")
    sv.add_argument("--queue-size", type=int, default=None, help="jobs that may wait (LEGALSAT_QUEUE_SIZE)")
    sv.add_argument("--deadline-ms", type=int, default=None, help="hard deadline per request (LEGALSAT_DEADLINE_MS)")
    sv.add_argument("--cache-path", default=None, help='plan cache SQLite file, "" for memory (LEGALSAT_CACHE_PATH)')
    sv.add_argument("--token", default=None, help="bearer token for /v1 routes (LEGALSAT_TOKEN)")
    sv.add_argument("--target", default=None, help="default target (LEGALSAT_TARGET, default sm90)")
    sv.add_argument("--log-level", default=None, help="uvicorn log level (LEGALSAT_LOG_LEVEL, default info)")
    sv.set_defaults(run=_serve)
    for command in sub.choices.values():  # an argument a command does not take: its own usage (see main)
        command.set_defaults(command_parser=command)
    return p




def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt  # SIGTERM ends the command as Ctrl-C does: workers stopped, no traceback


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `legalsat` script; returns the process exit code."""
    import signal

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # the top-level parser would show its own usage for a subcommand's stray argument
        args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    run: Callable[[argparse.Namespace], int] = args.run
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        print("legalsat: stdout is closed\n  fix: give the command somewhere to write (a file, a pipe, "
              "or /dev/null)", file=sys.stderr)
        return 2
    if args.run is not _serve:  # uvicorn handles the service's own signals
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        return run(args)
    except InputError as e:
        for k, d in enumerate(e.details[:MAX_SHOWN_PROBLEMS]):  # every problem (two bad settings: both)
            where = f"{d.field}: " if d.field and d.field not in d.message else ""
            print(f"{'legalsat' if k == 0 else '  and'}: {where}{d.message}\n  fix: {d.fix}", file=sys.stderr)
        if len(e.details) > MAX_SHOWN_PROBLEMS:
            print(f"  and {len(e.details) - MAX_SHOWN_PROBLEMS} more", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"legalsat: no such file or directory: {e.filename}\n  fix: pass an existing input file (or - to "
              "read stdin), and an output path whose directory exists", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`: not an error of ours
        _quiet_stdout()
        return 0
    except OSError as e:  # a directory, no permission, a disk full or failing
        what = f"{e.filename}: " if e.filename else "the output: " if e.errno == 28 else ""
        print(f"legalsat: {what}{e.strerror or e}\n  fix: read from a readable file (or - for stdin) and write "
              "where there is room and permission", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("legalsat: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: the interpreter's last flush would raise on the closed pipe."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # python -m legalsat.clients.cli: run as the entry point does
    # this file again under its own name, so that the chunk jobs it hands to worker processes
    # and Ray actors are found by it (as __main__'s, a Ray actor could not unpickle them)
    from legalsat.clients.entry import main as entry

    raise SystemExit(entry())
