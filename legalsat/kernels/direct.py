"""`direct`: pointer copies with no staging.

Copies walk the piece flat, `tile[0]` elements per program, in destination order (the
dim with the smallest destination stride fastest, so stores are contiguous and 16-byte
where the plan's alignment allows). Gathers move `rows_per_program` index entries per
program, each entry's slab as one contiguous run where the slab is contiguous; a gather
along an inner axis runs its tile along the entries instead (`gather_columns_kernel`).
"""

from __future__ import annotations

from collections.abc import Callable

from legalsat.kernels.source import Launch, decompose, program_id
from legalsat.kernels.words import WordPiece
from legalsat.schemas.plan import GatherOut, PieceOut
from legalsat.terms.integers import cdiv, pow2_at_least, pow2_at_most


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


def slab_offsets(p: WordPiece, indent: str = "    ") -> list[str]:
    """Lines forming `ss` / `sd` (slab-relative word offsets) of slab words `e` (a 1-D
    arange); contiguous slabs are one run."""
    if not p.dims or (len(p.dims) == 1 and p.dims[0].src == 1 and p.dims[0].dst == 1):
        return [f"{indent}ss = e", f"{indent}sd = e"]
    order = sorted(range(len(p.dims)), key=lambda k: (-p.dims[k].dst, -p.dims[k].src))
    lines = decompose("e", [(f"s{k}", p.dims[k].extent) for k in order], indent)
    ss = [f"s{k} * {p.dims[k].src}" for k in order if p.dims[k].src]
    sd = [f"s{k} * {p.dims[k].dst}" for k in order if p.dims[k].dst]
    return lines + [f"{indent}ss = {' + '.join(ss) or '0'}", f"{indent}sd = {' + '.join(sd) or '0'}"]


# bytes of the slab tile one gather program holds at once (rows x slab words): a wider slab
# is moved in steps of this size, so registers (and tl.gather's shared memory) stay bounded
SLAB_STEP_BYTES = 32768


def slab_steps(p: WordPiece, rows: int, body: Callable[[str], list[str]], indent: str = "    ") -> list[str]:
    """Lines moving `rows` slabs: `e` (slab words), `ss` / `sd` (their offsets), then
    `body(emask)` (`emask`: "" or " & (e < slab)[None, :]", for masks of the slab's padded
    tail); one tile (the slab padded to a power of two) when `rows` rows of it fit
    SLAB_STEP_BYTES, else a loop over the slab in the largest power-of-two steps that do."""
    p = p.coalesced()
    slab = p.elems
    width = pow2_at_least(slab)
    step = min(width, pow2_at_most(SLAB_STEP_BYTES // (rows * p.word)))
    if step == width:
        emask = f" & (e < {slab})[None, :]" if width != slab else ""
        return [f"{indent}e = tl.arange(0, {width})", *slab_offsets(p, indent), *[indent + b for b in body(emask)]]
    inner = indent + "    "
    emask = f" & (e < {slab})[None, :]" if slab % step else ""
    return [f"{indent}for c in range(0, {slab}, {step}):", f"{inner}e = c + tl.arange(0, {step})",
            *slab_offsets(p, inner), *[inner + b for b in body(emask)]]


def gather_rows_kernel(name: str, p: WordPiece, rows: int, count: int, bound: int, src_stride: int,
                       out_stride: int, positions: str | None = None) -> str:
    """Source of a row gather, `rows` entries per program: entry k copies the slab of source
    row `index[k]` to output row k, or with `positions` (an argument name) to output row
    `positions[k]` (the inspector-executor's reordered entries). Entries outside [0, bound)
    are not read (the client checks them first)."""
    args = f"src, index, {positions}, out" if positions else "src, index, out"
    out = [f"@triton.jit\ndef {name}({args}):", "    pid = tl.program_id(0).to(tl.int64)",
           f"    k = pid * {rows} + tl.arange(0, {rows})"]
    km = count % rows != 0
    kmask = f", mask=k < {count}, other=0" if km else ""
    out.append(f"    idx = tl.load(index + k{kmask}).to(tl.int64)")
    out.append(f"    j = tl.load({positions} + k{kmask}).to(tl.int64)" if positions else "    j = k")
    out.append(f"    ok = (idx >= 0) & (idx < {bound})" + (f" & (k < {count})" if km else ""))
    so = f"idx[:, None] * {src_stride} + ss[None, :]" + (f" + {p.src_offset}" if p.src_offset else "")
    do = f"j[:, None] * {out_stride} + sd[None, :]" + (f" + {p.dst_offset}" if p.dst_offset else "")
    out += slab_steps(p, rows, lambda emask: [f"mask = ok[:, None]{emask}", f"x = tl.load(src + {so}, mask=mask)",
                                              f"tl.store(out + {do}, x, mask=mask)"])
    return "\n".join(out) + "\n"


def gather_columns_kernel(name: str, p: WordPiece, rows: int, step: int, count: int, bound: int,
                          src_stride: int, out_stride: int) -> tuple[str, int]:
    """Source and program count of an index-major gather (one along an inner axis, whose
    entries are the output's contiguous run: out[r, k] = src[r, index[k]]): program
    (entry block, slab step) moves `rows` entries x `step` slab words, its tile's fast axis
    along the entries, so each store is a contiguous run of the output and each load takes
    from every slab row only the sectors its entries touch."""
    q = p.coalesced()
    slab = q.elems
    steps = cdiv(slab, step)
    km, em = count % rows != 0, slab % step != 0
    out = [f"@triton.jit\ndef {name}(src, index, out):", "    pid = tl.program_id(0).to(tl.int64)",
           f"    kb = pid // {steps}", f"    e = (pid % {steps}) * {step} + tl.arange(0, {step})",
           f"    k = kb * {rows} + tl.arange(0, {rows})"]
    out.append("    idx = tl.load(index + k" + (f", mask=k < {count}, other=0" if km else "") + ").to(tl.int64)")
    out.append(f"    ok = (idx >= 0) & (idx < {bound})" + (f" & (k < {count})" if km else ""))
    out += slab_offsets(q)
    so = f"idx[None, :] * {src_stride} + ss[:, None]" + (f" + {p.src_offset}" if p.src_offset else "")
    do = f"k[None, :] * {out_stride} + sd[:, None]" + (f" + {p.dst_offset}" if p.dst_offset else "")
    emask = f" & (e < {slab})[:, None]" if em else ""
    out += [f"    mask = ok[None, :]{emask}", f"    x = tl.load(src + {so}, mask=mask)",
            f"    tl.store(out + {do}, x, mask=mask)"]
    return "\n".join(out) + "\n", cdiv(count, rows) * steps


def emit_direct_gather(pieces: list[tuple[int, WordPiece, PieceOut]], gather: GatherOut,
                       num_warps: int) -> tuple[list[str], list[Launch]]:
    """One row-gather kernel per slab piece (a ragged slab has a core and a tail); an
    index-major plan (piece tile: entries, slab elements) one `gather_columns_kernel`."""
    texts, launches = [], []
    rows = gather.rows_per_program
    count = gather.index_count
    for i, p, raw in pieces:
        if len(raw.tile) == 2:
            name = f"gather_columns_{i}"
            text, grid = gather_columns_kernel(name, p, rows, max(raw.tile[1] * raw.element_bytes // p.word, 1),
                                               count, gather.index_bound, gather.src_index_stride_bytes // p.word,
                                               gather.out_index_stride_bytes // p.word)
            texts.append(text)
            launches.append(Launch(name, grid, num_warps, ("src", "index", "out"), word=p.word))
            continue
        name = f"gather_rows_{i}"
        texts.append(gather_rows_kernel(name, p, rows, count, gather.index_bound,
                                        gather.src_index_stride_bytes // p.word,
                                        gather.out_index_stride_bytes // p.word))
        launches.append(Launch(name, cdiv(count, rows), num_warps, ("src", "index", "out"), word=p.word))
    return texts, launches
