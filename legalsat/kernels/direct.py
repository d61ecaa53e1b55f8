"""`direct`: pointer copies with no staging.

Copies walk the piece flat, `tile[0]` elements per program, in destination order (the
dim with the smallest destination stride fastest, so stores are contiguous and 16-byte
where the plan's alignment allows). Gathers move `rows_per_program` index entries per
program, each entry's slab as one contiguous run where the slab is contiguous.
"""

from __future__ import annotations

from legalsat.kernels.source import Launch, decompose, program_id
from legalsat.kernels.words import WordPiece
from legalsat.schemas.plan import GatherOut, PieceOut
from legalsat.terms.integers import cdiv, pow2_at_least


def direct_copy_kernel(name: str, p: WordPiece, block_elems: int) -> tuple[str, int]:
    """Source of one piece's flat copy and its program count."""
    block = block_elems * p.lanes
    p = p.coalesced()
    order = sorted(range(len(p.dims)), key=lambda k: (-p.dims[k].dst, -p.dims[k].src))
    n = p.elems
    bits = p.index_bits()
    lines = [f"@triton.jit\ndef {name}(src, dst):", program_id(bits),
             f"    i = pid * {block} + tl.arange(0, {block})"]
    lines += decompose("i", [(f"i{k}", p.dims[k].extent) for k in order])
    so = [str(p.src_offset)] if p.src_offset else []
    do = [str(p.dst_offset)] if p.dst_offset else []
    for k in order:
        d = p.dims[k]
        if d.src:
            so.append(f"i{k}" if d.src == 1 else f"i{k} * {d.src}")
        if d.dst:
            do.append(f"i{k}" if d.dst == 1 else f"i{k} * {d.dst}")
    lines.append(f"    so = {' + '.join(so) or '0'}")
    lines.append(f"    do = {' + '.join(do) or '0'}")
    if n % block:  # only the last program is partial: the others run unmasked
        lines += [f"    if pid < {n // block}:", "        x = tl.load(src + so)", "        tl.store(dst + do, x)",
                  "    else:", f"        mask = i < {n}", "        x = tl.load(src + so, mask=mask)",
                  "        tl.store(dst + do, x, mask=mask)"]
    else:
        lines += ["    x = tl.load(src + so)", "    tl.store(dst + do, x)"]
    return "\n".join(lines) + "\n", cdiv(n, block)


def emit_direct_copy(pieces: list[tuple[int, WordPiece, PieceOut]]) -> tuple[list[str], list[Launch]]:
    """One flat kernel per (plan piece index, piece, plan piece)."""
    texts, launches = [], []
    for i, p, raw in pieces:
        block = max(raw.tile[0] if raw.tile else 1024, 1)
        text, grid = direct_copy_kernel(f"direct_copy_{i}", p, block)
        texts.append(text)
        launches.append(Launch(f"direct_copy_{i}", grid, raw.num_warps, ("src", "dst"), word=p.word))
    return texts, launches


def slab_offsets(p: WordPiece, var: str = "e") -> tuple[list[str], int]:
    """Lines forming `ss` / `sd` (slab-relative word offsets) of slab element `var` (a 1-D
    arange), and the slab's word count; contiguous slabs are one run."""
    n = p.elems
    if not p.dims or (len(p.dims) == 1 and p.dims[0].src == 1 and p.dims[0].dst == 1):
        return [f"    ss = {var}", f"    sd = {var}"], n
    order = sorted(range(len(p.dims)), key=lambda k: (-p.dims[k].dst, -p.dims[k].src))
    lines = decompose(var, [(f"s{k}", p.dims[k].extent) for k in order])
    ss = [f"s{k} * {p.dims[k].src}" for k in order if p.dims[k].src]
    sd = [f"s{k} * {p.dims[k].dst}" for k in order if p.dims[k].dst]
    return lines + [f"    ss = {' + '.join(ss) or '0'}", f"    sd = {' + '.join(sd) or '0'}"], n


def gather_rows_kernel(name: str, p: WordPiece, rows: int, count: int, bound: int, src_stride: int,
                       out_stride: int, positions: str | None = None) -> str:
    """Source of a row gather, `rows` entries per program: entry k copies the slab of source
    row `index[k]` to output row k, or with `positions` (an argument name) to output row
    `positions[k]` (the inspector-executor's reordered entries). Entries outside [0, bound)
    are not read (the client checks them first)."""
    lines, slab = slab_offsets(p.coalesced())
    width = pow2_at_least(slab)
    args = f"src, index, {positions}, out" if positions else "src, index, out"
    out = [f"@triton.jit\ndef {name}({args}):", "    pid = tl.program_id(0).to(tl.int64)",
           f"    k = pid * {rows} + tl.arange(0, {rows})",
           f"    e = tl.arange(0, {width})"]
    out += lines
    km = count % rows != 0
    kmask = f", mask=k < {count}, other=0" if km else ""
    out.append(f"    idx = tl.load(index + k{kmask}).to(tl.int64)")
    out.append(f"    j = tl.load({positions} + k{kmask}).to(tl.int64)" if positions else "    j = k")
    out.append(f"    ok = (idx >= 0) & (idx < {bound})" + (f" & (k < {count})" if km else ""))
    mask = "ok[:, None]" + (f" & (e < {slab})[None, :]" if width != slab else "")
    out.append(f"    so = idx[:, None] * {src_stride} + ss[None, :]" + (f" + {p.src_offset}" if p.src_offset else ""))
    out.append(f"    do = j[:, None] * {out_stride} + sd[None, :]" + (f" + {p.dst_offset}" if p.dst_offset else ""))
    out.append(f"    mask = {mask}")
    out += ["    x = tl.load(src + so, mask=mask)", "    tl.store(out + do, x, mask=mask)"]
    return "\n".join(out) + "\n"


def emit_direct_gather(pieces: list[tuple[int, WordPiece, PieceOut]], gather: GatherOut,
                       num_warps: int) -> tuple[list[str], list[Launch]]:
    """One row-gather kernel per slab piece (a ragged slab has a core and a tail)."""
    texts, launches = [], []
    rows = gather.rows_per_program
    count = gather.index_count
    for i, p, _ in pieces:
        name = f"gather_rows_{i}"
        texts.append(gather_rows_kernel(name, p, rows, count, gather.index_bound,
                                        gather.src_index_stride_bytes // p.word,
                                        gather.out_index_stride_bytes // p.word))
        launches.append(Launch(name, cdiv(count, rows), num_warps, ("src", "index", "out"), word=p.word))
    return texts, launches
