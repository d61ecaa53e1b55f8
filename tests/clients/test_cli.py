"""The command line: JSON Lines in, one answer per line out, in order, never a crash."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import pytest

from legalsat.clients import jsonl

LEGAL = {"dtype": "bfloat16", "rank": 2, "global_address": 140737488355328,
         "global_dim": [4096, 1024], "global_strides": [8192], "box_dim": [64, 64],
         "element_strides": [1, 1], "interleave": "none", "swizzle": "128B",
         "l2_promotion": "128B", "oob_fill": "none"}


def run_cli(*args, stdin=b""):
    return subprocess.run([sys.executable, "-m", "legalsat.clients.cli", *args], input=stdin,
                          capture_output=True, timeout=120)


def test_validate_descriptor_keeps_every_line_in_order(tmp_path):
    lines = [json.dumps(LEGAL), "not json", "", json.dumps(LEGAL | {"box_dim": [4, 64]}),
             "[1, 2]", json.dumps(LEGAL | {"swizzle": "sideways"}), json.dumps(LEGAL)]
    p = tmp_path / "in.jsonl"
    p.write_text("\n".join(lines) + "\n")
    r = run_cli("validate-descriptor", str(p))
    assert r.returncode == 4, r.stderr  # some lines are bad input: error objects
    out = [json.loads(x) for x in r.stdout.decode().splitlines()]
    assert len(out) == len(lines)
    assert [o["legal"] for o in out] == [True, False, False, False, False, False, True]
    assert out[1]["error"]["code"] == "invalid_json"
    assert out[2]["error"]["code"] == "empty_line"
    assert out[3]["violations"][0]["rule"] == "box_dim.inner_bytes"
    assert out[5]["error"]["field"] == "swizzle"
    # a line that could not be judged says which line it is, and its rules are catalogue codes
    # (they were "input.invalid", which `legalsat codes` does not list)
    assert [o.get("line") for o in out] == [None, 2, 3, None, 5, 6, None]
    from legalsat.diagnostics import Code

    codes = {c.id for c in Code}
    assert all(v["rule"] in codes for o in out if "error" in o for v in o["violations"])


def test_stdin_and_target_flag():
    r = run_cli("validate-descriptor", "--target", "sm100", "-",
                stdin=(json.dumps(LEGAL | {"swizzle": "128B_atom_32B"}) + "\n").encode())
    assert r.returncode == 0 and json.loads(r.stdout)["legal"] is True


def test_unknown_target_is_a_clear_usage_error():
    r = run_cli("validate-descriptor", "--target", "sm42", "-", stdin=b"")
    assert r.returncode == 2
    assert b"unknown target 'sm42'" in r.stderr and b"fix:" in r.stderr


def test_schema_names_its_choice_not_an_internal_argument():
    r = run_cli("schema", "bogus")
    assert r.returncode == 2 and b"argument which" not in r.stderr and b"request|response" in r.stderr
    assert b"request (the default)" in run_cli("schema", "--help").stdout


def test_missing_file_is_a_clear_usage_error(tmp_path):
    r = run_cli("validate-descriptor", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 2 and b"no such file" in r.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_parallel_file_path_matches_sequential(tmp_path, monkeypatch, workers):
    # Force the chunked multi-process path on a small file and compare with one worker.
    monkeypatch.setattr(jsonl, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(jsonl, "CHUNK_LINES", 7)
    from legalsat.clients import cli

    lines = [json.dumps(LEGAL | {"box_dim": [b, 64]}) for b in range(1, 60)] + ["{", ""]
    p = tmp_path / "in.jsonl"
    p.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    with open(out, "wb") as f, open(p, "rb") as src:
        jsonl.run_stream(src, f, cli.functools.partial(cli._stream_chunk, "validate-descriptor", "sm90", 1 << 20),
                         lambda: cli._descriptor_handler("sm90"), cli._descriptor_error, 1 << 20,
                         workers)
    got = out.read_text().splitlines()
    assert len(got) == len(lines)
    seq = [cli._descriptor_handler("sm90")(x.encode()).decode() if x and x != "{" else None
           for x in lines]
    for g, s in zip(got, seq):
        if s is not None:
            assert g == s
    assert json.loads(got[-1])["error"]["message"].startswith(f"line {len(lines)} ")


def test_help_lists_the_commands():
    r = run_cli("--help")
    assert r.returncode == 0 and b"validate-descriptor" in r.stdout


@pytest.mark.skipif(not os.environ.get("PATH"), reason="needs a PATH")
def test_console_script_is_installed():
    r = subprocess.run(["legalsat", "--help"], capture_output=True)
    assert r.returncode == 0


def test_bank_conflicts_keeps_every_line_in_order():
    raw = {"access_bytes": 4, "op": "load", "addresses": [128 * i for i in range(32)]}
    lines = [json.dumps(raw), "{oops", json.dumps({"target": "gfx942", **raw}),
             json.dumps({"op": "load", "pattern": "cols", "vector": 8,
                         "tile": {"dtype": "bfloat16", "shape": [32, 64], "swizzle": "128B"}})]
    r = run_cli("bank-conflicts", "-", stdin=("\n".join(lines) + "\n").encode())
    assert r.returncode == 4, r.stderr  # some lines are bad input: error objects
    out = [json.loads(x) for x in r.stdout.decode().splitlines()]
    assert len(out) == 4
    assert out[0]["wavefronts"] == 32 and out[0]["conflict_ways"] == 32.0
    assert out[1]["error"]["code"] == "invalid_json"  # the same code for bad JSON on every route
    assert out[2]["error"]["field"] == "addresses"
    assert out[3]["conflict_ways"] == 1.0 and len(out[3]["accesses"]) == 8
    # a line that could not be judged has no counts a caller could take for an access's (they
    # were 0, read as no conflicts), and says which line it is
    assert all(out[k][f] is None for k in (1, 2) for f in ("wavefronts", "ideal_wavefronts", "conflict_ways"))
    assert [o.get("line") for o in out] == [None, 2, 3, None]


def test_verify_pipeline_keeps_every_line_in_order():
    from legalsat.testing.protocols import SEEDS, protocol_json, warp_specialized

    good = protocol_json(warp_specialized(2))
    bad = protocol_json(SEEDS["tx_mismatch"](warp_specialized(2)))
    lines = [json.dumps(good), json.dumps(bad), "{}", "nope"]
    r = run_cli("verify-pipeline", "-", stdin=("\n".join(lines) + "\n").encode())
    assert r.returncode == 4, r.stderr  # some lines are bad input: error objects
    out = [json.loads(x) for x in r.stdout.decode().splitlines()]
    assert [o["ok"] for o in out] == [True, False, False, False]
    v = out[1]["violations"][0]
    assert v["rule"] == "tx_mismatch" and {"role", "op_index", "iteration", "message"} <= set(v)
    assert out[2]["error"]["field"] == "roles"
    assert [o.get("line") for o in out] == [None, None, 3, 4]


def test_optimize_and_batch_commands(tmp_path, capsys):
    import json

    from legalsat.clients.cli import main

    req = tmp_path / "req.json"
    req.write_text(json.dumps({"term": "(copy (view bfloat16 (256 256) (256 1) 16) "
                                       "(view bfloat16 (256 256) (1 256) 16))", "request_id": "t1"}))
    assert main(["optimize", "--compact", str(req)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["request_id"] == "t1" and out["plans"][0]["proof"]["verified"]
    lines = tmp_path / "in.jsonl"
    lines.write_text(req.read_text() + "\nnot json\n" + json.dumps(
        {"op": {"kind": "copy", "src": {"dtype": "int32", "shape": [4], "strides": [1]},
                "dst": {"dtype": "int32", "shape": [4], "strides": [0]}}}) + "\n")
    out_path = tmp_path / "out.jsonl"
    bad = json.loads(lines.read_text().splitlines()[2])
    bad["request_id"] = "zero-stride"
    lines.write_text(req.read_text() + "\nnot json\n" + json.dumps(bad) + "\n")
    capsys.readouterr()
    assert main(["batch", str(lines), "-o", str(out_path), "--jobs", "2"]) == 4  # lines failed
    got = [json.loads(x) for x in out_path.read_text().splitlines()]
    assert [g["status"] for g in got] == ["ok", "error", "error"]
    assert got[1]["error"]["code"] == "invalid_json" and got[2]["error"]["field"] == "op.dst.strides"
    assert got[2]["request_id"] == "zero-stride" and [g.get("line") for g in got[1:]] == [2, 3]
    err = capsys.readouterr().err
    assert "3 lines answered, 2 errors" in err and "\r" not in err  # a summary; no frames off a terminal
    good = tmp_path / "good.jsonl"
    good.write_text(req.read_text() + "\n")
    assert main(["batch", str(good), "-o", str(out_path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["batch", str(good), "-o", str(out_path)]) == 0
    assert "1 line answered, 0 errors" in capsys.readouterr().err  # it said "1 lines"


def test_schema_command(capsys):
    import json

    from legalsat.clients.cli import main

    assert main(["schema", "response"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "plans" in schema["properties"]


# --- reading plans: --version, --target, --format summary, a JSON Lines file given to optimize ---

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "optimize_transpose.json")


def test_version_names_the_package_and_the_planner():
    from legalsat.api import PLANNER_VERSION

    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.decode().split() == ["legalsat", __import__("legalsat").__version__,
                                                               f"({PLANNER_VERSION})"]


def test_summary_reads_in_under_25_lines():
    for name in os.listdir(os.path.dirname(EXAMPLE)):
        if not (name.startswith("optimize_") and name.endswith(".json")):
            continue
        r = run_cli("optimize", os.path.join(os.path.dirname(EXAMPLE), name), "--format", "summary")
        text = r.stdout.decode()
        assert r.returncode == 0, r.stderr
        lines = text.splitlines()
        assert len(lines) < 25 and all(len(ln) <= 120 for ln in lines)
        assert "plans, best first" in text and "rejected:" in text
        assert any(w in text for w in ("bandwidth-bound", "launch-bound", "launch-dominated"))  # the planner's own why


def test_summary_says_what_cut_planning_short_and_why_an_order_is_not_by_estimate():
    """A request whose time budget ran out read like any infeasible one; plans out of estimate
    order (the launch-bound rule) were listed under 'best first' without a word."""
    from legalsat.testing.planner_suite import reordered_copy

    r = run_cli("optimize", "-", "--format", "summary", stdin=json.dumps(
        {"op": reordered_copy(), "options": {"timeout_ms": 1}}).encode())
    assert "saturation stopped by its time_limit" in r.stdout.decode().splitlines()[0], r.stdout
    term = "(copy (view float32 (64 64) (64 1) 16) (view float32 (64 64) (1 64) 16))"
    out = json.loads(run_cli("optimize", "-", stdin=json.dumps({"term": term, "options": {"max_plans": 4}}).encode()).stdout)
    times = [p["cost"]["estimated_us"] for p in out["plans"]]
    text = run_cli("optimize", "-", "--format", "summary", stdin=json.dumps(
        {"term": term, "options": {"max_plans": 4}}).encode()).stdout.decode()
    assert ("by estimate + largest program" in text) == (times != sorted(times)), (times, text)


def test_summary_gives_a_warnings_whole_advice_and_a_small_copys_rate():
    """A warning was cut at 120 columns (its advice with it) and its fix never shown; a small
    copy's rate read 0.00 TB/s."""
    from legalsat.clients.summary import summary

    out = {"status": "ok", "target": "sm90", "term": "(copy ...)",
           "plans": [{"strategy": "direct", "cost": {"estimated_us": 3.05, "estimated_tbps": 0.011}}],
           "warnings": [{"code": "strides_in_bytes", "message": "op.src.strides [256, 4]: " + "word " * 40 + "END",
                         "fix": "give strides in elements", "field": "op.src.strides"}]}
    text = summary(out)
    assert "END" in text and "fix: give strides in elements" in text and "11.0 GB/s" in text
    assert all(len(line) <= 120 for line in text.splitlines())


def test_summary_refuses_options_that_are_not_an_object_as_json_output_does():
    """... and an explain that is not a boolean: the summary set it to true before the request
    was checked, so `"explain": "yes"` planned under --format summary and was refused under json."""
    term = "(copy (view float32 (8 8) (8 1) 16) (view float32 (8 8) (1 8) 16))"
    for fmt in ((), ("--format", "summary")):
        r = run_cli("optimize", "-", *fmt, stdin=json.dumps({"term": term, "options": 5}).encode())
        assert r.returncode == 2 and b"options" in r.stderr, (fmt, r.stderr)
        r = run_cli("optimize", "-", *fmt, stdin=json.dumps({"term": term, "options": {"explain": "yes"}}).encode())
        assert r.returncode == 2 and b"options.explain" in r.stderr, (fmt, r.stderr)


def test_target_flag_applies_to_requests_that_name_none(tmp_path):
    req = json.loads(open(EXAMPLE).read())
    del req["target"]
    f = tmp_path / "req.json"
    f.write_text(json.dumps(req))
    out = json.loads(run_cli("optimize", str(f), "--target", "gfx942").stdout)
    assert out["target"] == "gfx942"
    named = tmp_path / "named.json"
    named.write_text(json.dumps({**req, "target": "sm90"}))
    r = run_cli("optimize", str(named), "--target", "gfx942")
    assert json.loads(r.stdout)["target"] == "sm90"
    assert b"the request names target 'sm90'; --target gfx942 is for requests that name none" in r.stderr
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps(req) + "\n" + json.dumps({**req, "target": "sm90"}) + "\n")
    r = run_cli("batch", str(lines), "--target", "gfx942", "--quiet")
    assert [json.loads(x)["target"] for x in r.stdout.decode().splitlines()] == ["gfx942", "sm90"]


def test_optimize_given_json_lines_points_to_batch(tmp_path):
    req = open(EXAMPLE).read().strip()
    f = tmp_path / "many.jsonl"
    f.write_text(req + "\n" + req + "\n")
    r = run_cli("optimize", str(f))
    err = r.stderr.decode()
    assert r.returncode == 2 and "holds 2 lines of JSON Lines" in err and f"legalsat batch {f}" in err


@pytest.mark.parametrize("args,env,named", [
    (["batch", "-", "--jobs", "0"], {}, "--jobs"),
    (["batch", "-"], {"LEGALSAT_WORKERS": "abc"}, "LEGALSAT_WORKERS"),
    (["validate-descriptor", "--workers", "-1"], {}, "--workers"),
], ids=["jobs-0", "env-workers", "workers-negative"])
def test_a_bad_setting_is_named_not_a_traceback(args, env, named):
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", *args], input=b"", capture_output=True,
                       env={**os.environ, **env})
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err and named in err and "fix:" in err, err


@pytest.mark.parametrize("case", ["directory", "full-disk", "bom", "repeated-key", "deep"])
def test_what_cannot_be_read_or_written_is_named_not_a_traceback(tmp_path, case):
    req = b'{"term": "(copy (view float32 (4 4) (4 1)) (view float32 (4 4) (1 4)))"}'
    path, out = tmp_path / "req.json", None
    path.write_bytes({"bom": b"\xef\xbb\xbf" + req, "repeated-key": req[:-1] + b', "term": "x"}',
                      "deep": b"[" * 5000 + b"]" * 5000}.get(case, req))
    if case == "directory":
        path = tmp_path
    if case == "full-disk":
        if not os.path.exists("/dev/full"):
            pytest.skip("no /dev/full")
        out = open("/dev/full", "wb")
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "optimize", str(path)], stdout=out or
                       subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err and "fix:" in err, err


def test_sigterm_stops_a_batch_and_its_workers(tmp_path):
    """SIGTERM ends `batch` as Ctrl-C does: exit 130, no traceback, no worker left planning."""
    import signal
    import time

    from legalsat.testing.live_server import descendants
    from legalsat.testing.planner_suite import reordered_copy

    slow = json.dumps({"op": reordered_copy(), "options": {"node_limit": 400_000, "timeout_ms": 60_000}})
    (tmp_path / "in.jsonl").write_text((slow + "\n") * 8)
    proc = subprocess.Popen([sys.executable, "-m", "legalsat.clients.cli", "batch", str(tmp_path / "in.jsonl"),
                             "-o", str(tmp_path / "out.jsonl"), "--jobs", "2", "--quiet"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(descendants(proc.pid)) < 3 and time.monotonic() < deadline:  # forkserver, workers planning
        time.sleep(0.1)
    time.sleep(0.5)
    kids = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"Traceback" not in err, err

    def alive() -> list[int]:  # exited processes may linger as zombies (no cmdline) until reaped
        out = []
        for k in kids:
            try:
                if b"python" in open(f"/proc/{k}/cmdline", "rb").read():
                    out.append(k)
            except OSError:
                pass
        return out

    deadline = time.monotonic() + 15
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive()


def test_batch_error_lines_keep_the_request_id_of_lines_that_do_not_parse(tmp_path):
    term = '"term": "(copy (view float32 (8 8) (8 1) 16) (view float32 (8 8) (1 8) 16))"'
    def line(rid: str, options: str) -> str:  # JSON text json.dumps cannot write
        return '{"request_id": "' + rid + '", ' + term + ', "options": ' + options + "}"

    lines = [line("nan", '{"timeout_ms": NaN}'), line("long", '{"timeout_ms": ' + "9" * 5000 + "}"),
             line("deep", "[" * 3000 + "]" * 3000), line("twice", '{}, "options": {}')]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    r = run_cli("batch", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--quiet")
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert r.returncode == 4 and [o["request_id"] for o in out] == ["nan", "long", "deep", "twice"]
    assert all(o["status"] == "error" and o["error"]["code"] != "internal" for o in out), out


def test_a_request_id_that_is_not_unicode_text_is_not_echoed(tmp_path):
    """A request_id of a lone surrogate was refused as "not Unicode text" and copied into the
    line's error object all the same."""
    term = '"term": "(copy (view float32 (4) (1) 16) (view float32 (4) (1) 16))"'
    (tmp_path / "in.jsonl").write_text('{"request_id": "\\ud800", ' + term + "}\n")
    r = run_cli("batch", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--quiet")
    raw = (tmp_path / "out.jsonl").read_text()
    out = json.loads(raw)
    assert r.returncode == 4 and out["status"] == "error" and out["request_id"] is None, raw
    assert "ud800" not in raw.lower().split('"error"')[0]


def test_an_oversize_batch_lines_error_keeps_its_request_id(tmp_path):
    """The README says an oversize line's error object keeps its request_id; the line was
    dropped unread and the object said null."""
    big = '{"request_id": "huge", "pad": "' + "x" * 1_200_000 + '"}'
    ok = '{"request_id": "ok", "term": "(copy (view float32 (4) (1) 16) (view float32 (4) (1) 16))"}'
    (tmp_path / "in.jsonl").write_text(big + "\n" + ok + "\n")
    r = run_cli("batch", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--quiet")
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert r.returncode == 4 and [o["request_id"] for o in out] == ["huge", "ok"], r.stderr
    assert out[0]["error"]["code"] == "line_too_long" and out[1]["status"] == "ok"
    assert out[0]["error"]["value"] == len(big) and out[0]["error"]["limit"] < len(big)  # the limit, as a number


def test_a_failing_output_is_named_with_its_flag(tmp_path):
    """A write that fails after the open (/proc/version takes the open, not the bytes) said
    only "Input/output error": not which file, nor that it was the output."""
    (tmp_path / "in.jsonl").write_text('{"term": "(copy (view float32 (4) (1) 16) (view float32 (4) (1) 16))"}\n')
    if not os.path.exists("/proc/version"):
        pytest.skip("needs /proc")
    r = run_cli("batch", str(tmp_path / "in.jsonl"), "-o", "/proc/version", "--quiet")
    assert r.returncode == 2 and b"/proc/version" in r.stderr and b"Traceback" not in r.stderr, r.stderr


def test_usage_errors_name_the_flag_typed_and_every_bad_setting(tmp_path):
    """emit --plan 5 said "plan_index 5 is outside ..." (the Python argument behind the flag),
    and of two bad LEGALSAT_ variables only the first was printed (the next run showed the other)."""
    (tmp_path / "t.json").write_text('{"term": "(copy (view float32 (4) (1) 16) (view float32 (4) (1) 16))"}')
    resp = run_cli("optimize", str(tmp_path / "t.json")).stdout
    (tmp_path / "resp.json").write_bytes(resp)
    r = run_cli("emit", str(tmp_path / "resp.json"), "--plan", "5")
    assert r.returncode == 2 and b"--plan 5 is outside" in r.stderr and b"plan_index" not in r.stderr, r.stderr
    (tmp_path / "t.jsonl").write_text((tmp_path / "t.json").read_text() + "\n")
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "batch", str(tmp_path / "t.jsonl"), "-o",
                        str(tmp_path / "o.jsonl")], capture_output=True, timeout=120,
                       env={**os.environ, "LEGALSAT_WORKERS": "0", "LEGALSAT_PORT": "99999"})
    assert r.returncode == 2 and b"LEGALSAT_WORKERS" in r.stderr and b"LEGALSAT_PORT" in r.stderr, r.stderr
    # a setting the command does not read does not stop it (it did: exit 2); a note says so:
    # the service's port, and the workers `optimize` never starts
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "optimize", str(tmp_path / "t.json")],
                       capture_output=True, timeout=120, env={**os.environ, "LEGALSAT_PORT": "99999",
                                                              "LEGALSAT_WORKERS": "0"})
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r.stderr
    assert b"LEGALSAT_PORT is not valid; this command does not read it" in r.stderr
    assert b"LEGALSAT_WORKERS is not valid; this command does not read it" in r.stderr
    # nor does one the service alone reads that is not even of its type's syntax (exit 2 before)
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "optimize", str(tmp_path / "t.json")],
                       capture_output=True, timeout=120, env={**os.environ, "LEGALSAT_ALLOWED_HOSTS": "abc"})
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r.stderr
    assert b"LEGALSAT_ALLOWED_HOSTS cannot be read; this command does not read it" in r.stderr
    # nor a target that is none, for the commands without one (said nothing)
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "verify-pipeline", os.devnull],
                       capture_output=True, timeout=120, env={**os.environ, "LEGALSAT_TARGET": "bogus"})
    assert r.returncode == 0 and b"LEGALSAT_TARGET is not valid ('bogus' is no target)" in r.stderr, r.stderr
    # an empty --target is the flag's (it was said to be LEGALSAT_TARGET's)
    r = run_cli("validate-descriptor", "--target", "", os.devnull)
    assert r.returncode == 2 and r.stderr.startswith(b"legalsat: --target: unknown target"), r.stderr


def test_a_file_answered_into_a_pipe_is_not_flushed_line_by_line(tmp_path):
    """The serial path flushed every answer whenever its output was not a file: a file read into
    a pipe or /dev/null paid a write per line. Only an interactive input (a pipe, a terminal)
    whose reader waits on each answer is flushed line by line."""
    import io

    from legalsat.clients.jsonl import run_stream

    class Counting(io.BytesIO):  # no descriptor: not a regular file
        flushes = 0

        def flush(self) -> None:
            Counting.flushes += 1

    (tmp_path / "in.jsonl").write_bytes(b"a\nb\nc\n")
    for interactive, want in ((False, 0), (True, 3)):
        Counting.flushes = 0
        with open(tmp_path / "in.jsonl", "rb") as f:
            if interactive:  # the same lines from a pipe
                r, w = os.pipe()
                os.write(w, f.read())
                os.close(w)
                f = os.fdopen(r, "rb")
            n = run_stream(f, Counting(), None, lambda: (lambda line: line.upper()), None, 1 << 20, 1)
        assert n == 3 and Counting.flushes == want, (interactive, Counting.flushes)


def test_batch_refuses_to_write_over_its_input(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"term": "(copy (view float32 (8 8) (8 1) 16) (view float32 (8 8) (1 8) 16))"}\n')
    before = src.read_bytes()
    r = run_cli("batch", str(src), "-o", str(src), "--quiet")
    assert r.returncode == 2 and b"input file" in r.stderr and src.read_bytes() == before


@pytest.mark.parametrize("edit,field", [
    (lambda p: p["pieces"][0].update(num_warps=3), "pieces[0].num_warps"),
    (lambda p: p["pieces"][0].update(vector_bytes=7), "pieces[0].vector_bytes"),
    (lambda p: p["pieces"][0].update(tile=[-1]), "pieces[0].tile[0]"),
    (lambda p: p["pieces"][0]["dims"][0].update(extent=0), "pieces[0].dims[0].extent"),
    (lambda p: p["pieces"][0]["dims"][0].update(src_stride=-4), "pieces[0].dims[0].src_stride"),
    (lambda p: p.update(num_stages=10 ** 20), "num_stages"),  # the tile emitter stepped it down one by one
], ids=["warps-3", "vector-7", "tile-negative", "extent-0", "stride-negative", "stages-huge"])
def test_emit_names_what_an_edited_plan_got_wrong(tmp_path, edit, field):
    from legalsat.api import optimize
    from legalsat.testing.planner_suite import view

    plan = optimize({"op": {"kind": "copy", "src": view("float32", (64, 64)), "dst": view("float32", (64, 64), (1, 64))},
                     "options": {"max_plans": 1}})["plans"][0]
    edit(plan)
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    r = run_cli("emit", str(tmp_path / "plan.json"))
    assert r.returncode == 2 and field.encode() in r.stderr and b"Traceback" not in r.stderr, r.stderr
    r = run_cli("emit", str(tmp_path / "plan.json"), "--plan", "2")
    assert r.returncode == 2 and b"--plan" in r.stderr


def test_emit_says_when_the_gluon_variant_asked_for_is_not_what_it_prints(tmp_path):
    """A direct plan has no Gluon form: `--variant gluon` prints its tl kernel and says so on
    stderr (it printed the tl source without a word)."""
    from legalsat.api import optimize
    from legalsat.testing.planner_suite import view

    plan = optimize({"op": {"kind": "copy", "src": view("float32", (64, 64)), "dst": view("float32", (64, 64))},
                     "options": {"max_plans": 1}})["plans"][0]
    assert plan["strategy"] != "tma"
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    for quiet in ((), ("--quiet",)):
        r = run_cli("emit", str(tmp_path / "plan.json"), "--variant", "gluon", *quiet)
        assert r.returncode == 0 and b"import triton.language as tl" in r.stdout, r.stderr
        assert b"no Gluon form" in r.stderr and b"tl kernel" in r.stderr, r.stderr
    r = run_cli("emit", str(tmp_path / "plan.json"), "--quiet")
    assert r.returncode == 0 and r.stderr == b""
    assert b"interleave form" in run_cli("emit", str(tmp_path / "plan.json"), "--variant", "gluon").stderr


def test_emit_refuses_the_gluon_variant_of_another_targets_response(tmp_path):
    """A gfx942 response printed Hopper's Gluon kernel (`gluon.language.nvidia.hopper`) without a
    word; build_kernel refuses it alike. Its tl kernel (and auto's) stays."""
    from legalsat.api import optimize
    from legalsat.diagnostics import InputError
    from legalsat.testing.planner_suite import view

    resp = optimize({"target": "gfx942", "op": {"kind": "copy", "src": view("bfloat16", (64, 96)),
                                                 "dst": view("bfloat16", (64, 96), (1, 64))}})
    (tmp_path / "r.json").write_text(json.dumps(resp))
    r = run_cli("emit", str(tmp_path / "r.json"), "--variant", "gluon")
    assert r.returncode == 2 and b"--variant" in r.stderr and b"gfx942" in r.stderr and r.stdout == b"", r.stderr
    assert run_cli("emit", str(tmp_path / "r.json"), "--variant", "auto", "--quiet").returncode == 0
    try:
        from legalsat.clients.triton import build_kernel
    except ImportError:  # the client extra: the CLI's refusal is the same check
        return
    with pytest.raises(InputError) as e:
        build_kernel(resp, variant="gluon")
    assert e.value.headline.field == "variant" and "gfx942" in e.value.headline.message


def test_emit_names_a_responses_plan_field_under_its_plan(tmp_path):
    """A check of emit after validation named pieces where the file's field is plans[N].pieces."""
    from legalsat.api import optimize
    from legalsat.testing.planner_suite import view

    resp = optimize({"op": {"kind": "copy", "src": view("float32", (64, 64)), "dst": view("float32", (64, 64), (1, 64))},
                     "options": {"max_plans": 4}})
    last = next(i for i, p in enumerate(resp["plans"]) if p["strategy"] == "tma")  # its emitter checks the pieces
    resp["plans"][last]["pieces"][0]["dims"][0]["extent"] = 32
    (tmp_path / "resp.json").write_text(json.dumps(resp))
    r = run_cli("emit", str(tmp_path / "resp.json"), "--plan", str(last))
    assert r.returncode == 2 and f"plans[{last}].pieces".encode() in r.stderr, r.stderr
    (tmp_path / "plan.json").write_text(json.dumps(resp["plans"][last]))
    r = run_cli("emit", str(tmp_path / "plan.json"))  # one plan: its own field names
    assert r.returncode == 2 and b"pieces" in r.stderr and b"plans[" not in r.stderr, r.stderr


def test_commands_started_with_stdin_closed_read_their_files_and_name_a_closed_stdin(tmp_path):
    """Daemons, cron and some build systems start tools with fd 0 closed: every command crashed
    (AttributeError on sys.stdin.buffer, exit 1), even one reading a file, after its work."""
    import shlex

    (tmp_path / "t.json").write_text('{"term": "(copy (view float32 (4) (1) 16) (view float32 (4) (1) 16))"}')
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples")

    def closed(*args: str) -> subprocess.CompletedProcess:
        line = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "legalsat.clients.cli", *args])
        return subprocess.run(["bash", "-c", line + " <&-"], capture_output=True, timeout=120)

    r = closed("optimize", str(tmp_path / "t.json"))
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r.stderr
    r = closed("validate-descriptor", os.path.join(examples, "descriptors.jsonl"))
    assert r.returncode == 4 and len(r.stdout.splitlines()) == 8 and b"Traceback" not in r.stderr, r.stderr
    for args in (("optimize",), ("batch", "-", "-o", str(tmp_path / "o.jsonl")), ("verify-pipeline",)):
        r = closed(*args)
        assert r.returncode == 2 and b"stdin is closed" in r.stderr and b"Traceback" not in r.stderr, (args, r.stderr)


def test_ctrl_c_stops_a_batch_cleanly_every_time(tmp_path):
    """SIGINT to the whole process group (a terminal's Ctrl-C): the workers leave it to the
    parent, which stops them; a worker interrupted inside the pool's queue used to hang it."""
    import signal
    import time

    from legalsat.testing.planner_suite import reordered_copy

    slow = json.dumps({"op": reordered_copy(), "options": {"node_limit": 400_000, "timeout_ms": 60_000}})
    (tmp_path / "in.jsonl").write_text((slow + "\n") * 8)
    for delay in (0.8, 1.6, 2.4):
        proc = subprocess.Popen([sys.executable, "-m", "legalsat.clients.cli", "batch", str(tmp_path / "in.jsonl"),
                                 "-o", str(tmp_path / "out.jsonl"), "--jobs", "2", "--quiet"],
                                stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and b"Traceback" not in err, err


def test_ctrl_c_while_the_command_line_loads_is_one_line_not_a_traceback():
    """The script's entry point guards the import of the command line (pydantic and the
    settings, about 0.1 s in which a Ctrl-C printed a KeyboardInterrupt traceback): a Ctrl-C
    that lands there ends with 130 and one line, as it does later."""
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="legalsat")
    module, _, func = script.value.partition(":")
    # the Ctrl-C arrives while legalsat.settings loads (deterministically: raised by its import)
    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def hook(name, *a, **k):\n"
            "    if name == 'legalsat.settings':\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = hook\n"
            f"from {module} import {func}\n"
            f"sys.exit({func}())\n")
    r = subprocess.run([sys.executable, "-c", code, "validate-descriptor", "-"], capture_output=True, input=b"",
                       timeout=60)
    assert r.returncode == 130 and r.stderr == b"legalsat: interrupted\n", r.stderr


def test_optimize_takes_a_request_object_not_a_string_holding_one(tmp_path):
    req = {"term": "(copy (view float32 (8 8) (8 1) 16) (view float32 (8 8) (1 8) 16))"}
    for text in (json.dumps(json.dumps(req)), '"hello"'):
        r = run_cli("optimize", "-", stdin=text.encode())
        assert r.returncode == 2 and b"a string, not a JSON object" in r.stderr, r.stderr


@pytest.mark.parametrize("command", ["optimize", "emit", "validate-descriptor"])
def test_a_file_that_opens_but_cannot_be_read_is_named(command):
    """Reading /proc/self/mem fails after a successful open (EIO): the message names the file."""
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("no /proc/self/mem")
    r = run_cli(command, "/proc/self/mem")
    assert r.returncode == 2 and b"/proc/self/mem:" in r.stderr and b"Traceback" not in r.stderr, r.stderr


def test_stage_and_summary_together_are_refused_not_one_ignored():
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "optimize_transpose.json")
    r = run_cli("optimize", example, "--stage", "extract", "--format", "summary")
    assert r.returncode == 2 and b"--format" in r.stderr and not r.stdout, r.stderr


def test_ctrl_c_stops_a_batchs_workers_mid_request(tmp_path):
    """Interrupted while its workers are seconds into a request, batch exits at once and no
    process of it is left: the workers were never stopped (their list was read after the
    pool's shutdown had dropped it), so the exit waited out the request (27 s here), and a
    second Ctrl-C hung it with the workers alive."""
    import signal
    import time

    from legalsat.testing.planner_suite import reordered_copy

    slow = json.dumps({"op": reordered_copy(), "options": {"node_limit": 2_000_000, "timeout_ms": 120_000}})
    (tmp_path / "in.jsonl").write_text((slow + "\n") * 4)
    proc = subprocess.Popen([sys.executable, "-m", "legalsat.clients.cli", "batch", str(tmp_path / "in.jsonl"),
                             "-o", str(tmp_path / "out.jsonl"), "--jobs", "2", "--quiet"],
                            stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(4)  # the workers are planning
    t = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)  # a second Ctrl-C, as an impatient user gives
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"Traceback" not in err, err
    assert time.monotonic() - t < 15
    end = time.monotonic() + 10
    while time.monotonic() < end:  # every process of the group gone
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("a process of the interrupted batch is still running")


def test_an_input_without_newlines_is_read_in_bounded_steps():
    """A line past the limit is read past in steps and answered line_too_long: /dev/zero (no
    newline ever) grew a process by gigabytes."""
    import io

    from legalsat.clients.jsonl import Oversize, bounded_lines

    class Recorder(io.BytesIO):
        asked = 0

        def readline(self, size=-1):
            Recorder.asked = max(Recorder.asked, size)
            assert size > 0, "an unbounded readline"
            return super().readline(size)

    f = Recorder(b"x" * 5_000_000 + b"\n{}\nlast")
    lines = list(bounded_lines(f, 1000))
    assert isinstance(lines[0], Oversize) and lines[0].length == 5_000_000 and len(lines[0]) == 0  # its own bytes, not its newline
    assert lines[1:] == [b"{}\n", b"last"] and Recorder.asked <= 1 << 20


def test_an_input_of_no_newline_at_all_stops_with_an_error(monkeypatch):
    """`legalsat batch /dev/zero` read on for ever and answered nothing (memory stayed bounded):
    past ENDLESS_LINE_BYTES of one line, reading stops with line_too_long; a long line under
    it is still answered and the lines after it read."""
    import io

    import legalsat.clients.jsonl as jsonl
    from legalsat.diagnostics import InputError

    monkeypatch.setattr(jsonl, "ENDLESS_LINE_BYTES", 3_000_000)
    lines = list(jsonl.bounded_lines(io.BytesIO(b"x" * 2_500_000 + b"\n{}\n"), 1000))
    assert isinstance(lines[0], jsonl.Oversize) and lines[1] == b"{}\n"
    gen = jsonl.bounded_lines(io.BytesIO(b"{}\n" + b"\0" * 5_000_000), 1000)
    assert next(gen) == b"{}\n"
    with pytest.raises(InputError) as e:
        next(gen)
    assert e.value.details[0].id == "line_too_long" and "without a newline" in e.value.details[0].message


def test_batch_refuses_to_write_over_its_stdin(tmp_path):
    """`legalsat batch - -o F < F` emptied F (the same-file check skipped stdin)."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"term": "(copy (view float32 (8 8) (8 1) 16) (view float32 (8 8) (1 8) 16))"}\n')
    before = src.read_bytes()
    with open(src, "rb") as stdin:
        r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "batch", "-", "-o", str(src), "--quiet"],
                           stdin=stdin, capture_output=True, timeout=120)
    assert r.returncode == 2 and b"input file" in r.stderr and src.read_bytes() == before


def test_a_bad_default_target_is_named_and_only_where_a_target_is_used(tmp_path):
    env = {**os.environ, "LEGALSAT_TARGET": "bogus"}
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "verify-pipeline",
                        os.path.join(examples, "pipelines.jsonl")], capture_output=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout, r.stderr  # protocols are target-independent
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "validate-descriptor",
                        os.path.join(examples, "descriptors.jsonl")], capture_output=True, timeout=120, env=env)
    assert r.returncode == 2 and b"LEGALSAT_TARGET: unknown target 'bogus'" in r.stderr, r.stderr


def test_emit_reads_a_bounded_prefix_of_its_input():
    r = run_cli("emit", "/dev/zero")
    assert r.returncode == 2 and b"holds more than" in r.stderr and b"Traceback" not in r.stderr, r.stderr


def test_a_bad_setting_never_shows_a_secret(monkeypatch):
    """A LEGALSAT_CACHE_URL refused at start was quoted whole, password included."""
    monkeypatch.setenv("LEGALSAT_CACHE_URL", "redis://:s3cret@cache:notaport/0")
    r = run_cli("serve", "--port", "1")
    err = r.stderr.decode()
    assert r.returncode == 2 and "LEGALSAT_CACHE_URL is 'redis://:***@cache:notaport/0'" in err, err
    assert "s3cret" not in err and "numeric port" in err


def test_a_worker_that_dies_costs_its_own_lines_only(tmp_path):
    """A local worker killed mid-run (the OOM killer, a native crash) broke the whole process
    pool: a BrokenProcessPool traceback, exit 1, 2 of 40 lines written. The pool is started
    again and each chunk the death took is run again alone: a chunk that dies once is answered,
    one that always dies gets worker_lost, every other line its answer, in order."""
    import functools
    import io

    from legalsat.clients.jsonl import run_stream
    from legalsat.testing import chunk_jobs

    lines = [b'{"n": %d}' % k for k in range(12)]
    lines[3], lines[7] = b'{"die": 1}', b'{"once": 1}'
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    out = io.BytesIO()

    def shape(e):
        return json.dumps({"line": e.line, "error": e.headline.code.id}).encode()

    with open(src, "rb") as f:
        n = run_stream(f, out, functools.partial(chunk_jobs.dying, str(tmp_path)), lambda: None, shape, 1 << 20, 2,
                       chunk_lines=1, parallel_min_bytes=0, interactive_pipes=False)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert n == len(rows) == 12 and [r["line"] for r in rows] == list(range(1, 13))
    assert [r.get("error") for r in rows] == [None] * 3 + ["worker_lost"] + [None] * 8


def test_an_output_file_is_left_as_it_was_when_the_input_cannot_be_read(tmp_path):
    out = tmp_path / "prev.jsonl"
    out.write_text("precious\n")
    r = run_cli("batch", str(tmp_path / "typo.jsonl"), "-o", str(out))
    assert r.returncode == 2 and out.read_text() == "precious\n", r.stderr


def test_the_progress_bar_counts_a_last_line_without_its_newline(tmp_path, monkeypatch, capsys):
    """'3/2 ... -1 s left': the count took newlines for lines."""
    from legalsat.clients import cli

    term = "(copy (view float32 (8 8) (8 1) 16) (view float32 (8 8) (1 8) 16))"
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({"term": term, "request_id": str(k)}) for k in range(3)))  # no last newline
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli.main(["batch", str(src), "-o", str(tmp_path / "out.jsonl"), "--jobs", "2"]) == 0
    err = capsys.readouterr().err
    assert " 3/3 " in err and "3/2" not in err, err


@pytest.mark.parametrize("command", ["validate-descriptor", "bank-conflicts", "verify-pipeline"])
def test_an_analysis_whose_lines_could_not_be_judged_says_so_in_its_exit_status(command):
    """Every line an input error, and the command exited 0 (batch says 4)."""
    r = run_cli(command, "-", stdin=b"garbage\n")
    assert r.returncode == 4 and b'"error":{"code":"invalid_json"' in r.stdout, (r.returncode, r.stdout)
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
    if command == "verify-pipeline":  # verdicts, broken protocols among them: answers
        assert run_cli(command, os.path.join(examples, "pipelines.jsonl")).returncode == 0


def test_emit_refuses_a_response_whose_term_its_plan_cannot_have_come_from(tmp_path):
    """emit printed a kernel for a response whose term had a newer planner's element type."""
    out = json.loads(run_cli("optimize", EXAMPLE).stdout)
    out["term"] = out["term"].replace("bfloat16", "bfloat99")
    (tmp_path / "plan.json").write_text(json.dumps(out))
    r = run_cli("emit", str(tmp_path / "plan.json"))
    assert r.returncode == 2 and b"term" in r.stderr and b"bfloat99" in r.stderr, r.stderr


def test_a_password_holding_a_slash_is_masked_too(monkeypatch):
    """redacted() split the URL at the password's '/', and the parser's message quoted part of it."""
    monkeypatch.setenv("LEGALSAT_CACHE_URL", "redis://:s3cr/et@cache:6379/0")
    err = run_cli("serve", "--port", "1").stderr.decode()
    assert "s3cr" not in err and "et@" not in err and ":***@cache:6379/0" in err, err


def test_a_worker_that_dies_while_input_is_still_read_costs_its_own_lines_only(tmp_path):
    """A pipe feeding lines slowly: the pool broke between two reads and the next submit raised
    BrokenProcessPool past the retries (a traceback, 1 of 8 lines written)."""
    import functools
    import io
    import threading
    import time

    from legalsat.clients.jsonl import run_stream
    from legalsat.testing import chunk_jobs

    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb") as f:
            for k in range(8):
                f.write(b'{"die": 1}\n' if k == 1 else b'{"n": %d}\n' % k)
                f.flush()
                time.sleep(0.3)

    threading.Thread(target=feed, daemon=True).start()
    out = io.BytesIO()

    def shape(e):
        return json.dumps({"line": e.line, "error": e.headline.code.id}).encode()

    with os.fdopen(r, "rb") as f:
        # spawned workers: a forked one would hold this process's end of the pipe open (no EOF)
        n = run_stream(f, out, functools.partial(chunk_jobs.dying, str(tmp_path)), lambda: None, shape, 1 << 20, 2,
                       chunk_lines=1, parallel_min_bytes=0, interactive_pipes=False, start_method="spawn")
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert n == len(rows) == 8 and [r.get("error") for r in rows] == [None, "worker_lost"] + [None] * 6


def test_the_wrong_kind_of_json_is_named_with_the_command_that_takes_it(tmp_path):
    """A request given to `emit` got a wall of "kind: Field required"; a response or a plan fed
    back to `optimize` got "unknown field 'planner'" with the fix "remove the field"; `batch`'s
    output given to `emit` got "Extra data: line 2"."""
    response = run_cli("optimize", EXAMPLE).stdout
    (tmp_path / "resp.json").write_bytes(response)
    (tmp_path / "plan.json").write_text(json.dumps(json.loads(response)["plans"][0]))
    (tmp_path / "two.jsonl").write_text(json.dumps(json.loads(response)) + "\n" + json.dumps(json.loads(response)) + "\n")
    r = run_cli("emit", EXAMPLE)
    assert r.returncode == 2 and b"this is an optimize request, not a plan" in r.stderr and b"legalsat optimize" in r.stderr
    for name in ("resp.json", "plan.json"):
        r = run_cli("optimize", str(tmp_path / name))
        assert r.returncode == 2 and b"legalsat emit" in r.stderr and b"remove the field" not in r.stderr, r.stderr
    r = run_cli("emit", str(tmp_path / "two.jsonl"))
    assert r.returncode == 2 and b"holds 2 lines of JSON Lines" in r.stderr and b"sed -n 2p" in r.stderr, r.stderr


def test_summary_says_when_a_plan_needs_a_reallocation_and_keeps_reasons_whole():
    """A plan that runs only on a tensor re-allocated with a padded row pitch (allow_padding)
    was listed like any other; a rejection's reason was cut at 120 columns mid-number
    ("(<= 6…" for "(<= 64 bytes)")."""
    from legalsat.api import optimize
    from legalsat.clients.summary import summary

    out = optimize({"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, 33], "strides": [33, 1]},
                           "dst": {"dtype": "bfloat16", "shape": [64, 33], "strides": [1, 64]}},
                    "options": {"max_plans": 4, "allow_padding": True, "explain": True}})
    text = summary(out)
    padded = [p for p in out["plans"] if p.get("relayout")]
    assert padded and "needs src re-allocated with a row pitch of 80 bytes (not 66)" in text, text
    assert "(<= 64 bytes)" in " ".join(text.split()) and "…" not in text.split("rejected:")[1], text
    assert all(len(line) <= 120 for line in text.splitlines())


def test_summary_gives_a_tile_loads_read_rate():
    """A tile load's estimated_tbps counts its shared-memory writes (4.4 TB/s for a 16384^2 bf16
    walk, past HBM3's peak); the table gives the global-memory read rate, so labelled."""
    from legalsat.clients.summary import summary

    out = {"status": "ok", "target": "sm90", "term": "(load_tile ...)",
           "plans": [{"kind": "load_tile", "strategy": "tma", "cost": {"estimated_us": 244.46, "estimated_tbps": 4.392}}]}
    assert "2.20 TB/s read" in summary(out)


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (from /proc: children, their children, ...)."""
    import glob

    parent = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(stat.split("/")[2])] = int(fields[1])
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.update(kids)
        todo += kids
    return out


def test_kill_9_of_batch_takes_its_workers_with_it(tmp_path):
    """After kill -9 of `legalsat batch` (a build farm's timeout, the OOM killer) its workers and
    the forkserver lived on, about 340 MB each, holding the command's stdout open: a pipeline
    around it never ended. They die with it now, as the service's do."""
    import os
    import signal
    import time

    from legalsat.testing.planner_suite import reordered_copy

    slow = {"op": reordered_copy(), "options": {"node_limit": 400_000, "timeout_ms": 5000}}
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({**slow, "request_id": f"s{i}"}) + "\n" for i in range(6)))
    proc = subprocess.Popen([sys.executable, "-m", "legalsat.clients.cli", "batch", str(src), "-o",
                             str(tmp_path / "out.jsonl"), "--jobs", "2", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        end = time.monotonic() + 60
        below: set[int] = set()
        while time.monotonic() < end and len(below) < 3:  # the forkserver and two workers at least
            time.sleep(0.5)
            below = _descendants(proc.pid)
        assert len(below) >= 3, below
        time.sleep(1)
        below = _descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        end = time.monotonic() + 20
        alive = below
        while alive and time.monotonic() < end:
            time.sleep(0.5)
            alive = {p for p in alive if os.path.exists(f"/proc/{p}") and
                     open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"}
        assert not alive, alive
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in _descendants(proc.pid) | below:
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_emit_auto_is_the_variant_build_kernel_runs_on_an_sm90_gpu(tmp_path):
    """`emit` printed the tl kernel of plans build_kernel runs as Gluon on sm90 (a wgmma tile
    load), while its help said build_kernel runs the same source."""
    from legalsat.api import optimize
    from legalsat.kernels import default_variant, emit

    resp = optimize({"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [100, 72], "strides": [72, 1]},
                            "tile": [64, 32], "consumer": "wgmma_a"}})
    plan = resp["plans"][0]
    assert default_variant(plan, True) == "gluon"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(resp))
    r = run_cli("emit", "--variant", "auto", "--quiet", str(path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == emit(plan, "gluon").source != emit(plan, "tl").source


@pytest.mark.parametrize("argv, usage", [(("optimize", "--bogus", "x.json"), b"usage: legalsat optimize"),
                                         (("codes", "extra"), b"usage: legalsat codes"),
                                         (("schema", "request", "response"), b"usage: legalsat schema")])
def test_a_stray_argument_gets_its_commands_usage(argv, usage):
    """An argument a command does not take printed the top-level usage ("legalsat [-h]
    [--version] COMMAND ..."), where a bad value of one of its flags printed the command's."""
    r = run_cli(*argv)
    assert r.returncode == 2 and r.stderr.startswith(usage) and b"unrecognized arguments" in r.stderr, r.stderr


@pytest.mark.parametrize("command", ["optimize", "emit"])
def test_json_lines_of_another_commands_inputs_are_pointed_to_that_command(command):
    """examples/descriptors.jsonl given to optimize was told to try `legalsat batch` on it, and
    given to emit `sed -n 2p ... | legalsat emit -`: both fail on descriptors."""
    path = os.path.join(os.path.dirname(EXAMPLE), "descriptors.jsonl")
    r = run_cli(command, path)
    assert r.returncode == 2 and b"a descriptor input" in r.stderr, r.stderr
    assert f"legalsat validate-descriptor {path}".encode() in r.stderr


def test_stage_says_it_runs_without_the_requests_time_budget(tmp_path):
    """`--stage` ran every stage whole under timeout_ms 1 (the answer itself: incomplete) and said
    nothing of it."""
    req = json.loads(open(EXAMPLE).read())
    req["options"] = {**req.get("options", {}), "timeout_ms": 1}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(req))
    r = run_cli("optimize", str(path), "--stage", "saturate", "--compact")
    assert r.returncode == 0 and b"--stage runs each stage whole" in r.stderr and b"timeout_ms (1)" in r.stderr
