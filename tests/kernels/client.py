"""The kernel tests' one requirement, the `client` extra (torch + triton), and what several of
them share: a staged plan skewed as a large destination's would be, a kernel run bit-exact in
the interpreter, PTX access counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def require_client() -> None:
    """Skip (or, where CI lists "triton" in LEGALSAT_CI_REQUIRE, fail) without torch / triton."""
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        if "triton" in os.environ.get("LEGALSAT_CI_REQUIRE", "").split(","):
            pytest.fail(f"the client extra is required here (LEGALSAT_CI_REQUIRE): {e}")
        pytest.skip(f"the client extra is not installed: {e}")


def skewed_response(response: dict, skewed_stores: bool | None = None) -> dict:
    """`response` (a small transpose into misaligned rows) with its staged plan as the planner
    gives destinations larger than L2: a 64 x 128 tile storing 16-byte vectors, which the
    emitter sector-skews (the planner's own choice for a small case is a plain tile); with
    `skewed_stores` the plan says so (rows on 16 bytes but off a sector), without it the
    kernels read the store width (rows off 16 bytes, an earlier planner's plans)."""
    import copy

    out = copy.deepcopy(response)
    plan = next(p for p in out["plans"] if p["strategy"] == "staged_smem")
    piece = plan["pieces"][0]
    piece["tile"], piece["store_vector_bytes"] = [64, 128], 16
    if skewed_stores is not None:
        piece["skewed_stores"] = skewed_stores
    out["plans"] = [plan]
    return out


def interpreted(response: dict, workload: dict, seed: int, **build):
    """`response`'s kernel (`build_kernel(response, **build)`) run in Triton's interpreter on
    random inputs over a poisoned destination and asserted bit-exact with PyTorch; the kernel."""
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    inp = make_inputs(response, workload, "cpu", torch.Generator().manual_seed(seed))
    want = reference(inp)
    k = build_kernel(response, **build)
    poison(inp)
    assert same_bits(inp.call(k), want), f"{k.strategy} differs from PyTorch\n{k.source}"
    return k


_SM90_COUNTS = """
import json, re, sys
from legalsat.api import optimize
from legalsat.clients.resources import compile_kernel
from legalsat.kernels import emit
em = emit(optimize(json.loads(sys.argv[1]))["plans"][0], sys.argv[2])
(ln,) = em.launches
ptx = compile_kernel(em, ln, 90, aligned=True).asm["ptx"]
print(json.dumps({"variant": em.variant, **{k: len(re.findall(p, ptx)) for k, p in
                  (("ld", r"ld\\.global"), ("ld_v4", r"ld\\.global[^\\n]*\\.v4"), ("st", r"st\\.global"),
                   ("st_v4", r"st\\.global[^\\n]*\\.v4"), ("ld_16", r"ld\\.global[^\\n]*\\.(?:v4\\.b32|v2\\.b64)"),
                   ("st_16", r"st\\.global[^\\n]*\\.(?:v4\\.b32|v2\\.b64)"), ("shfl", r"shfl\\."),
                   ("shared", r"(?:ld|st)\\.shared"))}}))
"""


def sm90_access_counts(request: dict, variant: str = "tl") -> dict:
    """The global loads and stores (all, 4-word vectors, and 16-byte vectors of 4- or 8-byte
    words: `ld_16`, `st_16`), warp shuffles and shared-memory
    accesses in the PTX of the first plan's one kernel for `request`, compiled for sm90 with
    16-byte aligned pointers (`legalsat.clients.resources.compile_kernel`; no GPU needed), and
    the variant emitted. In a child process: compiled, whatever TRITON_INTERPRET this one has."""
    return json.loads(compiled_in_child(_SM90_COUNTS, json.dumps(request), variant).splitlines()[-1])


def compiled_in_child(code: str, *args: str) -> str:
    """What `python -c code *args` prints, run from the repository in a child process without
    TRITON_INTERPRET (Triton compiles there, whatever this process interprets); asserted to exit 0."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                       cwd=Path(__file__).resolve().parents[2], timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip()


def refused(obj, field: str, *args, plan_index: int = 0, variant: str = "tl", **kw):
    """The InputError `build_kernel(obj, plan_index=..., variant=...)` raises, or the built
    kernel called with `args`/`kw` raises: an invalid plan whose field names `field`."""
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError

    with pytest.raises(InputError) as e:
        k = build_kernel(obj, plan_index=plan_index, variant=variant)
        k(*args, **kw)
    assert e.value.details[0].code.value[0] == "invalid_plan", e.value.details[0]
    assert field in (e.value.details[0].field or ""), e.value.details[0]
    return e.value
