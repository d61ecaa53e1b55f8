"""The Gluon variant of an index-major gather (out[r, k] = src[r, index[k]], the gathered axis
contiguous in the source and the entries contiguous in the output): each program loads one
whole source row with coalesced 16-byte loads and picks its entries with `gl.gather`, which
stages the row in shared memory and reads it there at the indices.

The tl kernel (`legalsat.kernels.direct.gather_columns_kernel`) loads, for each entry, the
sectors it touches: scattered 4-byte reads that keep the L1 busy. Where the entries touch most
of a row's sectors anyway, reading the row whole is as fast. Measured on the H100 in device
time (`python -m tools.gather_row_prefetch --counts --cudagraph`, 2,048 rows of 4,096 fp32,
random distinct columns, each kernel replayed from a CUDA graph;
benchmarks/gather_row_prefetch_cudagraph.json): 1,000 columns 11.6 us staged (16 warps),
11.8 us the tl kernel's shape, 15.3 us torch.compile; 500: 8.5 / 7.9 / 10.2; 250: 7.7 / 5.0 /
5.0 (staged with 8 warps; 16 warps: 8.7 and 7.9); 64: 6.4 / 2.5 / 2.3; 2,000 and 4,000 columns (past the hand-written tl shape's 1,024
entries) 15.6 and 21.0 us staged against 24.2 and 39.1 for torch.compile. The benchmark's
1,000-column plan, as emitted: tl 11.86 us, Gluon 12.12. (Timed eagerly, with do_bench's events
also taking in the host's launches, the staged row looked faster from a twelfth of a row:
benchmarks/gather_row_prefetch.json.) Hence the default (`default_variant`) takes it from
`GLUON_GATHER_MIN_SHARE` of a row's entries, and from `GLUON_GATHER_MIN_ROWS` rows.
"""

from __future__ import annotations

from legalsat.kernels.source import Launch, decompose
from legalsat.kernels.words import INT32_LIMIT, WordPiece
from legalsat.schemas.plan import GatherOut, PieceOut
from legalsat.terms.integers import pow2_at_least

# a row a program stages (its shared memory, and the registers of one load of it): at most
# this many bytes and elements (a 65,536-element int8 row spilled 504 bytes a thread with 16
# warps, compiled for sm90; 16,384-element rows of 1 to 4 bytes compile without spills)
GLUON_ROW_MAX_BYTES = 65536
GLUON_ROW_MAX_ELEMENTS = 16384
# rows (programs) from which the staged row is the default: it was measured at 2,048 rows;
# with few rows the SMs sit idle while each program loops over the whole index (a 1-D gather
# of 1,000,000 entries from one row ran in one program)
GLUON_GATHER_MIN_ROWS = 2048
# entries a program picks at once (a longer index is taken in steps of this many)
GLUON_ENTRY_STEP = 4096
# the share of a row's elements an index should pick for the staged row to be the default: the
# tl kernel was faster up to 500 of 4,096 columns and tied at 1,000 (H100 device time, see above)
GLUON_GATHER_MIN_SHARE = 1 / 4


def staged_row_form(p: WordPiece, raw: PieceOut, gather: GatherOut, smem_budget: int) -> bool:
    """Whether a gather piece of a 2-D tile is index-major in the staged-row form: single
    entries (unit 1) along a source axis of unit stride, written as the output's contiguous
    run, a row (padded to a power of two, as it is staged) that fits the plan's shared-memory
    budget, GLUON_ROW_MAX_BYTES and GLUON_ROW_MAX_ELEMENTS, and words of at most 8 bytes."""
    width = pow2_at_least(gather.index_bound)  # the staged row, padded to a power of two
    return (len(raw.tile) == 2 and gather.unit == 1 and p.word <= 8
            and gather.src_index_stride_bytes == p.word and gather.out_index_stride_bytes == p.word
            and width <= GLUON_ROW_MAX_ELEMENTS and width * p.word <= min(smem_budget, GLUON_ROW_MAX_BYTES))


def staged_row_warps(row_bytes: int) -> int:
    """16 warps for rows of 8 KiB and more (16 KiB rows on the H100, device time: 11.61 us
    with 16, 11.62 with 8, 12.72 with 4: benchmarks/gather_row_prefetch_cudagraph.json), 8 from
    2 KiB, 4 below (only 16 KiB rows were timed: the smaller
    rows' cut-offs are not measured)."""
    return 16 if row_bytes >= 8192 else 8 if row_bytes >= 2048 else 4


def staged_row_kernel(name: str, p: WordPiece, count: int, bound: int) -> tuple[str, int, int]:
    """Source, program count and warps of the staged-row gather of `p` (its dims: the rows)."""
    q = p.coalesced()
    width = pow2_at_least(bound)
    step = min(pow2_at_least(count), GLUON_ENTRY_STEP)
    warps = staged_row_warps(bound * q.word)
    vec = max(1, min(16 // q.word, width // (32 * warps) or 1))
    order = sorted(range(len(q.dims)), key=lambda k: (-q.dims[k].dst, -q.dims[k].src))
    # offsets in int32 where every one fits (a row's start plus the row; an output row's start
    # plus its entries), else int64
    hi = max(q.src_offset + q.span("src") + bound, q.dst_offset + q.span("dst") + count)
    lines = [f"@gluon.jit\ndef {name}(src, index, out):",
             "    e = gl.program_id(0)" + (".to(gl.int64)" if hi > INT32_LIMIT else "")]
    if q.dims:
        lines += decompose("e", [(f"s{k}", q.dims[k].extent) for k in order])
    so = " + ".join([str(q.src_offset)] + [f"s{k} * {q.dims[k].src}" for k in order if q.dims[k].src])
    do = " + ".join([str(q.dst_offset)] + [f"s{k} * {q.dims[k].dst}" for k in order if q.dims[k].dst])
    lines += [f"    lay: gl.constexpr = gl.BlockedLayout([{vec}], [32], [{warps}], [0])",
              f"    col = gl.arange(0, {width}, layout=lay)",
              f"    x = gl.load(src + ({so}) + col" + (f", mask=col < {bound}, other=0)" if width != bound else ")"),
              f"    for kb in range(0, {count}, {step}):",
              f"        k = kb + gl.arange(0, {step}, layout=lay)",
              f"        iv = gl.load(index + k, mask=k < {count}, other=0)",
              # an entry out of [0, bound) reads nothing and stores 0 (the client refuses such
              # an index before launch), as the tl kernel does
              f"        ok = (iv >= 0) & (iv < {bound})",
              "        y = gl.gather(x, gl.where(ok, iv, 0).to(gl.int32), 0)",
              f"        gl.store(out + ({do}) + k, gl.where(ok, y, gl.zeros_like(y)), mask=k < {count})"]
    return "\n".join(lines) + "\n", max(q.elems, 1), warps


def emit_staged_gather(pieces: list[tuple[int, WordPiece, PieceOut]],
                       gather: GatherOut) -> tuple[list[str], list[Launch]]:
    """One staged-row kernel per piece (each has `staged_row_form`)."""
    texts, launches = [], []
    for i, p, _ in pieces:
        name = f"gather_staged_rows_{i}"
        text, grid, warps = staged_row_kernel(name, p, gather.index_count, gather.index_bound)
        texts.append(text)
        launches.append(Launch(name, grid, warps, ("src", "index", "out"), word=p.word))
    return texts, launches
