"""The consumer probe of a TMA `load_tile` plan, in Gluon for sm90.

A persistent kernel (tiles pid, pid + nprog, ...) keeps the plan's `stages` tiles in flight:
each stage is the plan's boxes (one shared buffer per box slot, in the descriptor's NVMMA
layout: the plan's swizzle) completing on one mbarrier armed with the plan's expect-tx bytes
(all boxes of a tile). Once a stage has landed the kernel reads it as the consumer would and
writes what it read into the tiles tensor (see `legalsat.kernels.tile`):

- wgmma consumers: the stage, viewed as the matrix the plan's wgmma descriptor addresses
  (K-major or MN-major, the plan's swizzle), goes through `warpgroup_mma` against an identity
  operand. K-major stages with whole 64-row blocks are the A operand (tile @ I); the others
  the B operand (I @ tile). For 16-bit inputs the fp32 accumulation is exact, int8 reads
  accumulate in int32, tf32 reads are exact for values with 10 mantissa bits;
- rows / cols consumers (and wgmma plans Triton cannot address: interleaved layouts, element
  types it has no wgmma for): each box into registers, 16-byte vectors along its rows
  (`rows`) or lanes down its rows (`cols`).

`MODE=1` skips the read (the walk alone: what the plan's estimate is for); with `MODE=0`
each stage's raw bytes are also copied to `dump` (int32 words, slot after slot), so the plan's
stage layout is checked byte for byte.

Gluon never runs in the interpreter: this kernel is compiled for sm90 in CI and run on the
GPU machine; its tl twin is `legalsat.kernels.tile.tl_tma_kernel`.
"""

from __future__ import annotations

from legalsat.kernels.source import Launch, blocked_layout
from legalsat.kernels.tile import (
    TileWalk,
    box_offset,
    col_offset,
    coordinate,
    out_base,
    row_offset,
    stage_words,
    store_lines,
    tile_lines,
)
from legalsat.kernels.words import plan_error

# element types Triton's wgmma reads, as the host descriptor's torch dtype names them
WGMMA_TYPES = {"float16": 16, "bfloat16": 16, "float32": 32, "float32_ftz": 32, "tfloat32": 32, "tfloat32_ftz": 32,
               "float8_e4m3fn": 8, "float8_e5m2": 8, "int8": 8, "uint8": 8}


def wgmma_role(w: TileWalk) -> tuple[str | None, str]:
    """How the probe feeds the stage to the tensor core: "a" (K-major A, tile @ I), "b_k"
    (K-major B, I @ tile^T), "b_mn" (MN-major B, I @ tile), or None and why not."""
    wg = w.wgmma
    if wg is None:
        return None, "the plan gives no wgmma descriptor (see tile_load.note); read as rows"
    if not w.swizzle or w.box[0] * w.word != w.swizzle:
        return None, "Triton's wgmma reads swizzled stages whose boxes are one swizzle span wide; read as rows"
    if wg.element not in WGMMA_TYPES:
        return None, f"no wgmma reads {wg.element}; read as rows"
    if not _row_major(w):
        return None, "the boxes do not stack in the tile's row-major order; read as rows"
    rows = w.stage_rows
    per_chunk = len(w.boxes) // w.dims[0].boxes
    if per_chunk > 1 and (rows & (rows - 1) or len(w.boxes) & (len(w.boxes) - 1) or w.box_rows & (w.box_rows - 1)):
        return None, "Triton views shared memory in power-of-two shapes only; read as rows"
    if wg.major == "k":
        if rows % 64 == 0:
            return "a", "wgmma A operand (tile @ identity)"
        if rows % 8 == 0:
            return "b_k", "wgmma B operand, K-major (identity @ tile^T)"
    elif w.word == 2 and rows % 16 == 0:
        return "b_mn", "wgmma B operand, MN-major (identity @ tile)"
    return None, "the stage is no whole wgmma operand; read as rows"


def _row_major(w: TileWalk) -> bool:
    """Whether box slots run chunk by chunk along the innermost dim, and within a chunk over
    the other dims row-major (the outermost slowest): the stage is then one matrix."""
    for origin, slot in w.boxes:
        want, scale = 0, 1
        for d in range(1, len(w.dims)):
            want += origin[d] // w.dims[d].box * scale
            scale *= w.dims[d].boxes
        if slot != origin[0] // w.dims[0].box * scale + want:
            return False
    return True


def _largest_dividing(n: int, choices: tuple[int, ...]) -> int:
    return next(c for c in choices if n % c == 0)


def _cols_layout(shape: list[int], word: int, num_warps: int) -> str:
    """Lanes down consecutive rows, each a 16-byte vector along the row (a column block)."""
    vec = min(max(16 // word, 1), shape[1])
    tpr = min(32, shape[0])
    return f"gl.BlockedLayout([1, {vec}], [{tpr}, {32 // tpr}], [{num_warps}, 1], [0, 1])"


def _acc_layout(n: int, bits: int) -> str:
    return f"gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, {n}, {256 // bits}])"


def _identity(name: str, rows: int, cols: int, shift: int, swizzle: int, bits: int, is_int: bool) -> list[str]:
    """Lines placing an identity operand I[r, c] = (r + shift == c) in shared memory."""
    one, zero = ("1", "0") if is_int else ("1.0", "0.0")
    lay = blocked_layout([rows, cols], bits // 8, 4)
    return [f"    il_{name}: gl.constexpr = {lay}",
            f"    ir_{name} = gl.arange(0, {rows}, layout=gl.SliceLayout(1, il_{name}))",
            f"    ic_{name} = gl.arange(0, {cols}, layout=gl.SliceLayout(0, il_{name}))",
            f"    iv_{name} = gl.where(ir_{name}[:, None] + {shift} == ic_{name}[None, :], {one}, {zero}).to(desc.dtype)",
            f"    {name} = gl.allocate_shared_memory(desc.dtype, [{rows}, {cols}], "
            f"gl.NVMMASharedLayout(swizzle_byte_width={swizzle}, element_bitwidth={bits}, rank=2), iv_{name})"]


def _store(w: TileWalk, value: str, off: str, indent: str, mask: str | None = None) -> list[str]:
    return store_lines(w, value, off, indent, "gl", mask)


def _wgmma_lines(w: TileWalk, role: str, acc_int: bool, bits: int) -> tuple[list[str], list[str]]:
    """(setup lines, per-stage lines) of the wgmma read."""
    cb = w.box[0]
    rows = w.stage_rows
    chunks = w.dims[0].boxes
    sw = w.swizzle
    acc_t = "gl.int32" if acc_int else "gl.float32"
    rad = tuple(d.tile for d in w.dims)
    nvmma = f"gl.NVMMASharedLayout(swizzle_byte_width={sw}, element_bitwidth={bits}, rank=2)"
    per_chunk = len(w.boxes) // chunks  # boxes stacked along the rows of one chunk
    if per_chunk == 1:  # a chunk is one box: index it (any number of boxes)
        setup = []
        slot = {origin[0] // cb: sl for origin, sl in w.boxes}
        flat = "" if len(w.dims) == 2 else f"._reinterpret(desc.dtype, [{rows}, {cb}], {nvmma})"

        def chunk(c: int) -> str:
            return f"ring.index(s * NB + {slot[c]}){flat}"
    else:  # the stage as one matrix of rows (a power of two: wgmma_role checked)
        setup = [f"    stv = ring._reinterpret(desc.dtype, [STAGES, {w.box_rows * len(w.boxes)}, {cb}], {nvmma})"]

        def chunk(c: int) -> str:
            return f"stv.index(s).slice({c * rows}, {rows})"
    body: list[str] = []
    ind = "            "
    zeros = (0,) * len(w.dims)
    if role == "a":
        setup += _identity("ident", cb, cb, 0, sw, bits, acc_int)
        setup += ["    fence_async_shared()", "    id_op = ident.permute([1, 0])",
                  f"    acc_l: gl.constexpr = {_acc_layout(cb, bits)}",
                  "    ar = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_l))",
                  f"    ac = gl.arange(0, {cb}, layout=gl.SliceLayout(0, acc_l))"]
        for c in range(chunks):
            for mb in range(rows // 64):
                body += [f"{ind}a_op = {chunk(c)}.slice({mb * 64}, 64)",
                         f"{ind}acc = warpgroup_mma(a_op, id_op, gl.zeros([64, {cb}], {acc_t}, acc_l), use_acc=False)",
                         f"{ind}off = ({row_offset(w, 'ar', rad, zeros, mb * 64)})[:, None] + "
                         f"({col_offset(w, 'ac', c * cb)})[None, :]"]
                body += _store(w, "acc", "off", ind)
    elif role == "b_k":
        nbn = _largest_dividing(rows, (128, 64, 32, 16, 8))
        halves = max(1, cb // 64)
        valid = min(64, cb)
        for h in range(halves):
            setup += _identity(f"ident{h}", 64, cb, h * 64, sw, bits, acc_int)
        setup += ["    fence_async_shared()", f"    acc_l: gl.constexpr = {_acc_layout(nbn, bits)}",
                  "    ar = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_l))",
                  f"    ac = gl.arange(0, {nbn}, layout=gl.SliceLayout(0, acc_l))"]
        for c in range(chunks):
            for h in range(halves):
                for nb in range(rows // nbn):
                    body += [f"{ind}b_op = {chunk(c)}.slice({nb * nbn}, {nbn}).permute([1, 0])",
                             f"{ind}acc = warpgroup_mma(ident{h}, b_op, gl.zeros([64, {nbn}], {acc_t}, acc_l), "
                             "use_acc=False)",
                             # acc[r, n] = tile row nb*nbn + n, column c*cb + h*64 + r
                             f"{ind}off = ({col_offset(w, 'ar', c * cb + h * 64)})[:, None] + "
                             f"({row_offset(w, 'ac', rad, zeros, nb * nbn)})[None, :]"]
                    body += _store(w, "acc", "off", ind, None if valid == 64 else f"(ar < {valid})[:, None]")
    else:  # b_mn: the stage's rows are K, its columns N
        kb = _largest_dividing(rows, (64, 32, 16))
        setup += _identity("ident", 64, kb, 0, kb * w.word, bits, acc_int)
        setup += ["    fence_async_shared()", f"    acc_l: gl.constexpr = {_acc_layout(cb, bits)}",
                  "    ar = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_l))",
                  f"    ac = gl.arange(0, {cb}, layout=gl.SliceLayout(0, acc_l))"]
        for c in range(chunks):
            for k in range(rows // kb):
                body += [f"{ind}b_op = {chunk(c)}.slice({k * kb}, {kb})",
                         f"{ind}acc = warpgroup_mma(ident, b_op, gl.zeros([64, {cb}], {acc_t}, acc_l), use_acc=False)",
                         f"{ind}off = ({row_offset(w, 'ar', rad, zeros, k * kb)})[:, None] + "
                         f"({col_offset(w, 'ac', c * cb)})[None, :]"]
                body += _store(w, "acc", "off", ind, None if kb == 64 else f"(ar < {kb})[:, None]")
    return setup, body


def _box_read_lines(w: TileWalk, consumer: str, num_warps: int) -> tuple[list[str], list[str]]:
    shape = [w.box_rows, w.box[0]]
    lay = _cols_layout(shape, w.word, num_warps) if consumer == "cols" else blocked_layout(shape, w.word, num_warps)
    setup = [f"    rl: gl.constexpr = {lay}",
             f"    rr = gl.arange(0, {shape[0]}, layout=gl.SliceLayout(1, rl))",
             f"    cc = gl.arange(0, {shape[1]}, layout=gl.SliceLayout(0, rl))"]
    body, ind = [], "            "
    view = ("" if len(w.dims) == 2 else
            f"._reinterpret(desc.dtype, {shape}, gl.NVMMASharedLayout(swizzle_byte_width={w.swizzle}, "
            f"element_bitwidth={8 * w.word}, rank=2))")
    for origin, slot in w.boxes:
        body += [f"{ind}x = ring.index(s * NB + {slot}){view}.load(rl)", f"{ind}off = {box_offset(w, origin)}"]
        body += _store(w, "x", "off", ind)
    return setup, body


def _dump_lines(w: TileWalk, num_warps: int) -> tuple[list[str], list[str]]:
    rows = w.box_bytes // 16
    setup = [f"    dl: gl.constexpr = gl.BlockedLayout([1, 4], [32, 1], [{num_warps}, 1], [1, 0])",
             f"    dr = gl.arange(0, {rows}, layout=gl.SliceLayout(1, dl))",
             "    dc = gl.arange(0, 4, layout=gl.SliceLayout(0, dl))",
             "    doff = dr[:, None] * 4 + dc[None, :]"]
    body, ind = [], "            "
    words = stage_words(w)
    for slot in range(len(w.boxes)):
        body += [f"{ind}dv = ring.index(s * NB + {slot})._reinterpret(gl.int32, [{rows}, 4], "
                 "gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))",
                 f"{ind}gl.store(dump + tid_c.to(gl.int64) * {words} + {slot * w.box_bytes // 4} + doff, dv.load(dl))"]
    return setup, body


def _issue(w: TileWalk, stage: str, suffix: str, indent: str) -> list[str]:
    lines = [f"{indent}mbarrier.expect(bars.index({stage}), {w.expect_bytes})"]
    for origin, slot in w.boxes:
        coords = [coordinate(w, d, suffix, origin[d]) for d in reversed(range(len(w.dims)))]
        lines.append(f"{indent}tma.async_copy_global_to_shared(desc, [{', '.join(coords)}], bars.index({stage}), "
                     f"ring.index({stage} * NB + {slot}))")
    return lines


def gluon_probe(name: str, w: TileWalk, num_warps: int = 4) -> tuple[str, str, str]:
    """(source, what the probe reads the stage as, the tiles tensor's element: words|float32|int32)."""
    role, read = wgmma_role(w)
    wg = w.wgmma
    if role is not None:
        bits = WGMMA_TYPES[wg.element]
        acc_int = wg.element in ("int8", "uint8")
        setup, body = _wgmma_lines(w, role, acc_int, bits)
        output = "int32" if acc_int else "float32"
    else:
        consumer = "cols" if w.consumer == "cols" else "rows"
        setup, body = _box_read_lines(w, consumer, num_warps)
        read = read if w.consumer.startswith("wgmma") else f"{consumer}: " + (
            "lanes down the rows, 16-byte vectors" if consumer == "cols" else "16-byte vectors along the rows")
        output = "words"
    dsetup, dbody = _dump_lines(w, num_warps)
    box = [d.box for d in reversed(w.dims)]
    lines = [f"@gluon.jit\ndef {name}(desc, out, dump, MODE: gl.constexpr):",
             f"    STAGES: gl.constexpr = {w.stages}",
             f"    NB: gl.constexpr = {len(w.boxes)}",
             f"    ring = gl.allocate_shared_memory(desc.dtype, [STAGES * NB] + {box}, desc.layout)",
             "    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())",
             "    for b0 in gl.static_range(STAGES):", "        mbarrier.init(bars.index(b0), count=1)",
             *setup, *dsetup,
             "    pid = gl.program_id(0)", "    nprog = gl.num_programs(0)",
             f"    mine = ({w.tiles} - pid + nprog - 1) // nprog",
             "    for p0 in gl.static_range(STAGES):", "        if p0 < mine:",
             "            tid_p = pid + p0 * nprog",
             *tile_lines(w, "tid_p", "p", "            "),
             *_issue(w, "p0", "p", "            "),
             "    for i in range(mine):", "        s = i % STAGES",
             "        mbarrier.wait(bars.index(s), (i // STAGES) & 1)",
             "        if MODE == 0:",
             "            tid_c = pid + i * nprog",
             *tile_lines(w, "tid_c", "", "            "),
             f"            ob = {out_base(w, '')}",
             *dbody, *body,
             "        gl.thread_barrier()",  # every warp has read stage s before it is refilled
             "        j = i + STAGES", "        if j < mine:",
             "            tid_r = pid + j * nprog",
             *tile_lines(w, "tid_r", "r", "            "),
             *_issue(w, "s", "r", "            "),
             "    for b1 in gl.static_range(STAGES):", "        mbarrier.invalidate(bars.index(b1))"]
    return "\n".join(lines) + "\n", read, output


def smem_bytes(w: TileWalk) -> int:
    """Shared memory of the probe: the stages, their mbarriers, identity operands."""
    ident = 0
    role, _ = wgmma_role(w)
    if role == "a":
        ident = w.box[0] ** 2 * w.word
    elif role == "b_k":
        ident = max(1, w.box[0] // 64) * 64 * w.box[0] * w.word
    elif role == "b_mn":
        ident = 64 * 64 * w.word
    return w.stages * (w.stage_bytes + 8) + ident


def emit_tile_gluon(w: TileWalk, smem_budget: int) -> tuple[list[str], list[Launch], dict, str, str]:
    """The probe of a TMA tile plan: (texts, launches, descriptors, read, output). The plan's
    stages must fit its budget (InputError naming `num_stages` otherwise); the probe's own
    identity operand, which a real consumer does not hold, takes stages off the probe only."""
    stages = w.stages
    planned = stages * (w.stage_bytes + 8)
    if planned > smem_budget:
        raise plan_error("num_stages", f"{stages} stages of {w.stage_bytes} bytes (and their "
                         f"mbarriers) need {planned} bytes of shared memory, over the plan's budget of {smem_budget}",
                         "send the plan as the planner returned it, or fewer stages")
    while stages > 1 and smem_bytes(w) > smem_budget - 1024:
        w = _with_stages(w, stages := stages - 1)
    text, read, output = gluon_probe("tile_probe", w)
    blocks = max(1, min(4, smem_budget // (smem_bytes(w) + 1024)))
    launch = Launch("tile_probe", "persistent", 4, ("desc:tile", "out", "dump", "const:MODE"), tiles=w.tiles,
                    blocks_per_sm=blocks, word=w.word)
    return [text], [launch], {"tile": w.desc}, read, output


def _with_stages(w: TileWalk, stages: int) -> TileWalk:
    from dataclasses import replace

    return replace(w, stages=stages)
