"""Whether a TMA box may start at any element along its innermost dim, asked of the GPU: one
Gluon kernel loads (or stores) a single [1, 64] box of uint8, bf16 or fp32 through a
descriptor over a flat buffer viewed as [1, N] (legal: 16-byte base, no row stride), at
element offset k, for k = 0 .. 16 bytes' worth, each in a fresh process (a fault ends the
process's CUDA context).

    python -m tools.tma_offset_probe   # GPU machine; one line per (element, op, offset), and
                                       # $OUT/tma_offset_probe.json

This is what closes the route of storing each misaligned destination row of a transpose
(a pitch of 50257 bf16) with its own TMA store: the descriptor encodes, but on the H100
(driver 580.159.04, triton 3.6.0) a box whose innermost start is not on 16 bytes faults with
an illegal instruction (README, "Kernels").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = '''
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


@gluon.jit
def store_box(desc, k):
    buf = gl.allocate_shared_memory({gl_dtype}, [1, 64], desc.layout)
    x = gl.full([1, 64], 1, {gl_dtype}, gl.BlockedLayout([1, 2], [1, 32], [1, 1], [1, 0]))
    buf.store(x)
    fence_async_shared()
    tma.async_copy_shared_to_global(desc, [0, k], buf)
    tma.store_wait(0)


@gluon.jit
def load_box(desc, out, k):
    buf = gl.allocate_shared_memory({gl_dtype}, [1, 64], desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, {box_bytes})
    tma.async_copy_global_to_shared(desc, [0, k], bar, buf)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    lay: gl.constexpr = gl.BlockedLayout([1, 2], [1, 32], [1, 1], [1, 0])
    x = buf.load(lay)
    i = gl.arange(0, 64, layout=gl.SliceLayout(0, lay))
    gl.store(out + i[None, :], x)


def main(op, k):
    n = 4096
    flat = torch.zeros(1, n, dtype={torch_dtype}, device="cuda")
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth={bits}, rank=2)
    desc = TensorDescriptor(flat, [1, n], [n, 1], [1, 64], layout)
    if op == "store":
        store_box[(1,)](desc, k, num_warps=1)
        torch.cuda.synchronize()
        ok = bool((flat[0, k:k + 64] == 1).all()) and int((flat != 0).sum()) == 64
    else:
        flat.copy_((torch.arange(n, device="cuda") % 251).to({torch_dtype}).view(1, n))
        out = torch.empty(64, dtype={torch_dtype}, device="cuda")
        load_box[(1,)](desc, out, k, num_warps=1)
        torch.cuda.synchronize()
        ok = torch.equal(out, flat[0, k:k + 64])
    print("exact" if ok else "wrong")


if __name__ == "__main__":
    import sys
    main(sys.argv[1], int(sys.argv[2]))
'''


DTYPES = (("uint8", "gl.uint8", "torch.uint8", 1), ("bfloat16", "gl.bfloat16", "torch.bfloat16", 2),
          ("float32", "gl.float32", "torch.float32", 4))


def main() -> None:
    rows = []
    # Gluon compiles a kernel from its source file, so each element type's probe is written to one
    with tempfile.TemporaryDirectory() as tmp:
        for name, gl_dtype, torch_dtype, es in DTYPES:
            script = Path(tmp) / f"tma_offset_{name}.py"
            script.write_text(SOURCE.format(gl_dtype=gl_dtype, torch_dtype=torch_dtype, box_bytes=64 * es,
                                            bits=8 * es))
            for op in ("load", "store"):
                for k in range(16 // es + 1):
                    try:
                        run = subprocess.run([sys.executable, str(script), op, str(k)], capture_output=True,
                                             text=True, timeout=120)
                    except subprocess.TimeoutExpired:  # a hung probe is a verdict too: the others still run
                        verdict = "hung: no answer within 120 s"
                    else:
                        out = run.stdout.strip().splitlines()
                        err = next((line for line in run.stderr.splitlines() if "Error" in line), run.stderr[-200:])
                        verdict = out[-1] if run.returncode == 0 and out else f"fault: {err.strip()[:120]}"
                    rows.append({"element": name, "op": op, "offset_elements": k, "offset_bytes": es * k,
                                 "verdict": verdict})
                    print(f"{op:5s} box [1, 64] {name} at element {k} (byte {es * k:2d}): {verdict}", flush=True)
    out_dir = Path(os.environ.get("OUT", "."))
    (out_dir / "tma_offset_probe.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
