"""`staged_smem`: a transposing copy staged through shared memory.

Each program loads one tile along the source's contiguous dim and stores it along the
destination's. The load and the store are each contiguous (16-byte vectors where the
plan's alignment allows); Triton's layout conversion between the two goes through a
swizzled shared-memory tile, which is the staging the plan describes (its `smem` field
gives the bank model's verdict on that tile). Dims the plan does not tile advance one
index per program.

Destination rows that do not start on 16 bytes (a pitch of 50257 bf16) would make every
store scalar and leave partly written 32-byte sectors at both ends of every row segment
(the L2 then reads them back to merge). Such a tile is skewed: each destination row's
segment starts on its own 32-byte sector, the tile loads one sector's worth of extra source
rows, and `tl.gather` shifts each column by its row's misalignment, so stores are whole
16-byte vectors filling whole sectors. On the H100 this took the 50257 x 4096 bf16 transpose
from 0.82 (the run recorded at c90f5f8) to 0.93 of the copy bandwidth (benchmarks/RESULTS.md).
Programs away from the ends run without boundary masks (a mask that is not constant over a
vector would make the stores scalar again). A plan whose stores are one element wide
(`store_vector_bytes`) gets the plain tile instead: the planner says so for destinations
that fit L2, where the partly written sectors merge without a DRAM read-back and the skew's
extra shuffle only adds latency.
"""

from __future__ import annotations

from math import prod

from legalsat.kernels.source import Launch, decompose, program_id, tile_index, wide_aranges
from legalsat.kernels.words import WordPiece, plan_error, transposed_dims
from legalsat.schemas.plan import PieceOut
from legalsat.terms.integers import cdiv
from legalsat.terms.movement import (
    SKEW_SECTOR_BYTES,
    misaligned_pitch,
    sector_misaligned_pitch,
    sector_skewable,
)


def tile_axes(p: WordPiece, tile: tuple[int, ...]) -> list[int]:
    """Block axes: the tiled dims, the destination-contiguous one first and the
    source-contiguous one last (the load's fast axis)."""
    tr = transposed_dims(p)
    axes = [k for k, t in enumerate(tile) if t > 1]
    if tr:
        a, b = tr
        axes = [b] + [k for k in axes if k not in (a, b)] + [a]
        axes = [k for k in axes if tile[k] > 1] or [a]
    return axes


# a skewed tile walks the destination's rows fastest only where its source runs are longer than
# one 128-byte line; thinner ones walk the source's (see walk_order)
SKEW_DST_FASTEST_RUN_BYTES = 256


def walk_order(p: WordPiece, skewed: bool, tile: tuple[int, ...] = ()) -> list[int] | None:
    """The dims in the order consecutive programs walk a transpose's tiles (the last fastest;
    None: the piece's own order, for a piece that is no transpose): untiled dims outermost,
    then a plain tile's tiles along the source-contiguous dim (a) fastest, so the programs
    running at once read whole source rows; a skewed tile (`tile`, its extents) whose source
    runs are at least `SKEW_DST_FASTEST_RUN_BYTES` along the destination-contiguous dim (b)
    fastest, so the programs that share a destination row's 128-byte lines (each stores a run
    of whole sectors, not of lines) run at once, and a thinner one along a, as a plain tile.
    Measured on the H100 (`python -m tools.order_probe`, benchmarks/order_probe.json and
    order_tiles.json): a plain tile walking a fastest was as fast as or faster than walking b
    fastest on every staged transpose of the benchmark (the 3-D rotation, whose dims' own
    order walked b fastest: 0.958 of a same-size copy, 0.967-0.974 with a fastest; the uint8
    8192² transpose 1.5 % faster); the 50257 x 4096 bf16 skewed tile of 256-byte source runs
    ran at 0.936 of the copy walking a fastest, 0.948 walking b fastest, and its tiles under
    smaller shared-memory budgets the other way (`python -m tools.skew_walk_probe`,
    benchmarks/skew_walk_probe.json: 128-byte runs 296.5 against 301.6 us, 32-byte runs 337.0
    against 399.2)."""
    tr = transposed_dims(p)
    if tr is None:
        return None
    a, b = tr
    if skewed and not tile:
        raise ValueError("a skewed tile's walk depends on its extents: pass `tile`")
    rest = [k for k in range(len(p.dims)) if k not in (a, b)]
    dst_fastest = skewed and tile[a] * p.word >= SKEW_DST_FASTEST_RUN_BYTES
    return rest + ([a, b] if dst_fastest else [b, a])


def staged_copy_kernel(name: str, p: WordPiece, tile: tuple[int, ...], vectors: bool = True) -> tuple[str, int]:
    """Source of one piece's tiled transposing copy and its program count. With `vectors` (the
    plan's loads or stores wider than a word), the tiles wholly inside the piece run unmasked:
    a mask along a dim whose extent is not a multiple of the vector is not constant over one,
    and made every access one element wide (a 50257-row bf16 transpose into a 50264-element
    pitch ran at 0.23 of a same-size copy on the H100 so, at 0.81 unmasked inside:
    benchmarks/sector_pitch_probe.json)."""
    ti = tile_index(p, tile, tile_axes(p, tile), order=walk_order(p, skewed=False))
    lines = [f"@triton.jit\ndef {name}(src, dst):", program_id(p.index_bits()), *ti.lines]
    masked = ["x = tl.load(src + so, mask=mask)", "tl.store(dst + do, x, mask=mask)"]
    whole = ["x = tl.load(src + so)", "tl.store(dst + do, x)"]
    if ti.interior and vectors:
        lines += [f"    if {ti.interior}:", *(f"        {s}" for s in whole), "    else:", *(f"        {s}" for s in masked)]
    else:
        lines += [f"    {s}" for s in (masked if ti.masked else whole)]
    return wide_aranges("\n".join(lines) + "\n", p.index_bits()), ti.tiles


def skew_shape(p: WordPiece, tile: tuple[int, ...], sector_rows: bool = False) -> tuple[int, int, int] | None:
    """(a, b, sector words) when destination rows are misaligned (pitch not a multiple of
    16 bytes, or with `sector_rows` of a 32-byte sector) and the tile is skewed
    (`sector_skewable`: its destination run spans whole sectors and more than one, its source
    runs fill a sector, the dim is longer than the tile) and the other dims are untiled."""
    tr = transposed_dims(p)
    if tr is None or p.lanes > 1:
        return None
    a, b = tr
    sector = SKEW_SECTOR_BYTES // p.word
    misaligned = sector_misaligned_pitch if sector_rows else misaligned_pitch
    if not misaligned(p.dims[a].dst, p.word) or not sector_skewable(tile[b] * p.word, p.dims[b].extent, tile[b],
                                                                   tile[a] * p.word):
        return None
    if any(t > 1 for k, t in enumerate(tile) if k not in (a, b)):
        return None
    return a, b, sector


def tile_counts(p: WordPiece, tile: tuple[int, ...], skewed: bool) -> list[int]:
    """Tiles along each dim of `p`, in its dims' order: a skewed tile steps a sector less
    than its extent along the destination-contiguous dim and starts a sector before it."""
    counts = [cdiv(d.extent, t) for d, t in zip(p.dims, tile)]
    if skewed:
        _, b, al = skew_shape(p, tile, sector_rows=True)
        counts[b] = cdiv(p.dims[b].extent + al - 1, tile[b] - al)
    return counts


def skewed_copy_kernel(name: str, p: WordPiece, tile: tuple[int, ...]) -> tuple[str, int]:
    """Source of the skewed transposing copy (see the module docstring) and its program count."""
    a, b, al = skew_shape(p, tile, sector_rows=True)  # staged_form checked it
    ta, tb = tile[a], tile[b]
    step = tb - al  # destination elements per row and program: whole sectors
    na, nb = p.dims[a].extent, p.dims[b].extent
    am = na % ta != 0
    counts = [(f"t{k}", n) for k, n in enumerate(tile_counts(p, tile, skewed=True))]
    lines = [f"@triton.jit\ndef {name}(src, dst):", program_id(p.index_bits())]
    # walking b fastest, a's tile index is pid's quotient: the per-element `% al` and `// al`
    # below fold only where pid's range is stated (`emit`: source.state_program_ranges)
    lines += decompose("pid", [counts[k] for k in walk_order(p, skewed=True, tile=tile)])
    rest_s = [f"t{k} * {d.src}" for k, d in enumerate(p.dims) if k not in (a, b) and d.src]
    rest_d = [f"t{k} * {d.dst}" for k, d in enumerate(p.dims) if k not in (a, b) and d.dst]
    amask = f" & (ai < {na})[None, :]" if am else ""
    lines += [f"    b0 = t{b} * {step}",
              f"    ai = t{a} * {ta} + tl.arange(0, {ta})",
              f"    j = tl.arange(0, {tb})",
              f"    bj = b0 - {al} + j",
              f"    so = {' + '.join([str(p.src_offset)] + rest_s)} + bj[:, None] * {p.dims[b].src} + ai[None, :]",
              f"    row = {' + '.join([str(p.dst_offset)] + rest_d)} + ai * {p.dims[a].dst}",
              f"    skew = row % {al}",
              f"    idx = tl.minimum(j[:, None] + {al} - skew[None, :], {tb - 1})",
              f"    do = (row // {al} * {al})[None, :] + b0 + j[:, None]",
              f"    if (t{b} >= 1) & (t{b} <= {nb // step - 1}):",  # every loaded and stored row is inside
              "        x = tl.load(src + so" + (f", mask=(ai < {na})[None, :]" if am else "") + ")",
              "        y = tl.gather(x, idx, axis=0)",
              f"        tl.store(dst + do, y, mask=(j < {step})[:, None]{amask})",
              "    else:",
              f"        x = tl.load(src + so, mask=((bj >= 0) & (bj < {nb}))[:, None]{amask})",
              "        y = tl.gather(x, idx, axis=0)",
              "        bs = b0 - skew[None, :] + j[:, None]",
              f"        tl.store(dst + do, y, mask=(j < {step})[:, None] & (bs >= 0) & (bs < {nb}){amask})"]
    total = prod(n for _, n in counts)
    return wide_aranges("\n".join(lines) + "\n", p.index_bits()), total


def staged_form(p: WordPiece, raw: PieceOut, field: str = "piece") -> str:
    """The tile `emit_staged` runs for a staged piece: "skewed" or "plain". The plan's
    `skewed_stores` decides; a plan without it (an earlier planner's), its store width:
    16-byte stores into rows off 16 bytes are the skewed tile's, stores of one element the
    plain tile's (a destination that stays in L2, or source runs under a sector)."""
    if raw.skewed_stores:
        if skew_shape(p, p.tile, sector_rows=True) is None:
            raise plan_error(f"{field}.skewed_stores", f"{field}.skewed_stores is set but the piece is no transpose "
                             "into rows off a 32-byte sector whose tile stores runs of whole sectors from source "
                             "runs of a sector or more along a dim longer than the tile")
        return "skewed"
    if raw.skewed_stores is None and skew_shape(p, p.tile) and (raw.store_vector_bytes or raw.vector_bytes) > p.word:
        return "skewed"
    return "plain"


def emit_staged(pieces: list[tuple[int, WordPiece, PieceOut]]) -> tuple[list[str], list[Launch]]:
    """One tiled kernel per piece (a ragged tail the plan copies directly is not staged:
    its piece says `direct`, and the caller emits it so)."""
    texts, launches = [], []
    for i, p, raw in pieces:  # (tiles are powers of two: emit's _check_blocks)
        if staged_form(p, raw, f"pieces[{i}]") == "skewed":
            text, grid = skewed_copy_kernel(f"staged_copy_{i}", p, p.tile)
        else:
            vectors = max(raw.vector_bytes, raw.store_vector_bytes or 0) > p.word
            text, grid = staged_copy_kernel(f"staged_copy_{i}", p, p.tile, vectors)
        texts.append(text)
        launches.append(Launch(f"staged_copy_{i}", grid, raw.num_warps, ("src", "dst"), word=p.word))
    return texts, launches

