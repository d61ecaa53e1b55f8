"""`tma`: copies through the plan's own TMA descriptors.

The plan gives each descriptor exactly as `cuTensorMapEncodeTiled` takes it (innermost
first, byte strides); the client builds the same descriptor on the host (Triton's
`TensorDescriptor`, outermost first, in words). Each program loads one box with the load
descriptor, permutes it into the store descriptor's dim order when the copy transposes,
and stores it with the store descriptor. `tma_gluon` emits the sm90 version: persistent,
pipelined through the plan's stages with mbarrier expect-tx of the plan's bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from legalsat.kernels.source import DescriptorSpec, Launch, decompose, program_id
from legalsat.kernels.words import plan_error, word_bytes
from legalsat.schemas.plan import DescriptorOut, PieceOut
from legalsat.terms.descriptor import Swizzle, store_row_overrun
from legalsat.terms.integers import cdiv


@dataclass(frozen=True)
class TmaPiece:
    """A TMA piece: per descriptor dim (innermost first) the plan dim it walks; the box
    per plan dim in elements; the tile count per plan dim."""

    piece: PieceOut
    word: int
    scale: int  # words per element along descriptor dim 0
    src_dims: tuple[int, ...]
    dst_dims: tuple[int, ...]
    tile: tuple[int, ...]
    load: DescriptorSpec
    store: DescriptorSpec

    @property
    def counts(self) -> list[int]:
        return [cdiv(d.extent, t) for d, t in zip(self.piece.dims, self.tile)]

    @property
    def tiles(self) -> int:
        return prod(self.counts)

    def perm(self) -> tuple[int, ...] | None:
        """Axis permutation from the load block (outermost first) to the store block."""
        src_axes = list(reversed(self.src_dims))
        dst_axes = list(reversed(self.dst_dims))
        if src_axes == dst_axes:
            return None
        return tuple(src_axes.index(k) for k in dst_axes)

    def box_bytes(self) -> int:
        return self.word * prod(self.load.block)


def _match_dims(piece: PieceOut, desc: DescriptorOut, side: str, field: str) -> tuple[int, ...]:
    """Which plan dim each descriptor dim walks (dim 0: the side's stride-1 dim)."""
    eb = piece.element_bytes
    scale = eb // word_bytes(eb)
    key = "src_stride" if side == "src" else "dst_stride"
    used: list[int] = []
    for j, extent in enumerate(desc.global_dim):
        want_stride = 1 if j == 0 else desc.global_strides[j - 1] // eb
        want_extent = extent // scale if j == 0 else extent
        k = next((k for k, d in enumerate(piece.dims) if k not in used and getattr(d, key) == want_stride
                  and d.extent == want_extent), None)
        if k is None:
            raise plan_error(f"{field}.global_dim[{j}]", f"{field} dim {j} (extent {extent}) matches no dim of its piece")
        used.append(k)
    return tuple(used)


def descriptor_spec(d: DescriptorOut, side: str, offset_bytes: int, word: int, field: str) -> DescriptorSpec:
    """The host descriptor (Triton's order: outermost first, in words) of a plan descriptor."""
    try:
        swizzle = Swizzle(d.swizzle)
    except ValueError:
        raise plan_error(f"{field}.swizzle", f"unknown swizzle {d.swizzle!r}") from None
    if swizzle.span_bytes and swizzle.value != f"{swizzle.span_bytes}B":
        raise plan_error(f"{field}.swizzle", f"the Triton client has no shared layout for swizzle "
                         f"{swizzle.value} (sm100 atoms)", "use the plan's staged_smem or direct candidate")
    shape = tuple(reversed(d.global_dim))
    strides = tuple(reversed([1] + [s // word for s in d.global_strides]))
    return DescriptorSpec(side, offset_bytes // word, shape, strides, tuple(reversed(d.box_dim)), swizzle.span_bytes)


def tma_piece(piece: PieceOut, field: str) -> TmaPiece:
    """The descriptor specs and dim maps of a TMA piece; raises InputError on a plan whose
    descriptors do not describe its piece."""
    by_role = {d.role: (i, d) for i, d in enumerate(piece.descriptors or [])}
    if set(by_role) != {"load", "store"}:
        raise plan_error(f"{field}.descriptors", f"{field} needs one load and one store descriptor")
    eb = piece.element_bytes
    w = word_bytes(eb)
    scale = eb // w
    (li, ld), (si, sd) = by_role["load"], by_role["store"]
    if store_row_overrun(sd.global_dim[0] * w):  # the planner's tma_store_row, for a plan edited or cached before it
        raise plan_error(f"{field}.descriptors[{si}].global_dim", f"the store's rows are {sd.global_dim[0] * w} bytes; "
                         f"a TMA store writes whole 16-byte chunks, {store_row_overrun(sd.global_dim[0] * w)} bytes "
                         "past the end of each row",
                         "plan the request again (the planner stores such rows with a direct tail piece)")
    src_dims = _match_dims(piece, ld, "src", f"{field}.descriptors[{li}]")
    dst_dims = _match_dims(piece, sd, "dst", f"{field}.descriptors[{si}]")
    for dims, i, role in ((src_dims, li, "load"), (dst_dims, si, "store")):
        # a dim no descriptor walks has no tile index: every program would move its first box
        unwalked = [k for k, d in enumerate(piece.dims) if d.extent > 1 and k not in dims]
        if unwalked:
            k = unwalked[0]
            raise plan_error(f"{field}.descriptors[{i}].global_dim", f"the {role} descriptor walks no dim {k} of its "
                             f"piece (extent {piece.dims[k].extent}): its boxes would miss all but the first along it",
                             "send the plan as the planner returned it")
    tile = [1] * len(piece.dims)
    for j, k in enumerate(src_dims):
        tile[k] = ld.box_dim[j] // (scale if j == 0 else 1)
    for j, k in enumerate(dst_dims):
        if sd.box_dim[j] // (scale if j == 0 else 1) != tile[k]:
            raise plan_error(f"{field}.descriptors[{si}].box_dim", "the store box does not cover the load box")
    return TmaPiece(piece, w, scale, src_dims, dst_dims, tuple(tile),
                    descriptor_spec(ld, "src", piece.src_offset_bytes, w, f"{field}.descriptors[{li}]"),
                    descriptor_spec(sd, "dst", piece.dst_offset_bytes, w, f"{field}.descriptors[{si}]"))


def coords(t: TmaPiece, dims: tuple[int, ...]) -> str:
    """Box coordinates (outermost first) of the tile indices t0.. for a descriptor walking `dims`."""
    out = []
    for j in reversed(range(len(dims))):
        k = dims[j]
        step = t.tile[k] * (t.scale if j == 0 else 1)
        out.append(f"t{k} * {step}")
    return "[" + ", ".join(out) + "]"


def tile_lines(t: TmaPiece, var: str, indent: str) -> list[str]:
    return decompose(var, [(f"t{k}", n) for k, n in enumerate(t.counts)], indent)


def permute_lines(t: TmaPiece, var: str, indent: str, lib: str = "tl") -> list[str]:
    """Statements turning the loaded box `var` (load block shape) into the store block.
    Elements wider than a word (16 bytes: `scale` 8-byte words) travel as words along the
    contiguous dim, so the word axis is split off before the permute and merged after it."""
    perm = t.perm()
    if not perm:
        return []
    if t.scale == 1:
        return [f"{indent}{var} = {lib}.permute({var}, {list(perm)})"]
    split = [*t.load.block[:-1], t.load.block[-1] // t.scale, t.scale]
    return [f"{indent}{var} = {lib}.reshape({var}, {split})",
            f"{indent}{var} = {lib}.permute({var}, {[*perm, len(perm)]})",
            f"{indent}{var} = {lib}.reshape({var}, {list(t.store.block)})"]


def tma_tl_kernel(name: str, t: TmaPiece) -> str:
    """Source of the one-box-per-program descriptor kernel (runs in the interpreter too)."""
    lines = [f"@triton.jit\ndef {name}(load_desc, store_desc):", program_id(32)]
    lines += tile_lines(t, "pid", "    ")
    lines.append(f"    x = load_desc.load({coords(t, t.src_dims)})")
    lines += permute_lines(t, "x", "    ")
    lines.append(f"    store_desc.store({coords(t, t.dst_dims)}, x)")
    return "\n".join(lines) + "\n"


def emit_tma_tl(pieces: list[tuple[int, PieceOut]]) -> tuple[list[str], list[Launch], dict[str, DescriptorSpec]]:
    """One descriptor kernel per TMA piece."""
    texts, launches, descs = [], [], {}
    for i, raw in pieces:
        t = tma_piece(raw, f"pieces[{i}]")
        texts.append(tma_tl_kernel(f"tma_copy_{i}", t))
        descs[f"load{i}"], descs[f"store{i}"] = t.load, t.store
        launches.append(Launch(f"tma_copy_{i}", t.tiles, raw.num_warps,
                               (f"desc:load{i}", f"desc:store{i}"), word=t.word))
    return texts, launches, descs
