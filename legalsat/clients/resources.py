"""What a plan's kernels take on the GPU, measured by compiling them, without a GPU.

    from legalsat.clients.resources import plan_resources
    for k in plan_resources(plan):              # a plan, or a whole optimize response
        print(k.kernel, k.shared_bytes, k.registers, k.spill_bytes)

Triton compiles to a cubin on any machine (its ptxas is bundled), so a plan's shared memory
(Triton's own figure, what `OutOfResources` is raised on) and its registers and spills
(ptxas's report on the same PTX) are known before the plan reaches a GPU. Must run without
TRITON_INTERPRET (the interpreter compiles nothing).
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

import torch

from legalsat.clients.triton import TORCH_OF, WGMMA_TORCH, WORD_DTYPE, load_module
from legalsat.kernels import emit, select_plan
from legalsat.kernels.source import Emitted, Launch

# registers of one SM (sm80 .. sm100): a block needs registers x threads of them
REGISTERS_PER_SM = 65536


@dataclass(frozen=True)
class KernelResources:
    """One launch's kernel as compiled for `arch`: shared memory per block (bytes, Triton's
    figure), registers per thread and bytes spilled to local memory (ptxas's report)."""

    kernel: str
    num_warps: int
    shared_bytes: int
    registers: int
    spill_bytes: int
    cubin_bytes: int

    @property
    def registers_per_block(self) -> int:
        return self.registers * 32 * self.num_warps


def _pointer(dtype: torch.dtype) -> str:
    """Triton's signature of a tensor argument of `dtype`, as it specializes the launch."""
    from triton.runtime.jit import mangle_type

    return mangle_type(torch.empty(0, dtype=dtype, device="meta"))


def signature(em: Emitted, ln: Launch) -> tuple[dict, object, dict]:
    """(Triton signature strings by argument name, the JITFunction, constexprs) of a launch:
    the types the Triton client passes (words, int64 indices, the buffers' dtypes)."""
    fn = getattr(load_module(em.source), ln.kernel)
    names = list(inspect.signature(fn.fn).parameters)
    sig, constexprs = {}, {}
    tile = em.tile
    for name, arg in zip(names, ln.args):
        if arg == "out" and tile is not None and tile.element != "words":
            sig[name] = _pointer(torch.float32 if tile.element == "float32" else torch.int32)
        elif arg in ("src", "dst", "out", "src:aligned"):
            sig[name] = _pointer(WORD_DTYPE[ln.word])
        elif arg == "src:skew":
            sig[name] = "i32"
        elif arg in ("index", "group"):
            sig[name] = _pointer(torch.int64)
        elif arg == "dump":
            sig[name] = _pointer(torch.int32)
        elif arg.startswith("const:"):
            sig[name], constexprs[name] = "constexpr", 0
        elif arg.startswith("buf:"):
            sig[name] = _pointer(TORCH_OF[em.buffers[arg[4:]][0]])
        else:
            spec = em.descriptors[arg[5:]]
            wg = tile.wgmma_input if tile is not None else None
            elem = _pointer(WGMMA_TORCH[wg] if wg else WORD_DTYPE[ln.word])[1:]
            ty = f"{elem}{list(spec.block)}"
            if em.variant == "gluon":
                from triton.experimental.gluon import language as gl

                lay = gl.NVMMASharedLayout(swizzle_byte_width=spec.swizzle, element_bitwidth=8 * ln.word,
                                           rank=len(spec.block))
                ty += f",{lay}"
            sig[name] = f"tensordesc<{ty}>"
    return sig, fn, constexprs


def ptxas_report(ptx: str, arch: int) -> tuple[int, int]:
    """(registers per thread, spilled bytes stored + loaded) of the PTX's one kernel, from
    the ptxas that Triton itself runs (a second run: Triton keeps no log of its own)."""
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([get_ptxas(arch).path, "-v", f"--gpu-name={sm_arch_from_capability(arch)}", src,
                            "-o", os.path.join(tmp, "kernel.cubin")], capture_output=True, text=True, check=True)
    log = r.stdout + r.stderr
    regs = re.search(r"Used (\d+) registers", log)
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", log)]
    return int(regs.group(1)) if regs else 0, sum(spills)


def compile_kernel(em: Emitted, ln: Launch, arch: int = 90, aligned: bool = False):
    """One launch's kernel compiled for `arch` (a capability, 90 = sm_90a): Triton's compiled
    kernel (`.asm["ptx"]`, `.metadata`). `aligned`: its pointer arguments taken 16-byte aligned,
    as Triton specializes a launch whose tensors are (the code a GPU then runs: vector widths
    follow from it). Raises what Triton raises when the kernel does not compile."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource

    if os.environ.get("TRITON_INTERPRET") == "1":
        raise RuntimeError("compiling needs TRITON_INTERPRET unset (the interpreter compiles nothing)")
    sig, fn, cx = signature(em, ln)
    attrs = {(k,): [["tt.divisibility", 16]] for k, ty in enumerate(sig.values()) if ty.startswith("*")} \
        if aligned else None
    src = (GluonASTSource if em.variant == "gluon" else ASTSource)(fn, sig, constexprs=cx, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": ln.num_warps})


def compile_launch(em: Emitted, ln: Launch, arch: int = 90) -> KernelResources:
    """Compile one launch's kernel for `arch` (`compile_kernel`) and report it."""
    k = compile_kernel(em, ln, arch)
    regs, spills = ptxas_report(k.asm["ptx"], arch)
    return KernelResources(ln.kernel, ln.num_warps, k.metadata.shared, regs, spills, len(k.asm["cubin"]))


def plan_resources(plan: object, variant: str = "tl", plan_index: int = 0, arch: int = 90) -> list[KernelResources]:
    """Every launch of a plan's kernel module (`emit(plan, variant)`), compiled for `arch`."""
    em = plan if isinstance(plan, Emitted) else emit(select_plan(plan, plan_index)[0], variant)
    return [compile_launch(em, ln, arch) for ln in em.launches]
