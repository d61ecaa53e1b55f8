"""Where a TMA store writes when its rows are not a multiple of 16 bytes (GPU machine).

    python -m tools.tma_store_row_probe OUT.json

Each case stores boxes of 7s through a Triton tensor descriptor over a view of `rows` x
`cols` elements at a row pitch of `pitch` elements (the gap after each row filled with -1),
then reads back how many bytes past the end of each row were written. The planner's
`tma_store_row` rule (legalsat/planner/build/common.py) rests on it: the TMA unit writes a
box's rows in whole 16-byte chunks, so a row of n bytes gets (16 - n % 16) % 16 bytes past its
end written. tests/planner replays the recorded file without a GPU.
"""

from __future__ import annotations

import json
import sys

# (element bytes, rows, cols, pitch in elements, box rows, box cols)
CASES = [(8, 7, 3, 4, 4, 2), (8, 17, 13, 16, 8, 8), (8, 5, 5, 8, 2, 4), (4, 9, 5, 8, 4, 4), (2, 6, 13, 16, 2, 8),
         (1, 5, 21, 32, 4, 16), (4, 9, 8, 12, 4, 4), (2, 3, 24, 32, 2, 8)]


def main(path: str) -> int:
    import torch
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    from benchmarks.environment import driver_version

    @triton.jit
    def store_boxes(desc, BR: tl.constexpr, BC: tl.constexpr, DT: tl.constexpr):
        r = tl.program_id(0) * BR
        c = tl.program_id(1) * BC
        desc.store([r, c], tl.full((BR, BC), 7, DT))

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    dtypes = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    tl_dtypes = {1: tl.int8, 2: tl.int16, 4: tl.int32, 8: tl.int64}
    out = {"device": torch.cuda.get_device_name(), "driver": driver_version(), "torch": torch.__version__,
           "triton": triton.__version__, "cases": []}
    for es, rows, cols, pitch, br, bc in CASES:
        buf = torch.full((rows * pitch,), -1, dtype=dtypes[es], device="cuda")
        store_boxes[(triton.cdiv(rows, br), triton.cdiv(cols, bc))](
            TensorDescriptor(buf, [rows, cols], [pitch, 1], [br, bc]), br, bc, tl_dtypes[es])
        torch.cuda.synchronize()
        view = buf.view(rows, pitch).cpu()
        past = [int((view[r, cols:] != -1).sum()) * es for r in range(rows)]
        out["cases"].append({"element_bytes": es, "rows": rows, "cols": cols, "pitch": pitch, "box": [br, bc],
                             "row_bytes": cols * es, "view_written": bool((view[:, :cols] == 7).all()),
                             "bytes_past_each_row": sorted(set(past))})
        print(out["cases"][-1])
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "tma_store_row_probe.json"))
