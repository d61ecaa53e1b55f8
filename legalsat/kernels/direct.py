"""`direct`: pointer copies with no staging.

Copies walk the piece flat, `tile[0]` elements per program, in destination order (the
dim with the smallest destination stride fastest, so stores are contiguous and 16-byte
where the plan's alignment allows); a piece with `shifted_loads` reads misaligned source rows
as aligned 16-byte vectors and shifts them into place (`shifted_copy_kernel`). Gathers move `rows_per_program` index entries per
program, each entry's slab as one contiguous run where the slab is contiguous; a plan whose
piece tile is (entries, slab elements) moves a block of entries x a step of the slab a program
(`gather_columns_kernel`): a gather along an inner axis (its tile along the entries), or one
entry's long slab in parts.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from legalsat.kernels.source import Launch, decompose, program_id, wide_aranges
from legalsat.kernels.words import INT32_LIMIT, WordPiece, index_strides, plan_error
from legalsat.schemas.plan import GatherOut, PieceOut
from legalsat.terms.integers import cdiv, pow2_at_least, pow2_at_most
from legalsat.terms.movement import misaligned_pitch


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
    for side in ("src", "dst"):
        terms = [str(getattr(p, f"{side}_offset"))] if getattr(p, f"{side}_offset") else []
        if flat_in_order(p, order, side):
            # the traversal index itself: Triton's axis analysis then sees runs of the whole
            # block (16-byte vectors on this side), which `i0 * pitch + i1` would hide (a
            # 16384 x 50257 bf16 copy into a padded pitch loads 2-byte scalars otherwise)
            terms.append("i")
        else:
            for k in order:
                st = getattr(p.dims[k], side)
                if st:
                    terms.append(f"i{k}" if st == 1 else f"i{k} * {st}")
            if not any(t.startswith("i") for t in terms):
                # every stride 0 (a broadcast source, x.expand(n)): still a block of offsets, which
                # a masked load needs (a scalar pointer takes no block mask)
                terms.append("i * 0")
        lines.append(f"    {side[0]}o = {' + '.join(terms)}")
    if n % block:  # only the last program is partial: the others run unmasked
        lines += [f"    if pid < {n // block}:", "        x = tl.load(src + so)", "        tl.store(dst + do, x)",
                  "    else:", f"        mask = i < {n}", "        x = tl.load(src + so, mask=mask)",
                  "        tl.store(dst + do, x, mask=mask)"]
    else:
        lines += ["    x = tl.load(src + so)", "    tl.store(dst + do, x)"]
    return "\n".join(lines) + "\n", cdiv(n, block)


def shifted_copy_kernel(name: str, p: WordPiece, block_elems: int, field: str) -> tuple[str, int]:
    """Source of a piece's copy whose source rows start off 16 bytes (`shifted_loads`), and
    its program count. Each program copies `r` rows x `bc` words of the innermost dim (its
    block). The kernel takes `src` at the 16-byte boundary at or before the source view's
    first word and `skew`, the words from there to it. A row's loads start at the boundary
    at or before its first word (`e` words before it) and read whole 16-byte vectors,
    each thread its own and the next (an L1 hit: its neighbour's); each output vector takes
    its words from the two by `e` (a gather within the thread's registers), so loads and
    stores are 16-byte vectors. Programs whose reads all hold words of their rows run
    unmasked; the others read only vectors holding a word they copy, which never leaves the
    16-byte vectors the view touches (no page is crossed). `skew < 0` (the client found the
    boundary outside the source's storage): word by word from the view's own address."""
    p = p.coalesced()
    v = 16 // p.word
    if not p.dims or p.dims[-1].src != 1 or p.dims[-1].dst != 1 or p.dims[-1].extent < v:
        raise plan_error(f"{field}.shifted_loads", f"{field}.shifted_loads is set but the piece's innermost dim is not "
                         f"a run of at least {v} words contiguous on both sides")
    *outer, inner = p.dims
    if p.dst_offset % v or any(misaligned_pitch(d.dst, p.word) for d in outer):
        raise plan_error(f"{field}.shifted_loads", f"{field}.shifted_loads is set but the destination's rows do not "
                         "all start on 16 bytes")
    n = inner.extent
    bc = max(v, min(pow2_at_least(n), pow2_at_most(max(block_elems, 1))))
    r = max(block_elems // bc, 1)
    rows = prod(d.extent for d in outer)
    nct = cdiv(n, bc)
    full_c, full_r = (n - v) // bc, rows // r  # column blocks whose next vector is still in the row
    src_terms = [str(p.src_offset)] + [f"i{k} * {d.src}" for k, d in enumerate(outer) if d.src]
    dst_terms = [str(p.dst_offset)] + [f"i{k} * {d.dst}" for k, d in enumerate(outer) if d.dst]
    shape3 = f"({r}, {bc // v}, {v})"
    pick = (f"tl.where(k < {v}, tl.gather(tl.reshape(m, {shape3}), k % {v}, axis=2), "
            f"tl.gather(tl.reshape(nx, {shape3}), k % {v}, axis=2))")
    # the boundary's skew and the next vector reach up to 2 vectors past the source's span
    bits = 64 if p.src_offset + p.span("src") + 2 * v > INT32_LIMIT else p.index_bits()
    # skew is a runtime value (0 and 1 would otherwise each compile a specialized kernel)
    lines = [f"@triton.jit(do_not_specialize=['skew'])\ndef {name}(src, dst, skew):", program_id(bits),
             f"    ct = pid % {nct}", f"    rt = pid // {nct}", f"    rr = rt * {r} + tl.arange(0, {r})"]
    lines += decompose("rr", [(f"i{k}", d.extent) for k, d in enumerate(outer)])
    lines += [f"    srow = {' + '.join(src_terms)} + rr * 0", f"    drow = {' + '.join(dst_terms)} + rr * 0",
              f"    c = ct * {bc} + tl.arange(0, {bc})", "    d = dst + drow[:, None] + c[None, :]",
              "    if skew >= 0:",
              "        start = skew + srow",
              f"        e = start % {v}",
              f"        s = src + tl.multiple_of(start - e, {v})[:, None] + c[None, :]",
              f"        k = tl.broadcast_to(tl.arange(0, {v})[None, None, :] + e[:, None, None], {shape3})",
              f"        if (rt < {full_r}) & (ct < {full_c}):",
              "            m = tl.load(s)",
              f"            nx = tl.load(s + {v})",
              f"            tl.store(d, tl.reshape({pick}, ({r}, {bc})))",
              "        else:",
              f"            ok = (rr < {rows})[:, None]",
              f"            q = (c // {v} * {v})[None, :]",
              f"            m = tl.load(s, mask=ok & (q < (e + {n})[:, None]))",
              f"            nx = tl.load(s + {v}, mask=ok & ((e > 0)[:, None]) & (q + {v} < (e + {n})[:, None]))",
              f"            tl.store(d, tl.reshape({pick}, ({r}, {bc})), mask=ok & (c < {n})[None, :])",
              "    else:",
              f"        ok = (rr < {rows})[:, None] & (c < {n})[None, :]",
              "        tl.store(d, tl.load(src + srow[:, None] + c[None, :], mask=ok), mask=ok)"]
    return "\n".join(lines) + "\n", nct * cdiv(rows, r)


def flat_in_order(p: WordPiece, order: list[int], side: str) -> bool:
    """True when `side`'s offset of traversal index i is i itself: its strides, taken in
    traversal order (`order`, outermost first), are those of a contiguous array."""
    expect = 1
    for k in reversed(order):
        if getattr(p.dims[k], side) != expect:
            return False
        expect *= p.dims[k].extent
    return True


def emit_direct_copy(pieces: list[tuple[int, WordPiece, PieceOut]]) -> tuple[list[str], list[Launch]]:
    """One flat kernel per (plan piece index, piece, plan piece)."""
    texts, launches = [], []
    for i, p, raw in pieces:
        block = max(raw.tile[0] if raw.tile else 1024, 1)
        if raw.shifted_loads:
            text, grid = shifted_copy_kernel(f"direct_copy_{i}", p, block, f"pieces[{i}]")
            args: tuple[str, ...] = ("src:aligned", "dst", "src:skew")
        else:
            text, grid = direct_copy_kernel(f"direct_copy_{i}", p, block)
            args = ("src", "dst")
        texts.append(text)
        launches.append(Launch(f"direct_copy_{i}", grid, raw.num_warps, args, word=p.word))
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


def gather_index_lines(p: WordPiece, count: int, bound: int, src_stride: int, out_stride: int, km: bool,
                       indent: str = "    ") -> tuple[list[str], str]:
    """Lines loading index entries `k` as `idx` and their bounds check `ok`, and the integer
    type of the kernel's offsets: int32 when every offset an entry in bounds forms fits it
    (half the address registers and instructions of int64), else int64. The check runs on the
    index as loaded, so an entry beyond int32 cannot wrap into bounds."""
    hi = max(p.src_offset + bound * src_stride + p.span("src"), p.dst_offset + count * out_stride + p.span("dst"))
    ty = "tl.int32" if hi <= INT32_LIMIT else "tl.int64"
    kmask = f", mask=k < {count}, other=0" if km else ""
    return [f"{indent}iv = tl.load(index + k{kmask})",
            f"{indent}ok = (iv >= 0) & (iv < {bound})" + (f" & (k < {count})" if km else ""),
            f"{indent}idx = iv.to({ty})"], ty


def gather_rows_kernel(name: str, p: WordPiece, rows: int, count: int, bound: int, src_stride: int,
                       out_stride: int, positions: str | None = None) -> str:
    """Source of a row gather, `rows` entries per program: entry k copies the slab of source
    row `index[k]` to output row k, or with `positions` (an argument name) to output row
    `positions[k]` (the inspector-executor's reordered entries). Entries outside [0, bound)
    are not read (the client checks them first)."""
    args = f"src, index, {positions}, out" if positions else "src, index, out"
    km = count % rows != 0
    lines, ty = gather_index_lines(p, count, bound, src_stride, out_stride, km)
    bits = 64 if ty == "tl.int64" else 32
    out = [f"@triton.jit\ndef {name}({args}):", program_id(bits),
           f"    k = pid * {rows} + tl.arange(0, {rows})", *lines]
    kmask = f", mask=k < {count}, other=0" if km else ""
    out.append(f"    j = tl.load({positions} + k{kmask}).to({ty})" if positions else "    j = k")
    so = f"idx[:, None] * {src_stride} + ss[None, :]" + (f" + {p.src_offset}" if p.src_offset else "")
    do = f"j[:, None] * {out_stride} + sd[None, :]" + (f" + {p.dst_offset}" if p.dst_offset else "")
    out += slab_steps(p, rows, lambda emask: [f"mask = ok[:, None]{emask}", f"x = tl.load(src + {so}, mask=mask)",
                                              f"tl.store(out + {do}, x, mask=mask)"])
    return wide_aranges("\n".join(out) + "\n", bits)


def gather_columns_kernel(name: str, p: WordPiece, rows: int, step: int, count: int, bound: int,
                          src_stride: int, out_stride: int) -> tuple[str, int]:
    """Source and program count of a gather whose program (entry block, slab step) moves
    `rows` entries x `step` slab words, a slab's steps taken by consecutive programs. Index-major
    (a gather along an inner axis, whose entries are the output's contiguous run:
    out[r, k] = src[r, index[k]]): the tile's fast axis is the entries (Triton orders it by the
    pointers' contiguity), so each store is a contiguous run of the output and each load takes
    from every slab row only the sectors its entries touch. One entry a program (a direct
    gather's long slab in parts, `solve_row_parts`): the fast axis is the slab's run."""
    q = p.coalesced()
    slab = q.elems
    steps = cdiv(slab, step)
    km, em = count % rows != 0, slab % step != 0
    lines, ty = gather_index_lines(q, count, bound, src_stride, out_stride, km)
    out = [f"@triton.jit\ndef {name}(src, index, out):",
           program_id(64 if ty == "tl.int64" else 32),
           f"    kb = pid // {steps}", f"    e = (pid % {steps}) * {step} + tl.arange(0, {step})",
           f"    k = kb * {rows} + tl.arange(0, {rows})", *lines]
    out += slab_offsets(q)
    so = f"idx[None, :] * {src_stride} + ss[:, None]" + (f" + {p.src_offset}" if p.src_offset else "")
    do = f"k[None, :] * {out_stride} + sd[:, None]" + (f" + {p.dst_offset}" if p.dst_offset else "")
    emask = f" & (e < {slab})[:, None]" if em else ""
    # the store's mask is the tile's bounds only, uniform along the entries, so stores stay
    # 16-byte vectors (a mask of each entry's bounds check makes every store scalar: 1,000 of
    # 4,096 fp32 columns x 2,048 rows on the H100, tools/gather_sweep.py, 25.6-27.2 us so,
    # 23.8-25.3 us vectorized, torch.compile 24.8-25.1 us); an entry out of bounds (which the
    # client refuses before launch) stores 0 and reads nothing
    store = [f"(k < {count})[None, :]"] if km else []
    store += [f"(e < {slab})[:, None]"] if em else []
    out += [f"    x = tl.load(src + {so}, mask=ok[None, :]{emask}, other=0)",
            f"    tl.store(out + {do}, x" + (f", mask={' & '.join(store)})" if store else ")")]
    return "\n".join(out) + "\n", cdiv(count, rows) * steps


def emit_direct_gather(pieces: list[tuple[int, WordPiece, PieceOut]], gather: GatherOut,
                       num_warps: int) -> tuple[list[str], list[Launch]]:
    """One row-gather kernel per slab piece (a ragged slab has a core and a tail); a plan
    whose piece tile is (entries, slab elements), index-major or a long slab in parts, one
    `gather_columns_kernel`."""
    texts, launches = [], []
    rows = gather.rows_per_program
    count = gather.index_count
    for i, p, raw in pieces:
        if len(raw.tile) == 2:
            name = f"gather_columns_{i}"
            text, grid = gather_columns_kernel(name, p, rows, max(raw.tile[1] * raw.element_bytes // p.word, 1),
                                               count, gather.index_bound, *index_strides(gather, p, i))
            texts.append(text)
            launches.append(Launch(name, grid, num_warps, ("src", "index", "out"), word=p.word))
            continue
        name = f"gather_rows_{i}"
        texts.append(gather_rows_kernel(name, p, rows, count, gather.index_bound,
                                        *index_strides(gather, p, i)))
        launches.append(Launch(name, cdiv(count, rows), num_warps, ("src", "index", "out"), word=p.word))
    return texts, launches
