"""From an extracted formulation to a lowering plan: solve its fields (z3), build and check
its descriptors (the legality model), attach its protocol, prove it (islpy).

One builder per (movement kind, strategy). A builder raises `Infeasible` with the reasons
(unsat core, legality violations) when the candidate cannot be realized; a plan whose proof
fails is never returned.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from math import prod

from legalsat.analyses.staged_tile import consumer_layouts, staged_layouts
from legalsat.analyses.targets import Target
from legalsat.analyses.tma_legality import check_descriptor
from legalsat.errors import InputError
from legalsat.extract.forms import Formulation, Piece, transposed_pair
from legalsat.extract.protocol_synth import TmaPipelineSpec, synthesize_tma_pipeline
from legalsat.extract.prove import Proof, Walk, prove_copy, prove_gather, prove_tile
from legalsat.extract.solve import (
    FieldProblem,
    Infeasible,
    floor_log2,
    solve_linear,
    solve_rows,
    solve_tma_box,
    solve_transpose_tile,
)
from legalsat.terms.descriptor import Swizzle, TmaDescriptor
from legalsat.terms.movement import Copy, Gather, LoadTile, View

_UINT = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
TRANSPOSE_SWIZZLE_SPAN = Swizzle.B128.span_bytes  # the widest TMA swizzle


def _swizzle_for(inner_bytes: int) -> str:
    """The widest swizzle whose span the inner box fills (a box narrower than 32 bytes has none)."""
    return next((s.value for s in (Swizzle.B128, Swizzle.B64, Swizzle.B32) if inner_bytes >= s.span_bytes), "none")


PLACEHOLDER_BASE = 1 << 40


def placeholder_address(align: int) -> int:
    """A global address whose alignment is exactly `align` (the client substitutes the real
    pointer; legality depends only on the alignment)."""
    return PLACEHOLDER_BASE + (align if align < 4096 else 0)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _violations(desc: TmaDescriptor, target: Target, prefix: str = "") -> list[dict]:
    """The legality model's verdict on `desc` as rejection reasons (empty when legal)."""
    return [{"rule": v.rule, "message": prefix + v.message, "fix": v.fix}
            for v in check_descriptor(desc, target).violations]


def _descriptor(piece: Piece, order: tuple[int, ...], box: tuple[int, ...], side: str, align: int,
                target: Target, swizzle: str = "none") -> dict:
    """A descriptor over the piece dims in `order` (innermost first), checked by the legality
    model; raises Infeasible with its violations."""
    dt_bytes = min(piece.eb, 8)
    scale = piece.eb // dt_bytes
    dims = [piece.dims[k] for k in order]
    stride = (lambda d: d[1]) if side == "src" else (lambda d: d[2])
    gdim = [dims[0][0] * scale] + [d[0] for d in dims[1:]]
    gstr = [stride(d) * piece.eb for d in dims[1:]]
    desc = TmaDescriptor.from_fields(
        dtype=_UINT[dt_bytes], rank=len(dims), global_address=placeholder_address(align),
        global_dim=gdim, global_strides=gstr, box_dim=list(box), element_strides=[1] * len(dims),
        swizzle=swizzle, l2_promotion="128B")
    reasons = _violations(desc, target, f"{side} descriptor: ")
    if reasons:
        raise Infeasible(reasons)
    return desc.to_fields()


def piece_fields(p: Piece) -> dict:
    """A piece as plans carry it: byte offsets, element bytes, dims (extent, strides in elements)."""
    return {"src_offset_bytes": p.src_offset, "dst_offset_bytes": p.dst_offset, "element_bytes": p.eb,
            "dims": [{"extent": n, "src_stride": s, "dst_stride": d} for n, s, d in p.dims]}


def _transposed_dims(p: Piece) -> tuple[int, int] | None:
    return transposed_pair(p.dims)


def _straight_dim(p: Piece) -> int | None:
    return next((k for k, (n, s, d) in enumerate(p.dims) if n > 1 and s == 1 and d == 1), None)


def _direct_piece(p: Piece) -> tuple[dict, Walk]:
    f = solve_linear(p)
    return ({"strategy": "direct", "tile": [f.block], "grid": [f.grid], "num_warps": f.num_warps,
             "vector_bytes": f.vector_bytes}, Walk(p, linear=f.block))


def _tma_piece(p: Piece, smem: int, target: Target) -> tuple[dict, Walk]:
    big = [k for k, d in enumerate(p.dims) if d[0] > 1] or [0]
    if not p.dims:
        raise Infeasible([{"rule": "rank", "message": "a single element has no TMA box",
                           "fix": "none needed: it is copied directly"}])
    tr = _transposed_dims(p)
    inner = _straight_dim(p)
    if tr is None and inner is None:
        raise Infeasible([{"rule": "inner_contiguous", "message": "no dim is contiguous in both "
                           "src and dst, and the copy is not a transpose", "fix": "use direct"}])
    if tr:
        a, b = tr
        src_order = (a, b) + tuple(k for k in big if k not in tr)
        dst_order = (b, a) + tuple(k for k in big if k not in tr)
    else:
        src_order = dst_order = (inner,) + tuple(k for k in big if k != inner)
    if len(src_order) > target.tma.max_rank:
        raise Infeasible([{"rule": "rank", "message": f"the formulation has {len(src_order)} dims; "
                           f"TMA takes at most {target.tma.max_rank}",
                           "fix": "make more dims contiguous so they coalesce"}])
    # A transpose permutes the landed box in registers and writes the store box back to
    # shared memory across its rows; unswizzled, those accesses are bank-conflicted (on the
    # H100 the bf16 transposes with 512-byte unswizzled boxes ran at 0.24-0.31 of copy, at
    # 0.80-0.94 capped and swizzled: benchmarks/RESULTS.md), so when both
    # transposed dims are long enough, both boxes are capped at the swizzle span and both
    # descriptors swizzle. A short source row (AoS -> SoA) keeps its long destination rows.
    cap = None
    if tr and min(p.dims[k][0] for k in tr) * p.eb >= TRANSPOSE_SWIZZLE_SPAN:
        cap = TRANSPOSE_SWIZZLE_SPAN
    f = solve_tma_box(p, src_order, smem, min(p.eb, 8), inner_cap_bytes=cap, dst_inner=1 if tr else None)
    box_of = dict(zip(src_order, f.box))
    scale = p.eb // min(p.eb, 8)
    elem_box = {k: (v // scale if k == src_order[0] else v) for k, v in box_of.items()}
    dst_box = tuple(elem_box[k] * (scale if k == dst_order[0] else 1) for k in dst_order)
    swizzles, ways = ("none", "none"), (1.0, 1.0)
    if cap:
        swizzles = (_swizzle_for(f.box[0] * min(p.eb, 8)), _swizzle_for(dst_box[0] * min(p.eb, 8)))
    if tr:
        lays = [lay for lay in staged_layouts(min(p.eb, 8), target, rows=max(elem_box[tr[1]], 1),
                                              row_bytes=max(elem_box[tr[0]] * p.eb, 16))
                if lay.swizzle == swizzles[0] and lay.pad_bytes == 0]
        ways = (lays[0].write_ways, lays[0].read_ways) if lays else (None, None)
    descs = [dict(_descriptor(p, src_order, f.box, "src", p.src_align, target, swizzles[0]), role="load"),
             dict(_descriptor(p, dst_order, dst_box, "dst", p.dst_align, target, swizzles[1]), role="store")]
    proto, async_ = _async(TmaPipelineSpec(load_bytes=(f.tile_bytes,), store_bytes=f.tile_bytes,
                                           smem_bytes=smem, stages=f.stages))
    tiles = tuple(elem_box.get(k, 1) for k in range(len(p.dims)))
    grid = prod(_cdiv(n, t) for (n, _, _), t in zip(p.dims, tiles))
    fields = {"strategy": "tma", "tile": list(tiles), "grid": [grid], "num_warps": 4,
              "num_stages": f.stages, "vector_bytes": 16, "descriptors": descs,
              "smem": {"bytes_per_stage": f.tile_bytes, "stages": f.stages, "swizzle": swizzles[0],
                       "padding_bytes": 0, "store_buffer_bytes": f.tile_bytes,
                       "write_conflict_ways": ways[0], "read_conflict_ways": ways[1]},
              "async": async_}
    return fields, Walk(p, tiles=tiles)


@functools.lru_cache(maxsize=512)
def _pipeline(spec: TmaPipelineSpec) -> tuple:
    """The synthesized protocol (verified by the synthesizer, which refuses to return an
    unverified one) and its JSON form; cached, since plans share pipeline shapes."""
    from legalsat.schemas.pipeline import protocol_to_dict

    proto = synthesize_tma_pipeline(spec)
    return proto, protocol_to_dict(proto)


def _async(spec: TmaPipelineSpec) -> tuple[object, dict]:
    try:
        proto, as_dict = _pipeline(spec)
    except InputError as e:  # not even one stage fits the budget
        raise Infeasible([{"rule": "smem_budget", "message": e.headline.message, "fix": e.headline.fix}]) from None
    return proto, {"protocol": as_dict, "verified": True, "verifier": "legalsat typestate", "violations": []}


def _transpose_piece(p: Piece, strategy: str, target: Target) -> tuple[dict, Walk]:
    a, b = _transposed_dims(p)
    small = strategy == "shuffle"
    if small and p.eb > 8:  # the e-class may hold narrower forms; this one is what extraction chose
        raise Infeasible([{"rule": "shuffle_word", "message": f"{p.eb}-byte elements: a warp shuffle exchanges "
                           "words of at most 8 bytes", "fix": "use staged_smem for this transpose"}])
    f = solve_transpose_tile(p, a, b, 2048 if small else 32768, small=small)
    tiles = tuple(f.tile_a if k == a else f.tile_b if k == b else 1 for k in range(len(p.dims)))
    grid = prod(_cdiv(n, t) for (n, _, _), t in zip(p.dims, tiles))
    out = {"strategy": strategy, "tile": list(tiles), "grid": [grid], "num_warps": f.num_warps,
           "vector_bytes": min(16, f.tile_a * p.eb), "store_vector_bytes": min(16, f.tile_b * p.eb)}
    if not small:
        row_bytes = f.tile_a * p.eb
        eb = min(p.eb, 8)
        smem = {"bytes_per_stage": f.tile_a * f.tile_b * p.eb, "stages": 1, "swizzle": "none",
                "padding_bytes": 0, "write_conflict_ways": None, "read_conflict_ways": None}
        lays = staged_layouts(eb, target, rows=f.tile_b, row_bytes=row_bytes) if row_bytes >= 16 else ()
        if lays:
            lay = lays[0]
            smem.update(swizzle=lay.swizzle, padding_bytes=lay.pad_bytes,
                        bytes_per_stage=f.tile_b * (row_bytes + lay.pad_bytes),
                        write_conflict_ways=lay.write_ways, read_conflict_ways=lay.read_ways)
        out["smem"] = smem
    return out, Walk(p, tiles=tiles)


def build_copy(form: Formulation, m: Copy, smem: int, target: Target) -> tuple[dict, list[Walk]]:
    """Fields of a copy plan: the first piece is the core and decides the plan's fields;
    later pieces (ragged tails) use direct copies when the strategy cannot take them."""
    pieces, walks = [], []
    for i, p in enumerate(form.pieces):
        try:
            if form.strategy == "direct":
                fields, walk = _direct_piece(p)
            elif form.strategy == "tma":
                fields, walk = _tma_piece(p, smem, target)
            else:
                if _transposed_dims(p) is None:
                    raise Infeasible([{"rule": "not_transposing", "message": "piece is not a transpose",
                                       "fix": "none needed"}])
                fields, walk = _transpose_piece(p, form.strategy, target)
        except Infeasible:
            if i == 0:
                raise
            fields, walk = _direct_piece(p)
        pieces.append({**piece_fields(p), **fields})
        walks.append(walk)
    return pieces, walks


def prove_copy_plan(m: Copy, form: Formulation, walks: list[Walk]) -> Proof:
    """The copy plan's proof, against the request with the plan's relayouts applied."""
    src_strides, dst_strides = list(m.src.strides), list(m.dst.strides)
    es = m.src.esize
    for r in form.relayouts:  # the plan moves into the re-allocated layout
        strides = src_strides if r.side == "src" else dst_strides
        k = max((k for k, (n, s) in enumerate(zip(m.src.shape, strides)) if n > 1 and s * es == r.old_bytes),
                default=None)
        if k is None:
            raise Infeasible([{"rule": "relayout", "message": "padding does not match a request dim",
                               "fix": "report this request"}])
        strides[k] = r.new_bytes // es
    return prove_copy(m.src.shape, src_strides, dst_strides, es, walks)


def build_gather(form: Formulation, m: Gather, target: Target) -> tuple[dict, Callable[[], Proof]]:
    """Rows per program, inspector and executor parameters of a gather plan, and its prover."""
    slab = form.pieces[0]
    slab_bytes = sum(p.bytes for p in form.pieces)
    f = solve_rows(slab_bytes, slab.eb, m.index.count)
    walks = [Walk(p, linear=max(p.elems, 1)) for p in form.pieces]
    es = m.src.esize
    out_axis_stride = prod(m.out_shape[m.axis + 1:])
    # where index i's slab starts: i * stride on each side (the pieces are relative to it)
    gather = {"index_count": m.index.count, "distribution": m.index.distribution.value,
              "unit": m.unit, "slab_bytes": slab_bytes, "rows_per_program": f.rows,
              "axis": m.axis, "index_bound": m.src.shape[m.axis] // m.unit,
              "src_index_stride_bytes": m.unit * m.src.strides[m.axis] * es,
              "out_index_stride_bytes": m.unit * out_axis_stride * es,
              "out_shape": list(m.out_shape), "groups": m.index.groups}
    if form.strategy == "inspector_executor":
        rows = m.src.shape[m.axis] // m.unit
        buckets = m.index.groups or (rows if m.index.distribution.value == "paged"
                                     else max(1, _cdiv(m.index.count, 128)))
        gather["inspector"] = {"buckets": buckets, "passes": ["histogram", "prefix_sum", "scatter"],
                               "index_bytes": 8 * m.index.count}
        gather["executor"] = {"tile_rows": f.rows, "grouped_by": "expert" if m.index.groups else "bucket"}
    if form.strategy == "shuffle":
        gather["window_rows"] = 32
    fields = {"strategy": form.strategy, "tile": [f.rows], "grid": [_cdiv(m.index.count, f.rows)],
              "num_warps": f.num_warps, "vector_bytes": f.vector_bytes, "gather": gather}
    # the slab one index moves, relative to where the index's slab starts on each side
    fields["pieces"] = [{**piece_fields(p), "strategy": form.strategy, "tile": [f.rows], "grid": fields["grid"],
                         "num_warps": f.num_warps, "vector_bytes": min(p.eb, 16)} for p in form.pieces]
    return fields, functools.partial(prove_gather, m.src.shape, m.src.strides, m.axis, m.unit,
                                     m.index.count, m.src.esize, walks)


def _tile_descriptor_dims(m: LoadTile) -> list[int]:
    """Request dims of extent > 1 for the descriptor, innermost (smallest stride) first.
    Dims are not merged here: a source of more than 5 such dims is rejected by the rank rule."""
    order = sorted((k for k, n in enumerate(m.src.shape) if n > 1),
                   key=lambda k: m.src.strides[k])
    return order


def build_load_tile(form: Formulation, m: LoadTile, smem: int, target: Target) -> tuple[dict, Callable[[], Proof]]:
    """TMA (or direct) staging of a tile for its consumer: swizzle from the bank model,
    boxes within the swizzle span, stages within the budget, the verified protocol."""
    es = m.src.esize
    order = _tile_descriptor_dims(m) or [len(m.src.shape) - 1]
    inner = order[0]
    if m.src.strides[inner] != 1:
        raise Infeasible([{"rule": "inner_contiguous", "message": "the tile's innermost dim is not "
                           "contiguous in src", "fix": "load the transposed tile, or use direct"}])
    inner_bytes = m.tile[inner] * es
    rows = prod(m.tile) // m.tile[inner]
    layouts = consumer_layouts(es, max(rows, 1), inner_bytes, m.consumer.value, target) if inner_bytes >= 16 else ()
    lay = layouts[0] if layouts else None
    span = {"none": 0, "32B": 32, "64B": 64, "128B": 128}[lay.swizzle] if lay else 0
    if form.strategy == "direct":
        vec = min(16, inner_bytes & -inner_bytes)
        boxes = [((0,) * len(m.tile), tuple(m.tile))]
        prover = functools.partial(prove_tile, m.src.shape, m.src.strides, m.tile, es, boxes)
        return {"strategy": "direct", "tile": list(m.tile), "grid": [prod(_cdiv(n, t) for n, t in zip(m.src.shape, m.tile))],
                "num_warps": 4, "vector_bytes": vec,
                "smem": {"bytes_per_stage": prod(m.tile) * es, "stages": 2, "swizzle": lay.swizzle if lay else "none",
                         "padding_bytes": 0, "write_conflict_ways": 1.0,
                         "read_conflict_ways": lay.read_ways if lay else None}}, prover
    if len(order) > target.tma.max_rank:
        raise Infeasible([{"rule": "rank", "message": f"{len(order)} dims of extent > 1; TMA takes at most 5",
                           "fix": "make the tile cover contiguous dims whole so they merge"}])
    fp = FieldProblem()
    e0 = fp.log2_var("box_inner_log2", 8)
    fp.require("box_divides_tile", e0 <= floor_log2(m.tile[inner] & -m.tile[inner]),
               "the inner box must divide the tile's inner extent", "use a power-of-two tile")
    fp.require("inner_box_16B", e0 + floor_log2(es) >= 4,
               f"the tile's inner extent is {inner_bytes} bytes; TMA boxes need multiples of 16",
               "widen the tile's inner extent to 16 bytes or more")
    if span:
        fp.require("swizzle_span", e0 + floor_log2(es) <= floor_log2(span),
                   f"the {lay.swizzle} swizzle caps the inner box at {span} bytes", "none needed")
    for k in order[1:]:
        if m.tile[k] > target.tma.max_box_dim:
            raise Infeasible([{"rule": "box_range", "message": f"tile dim {k} is {m.tile[k]}; boxes "
                               f"hold at most {target.tma.max_box_dim}", "fix": "use a smaller tile"}])
    model = fp.solve([e0])
    box_inner = 1 << model[e0].as_long()
    nbox = m.tile[inner] // box_inner
    box = [box_inner] + [m.tile[k] for k in order[1:]]
    box_bytes = prod(box) * es
    desc = TmaDescriptor.from_fields(
        dtype=m.src.dtype.name,
        rank=len(order), global_address=placeholder_address(m.src.base_align),
        global_dim=[m.src.shape[k] for k in order], global_strides=[m.src.strides[k] * es for k in order[1:]],
        box_dim=box, element_strides=[1] * len(order), swizzle=lay.swizzle if lay else "none",
        l2_promotion="128B")
    reasons = _violations(desc, target)
    if reasons:
        raise Infeasible(reasons)
    proto, async_ = _async(TmaPipelineSpec(load_bytes=(box_bytes,) * nbox, smem_bytes=smem))
    stages = next(b.count for b in proto.buffers if b.name == "in0")
    boxes = []
    for j in range(nbox):
        origin = tuple(j * box_inner if k == inner else 0 for k in range(len(m.tile)))
        ext = tuple(box_inner if k == inner else m.tile[k] for k in range(len(m.tile)))
        boxes.append((origin, ext))
    prover = functools.partial(prove_tile, m.src.shape, m.src.strides, m.tile, es, boxes)
    return {"strategy": "tma", "tile": list(m.tile),
            "grid": [prod(_cdiv(n, t) for n, t in zip(m.src.shape, m.tile))], "num_warps": 4,
            "num_stages": stages, "vector_bytes": 16,
            "descriptors": [dict(desc.to_fields(), role="load")],
            "smem": {"bytes_per_stage": box_bytes * nbox, "stages": stages, "swizzle": lay.swizzle if lay else "none",
                     "padding_bytes": 0, "boxes_per_stage": nbox, "write_conflict_ways": 1.0,
                     "read_conflict_ways": lay.read_ways if lay else None},
            "async": async_}, prover


def natural_descriptor(view: View, target: Target) -> list[dict]:
    """Why TMA is out for a request: the legality verdict of the descriptor a compiler would
    write for the view as given (innermost dim first), as rejection reasons."""
    order = sorted((k for k, n in enumerate(view.shape) if n > 1), key=lambda k: view.strides[k])
    order = order or [view.rank - 1]
    if len(order) > 5:
        return [{"rule": "rank", "message": f"the view has {len(order)} dims of extent > 1 that do not "
                 "coalesce; TMA takes at most 5", "fix": "make adjacent dims contiguous so they merge"}]
    es = view.esize
    try:
        desc = TmaDescriptor.from_fields(
            dtype=view.dtype.name, rank=len(order), global_address=placeholder_address(view.base_align),
            global_dim=[view.shape[k] for k in order],
            global_strides=[view.strides[k] * es for k in order[1:]],
            box_dim=[min(view.shape[k], 256 if i else max(1, 128 // es)) for i, k in enumerate(order)],
            element_strides=[1] * len(order))
    except (KeyError, ValueError):
        return []
    out = []
    if view.strides[order[0]] != 1:
        out.append({"rule": "inner_contiguous", "message": f"the innermost dim has stride "
                    f"{view.strides[order[0]]}; TMA's dim 0 is contiguous", "fix": "make one dim contiguous"})
    return out + _violations(desc, target)
