"""Every emitted kernel of the benchmark plans, tl and Gluon, compiles to an sm90 cubin
(no GPU needed: Triton bundles ptxas). Gluon never runs in the interpreter; this is its CI check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.kernels.client import require_client

ROOT = Path(__file__).resolve().parents[2]


def _compile_plans(plans: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m tools.compile_kernels` over `plans` ({name: {"response": ...}}; None: the
    benchmark's plan files), outside the interpreter."""
    import json
    import tempfile

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    with tempfile.TemporaryDirectory() as d:
        args = []
        if plans is not None:
            path = Path(d) / "plans.json"
            path.write_text(json.dumps(plans))
            args = [str(path)]
        return subprocess.run([sys.executable, "-m", "tools.compile_kernels", *args], capture_output=True, cwd=ROOT,
                              text=True, env=env, timeout=900)


def test_all_kernels_compile_for_sm90():
    require_client()
    r = _compile_plans()
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert " 0 of " not in r.stdout and "kernels compiled for sm90" in r.stdout


def test_every_broadcast_tile_probe_compiles_for_sm90():
    """The tile plans with broadcast dims (their store loop over those dims named its indices
    b0, b1, ...: the Gluon probe's own stage loop variable is b0, a broadcast dim 0 broke it)."""
    require_client()
    import json

    picks = {}
    for name in ("tile_plans.json", "tile_suite_plans.json"):
        for key, entry in json.loads((ROOT / "benchmarks" / name).read_text()).items():
            if any((p.get("tile_load") or {}).get("broadcast") for p in entry["response"]["plans"]):
                picks[key] = entry
    assert len(picks) >= 6 and any(k.startswith("broadcast overhang") for k in picks)
    r = _compile_plans(picks)
    assert r.returncode == 0 and " 0 of " not in r.stdout, r.stdout[-4000:] + r.stderr[-4000:]


def test_kernels_past_2_31_words_compile_for_sm90():
    """Their int64 index terms compile, tl and Gluon (a tile's TMA kernel widened as its direct
    walk is failed to compile: Triton's block pointers take int32 offsets only; the
    interpreter ran it)."""
    require_client()

    from legalsat.api import optimize
    from tests.kernels.test_wide_offsets import CASES

    plans = {name: {"response": optimize({"op": op, "options": {"max_plans": 8}})} for name, (op, _) in CASES.items()}
    r = _compile_plans(plans)
    assert r.returncode == 0 and " 0 of " not in r.stdout, r.stdout[-4000:] + r.stderr[-4000:]
