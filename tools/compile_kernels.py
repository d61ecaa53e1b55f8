"""Compile every emitted kernel of the benchmark plans for sm90, without a GPU.

    python -m tools.compile_kernels [PLANS.json ...]   # default: benchmarks/kernel_{cases,plans}.json,
                                                       # every 10th tile plan, the GEMM kernels

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


def main(paths: list[Path], gemm: bool = False) -> int:
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("compile_kernels: unset TRITON_INTERPRET (the interpreter compiles nothing)")
    from triton.backends.compiler import GPUTarget

    from legalsat.clients.resources import compile_launch
    from legalsat.diagnostics import InputError
    from legalsat.kernels import emit, kernel_variants

    target = GPUTarget("cuda", 90, 32)
    failed = total = 0
    for path in paths:
        for name, entry in json.loads(path.read_text()).items():
            for i, plan in enumerate(entry["response"]["plans"]):
                for variant in kernel_variants(plan, sm90=True):
                    try:
                        em = emit(plan, variant)
                    except InputError as e:  # a plan Triton cannot express (the emitter says why)
                        print(f"{name[:44]:44s} plan {i} {variant:5s} not emitted: {e.headline.message}", flush=True)
                        continue
                    for ln in em.launches:
                        total += 1
                        t = time.perf_counter()
                        try:
                            k = compile_launch(em, ln, target.arch)
                            status = (f"ok {k.cubin_bytes} B cubin, {k.shared_bytes} B smem, {k.registers} registers, "
                                      f"{k.spill_bytes} B spilled")
                        except Exception as e:  # reported per kernel; the exit code says it
                            failed += 1
                            status = f"FAILED {type(e).__name__}: {str(e)[:300]}"
                        print(f"{name[:44]:44s} plan {i} {variant:5s} {ln.kernel:28s} "
                              f"{1e3 * (time.perf_counter() - t):6.0f} ms {status}", flush=True)
    if gemm:
        g_total, g_failed = compile_gemms(target)
        total, failed = total + g_total, failed + g_failed
    print(f"{total - failed} of {total} kernels compiled for sm90")
    return 1 if failed else 0


def compile_gemms(target) -> tuple[int, int]:
    """The GEMM kernels (Gluon and tl) in the configurations matmul uses."""
    import triton
    from triton.compiler.compiler import ASTSource
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    from legalsat.clients.triton import load_module
    from legalsat.kernels.gemm import gemm_source

    def nvmma(sw: int) -> str:
        return str(gl.NVMMASharedLayout(swizzle_byte_width=sw, element_bitwidth=16, rank=2))

    total = failed = 0
    for variant in ("gluon", "tl"):
        fn = load_module(gemm_source(variant)).gemm
        for bm, bn, bk, kmajor, stages in ((128, 256, 64, False, 3), (128, 256, 64, True, 4), (128, 128, 16, False, 5),
                                           (64, 256, 64, True, 5)):
            total += 1
            warps = 8 if bm >= 128 else 4
            a = f"bf16[{bm}, {bk}]"
            b = f"bf16[{bn}, {bk}]" if kmajor else f"bf16[{bk}, {bn}]"
            sub = variant == "tl" and bn == 256
            c = f"bf16[{bm}, {bn // 2 if sub else bn}]"
            try:
                if variant == "gluon":
                    sig = {"a_desc": f"tensordesc<{a},{nvmma(min(128, 2 * bk))}>",
                           "b_desc": f"tensordesc<{b},{nvmma(min(128, 2 * (bk if kmajor else bn)))}>",
                           "c_desc": f"tensordesc<{c},{nvmma(128)}>", "B_KMAJOR": "constexpr", "STAGES": "constexpr",
                           "GROUP_M": "constexpr", "num_warps": "constexpr"}
                    cx = {"B_KMAJOR": kmajor, "STAGES": stages, "GROUP_M": 8, "num_warps": warps}
                    src = GluonASTSource(fn, sig, constexprs=cx)
                else:
                    sig = {"a_desc": f"tensordesc<{a}>", "b_desc": f"tensordesc<{b}>", "c_desc": f"tensordesc<{c}>",
                           "M": "i32", "N": "i32", "K": "i32", "B_KMAJOR": "constexpr", "GROUP_M": "constexpr",
                           "NUM_SMS": "constexpr", "SUBTILE": "constexpr"}
                    cx = {"B_KMAJOR": kmajor, "GROUP_M": 8, "NUM_SMS": 132, "SUBTILE": sub}
                    src = ASTSource(fn, sig, constexprs=cx)
                k = triton.compile(src, target=target, options={"num_warps": warps, "num_stages": stages})
                status = f"ok {k.metadata.shared} B smem"
            except Exception as e:  # reported per kernel; the exit code says it
                failed += 1
                status = f"FAILED {type(e).__name__}: {str(e)[:300]}"
            print(f"gemm {variant:5s} {bm}x{bn}x{bk} {'B k-major' if kmajor else 'B mn-major':10s} {stages} stages "
                  f"{status}", flush=True)
    return total, failed


def tile_sample(every: int = 10) -> Path:
    """Every `every`-th plan of the tile benchmarks, as a plans file (written to a temp dir)."""
    import tempfile

    out = {}
    for path in (ROOT / "benchmarks" / "tile_plans.json", ROOT / "benchmarks" / "tile_suite_plans.json"):
        entries = json.loads(path.read_text())
        out.update({name: entries[name] for name in sorted(entries)[::every]})
    sample = Path(tempfile.mkdtemp()) / "tile_sample.json"
    sample.write_text(json.dumps(out))
    return sample


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]]
    if args:
        raise SystemExit(main(args))
    raise SystemExit(main([ROOT / "benchmarks" / "kernel_cases.json", ROOT / "benchmarks" / "kernel_plans.json",
                           tile_sample()], gemm=True))
