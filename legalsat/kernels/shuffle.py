"""`shuffle`: data exchanged in registers: small transposes and window-local row gathers.

Row gathers (warp_local indices): each group of `window_rows` index entries is promised to
fall within `window_rows` consecutive source rows. The program loads that window densely
(contiguous rows, full sectors) and picks each entry's row with `tl.gather`; an entry that
breaks the promise is read directly, so the result is exact whatever the indices.

Transposes:
Each row of the block is one warp's sub-tile: `sub` destination runs of the source's
whole small side (at most 512 bytes, one 16-byte vector per lane). The row is loaded
along the source's contiguous dim, permuted with `tl.gather` along the row (an axis that
stays inside the warp, so Triton lowers it to warp shuffles, not shared memory) and
stored along the destination's contiguous dim.
"""

from __future__ import annotations

from math import prod

from legalsat.kernels.direct import slab_steps
from legalsat.kernels.source import Launch, decompose, program_id, wide_aranges
from legalsat.kernels.words import WordPiece, index_strides, transposed_dims
from legalsat.schemas.plan import GatherOut, PieceOut
from legalsat.terms.integers import cdiv

WARP_ROW_BYTES = 512  # 32 lanes x 16 bytes


def shuffle_shape(p: WordPiece) -> tuple[int, int, int, int, int] | None:
    """(a, b, sub, rows, row_elems) of a piece the shuffle kernel can take, else None."""
    tr = transposed_dims(p)
    if tr is None or p.lanes > 1:
        return None
    a, b = tr
    if any(t > 1 for k, t in enumerate(p.tile) if k not in (a, b)):
        return None
    ta, tb = p.tile[a], p.tile[b]
    sub = max(1, min(tb, (WARP_ROW_BYTES // p.word) // ta))
    return a, b, sub, tb // sub, ta * sub


def shuffle_copy_kernel(name: str, p: WordPiece) -> tuple[str, int]:
    """Source of one piece's register transpose and its program count."""
    a, b, sub, rows, width = shuffle_shape(p)
    ta, tb = p.tile[a], p.tile[b]
    da, sb = p.dims[a], p.dims[b]
    counts = [(f"t{k}", cdiv(d.extent, t)) for k, (d, t) in enumerate(zip(p.dims, p.tile))]
    lines = [f"@triton.jit\ndef {name}(src, dst):", program_id(p.index_bits())]
    lines += decompose("pid", counts)
    bs = [str(p.src_offset)] + [f"t{k} * {d.src}" for k, d in enumerate(p.dims) if k not in (a, b) and d.src]
    bd = [str(p.dst_offset)] + [f"t{k} * {d.dst}" for k, d in enumerate(p.dims) if k not in (a, b) and d.dst]
    lines += [f"    r = tl.arange(0, {rows})[:, None]", f"    e = tl.arange(0, {width})[None, :]",
              f"    ia = t{a} * {ta} + e % {ta}", f"    ib = t{b} * {tb} + r * {sub} + e // {ta}",
              f"    so = {' + '.join(bs)} + ia + ib * {sb.src}"]
    lmask = _mask("ia", da.extent, ta, "ib", sb.extent, tb)
    lines.append("    x = tl.load(src + so" + (f", mask={lmask}" if lmask else "") + ")")
    lines += [f"    g = tl.broadcast_to((e % {sub}) * {ta} + e // {sub}, ({rows}, {width}))",
              "    y = tl.gather(x, g, axis=1)",
              f"    oa = t{a} * {ta} + e // {sub}", f"    ob = t{b} * {tb} + r * {sub} + e % {sub}",
              f"    do = {' + '.join(bd)} + oa * {da.dst} + ob"]
    smask = _mask("oa", da.extent, ta, "ob", sb.extent, tb)
    lines.append("    tl.store(dst + do, y" + (f", mask={smask}" if smask else "") + ")")
    total = prod(n for _, n in counts)
    return wide_aranges("\n".join(lines) + "\n", p.index_bits()), total


def _mask(ia: str, na: int, ta: int, ib: str, nb: int, tb: int) -> str:
    parts = ([f"({ia} < {na})"] if na % ta else []) + ([f"({ib} < {nb})"] if nb % tb else [])
    return " & ".join(parts)


def emit_shuffle(pieces: list[tuple[int, WordPiece, PieceOut]]) -> tuple[list[str], list[Launch]]:
    """One register-transpose kernel per piece."""
    texts, launches = [], []
    for i, p, raw in pieces:
        text, grid = shuffle_copy_kernel(f"shuffle_copy_{i}", p)
        texts.append(text)
        launches.append(Launch(f"shuffle_copy_{i}", grid, raw.num_warps, ("src", "dst"), word=p.word))
    return texts, launches


def shuffle_gather_kernel(name: str, p: WordPiece, rows: int, window: int, count: int, bound: int,
                          src_stride: int, out_stride: int) -> str:
    """Source of a window-local row gather: `rows` entries per program in windows of `window`;
    each window's slabs are moved in steps that fit SLAB_STEP_BYTES (`slab_steps`)."""
    src_off = f" + {p.src_offset}" if p.src_offset else ""
    out = [f"@triton.jit\ndef {name}(src, index, out):", "    pid = tl.program_id(0).to(tl.int64)",
           f"    r = tl.arange(0, {window})",
           f"    for w in tl.static_range({max(rows // window, 1)}):",
           f"        k = pid * {rows} + w * {window} + r",
           f"        idx = tl.load(index + k, mask=k < {count}, other=0).to(tl.int64)",
           f"        ok = (k < {count}) & (idx >= 0) & (idx < {bound})",
           f"        w0 = tl.min(tl.where(ok, idx, {bound}), 0)",
           f"        w0 = tl.maximum(tl.minimum(w0, {max(bound - window, 0)}), 0)",
           "        wr = w0 + r",
           "        rel = idx - w0",
           f"        inside = ok & (rel >= 0) & (rel < {window})",
           "        g1 = tl.where(inside, rel, 0).to(tl.int32)"]
    # the window's rows, gathered in registers; entries outside it (the plan's promise
    # broken) are read directly
    def body(emask):
        return [f"win = tl.load(src + wr[:, None] * {src_stride} + ss[None, :]{src_off}, "
                f"mask=(wr < {bound})[:, None]{emask})",
                "x = tl.gather(win, tl.broadcast_to(g1[:, None], win.shape), axis=0)",
                f"far = tl.load(src + idx[:, None] * {src_stride} + ss[None, :]{src_off}, "
                f"mask=(ok & ~inside)[:, None]{emask})",
                "x = tl.where(inside[:, None], x, far)",
                f"tl.store(out + k[:, None] * {out_stride} + sd[None, :]" + (f" + {p.dst_offset}" if p.dst_offset else "")
                + f", x, mask=ok[:, None]{emask})"]
    out += slab_steps(p, window, body, "        ")
    return "\n".join(out) + "\n"


def emit_shuffle_gather(pieces: list[tuple[int, WordPiece, PieceOut]], gather: GatherOut,
                        num_warps: int) -> tuple[list[str], list[Launch]]:
    """One window-gather kernel per slab piece."""
    texts, launches = [], []
    window = gather.window_rows or 32
    rows = max(window, gather.rows_per_program // window * window)
    count = gather.index_count
    for i, p, _ in pieces:
        name = f"gather_window_{i}"
        texts.append(shuffle_gather_kernel(name, p, rows, window, count, gather.index_bound,
                                           *index_strides(gather, p, i)))
        launches.append(Launch(name, cdiv(count, rows), num_warps, ("src", "index", "out"), word=p.word))
    return texts, launches
