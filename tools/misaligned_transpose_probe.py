"""Another kernel for a transpose into misaligned destination rows (the 50257 x 4096 bf16
transpose: a destination pitch of 50257 elements starts each row at its own 2-byte offset),
measured against the planned skewed tile (`legalsat.kernels.staged`) and a same-size copy_.

    python -m tools.misaligned_transpose_probe         # GPU: class and shear tiles, $OUT/misaligned_transpose_probe.json
    python -m tools.misaligned_transpose_probe carry   # GPU: carry tiles, $OUT/misaligned_transpose_carry.json and
                                                       # Nsight Compute's reading, $OUT/misaligned_transpose_carry_ncu.csv

`class tile`: the destination rows fall into classes of equal misalignment (row a's start is
a * pitch elements; rows a = e mod G, G = 16 bytes over gcd(16, pitch bytes), share it). Each
program takes one class at a time: it loads that class's source columns from source rows
shifted by the class's misalignment, so every store is whole 16-byte vectors and no source row
is loaded twice (the skewed tile loads a sector of extra rows and shifts them with `tl.gather`).
The price is on the load side: a class's columns lie G elements apart in the source, so each
load is one element wide.

`shear tile` (Gluon): the skewed tile's shift without `tl.gather`. It loads whole source rows
(16-byte vectors), moves them into a layout whose 32 lanes hold 32 consecutive rows of a
column, and shifts each column by its destination row's misalignment with one warp shuffle per
element (`shfl.sync.idx`; a column whose shift crosses the lanes takes the next 32 rows'
shuffled values), then stores whole 16-byte vectors from whole sectors. Its step (the rows it
stores a program, 32 per segment) sets the extra rows it loads: one half segment per step
(the skewed tile: 16 per 48).

`carry tile` (`carry_kernel`): the skewed tile's sector-aligned stores without its extra loads.
A program walks several runs of its destination rows; the up to a sector of source rows a run
needs from before its own come from the previous step (kept in registers, or loaded again from
L1), so each source row is loaded once and every stored row is a whole run.

Two other forms are not expressible, so not measured: a TMA store per class (a descriptor over
each class's rows is legal to encode, but a box must start on 16 bytes along the innermost dim:
`benchmarks/RESULTS.md`, "Where a TMA box may start"), and a Gluon tile that shifts each class
while reading shared memory (a shared-memory subview must start at a multiple of its own
extent, Triton 3.6's `memdesc_subslice`).

Every variant is checked bit-exact against PyTorch and timed in interleaved rounds.
"""

from __future__ import annotations

import json
from math import gcd

from legalsat.kernels.source import HEADER_GLUON, HEADER_TL
from legalsat.terms.integers import cdiv

WORKLOAD = "transpose 50257×4096 bf16"
SHAPES = ((128, 64, 4), (64, 128, 4), (128, 128, 8), (256, 64, 8), (64, 64, 4), (128, 32, 4))  # (TA, TB, warps)
# (TA, segments, warps, align): sector-aligned runs (16 elements), then line-aligned ones (64)
SHEAR_SHAPES = ((64, 2, 4, 16), (128, 2, 4, 16), (128, 2, 8, 16), (128, 4, 4, 16), (128, 4, 8, 16),
                (128, 2, 8, 64), (128, 4, 8, 64), (64, 4, 4, 64), (128, 8, 8, 64))
# (TA, TB, steps, halo, warps)
CARRY_SHAPES = ((128, 64, 16, "carry", 4), (128, 64, 16, "carry", 8), (64, 64, 16, "carry", 4),
                (128, 64, 4, "carry", 4), (128, 64, 64, "carry", 4), (64, 128, 8, "carry", 4),
                (128, 128, 8, "carry", 8), (128, 64, 16, "reload", 4), (128, 64, 16, "reload", 8),
                (64, 64, 16, "reload", 4), (128, 32, 32, "reload", 4), (64, 32, 32, "carry", 4))
SECTOR = 16  # bf16 elements of a 32-byte sector: the shear's unit of alignment


def class_kernel(na: int, nb: int, sb: int, pitch: int, ta: int, tb: int, word: int = 2) -> tuple[str, int]:
    """Source and program count of the class tile: dst[a, b] (row pitch `pitch`, `na` rows of
    `nb`) = src[b, a] (row pitch `sb`), `ta` destination rows and `tb` columns a program."""
    al = 16 // word  # elements of a 16-byte vector
    g = al // gcd(al, pitch % al) if pitch % al else 1  # rows a class repeats after
    # the stores' 16-byte hint holds when every program starts a class's rows and its columns
    # on a vector: a0 * pitch and b0 multiples of `al`
    if ta % g or (ta // g) & (ta // g - 1) or tb % al or tb & (tb - 1):
        raise ValueError(f"a {ta} x {tb} tile: ta must be a power-of-two multiple of the {g} classes and tb a "
                         f"power of two of whole {al}-element vectors")
    shift = [(e * pitch) % al for e in range(g)]
    nbt = cdiv(nb + al - 1, tb)
    lines = ["@triton.jit\ndef class_tile(src, dst):", "    pid = tl.program_id(0)",
             f"    bt = pid % {nbt}", f"    at = pid // {nbt}", f"    b0 = bt * {tb}", f"    a0 = at * {ta}",
             f"    j = tl.arange(0, {tb})", f"    m = tl.arange(0, {ta // g})",
             f"    inner = (bt >= 1) & (b0 + {tb} <= {nb}) & (a0 + {ta} <= {na})"]
    for e in range(g):
        lines += [f"    bs = b0 - {shift[e]} + j", f"    ac = a0 + m * {g} + {e}",
                  f"    so = bs[:, None] * {sb} + ac[None, :]",
                  f"    do = tl.multiple_of(ac * {pitch} + b0 - {shift[e]}, {al})",
                  "    if inner:", "        tl.store(dst + do[None, :] + j[:, None], tl.load(src + so))",
                  "    else:", f"        mk = ((bs >= 0) & (bs < {nb}))[:, None] & (ac < {na})[None, :]",
                  "        tl.store(dst + do[None, :] + j[:, None], tl.load(src + so, mask=mk), mask=mk)"]
    return "\n".join(lines) + "\n", nbt * cdiv(na, ta)


def shear_kernel(na: int, nb: int, sb: int, pitch: int, ta: int, segments: int, warps: int,
                 align: int = SECTOR) -> tuple[str, int]:
    """Gluon source and program count of the shear tile (bf16): dst[a, b] (row pitch `pitch`,
    `na` rows of `nb`) = src[b, a] (row pitch `sb`); a program takes `ta` destination rows and
    stores `32 * segments` of their elements each, every row's run starting on `align`
    elements (16: a 32-byte sector; 64: a 128-byte line), so it loads `align` extra rows."""
    if ta & (ta - 1) or not 16 <= ta <= 256 or segments < 1 or warps & (warps - 1) or not 1 <= warps <= ta // 8:
        raise ValueError(f"a shear tile of {ta} rows, {segments} segments, {warps} warps: ta a power of two in "
                         f"16..256, at least one segment, warps a power of two up to ta / 8")
    step = 32 * segments
    if align not in (16, 32, 64) or step % align:
        raise ValueError(f"align {align}: 16, 32 or 64 elements, dividing the step of {step}")
    nat, nbt = cdiv(na, ta), cdiv(nb + align - 1, step)
    last = nb // step - 1  # the last tile whose loaded and stored rows all lie inside
    loads = cdiv(step + align, 32)  # segments loaded: rows b0 - align .. b0 + step - 1
    half = (step + align) % 32  # rows of the last loaded segment (0: all 32)
    a_edge = f" | (a0 + {ta} > {na})" if na % ta else ""
    lines = ["@gluon.jit\ndef shear_tile(src, dst):",
             f"    LD: gl.constexpr = gl.BlockedLayout([1, 8], [2, 16], [{warps}, 1], [1, 0])",
             f"    LS: gl.constexpr = gl.BlockedLayout([1, 8], [32, 1], [1, {warps}], [1, 0])",
             f"    ST: gl.constexpr = gl.BlockedLayout([8, 1], [4, 8], [1, {warps}], [0, 1])",
             "    pid = gl.program_id(0)", f"    a0 = pid % {nat} * {ta}", f"    bt = pid // {nat}",
             f"    b0 = bt * {step}", f"    edge = (bt < 1) | (bt > {last}){a_edge}",
             # loads: rows b0 - align + 32 q + l, whole vectors along a
             "    l = gl.arange(0, 32, layout=gl.SliceLayout(1, LD))",
             f"    ai = a0 + gl.arange(0, {ta}, layout=gl.SliceLayout(0, LD))",
             f"    r = b0 - {align} + l",
             f"    so = gl.expand_dims(r, 1) * {sb} + gl.expand_dims(ai, 0)"]
    for q in range(loads):
        rows = f"(l < {half})" if q == loads - 1 and half else None
        inside = f"(r + {32 * q} >= 0) & (r + {32 * q} < {nb})"
        edge_mask = " & ".join(x for x in (rows, inside) if x)
        a_mask = f" & gl.expand_dims(ai < {na}, 0)" if na % ta else ""
        lines += ["    if edge:", f"        x{q} = gl.load(src + so + {32 * q * sb}, mask=gl.expand_dims({edge_mask}, 1){a_mask})",
                  "    else:", (f"        x{q} = gl.load(src + so + {32 * q * sb}, mask=gl.expand_dims({rows}, 1))" if rows
                               else f"        x{q} = gl.load(src + so + {32 * q * sb})")]
    # the shift: column a's stored run starts `skew` elements before its row's aligned start,
    # so output lane j of segment q takes tile row 32 q + j + (align - skew): lane (j + k) mod 32
    # of segment q + (j + k) // 32
    lines += ["    lj = gl.arange(0, 32, layout=gl.SliceLayout(1, LS))",
              f"    aj = a0 + gl.arange(0, {ta}, layout=gl.SliceLayout(0, LS))",
              f"    t = gl.expand_dims(lj, 1) + gl.expand_dims({align} - aj * {pitch} % {align}, 0)",
              "    lane = t & 31", "    over = t // 32"]
    lines += [f"    s{q} = _shfl(gl.convert_layout(x{q}, LS), lane)" for q in range(loads)]
    lines += ["    j = gl.arange(0, 32, layout=gl.SliceLayout(1, ST))",
              f"    a = a0 + gl.arange(0, {ta}, layout=gl.SliceLayout(0, ST))",
              f"    row = gl.expand_dims(a * {pitch} // {align} * {align}, 0)",
              f"    skew = gl.expand_dims(a * {pitch} % {align}, 0)",
              f"    am = gl.expand_dims(a < {na}, 0)"]
    for q in range(segments):
        pick = f"s{q}"
        for d in range(1, align // 32 + (1 if align % 32 else 0) + 1):
            if q + d < loads:
                pick = f"gl.where(over >= {d}, s{q + d}, {pick})"
        lines += [f"    y = gl.convert_layout({pick}, ST)",
                  f"    bj = b0 + {32 * q} + gl.expand_dims(j, 1)",
                  "    if edge:", f"        gl.store(dst + row + bj, y, mask=(bj - skew >= 0) & (bj - skew < {nb}) & am)",
                  "    else:", "        gl.store(dst + row + bj, y)"]
    shfl = ["@gluon.jit\ndef _shfl(x, lane):",
            "    w = x.to(gl.int16, bitcast=True).to(gl.int32)",
            "    w = gl.inline_asm_elementwise(\"shfl.sync.idx.b32 $0, $1, $2, 0x1f, 0xffffffff;\", \"=r,r,r\", "
            "[w, lane], dtype=gl.int32, is_pure=True, pack=1)",
            "    return w.to(gl.int16).to(gl.bfloat16, bitcast=True)"]
    return "\n".join(shfl) + "\n\n\n" + "\n".join(lines) + "\n", nat * nbt


def carry_kernel(na: int, nb: int, sb: int, pitch: int, ta: int, tb: int, steps: int,
                 halo: str = "carry") -> tuple[str, int]:
    """Source and program count of the carry tile (bf16): dst[a, b] (row pitch `pitch`, `na`
    rows of `nb`) = src[b, a] (row pitch `sb`). A program takes `ta` destination rows and walks
    `steps` runs of `tb` of their elements, every run starting on its row's sector (the skewed
    tile's stores, whole sectors), so a run takes up to a sector of source rows from before
    its own `tb`. Those come from the previous step: with `halo="carry"` its whole tile, kept in
    registers (each source row loaded once, a sector's rows more for the program's first run),
    with `halo="reload"` its last sector of rows loaded again (from L1 or L2). The skewed tile
    loads the sector again for every run instead, and stores 48 of every 64 rows it loads."""
    if ta & (ta - 1) or tb & (tb - 1) or tb < SECTOR or ta < 16 or steps < 1 or halo not in ("carry", "reload"):
        raise ValueError(f"a carry tile of {ta} x {tb}, {steps} steps, halo {halo!r}: ta and tb powers of two, "
                         f"tb at least a sector ({SECTOR}), at least one step, halo 'carry' or 'reload'")
    nk = cdiv(nb + SECTOR - 1, tb)  # runs a row takes: its last starts up to a sector early
    nc, nat = cdiv(nk, steps), cdiv(na, ta)
    hrows, hsub = (tb, tb) if halo == "carry" else (SECTOR, SECTOR)
    am = f" & (a < {na})[None, :]" if na % ta else ""
    lines = ["@triton.jit\ndef carry_tile(src, dst):", "    pid = tl.program_id(0)",
             "    tl.assume(pid >= 0)", f"    tl.assume(pid < {nc * nat})",
             f"    c = pid % {nc}", f"    at = pid // {nc}",
             f"    a = at * {ta} + tl.arange(0, {ta})", f"    j = tl.arange(0, {tb})", f"    h = tl.arange(0, {hrows})",
             f"    row = a * {pitch}", f"    skew = row % {SECTOR}", f"    start = row // {SECTOR} * {SECTOR}",
             "    idx = j[:, None] - skew[None, :]", "    cur = tl.maximum(idx, 0)",
             f"    prev = tl.minimum(idx + {hsub}, {hsub - 1})",
             f"    k0 = c * {steps}",
             f"    interior = (c >= 1) & ((c + 1) * {steps * tb} <= {nb}){' & (at < ' + str(na // ta) + ')' if na % ta else ''}",
             f"    hb = k0 * {tb} - {hrows} + h",
             f"    xp = tl.load(src + hb[:, None] * {sb} + a[None, :], mask=(hb >= 0)[:, None]{am}, "
             "eviction_policy=\"evict_last\")"]

    def step(masked: bool) -> list[str]:
        ld = f", mask=(bk < {nb})[:, None]{am}" if masked else ""
        st = f", mask=(bs >= 0) & (bs < {nb}){am}" if masked else ""
        body = [f"        bk = k * {tb} + j",
                f"        x = tl.load(src + bk[:, None] * {sb} + a[None, :]{ld}, eviction_policy=\"evict_last\")",
                "        y = tl.where(idx >= 0, tl.gather(x, cur, axis=0), tl.gather(xp, prev, axis=0))",
                f"        bs = k * {tb} + idx",
                f"        tl.store(dst + start[None, :] + k * {tb} + j[:, None], y{st})"]
        if halo == "carry":
            body.append("        xp = x")
        else:
            hm = f", mask=(hn < {nb})[:, None]{am}" if masked else ""
            body += [f"        hn = k * {tb} + {tb - SECTOR} + h",
                     f"        xp = tl.load(src + hn[:, None] * {sb} + a[None, :]{hm}, eviction_policy=\"evict_last\")"]
        return body

    lines += ["    if interior:", f"        for k in range(k0, k0 + {steps}):"]
    lines += ["    " + x for x in step(False)]
    lines += ["    else:", f"        for k in range(k0, k0 + {steps}):"]
    lines += ["    " + x for x in step(True)]
    return "\n".join(lines) + "\n", nc * nat


def _sm90_ptx(text: str, fn_name: str, warps: int, gluon: bool) -> str:
    """The PTX of kernel `fn_name` of source `text` compiled for sm90 (no GPU needed), its
    pointers taken 16-byte aligned as Triton specializes them at launch
    (`legalsat.clients.resources.compile_kernel`)."""
    from legalsat.clients.resources import compile_kernel
    from legalsat.kernels.source import Emitted, Launch

    variant, header = ("gluon", HEADER_GLUON) if gluon else ("tl", HEADER_TL)
    launch = Launch(fn_name, 1, warps, ("src", "dst"), word=2)  # bf16 words
    return compile_kernel(Emitted("probe", variant, header + "\n" + text, (launch,)), launch, 90,
                          aligned=True).asm["ptx"]


def shear_sm90_ptx(ta: int = 128, segments: int = 2, warps: int = 4, align: int = SECTOR) -> str:
    """The PTX of the workload's shear tile compiled for sm90."""
    return _sm90_ptx(shear_kernel(4096, 50257, 4096, 50257, ta, segments, warps, align)[0], "shear_tile", warps, True)


def sm90_ptx(ta: int = 128, tb: int = 64, warps: int = 4) -> str:
    """The PTX of the workload's class tile compiled for sm90."""
    return _sm90_ptx(class_kernel(4096, 50257, 4096, 50257, ta, tb)[0], "class_tile", warps, False)


NCU_METRICS = ("gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,"
               "lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,"
               "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,sm__inst_executed.sum,"
               "dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread")


def main(forms: str = "class,shear") -> list[dict]:
    """The forms named in `forms` (class, shear, carry) timed with the planned skewed tile and
    a same-size copy_ after each is checked bit-exact; `once` in `forms`: each launched twice,
    untimed (what `ncu` reads)."""
    import torch

    from benchmarks.bench_kernels import PLANS
    from benchmarks.measure import same_size_copy, timed_against_copy
    from legalsat.clients.triton import build_kernel, load_module

    dev = torch.device("cuda")
    nb, na = 50257, 4096
    src = torch.randn(nb, na, device=dev).to(torch.bfloat16)
    want = src.t().contiguous()
    fns, names = [], []

    def candidate(name: str, fn, grid: int, warps: int) -> None:
        """Run on a poisoned destination; timed only if bit-exact."""
        dst = torch.full((na, nb), float("nan"), device=dev, dtype=torch.bfloat16)
        fn[(grid,)](src, dst, num_warps=warps)
        exact = torch.equal(dst.view(torch.int16), want.view(torch.int16))
        print(f"{name}: exact {exact}", flush=True)
        if exact:
            fns.append(lambda: fn[(grid,)](src, dst, num_warps=warps))
            names.append(name)

    if "class" in forms:
        for ta, tb, warps in SHAPES:
            text, grid = class_kernel(na, nb, na, nb, ta, tb)
            candidate(f"class tile TA={ta} TB={tb} warps={warps}", load_module(HEADER_TL + "\n" + text).class_tile,
                      grid, warps)
    if "shear" in forms:
        for ta, segments, warps, align in SHEAR_SHAPES:
            text, grid = shear_kernel(na, nb, na, nb, ta, segments, warps, align)
            candidate(f"shear tile TA={ta} step={32 * segments} warps={warps}" + (f" align={align}" if align != 16 else ""),
                      load_module(HEADER_GLUON + "\n" + text).shear_tile, grid, warps)
    if "carry" in forms:
        for ta, tb, steps, halo, warps in CARRY_SHAPES:
            text, grid = carry_kernel(na, nb, na, nb, ta, tb, steps, halo)
            candidate(f"carry tile TA={ta} TB={tb} steps={steps} {halo} warps={warps}",
                      load_module(HEADER_TL + "\n" + text).carry_tile, grid, warps)
    planned = build_kernel(json.loads(PLANS.read_text())[WORKLOAD]["response"], variant="tl")
    out = torch.empty(na, nb, device=dev, dtype=torch.bfloat16).t()
    planned(src, out)
    assert torch.equal(out.t().contiguous().view(torch.int16), want.view(torch.int16)), "the planned kernel"
    fns.append(lambda: planned(src, out))
    names.append("planned skewed tile")
    fns.append(same_size_copy(2 * src.numel() * src.element_size(), dev))
    names.append("same-size copy_")
    if "once" in forms:
        for fn in fns:
            fn()
        torch.cuda.synchronize()
        return [{"kernel": n} for n in names]
    return timed_against_copy(names, fns, digits=1)


def profiled(forms: str) -> str:
    """Nsight Compute's reading (CSV) of every kernel of `forms`, each launched twice."""
    import subprocess
    import sys

    done = subprocess.run(["ncu", "--clock-control", "none", "--csv", "--metrics", NCU_METRICS, sys.executable,
                           "-m", "tools.misaligned_transpose_probe", forms + ",once"], capture_output=True, text=True)
    return done.stdout + done.stderr[-4000:]


if __name__ == "__main__":
    import os
    import sys
    from pathlib import Path

    from benchmarks.measure import write_probe

    forms = sys.argv[1] if len(sys.argv) > 1 else "class,shear"
    if "once" in forms:
        main(forms)
    elif "carry" in forms:
        rows = main(forms)
        (Path(os.environ.get("OUT", ".")) / "misaligned_transpose_carry_ncu.csv").write_text(profiled("carry"))
        write_probe("misaligned_transpose_carry.json", WORKLOAD, rows)
    else:
        write_probe("misaligned_transpose_probe.json", WORKLOAD, main(forms))
