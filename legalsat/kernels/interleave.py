"""`shuffle` in interleave form: a transpose between planes and interleaved channels
(NCHW <-> NHWC with a few channels, SoA <-> AoS; `terms.movement.interleave_form`).

A thread takes groups of one 16-byte vector of pixels: from the planar side one vector per
channel, from the interleaved side the `channels` vectors those pixels' channels fill. It
loads them whole, splits them into elements and joins the elements back in the other side's
order (`tl.split` / `tl.join`: register moves within the thread, no shuffle, no shared
memory), and stores whole vectors. The planar side's vectors of one load are contiguous
across a warp; the interleaved side's lie `channels` vectors apart per lane. Loads like that
cost nothing (the sectors are read once, the next loads hit L1), stores do: each warp store
leaves every sector it touches partly written. The Gluon variant therefore stores the
interleaved side through one layout conversion (shared memory, `ldmatrix`) into a layout whose
lanes write consecutive vectors.

With many channels the interleaved side's loads spread as wide, and the Gluon kernel loads it
through the same packed layout (`GLUON_INTERLEAVE_LOAD_CHANNELS`).

Measured on the H100 (device time, CUDA graphs; `python -m tools.interleave_probe`,
benchmarks/interleave_probe.json): 64 x 3 x 224 x 224 fp16 NCHW -> NHWC 9.96 us in Gluon
against 10.33 for a same-size `copy_` (tl: 18.04; the staged tile 12.01, torch.compile 17.86),
NHWC -> NCHW 10.17 in tl (copy_ 10.33, the staged tile 11.80, torch.compile 11.70).
"""

from __future__ import annotations

from math import prod

from legalsat.kernels.source import Launch, decompose, program_id, wide_aranges
from legalsat.kernels.words import WordPiece
from legalsat.schemas.plan import PieceOut
from legalsat.terms.integers import cdiv, pow2_at_least
from legalsat.terms.movement import Interleave, interleave_form

# channels from which the Gluon kernel is the default for a piece that loads the interleaved
# side (its packed loads; it always is for one that stores it). Device time on the H100
# (benchmarks/interleave_probe*.json), tl against Gluon: 3 fp16 channels 10.17 / 10.38 us, 3
# uint8 2.73 / 3.30, 3 fp32 35.68 / 35.25, 4 uint8 3.71 / 4.03; 5 fp16 4.93 / 4.59, 6: 5.57 /
# 4.97, 7: 6.84 / 5.56, 8 fp32 389.41 / 360.16.
GLUON_INTERLEAVE_LOAD_CHANNELS = 5


def interleave_shape(p: WordPiece) -> Interleave | None:
    """The piece's interleave form (`interleave_form` on its words), or None (16-byte
    elements, moved as word pairs, have none)."""
    if p.lanes > 1:
        return None
    return interleave_form(((d.extent, d.src, d.dst) for d in p.dims), p.word)


def _split_last(name: str, lead: tuple[int, ...], n: int, lang: str) -> tuple[list[str], list[str]]:
    """Lines splitting `name`, a (*lead, n) block, into its n (*lead) blocks along the last axis
    (names returned in order): halves by parity, recursively (`split` takes a last axis of 2)."""
    if n == 1:
        return [f"{name}_ = {lang}.reshape({name}, {lead})"], [f"{name}_"]
    lines = [f"{name}e, {name}o = {lang}.split({lang}.reshape({name}, {(*lead, n // 2, 2)}))"]
    le, lo = _split_last(f"{name}e", lead, n // 2, lang), _split_last(f"{name}o", lead, n // 2, lang)
    names = [""] * n
    names[0::2], names[1::2] = le[1], lo[1]
    return lines + le[0] + lo[0], names


def _joined(cols: list[str], rows: int, lang: str) -> str:
    """The (rows, len(cols)) block whose columns are `cols` (inverse of `_split_last`)."""
    if len(cols) == 1:
        return f"{lang}.reshape({cols[0]}, ({rows}, 1))"
    return (f"{lang}.reshape({lang}.join({_joined(cols[0::2], rows, lang)}, {_joined(cols[1::2], rows, lang)}), "
            f"({rows}, {len(cols)}))")


def _stacked(blocks: list[str], lang: str) -> str:
    """join of `blocks` (a power of two of them) into (rows, v, 2, ..., 2), block q's bits the
    last axes, lowest last."""
    if len(blocks) == 1:
        return blocks[0]
    return f"{lang}.join({_stacked(blocks[0::2], lang)}, {_stacked(blocks[1::2], lang)})"


def interleave_kernel(name: str, p: WordPiece, f: Interleave, pixels_per_program: int, num_warps: int,
                      gluon: bool) -> tuple[str, int]:
    """Source of one interleave piece's kernel and its program count. `gluon`: the interleaved
    side is stored (or loaded) through the packed layout (module docstring)."""
    lang = "gl" if gluon else "tl"
    v = 16 // p.word
    c = f.channels
    n = p.dims[f.pixel].extent
    per = max(v, pixels_per_program)
    groups = per // v
    nbt, full = cdiv(n, per), n // per
    outer = [k for k in range(len(p.dims)) if k not in (f.pixel, f.channel)]
    planar_side, inter_side = ("src", "dst") if f.to_interleaved else ("dst", "src")

    def stride(k: int, side: str) -> int:
        return p.dims[k].src if side == "src" else p.dims[k].dst

    def base(side: str) -> str:
        off = p.src_offset if side == "src" else p.dst_offset
        return " + ".join([str(off)] + [f"t{k} * {stride(k, side)}" for k in outer if stride(k, side)])

    plane = stride(f.channel, planar_side)
    cp = pow2_at_least(c)
    lines = [f"@{'gluon' if gluon else 'triton'}.jit", f"def {name}(src, dst):"]
    ax_g = ax_m = ""
    if gluon:
        lines += [f"    LA: gl.constexpr = gl.BlockedLayout([1, {v}], [32, 1], [{num_warps}, 1], [1, 0])",
                  f"    LB: gl.constexpr = gl.BlockedLayout([1, 1, {v}], [{32 // cp}, {cp}, 1], [{num_warps}, 1, 1], "
                  "[2, 1, 0])",
                  f"    LC: gl.constexpr = gl.BlockedLayout([1, {cp}, {v}], [32, 1, 1], [{num_warps}, 1, 1], [2, 1, 0])"]
        ax_g, ax_m = ", layout=gl.SliceLayout(1, LA)", ", layout=gl.SliceLayout(0, LA)"
    lines.append(program_id(p.index_bits(), lang=lang))
    lines += decompose("pid", [(f"t{k}", p.dims[k].extent) for k in outer] + [("bt", nbt)])
    lines += [f"    g = {lang}.arange(0, {groups}{ax_g})[:, None]", f"    m = {lang}.arange(0, {v}{ax_m})[None, :]",
              f"    p0 = bt * {per} + g * {v}", "    px = p0 + m",
              f"    pb = {base(planar_side)}", f"    ib = {base(inter_side)}"]

    sl = "gl.SliceLayout(2, LB)"
    packed = [f"gB = gl.arange(0, {groups}, layout=gl.SliceLayout(1, {sl}))[:, None, None]",
              f"qB = gl.arange(0, {cp}, layout=gl.SliceLayout(0, {sl}))[None, :, None]",
              f"mB = gl.arange(0, {v}, layout=gl.SliceLayout(0, gl.SliceLayout(1, LB)))[None, None, :]",
              f"oB = (bt * {per} + gB * {v}) * {c} + qB * {v} + mB"]  # the packed layout's interleaved offsets

    def packed_mask(masked: bool) -> str:
        return f"(qB < {c})" + (f" & (oB < {n * c})" if masked else "")

    def plane_vector(j: int) -> tuple[str, str]:  # (offset, in-bounds) of plane j's vectors
        return f"pb + {j * plane} + px", f"px < {n}"

    def interleaved_vector(j: int) -> tuple[str, str]:  # of the j-th vector of each group's channels
        return f"ib + p0 * {c} + {j * v} + m", f"p0 * {c} + {j * v} + m < {n * c}"

    loaded_at, stored_at = (plane_vector, interleaved_vector) if f.to_interleaved else (interleaved_vector, plane_vector)

    def body(masked: bool, ind: str) -> list[str]:
        out: list[str] = []
        if gluon and not f.to_interleaved:  # the interleaved side loaded in the packed layout, then by group
            out += [ind + ln for ln in packed]
            out += [f"{ind}X = gl.load(src + ib + oB, mask={packed_mask(masked)})",
                    f"{ind}X = gl.permute(gl.convert_layout(X, LC), (0, 2, 1))"]
            vecs = _split_last("X", (groups, v), cp, "gl")
            out += [ind + ln for ln in vecs[0]]
            loaded = vecs[1][:c]
        else:
            loaded = []
            for j in range(c):  # a plane's pixels, or the j-th of a group's interleaved vectors
                off, mk = loaded_at(j)
                out.append(f"{ind}x{j} = {lang}.load(src + {off}" + (f", mask={mk})" if masked else ")"))
                loaded.append(f"x{j}")
        ins: list[list[str]] = []
        for x in loaded:
            lines_x, names = _split_last(x, (groups,), v, lang)
            out += [ind + ln for ln in lines_x]
            ins.append(names)
        ys = []
        for j in range(c):  # each stored vector's elements, in the other side's order
            cols = []
            for e in range(v):
                if f.to_interleaved:  # interleaved vector j, element e: pixel (j v + e) // c, channel (j v + e) % c
                    t = j * v + e
                    cols.append(ins[t % c][t // c])
                else:  # plane j, pixel e: interleaved element e c + j
                    t = e * c + j
                    cols.append(ins[t // v][t % v])
            ys.append(_joined(cols, groups, lang))
        if gluon and f.to_interleaved:  # all c vectors of a group as one (groups, cp, v) block, stored packed
            out += [f"{ind}y{j} = {y}" for j, y in enumerate(ys)]
            blocks = [f"y{j}" for j in range(c)] + ["y0"] * (cp - c)
            k = cp.bit_length() - 1
            perm = (0, *range(2, 2 + k), 1)
            out += [f"{ind}Y = gl.convert_layout(gl.reshape(gl.permute({_stacked(blocks, lang)}, {perm}), "
                    f"({groups}, {cp}, {v})), LB)"]
            out += [ind + ln for ln in packed]
            out.append(f"{ind}gl.store(dst + ib + oB, Y, mask={packed_mask(masked)})")
            return out
        for j, y in enumerate(ys):
            off, mk = stored_at(j)
            if gluon:  # the joined block's layout as the pointers' (the same registers: no data moves)
                y = f"gl.convert_layout({y}, LA)"
            out.append(f"{ind}{lang}.store(dst + {off}, {y}" + (f", mask={mk})" if masked else ")"))
        return out

    if full == nbt:
        lines += body(False, "    ")
    elif full == 0:
        lines += body(True, "    ")
    else:
        lines += [f"    if bt < {full}:", *body(False, "        "), "    else:", *body(True, "        ")]
    text = "\n".join(lines) + "\n"
    return wide_aranges(text, p.index_bits()) if lang == "tl" else text, nbt * prod(p.dims[k].extent for k in outer)


def emit_interleave(pieces: list[tuple[int, WordPiece, PieceOut]], gluon: bool) -> tuple[list[str], list[Launch]]:
    """One interleave kernel per piece (every piece has the form: `interleave_shape`), in Gluon
    where `gluon`."""
    texts, launches = [], []
    for i, p, raw in pieces:
        f = interleave_shape(p)
        name = f"interleave_{i}"
        text, grid = interleave_kernel(name, p, f, p.tile[f.pixel], raw.num_warps, gluon)
        texts.append(text)
        launches.append(Launch(name, grid, raw.num_warps, ("src", "dst"), word=p.word))
    return texts, launches
