"""`shuffle`: a transpose whose small side fits a warp, exchanged in registers.

Each row of the block is one warp's sub-tile: `sub` destination runs of the source's
whole small side (at most 512 bytes, one 16-byte vector per lane). The row is loaded
along the source's contiguous dim, permuted with `tl.gather` along the row (an axis that
stays inside the warp, so Triton lowers it to warp shuffles, not shared memory) and
stored along the destination's contiguous dim.
"""

from __future__ import annotations

from legalsat.kernels.source import Launch, decompose, program_id
from legalsat.kernels.words import WordPiece, cdiv, transposed_dims

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
    total = 1
    for _, n in counts:
        total *= n
    return "\n".join(lines) + "\n", total


def _mask(ia: str, na: int, ta: int, ib: str, nb: int, tb: int) -> str:
    parts = ([f"({ia} < {na})"] if na % ta else []) + ([f"({ib} < {nb})"] if nb % tb else [])
    return " & ".join(parts)


def emit_shuffle(pieces: list[tuple[WordPiece, dict]]) -> tuple[list[str], list[Launch]]:
    """One register-transpose kernel per piece."""
    texts, launches = [], []
    for i, (p, raw) in enumerate(pieces):
        text, grid = shuffle_copy_kernel(f"shuffle_copy_{i}", p)
        texts.append(text)
        launches.append(Launch(f"shuffle_copy_{i}", grid, raw.get("num_warps", 4), ("src", "dst")))
    return texts, launches
