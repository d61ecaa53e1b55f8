"""The GPU benchmarks' command line: a wrong command or a missing argument is a usage message,
never a traceback (`report` without its file was an IndexError; bench_gemm's and bench_tiles'
messages left out commands they have)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.commands import run_command


def test_a_command_gets_its_arguments_and_the_first_is_the_default():
    seen = []
    commands = {"run": lambda only=None: seen.append(("run", only)), "report": lambda results: seen.append(results)}
    run_command("x", commands, [])
    run_command("x", commands, ["run", "a"])
    run_command("x", commands, ["report", "r.json"])
    assert seen == [("run", None), ("run", "a"), "r.json"]


@pytest.mark.parametrize("argv,says", [(["reprot"], "unknown command 'reprot'"), (["report"], "report: 0 arguments"),
                                       (["report", "a", "b"], "report: 2 arguments")])
def test_a_wrong_command_line_exits_with_every_commands_usage(argv, says):
    with pytest.raises(SystemExit) as e:
        run_command("bench_x", {"run": lambda: None, "report": lambda results: None}, argv)
    assert str(e.value).splitlines() == [says, "usage: python -m benchmarks.bench_x run",
                                         "usage: python -m benchmarks.bench_x report RESULTS"]


@pytest.mark.parametrize("module", ["benchmarks.bench_kernels", "benchmarks.bench_gemm", "benchmarks.bench_moe",
                                    "benchmarks.bench_tiles", "tools.interleave_probe", "tools.sector_pitch_probe"])
def test_each_gpu_benchmark_answers_a_wrong_command_with_its_usage(module):
    """The probes under tools/ named themselves benchmarks.<name> in their usage."""
    r = subprocess.run([sys.executable, "-m", module, "no-such-command"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"usage: python -m {module} run" in r.stderr and f"{module} plan" in r.stderr


def test_the_gpu_plan_check_recorded_every_plan_of_its_corpus_bit_exact():
    """benchmarks/gpu_plan_check.json is `python -m tools.gpu_plan_check run` over the committed
    corpus on the H100: one count per plan run, none faulting or differing."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    recorded = json.loads((root / "benchmarks" / "gpu_plan_check.json").read_text())
    corpus = (root / "benchmarks" / "gpu_plan_check_requests.jsonl").read_text().splitlines()
    assert recorded["requests"] == len(corpus) == 390
    assert not recorded["faults"] and not recorded["differing"]
    assert all(key.endswith(" exact") for key in recorded["counts"]) and sum(recorded["counts"].values()) == 1185
    # the element types added after it (gfx942's fp8 encodings, complex64): their own corpus
    dtypes = json.loads((root / "benchmarks" / "gpu_plan_check_dtypes.json").read_text())
    corpus = (root / "benchmarks" / "gpu_plan_check_dtypes_requests.jsonl").read_text().splitlines()
    assert dtypes["requests"] == len(corpus) == 16 and not dtypes["faults"] and not dtypes["differing"]
    assert all(key.endswith(" exact") for key in dtypes["counts"]) and sum(dtypes["counts"].values()) == 36
    # copies whose source rows start off 16 bytes, read as aligned vectors and shifted: their own
    # corpus (1- to 8-byte words, all shifted when it ran), whose 2-byte requests plan the shift
    shifted = json.loads((root / "benchmarks" / "gpu_plan_check_shifted.json").read_text())
    lines = (root / "benchmarks" / "gpu_plan_check_shifted_requests.jsonl").read_text().splitlines()
    assert shifted["requests"] == len(lines) == 42 and not shifted["faults"] and not shifted["differing"]
    assert shifted["counts"] == {"copy direct/tl exact": 42}
    # tile loads whose direct plans land the tile as one box: their own corpus
    onebox = json.loads((root / "benchmarks" / "gpu_plan_check_onebox.json").read_text())
    corpus = (root / "benchmarks" / "gpu_plan_check_onebox_requests.jsonl").read_text().splitlines()
    assert onebox["requests"] == len(corpus) == 7 and not onebox["faults"] and not onebox["differing"]
    assert onebox["counts"] == {"load_tile direct/tl exact": 7, "load_tile tma/gluon exact": 1,
                                "load_tile tma/tl exact": 1}
    from legalsat.api import optimize

    pieces = [optimize(json.loads(line)["request"])["plans"][0]["pieces"][0] for line in lines]
    assert all(bool(p.get("shifted_loads")) == (p["element_bytes"] == 2) for p in pieces)
    assert sum(p["element_bytes"] == 2 for p in pieces) >= 10
    r = subprocess.run([sys.executable, "-m", "tools.gpu_plan_check", "no-such-command"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "usage:" in r.stderr


MISALIGNED_CORPORA = ("interleave", "interleave_short", "shifted", "small", "budget", "gathers", "dtypes", None)


def test_the_gpu_plan_check_recorded_plans_run_on_misaligned_tensors_exact_or_refused():
    """benchmarks/gpu_plan_check_misaligned.json is `python -m tools.gpu_plan_check run
    --misalign` over the copies and gathers of every committed corpus, each tensor moved one
    element past a 16-byte boundary: every plan run bit-exact or refused by the client (TMA
    descriptors, words wider than the tensor's alignment), none faulting or differing."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    recorded = json.loads((root / "gpu_plan_check_misaligned.json").read_text())
    requests = [json.loads(line) for name in MISALIGNED_CORPORA
                for line in (root / f"gpu_plan_check{'_' + name if name else ''}_requests.jsonl").read_text().splitlines()]
    assert recorded["misaligned"] and recorded["requests"] == len(requests) == 514  # tile loads: not moved, skipped
    assert sum(r["kind"] != "load_tile" for r in requests) == 372
    assert not recorded["faults"] and not recorded["differing"]
    assert {key.rsplit(" ", 1)[1] for key in recorded["counts"]} == {"exact", "refused"}
    assert all(recorded["counts"].get(f"copy tma/{v} exact", 0) == 0 for v in ("tl", "gluon"))  # a descriptor needs 16
    assert sum(c for key, c in recorded["counts"].items() if key.endswith(" exact")) == 826


def test_the_gpu_plan_check_reruns_recorded_every_plan_bit_exact():
    """benchmarks/gpu_plan_check_wide.json (the views past 2^31 words with six of the corpora,
    every plan built through the client's plan checks) and gpu_plan_check_recheck.json (the
    first corpus planned again), both again for planner/22 (`_h200`), and that one's recheck
    through the later plan checks on the H100 (`_h100`), and every corpus planned by
    planner/25 (`_planner25`), those again through the kernels whose data loads take evict_last
    (`_hinted`), as RESULTS.md states them."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks"

    def corpus(*names: str) -> int:
        return sum(len((root / f"gpu_plan_check{'_' + n if n else ''}_requests.jsonl").read_text().splitlines())
                   for n in names)

    records = []
    for suffix in ("", "_h200"):  # the H100 runs, and planner/22's (staged tiles unmasked inside) on an H200
        wide = json.loads((root / f"gpu_plan_check_wide{suffix}.json").read_text())
        assert wide["requests"] == corpus("small", "onebox", "dtypes", "gathers", "budget", "interleave_short", "wide")
        recheck = json.loads((root / f"gpu_plan_check_recheck{suffix}.json").read_text())
        assert recheck["requests"] == corpus(None) == 390
        records += [(wide, 167), (recheck, 1176)]
    # planner/22's plans again on the H100, through the client's later plan checks
    records.append((json.loads((root / "gpu_plan_check_recheck_h100.json").read_text()), 1176))
    # planner/25 (flat copies a vector a thread, 32-warp staged tiles, the skewed tiles' walk):
    # the first corpus, and every other corpus together
    recheck = json.loads((root / "gpu_plan_check_recheck_planner25.json").read_text())
    corpora = json.loads((root / "gpu_plan_check_corpora_planner25.json").read_text())
    assert recheck["requests"] == corpus(None) and corpora["requests"] == corpus(
        "small", "onebox", "dtypes", "gathers", "budget", "interleave_short", "wide", "shifted", "interleave")
    records += [(recheck, 1176), (corpora, 300)]
    # the same planner/25 responses through the kernels whose data loads take evict_last
    for name, runs in (("recheck_hinted", 1176), ("corpora_hinted", 300), ("corpora_client_checks", 300)):
        run = json.loads((root / f"gpu_plan_check_{name}.json").read_text())
        assert run["requests"] == (recheck if name.startswith("recheck") else corpora)["requests"]
        records.append((run, runs))
    for run, runs in records:
        assert not run["faults"] and not run["differing"] and not run["misaligned"]
        assert all(key.endswith(" exact") for key in run["counts"]) and sum(run["counts"].values()) == runs
