"""Checks of a plan handed back to legalsat (`legalsat emit`, `build_kernel`) that need more than
its own fields: its TMA descriptors as the driver would judge them, and, where the response's
term gives the request, that a copy's pieces move the request's elements once each, a
gather's move each index's slab once, to its entry, and a tile load's walk reads every tile of
the request's tensor into its stage once. A plan
edited after planning fails here with its field named, before any kernel is built or run.
No torch: the command line runs them too."""

from __future__ import annotations

from math import prod

from legalsat.diagnostics import InputError
from legalsat.kernels.words import plan_error
from legalsat.schemas.plan import PlanOut
from legalsat.terms.dtypes import ELEMENT_TYPES
from legalsat.terms.integers import cdiv
from legalsat.terms.movement import MovementKind, contiguous_strides
from legalsat.terms.strategy import Strategy


def view_bytes(view: dict) -> int:
    """Bytes of one element of a request view (JSON form)."""
    return ELEMENT_TYPES[view["dtype"]].storage_bits // 8


def check_request(plan: PlanOut, request_op: dict, term_checked: bool = False) -> None:
    """The response's term as a request (`check_term`, unless `term_checked`: the caller ran it
    on this very op) and, for a gather, the plan's gather fields against it
    (`check_gather_request`): what every other check of a whole response reads, so run first
    (`check_plan` takes a request that passed it)."""
    if not term_checked:
        check_term(request_op)
    if MovementKind(plan.kind) is MovementKind.GATHER:
        if plan.gather is None:
            raise plan_error("gather", "the gather plan has no gather fields", "plan the request again")
        check_gather_request(plan.gather, request_op)


def check_plan(plan: PlanOut, request_op: dict | None, target: str | None = None) -> None:
    """InputError naming the first field of `plan` that no plan of the planner's has: a piece
    moved by another strategy than its plan's (a ragged tail may be direct), a piece that
    writes one destination element along a whole dim (stride 0), a descriptor the driver
    refuses, or (with the request, which passed `check_request`) a copy between element types,
    one whose pieces do not cover its views once, a gather whose pieces do not move each index's
    slab once to its entry, or a tile load whose walk is not the request's. `target`: the
    response's (its descriptors are judged by that target's rules; sm90's for a plan alone)."""
    if target is not None:  # a response's, whatever its plan holds (unknown_target: not under plans[N])
        from legalsat.targets import resolve_target

        resolve_target(target, field="target")
    writes = MovementKind(plan.kind) is not MovementKind.LOAD_TILE  # a tile's stage strides may be 0 (broadcast)
    for i, p in enumerate(plan.pieces):
        if p.strategy not in (plan.strategy, Strategy.DIRECT.value):
            raise plan_error(f"pieces[{i}].strategy", f"a {plan.strategy} plan's piece is moved {p.strategy}; its "
                             f"pieces are {plan.strategy} (a ragged tail direct)")
        for j, d in enumerate(p.dims):  # checked with or without the request: no destination is written twice
            if writes and d.extent > 1 and d.dst_stride == 0:
                raise plan_error(f"pieces[{i}].dims[{j}].dst_stride", f"a destination stride of 0 along a dim of "
                                 f"{d.extent} writes one element {d.extent} times (racing writes): no plan of the "
                                 "planner's has one", "send the plan as the planner returned it")
    if MovementKind(plan.kind) is MovementKind.GATHER and plan.gather is not None and request_op is None:
        _check_entries_apart(plan.gather)  # with the request: check_gather_request compares every field
    _check_descriptors(plan, target or "sm90")
    if request_op is not None and MovementKind(plan.kind) is MovementKind.COPY:
        src, dst = request_op.get("src"), request_op.get("dst")
        if isinstance(src, dict) and isinstance(dst, dict) and src.get("dtype") != dst.get("dtype"):
            raise plan_error("term", f"the response's term copies {src.get('dtype')} into {dst.get('dtype')}; a "
                             "copy keeps its element type (the planner refuses a cast)",
                             "pass the response as the planner returned it")
        _check_covers(plan, request_op)
    if request_op is not None and MovementKind(plan.kind) is MovementKind.GATHER:
        _check_slab(plan, request_op)
    if request_op is not None and MovementKind(plan.kind) is MovementKind.LOAD_TILE:
        _check_tile_walk(plan, request_op)


def check_term(op: dict) -> None:
    """The request a response's term gives, as the planner validates requests: a term edited
    to an extent or tile of 0, or an axis the source does not have, is named here rather than
    failing in the arithmetic of the checks that read it."""
    from legalsat.schemas.optimize import parse_request

    try:
        parse_request({"op": op})
    except InputError as e:
        raise plan_error("term", f"the response's term is no valid request: {e.headline.field}: "
                         f"{e.headline.message}", "pass the response as the planner returned it") from None


def check_gather_request(g, op: dict) -> None:
    """The gather fields of a plan against its request (the response's term, `check_term`ed):
    the axis, the positions an index selects, the index bound, a slab's bytes, the strides of an
    entry on each side and the output's shape."""
    src, axis = op["src"], op["axis"]
    unit = op["index"].get("page_size") or 1
    es = view_bytes(src)
    out_shape = [*src["shape"][:axis], op["index"]["count"] * unit, *src["shape"][axis + 1:]]
    slab = 1
    for k, n in enumerate(src["shape"]):
        slab *= unit if k == axis else n
    want = {"axis": axis, "unit": unit, "slab_bytes": slab * es,
            "index_count": op["index"]["count"], "groups": op["index"].get("groups"),
            "index_bound": src["shape"][axis] // unit, "src_index_stride_bytes": src["strides"][axis] * unit * es,
            "out_index_stride_bytes": _entry_stride_bytes(out_shape, axis, unit, es), "out_shape": out_shape}
    for name, value in want.items():
        have = getattr(g, name)
        if (list(have) if isinstance(have, (list, tuple)) else have) != value:
            raise plan_error(f"gather.{name}", f"gather.{name} is {have}; the request's gives {value}: the plan is "
                             "not the request's", "plan the request again")


def _entry_stride_bytes(out_shape: list[int], axis: int, unit: int, es: int) -> int:
    """Bytes between two entries of a gather's contiguous out (`unit` positions along `axis`)."""
    return contiguous_strides(tuple(out_shape))[axis] * unit * es


def _check_entries_apart(g) -> None:
    """A gather plan alone: its entries land in `out` (contiguous, `out_shape`) one entry's
    `unit` positions apart along the axis, so that no two entries write one byte: an
    `out_index_stride_bytes` of another value (0: every entry onto the first) is no plan of the
    planner's."""
    out = list(g.out_shape)
    count = g.index_count
    if count < 2 or not out or g.axis >= len(out) or prod(out) % count:
        return  # nothing to race, or fields check_gather_request and the kernel's own checks name
    slab_elems = prod(out) // count
    if not slab_elems or g.slab_bytes % slab_elems:
        return
    want = _entry_stride_bytes(out, g.axis, g.unit, g.slab_bytes // slab_elems)
    if g.out_index_stride_bytes != want:
        raise plan_error("gather.out_index_stride_bytes",
                         f"gather.out_index_stride_bytes is {g.out_index_stride_bytes}; entries of out_shape "
                         f"{out} lie {want} bytes apart along axis {g.axis}"
                         + (" (entries would write over each other)" if g.out_index_stride_bytes < want else ""),
                         "send the plan as the planner returned it")


def _check_descriptors(plan: PlanOut, target_name: str) -> None:
    """Every TMA descriptor of the plan, as cuTensorMapEncodeTiled would take it on
    `target_name`: the rules `legalsat validate-descriptor` applies (a plan's descriptor is
    that command's input as it stands). A descriptor edited after planning fails here, named, rather than in
    the driver or in Triton at the first call."""
    from legalsat.analyses.tma_legality import check_descriptor
    from legalsat.schemas.descriptors import parse_descriptor
    from legalsat.targets import resolve_target

    found = [(f"descriptors[{i}]", d) for i, d in enumerate(plan.descriptors or [])]
    found += [(f"pieces[{j}].descriptors[{i}]", d) for j, p in enumerate(plan.pieces)
              for i, d in enumerate(p.descriptors or [])]
    if not found:
        return
    target = resolve_target(target_name, field="target")  # known: check_plan resolved a response's first
    if target.tma is None:
        raise plan_error("descriptors", f"a plan for {target.name} carries TMA descriptors; {target.name} has no TMA")
    for where, d in found:
        try:
            verdict = check_descriptor(parse_descriptor(d.model_dump()), target)
        except InputError as e:
            bad = e.details[0]
            raise plan_error(f"{where}.{bad.field}" if bad.field else where, bad.message) from None
        if not verdict.legal:
            bad = verdict.violations[0]
            raise plan_error(f"{where}.{bad.field}" if bad.field else where,
                             f"the driver refuses this descriptor ({bad.id}): {bad.message}")


def _walks(plan: PlanOut, es: int) -> list:
    """The plan's pieces as the prover's walks (`es`: the request's element bytes)."""
    from legalsat.planner.formulation import Region
    from legalsat.planner.prove import Walk

    walks = []
    for i, p in enumerate(plan.pieces):
        if p.element_bytes % es:
            raise plan_error(f"pieces[{i}].element_bytes", f"{p.element_bytes}-byte elements are not whole "
                             f"{es}-byte elements of the request", "plan the request again")
        dims = tuple((d.extent, d.src_stride, d.dst_stride) for d in p.dims)
        walks.append(Walk(Region(p.element_bytes, 1, 1, dims, p.src_offset_bytes, p.dst_offset_bytes), linear=1))
    return walks


def _check_slab(plan: PlanOut, op: dict) -> None:
    """The gather plan's pieces move each index's slab once, each element to its place in the
    entry's (the planner's own proof, `prove_gather`, run on the pieces as passed: the gather's
    fields were checked against the request first, `check_request`)."""
    from legalsat.planner.prove import prove_gather

    src = op["src"]
    es = view_bytes(src)
    unit = op["index"].get("page_size") or 1
    proof = prove_gather(tuple(src["shape"]), list(src["strides"]), op["axis"], unit, op["index"]["count"], es,
                         _walks(plan, es))
    if not proof.ok:
        raise plan_error("pieces", "the plan's pieces do not move each index's slab once, each element to its place "
                         f"({'some twice' if not proof.injective else 'some elsewhere or not at all'}): the plan is "
                         "not the request's", "plan the request again (a plan edited after planning no longer "
                         "moves its slabs)")


def _check_tile_walk(plan: PlanOut, op: dict) -> None:
    """The tile load's walk reads every tile of the request's tensor once into its stage, each
    element from its place: the tile, grid and extents are the request's, a TMA plan's
    descriptor walks the same dims as its piece, and the planner's own proof
    (`prove_tile_walk`) holds for the walk as passed."""
    from legalsat.kernels.tile import tile_walk
    from legalsat.planner.prove import prove_tile_walk
    from legalsat.terms.descriptor import Swizzle
    from legalsat.terms.movement import LoadTile, View
    from legalsat.terms.smem import LayoutDim, StageLayout

    src, tile = op["src"], tuple(op["tile"])
    shape, strides = tuple(src["shape"]), tuple(src["strides"])
    es = view_bytes(src)
    w = tile_walk(plan)  # the plan's own fields hold together, or the one that does not is named
    grid = tuple(cdiv(n, t) for n, t in zip(shape, tile))
    # absent extents (plans before planner/8) say the tensor is the grid of tiles, no overhang
    extents = w.extents if w.extents is not None else tuple(g * t for g, t in zip(w.grid, w.tile))
    for field, have, want in (("tile", w.tile, tile), ("tile_load.grid", w.grid, grid),
                              ("tile_load.extents", extents, shape), ("pieces[0].element_bytes", w.word, es)):
        if tuple(have) != tuple(want) if isinstance(want, tuple) else have != want:
            raise plan_error(field, f"{field} is {list(have) if isinstance(have, tuple) else have}; the request's "
                             f"gives {list(want) if isinstance(want, tuple) else want}: the plan is not the request's",
                             "plan the request again")
    # the request's broadcast dims (stride 0) are loaded once or walked; no other dim is broadcast
    stride0 = tuple(k for k in range(len(shape)) if shape[k] > 1 and strides[k] == 0)
    if tuple(w.broadcast) not in ((), stride0):
        raise plan_error("tile_load.broadcast", f"tile_load.broadcast is {list(w.broadcast)}; the request's broadcast "
                         f"(stride-0) dims are {list(stride0)}: the plan is not the request's", "plan the request again")
    walked_dims = {k for d in w.dims for k, _ in (*d.parts, *d.coords)}
    for k in range(len(shape)):
        if (shape[k] > 1 or tile[k] > 1) and k not in walked_dims and k not in w.broadcast:
            raise plan_error("tile_load.coords", f"the plan's walk covers no request dim {k} (extent {shape[k]}, tile "
                             f"{tile[k]}), nor loads it once as a broadcast: the plan is not the request's",
                             "plan the request again")
    if w.desc is not None:
        walked = [(d.extent, d.src_stride) for d in w.dims]
        described = list(zip(reversed(w.desc.shape), reversed(w.desc.strides)))
        if described != walked:
            raise plan_error("descriptors[0]", f"the descriptor walks (extent, stride) {described} (innermost first); "
                             f"the plan's piece {walked}: the plan is not one the planner made",
                             "plan the request again")
    lay = plan.tile_load.layout
    layout = StageLayout(tuple(LayoutDim(tuple((k, m) for k, m in d.parts), d.box, d.boxes, d.stride, d.box_stride)
                               for d in lay.dims), lay.element_bytes, Swizzle(lay.swizzle))
    m = LoadTile(View(ELEMENT_TYPES[src["dtype"]], shape, strides), tile, None)
    proof = prove_tile_walk(m, [(d.extent, d.src_stride, d.coords) for d in w.dims], w.box, plan.tile_load.boxes,
                            layout)
    if not proof.ok:
        raise plan_error("tile_load", "the plan's walk does not read every tile of the request's tensor once into its "
                         "stage, each element from its place: the plan is not the request's",
                         "plan the request again (a plan edited after planning no longer walks its tensor)")


def _check_covers(plan: PlanOut, op: dict) -> None:
    """The copy plan's pieces move every element of the request's views once, each to its
    place: the planner's own proof (legalsat.planner.prove), run on the pieces as passed (as
    many bytes as the views hold is not enough: two pieces over one run left another unwritten)."""
    from legalsat.planner.prove import prove_copy

    src, dst = op["src"], op["dst"]
    es = view_bytes(src)
    walks = _walks(plan, es)
    proof = prove_copy(tuple(src["shape"]), list(src["strides"]), list(dst["strides"]), es, walks)
    if not proof.ok:
        raise plan_error("pieces", "the plan's pieces do not move every element of the request's views once, each "
                         f"to its place ({'some twice' if not proof.injective else 'some elsewhere'}): the plan "
                         "is not the request's", "plan the request again (a plan edited after planning no longer "
                         "covers its views)")
