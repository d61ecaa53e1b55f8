"""Compile every emitted kernel of the benchmark plans for sm90, without a GPU.

    python -m tools.compile_kernels [PLANS.json ...]   # default: benchmarks/kernel_{cases,plans}.json

Triton compiles to a cubin on any machine (its ptxas is bundled), so the Gluon kernels,
which never run in the interpreter, and the GPU lowering of every tl kernel are checked in CI
too. Prints one line per kernel and exits 1 if any fails. Must run without TRITON_INTERPRET.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

POINTER = {1: "*i8", 2: "*i16", 4: "*i32", 8: "*i64"}
SCALAR = {"int32": "*i32", "int64": "*i64"}


def signature(em, ln, gluon_layouts: bool) -> dict:
    """Triton signature strings of a launch's arguments, by the names the kernel gives them."""
    import inspect

    from legalsat.clients.triton import load_module

    fn = getattr(load_module(em.source), ln.kernel)
    names = list(inspect.signature(fn.fn).parameters)
    sig = {}
    for name, arg in zip(names, ln.args):
        if arg in ("src", "dst", "out"):
            sig[name] = POINTER[ln.word]
        elif arg in ("index", "group"):
            sig[name] = "*i64"
        elif arg.startswith("buf:"):
            sig[name] = SCALAR[em.buffers[arg[4:]][0]]
        else:
            spec = em.descriptors[arg[5:]]
            ty = f"i{8 * ln.word}{list(spec.block)}"
            if gluon_layouts:
                from triton.experimental.gluon import language as gl

                lay = gl.NVMMASharedLayout(swizzle_byte_width=spec.swizzle, element_bitwidth=8 * ln.word,
                                           rank=len(spec.block))
                ty += f",{lay}"
            sig[name] = f"tensordesc<{ty}>"
    return sig, fn


def main(paths: list[Path]) -> int:
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("compile_kernels: unset TRITON_INTERPRET (the interpreter compiles nothing)")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource

    from legalsat.kernels import emit

    target = GPUTarget("cuda", 90, 32)
    failed = total = 0
    for path in paths:
        for name, entry in json.loads(path.read_text()).items():
            for i, plan in enumerate(entry["response"]["plans"]):
                for variant in (["tl", "gluon"] if plan["strategy"] == "tma" else ["tl"]):
                    em = emit(plan, variant)
                    for ln in em.launches:
                        total += 1
                        t = time.perf_counter()
                        try:
                            sig, fn = signature(em, ln, em.variant == "gluon")
                            src = (GluonASTSource if em.variant == "gluon" else ASTSource)(fn, sig, constexprs={})
                            k = triton.compile(src, target=target, options={"num_warps": ln.num_warps})
                            status = f"ok {len(k.asm['cubin'])} B cubin, {k.metadata.shared} B smem"
                        except Exception as e:  # reported per kernel; the exit code says it
                            failed += 1
                            status = f"FAILED {type(e).__name__}: {str(e)[:300]}"
                        print(f"{name[:44]:44s} plan {i} {variant:5s} {ln.kernel:28s} "
                              f"{1e3 * (time.perf_counter() - t):6.0f} ms {status}", flush=True)
    print(f"{total - failed} of {total} kernels compiled for sm90")
    return 1 if failed else 0


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]] or [ROOT / "benchmarks" / "kernel_cases.json",
                                               ROOT / "benchmarks" / "kernel_plans.json"]
    raise SystemExit(main(args))
