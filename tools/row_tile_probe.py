"""BSHD->BHSD (8 x 4096 x 32 x 128 bf16, 256-byte rows moved whole) as tiles of several rows of
both sides, measured against the planned direct kernel, `torch.compile` and a same-size copy_.

    python -m tools.row_tile_probe   # on the GPU machine; writes $OUT/row_tile_probe.json

The planned direct kernel walks the destination flat: a program's rows are contiguous in the
destination and 8 KiB apart in the source. A tile of `sb` sequence positions x `hb` heads
reads `sb` runs of `hb` rows and writes `hb` runs of `sb` rows, so both sides get runs longer
than a row. Each variant (tile, warps, which of the two walks the program ids fastest) is
checked bit-exact against PyTorch, then everything is timed together in interleaved rounds
(`benchmarks.measure.timed_together`).
"""

from __future__ import annotations

import triton
import triton.language as tl

WORKLOAD = "BSHD→BHSD 8×32×4096×128 bf16"
TILES = ((64, 1), (32, 1), (32, 2), (16, 2), (16, 4), (8, 4), (8, 8), (4, 8), (4, 16), (2, 16), (2, 32),
         (1, 32), (16, 8), (8, 16), (4, 32))  # (sb, hb)


@triton.jit
def row_tile(src, dst, S: tl.constexpr, H: tl.constexpr, D: tl.constexpr, SB: tl.constexpr, HB: tl.constexpr,
             HEADS_FASTEST: tl.constexpr):
    pid = tl.program_id(0)
    nh: tl.constexpr = H // HB
    ns: tl.constexpr = S // SB
    if HEADS_FASTEST:
        hb = pid % nh
        sb = pid // nh % ns
        b = pid // nh // ns
    else:
        sb = pid % ns
        hb = pid // ns % nh
        b = pid // ns // nh
    s = sb * SB + tl.arange(0, SB)
    h = hb * HB + tl.arange(0, HB)
    d = tl.arange(0, D)
    so = b * (S * H * D) + s[:, None, None] * (H * D) + h[None, :, None] * D + d[None, None, :]
    do = b * (S * H * D) + h[None, :, None] * (S * D) + s[:, None, None] * D + d[None, None, :]
    tl.store(dst + do, tl.load(src + so))


def main() -> None:
    import torch

    from benchmarks.measure import same_size_copy, timed_together, write_probe
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import poison, same_bits
    from tools.sweep import workloads

    (_, plan, inp, want), = workloads(lambda r: r["plans"][0], [WORKLOAD])  # the planned direct kernel
    B, S, H, D = 8, 4096, 32, 128
    x = torch.randn(B, S, H, D, device="cuda").to(torch.bfloat16)
    ref = x.permute(0, 2, 1, 3).contiguous()
    y, yc = torch.empty_like(ref), torch.empty_like(ref)
    compiled = torch.compile(lambda dst, src: dst.copy_(src), dynamic=False)
    compiled(yc, x.permute(0, 2, 1, 3))
    assert torch.equal(yc.view(torch.int16), ref.view(torch.int16)), "torch.compile differs"
    planned = build_kernel(plan, variant="tl")
    poison(inp)
    assert same_bits(inp.call(planned), want), "the planned kernel differs"
    names = ["copy_ (same size)", "torch.compile", "planned direct"]
    fns = [same_size_copy(inp.moved_bytes), lambda: compiled(yc, x.permute(0, 2, 1, 3)),
           lambda: inp.call(planned, check=False)]
    for sb, hb in TILES:
        for warps in (4, 8):
            for heads_fastest in (False, True):
                grid = (B * (S // sb) * (H // hb),)
                args = (S, H, D, sb, hb, heads_fastest)
                y.fill_(-1)
                row_tile[grid](x, y, *args, num_warps=warps)
                assert torch.equal(y.view(torch.int16), ref.view(torch.int16)), (sb, hb, warps, heads_fastest)
                fns.append(lambda g=grid, a=args, w=warps: row_tile[g](x, y, *a, num_warps=w))
                names.append(f"tile {sb}x{hb} rows, {warps} warps, {'heads' if heads_fastest else 'seq'} fastest")
    ms = timed_together(fns)
    rows = [{"kernel": n, "us": round(t * 1e3, 1), "copy_ratio": round(ms[0] / t, 3),
             "x_compile": round(ms[1] / t, 3)} for n, t in zip(names, ms)]
    write_probe("row_tile_probe.json", WORKLOAD, rows)
    for r in sorted(rows, key=lambda r: r["us"]):
        print(f"{r['kernel']:44s} {r['us']:8.1f} us  {r['copy_ratio']:.3f} of the copy  {r['x_compile']:.3f} x compile")


if __name__ == "__main__":
    main()
