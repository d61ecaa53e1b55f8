"""tools/peer_processes.py and tools/inductor_code.py: the recorded runs
(benchmarks/peer_processes.json) replayed through the report, whose ratio is torch.compile's
time over the first plan's default kernel (the first label), per process; the workloads picked
by default are benchmark workloads; and the record holds what RESULTS.md says of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from statistics import median

import pytest

from tools.peer_processes import CLOSE, ratios, table

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "benchmarks" / "peer_processes.json").read_text())


def test_a_ratio_is_torch_compiles_time_over_the_first_kernels_per_process():
    runs = [{"w": {"labels": ["staged_smem/tl", "torch", "torch.compile", "copy_"], "eager_us": [10.0, 30.0, 12.0, 9.0],
                   "graph_us": [5.0, 9.0, 4.0, 4.5]}},
            {"w": {"labels": ["staged_smem/tl", "torch", "torch.compile", "copy_"], "eager_us": [8.0, 30.0, 12.0, 9.0],
                   "graph_error": "RuntimeError: capture"}}]
    assert ratios(runs, "w", "eager") == [1.2, 1.5]
    assert ratios(runs, "w", "graph") == [0.8]  # a process whose graph could not be captured has none
    rows = table(runs).splitlines()
    assert len(rows) == 3 and "1.350 [1.200, 1.500]" in rows[1] and "0.800 [0.800, 0.800]" in rows[2]


def test_the_default_workloads_are_the_benchmarks():
    names = json.loads((ROOT / "benchmarks" / "kernel_plans.json").read_text())
    for pick in CLOSE:
        assert sum(pick in n for n in names) == 1, pick


def test_the_record_has_three_processes_of_every_default_workload_both_ways():
    runs = RECORDED["runs"]
    assert len(runs) == 3 and RECORDED["env"]["gpu"] == "NVIDIA H100 80GB HBM3"
    for run in runs:
        assert len(run) == len(CLOSE)
        for name, row in run.items():
            assert any(pick in name for pick in CLOSE)
            assert row["labels"][-3:] == ["torch", "torch.compile", "copy_"]
            assert len(row["eager_us"]) == len(row["graph_us"]) == len(row["labels"])


@pytest.mark.parametrize("name,timing,low,high", [
    ("AoS→SoA", "graph", 0.995, 0.997), ("paged KV 16", "graph", 0.996, 0.996),
    ("embedding 7 KiB", "graph", 0.996, 0.997), ("gather axis 1", "graph", 1.314, 1.342),
    ("gather axis 1", "eager", 0.891, 1.032), ("transpose 517×33", "eager", 0.840, 1.062)])
def test_the_record_holds_the_ratios_results_quotes(name, timing, low, high):
    runs = RECORDED["runs"]
    full = next(n for n in runs[0] if name in n)
    rs = ratios(runs, full, timing)
    assert (round(min(rs), 3), round(max(rs), 3)) == (low, high)
    assert low <= round(median(rs), 3) <= high


def test_the_report_command_prints_the_recorded_table():
    r = subprocess.run([sys.executable, "-m", "tools.peer_processes", "report", "benchmarks/peer_processes.json"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) == 1 + 2 * len(CLOSE)


def test_inductor_code_names_each_workload_in_a_file_name_of_its_own():
    from tools.inductor_code import file_stem

    names = json.loads((ROOT / "benchmarks" / "kernel_plans.json").read_text())
    stems = [file_stem(n) for n in names]
    assert len(set(stems)) == len(stems)
    assert file_stem("transpose 517×33 bf16") == "transpose_517_33_bf16"


def test_the_inductor_record_holds_what_results_says_of_it():
    """benchmarks/inductor_code.json (`python -m tools.inductor_code` on the H100): Inductor's
    transposes are 32 x 32 tiles of 4 warps loading with evict_last, AoS->SoA 512 x 8 of 8 warps,
    its row gathers flat 1,024-element blocks of 4 warps whose embedding and KV-cache rows are
    loaded without the hint (their index loads with it)."""
    record = json.loads((ROOT / "benchmarks" / "inductor_code.json").read_text())["workloads"]
    assert set(record) == {next(n for n in json.loads((ROOT / "benchmarks" / "kernel_plans.json").read_text())
                                if pick in n) for pick in CLOSE}
    for name, w in record.items():
        (config,) = w["kept_configs"]
        loads = [ln for ln in w["inductor"].splitlines() if "tl.load(" in ln and "def " not in ln]
        if "transpose" in name or "NCHW" in name or "NHWC" in name:
            assert "XBLOCK: 32, YBLOCK: 32, num_warps: 4" in config and all("evict_last" in ln for ln in loads)
        elif "AoS" in name:
            assert "XBLOCK: 8, YBLOCK: 512, num_warps: 8" in config and all("evict_last" in ln for ln in loads)
        else:
            assert "XBLOCK: 1024, num_warps: 4" in config and "evict_last" in loads[0]  # the index
            assert ("evict_last" in loads[1]) == ("axis 1" in name)
