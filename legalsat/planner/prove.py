"""islpy proofs that a plan moves exactly the request's elements.

Offsets are in elements of the request's dtype (a widened piece of k-element words walks its
k sub-elements explicitly), so widened elements, pieces at byte offsets and relayouts compose
without special cases.

Copies and gathers are proven by decoding: every walk point's dst offset is decoded into a
request index with quasi-affine floors (the destination layout is nested, as validation
ensures for real layouts), and isl checks that no walk point decodes out of bounds or to an
index whose request src / dst offsets differ from the walk's, that the walk is injective,
and that it has as many points as the request has elements; then the walk is a bijection
onto the request's elements. This avoids existential quantifiers, which make isl's
set-equality tests blow up on large strided lattices. When the dst layout is not nested,
the fallback compares the two (src, dst) pair sets directly. Tile loads compare
(tile coordinates, src offset, offset within the tile) sets.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from math import prod

import islpy as isl

from legalsat.planner.formulation import Region
from legalsat.planner.plan import Proof
from legalsat.terms.movement import coalesced, contiguous_strides
from legalsat.terms.smem import StageLayout


@dataclass(frozen=True)
class Walk:
    """How a plan walks one region: `tiles[k]` elements of dim k per program step, or
    `linear` elements of the flattened region (outermost first) per program."""

    piece: Region
    tiles: tuple[int, ...] | None = None
    linear: int | None = None


def _sum(terms: list[str]) -> str:
    terms = [t for t in terms if t]
    return " + ".join(terms) if terms else "0"


def request_copy(shape, src_strides, dst_strides) -> tuple[list[str], list[str], str, str]:
    """Index variables, bounds, src and dst element offsets of a strided copy."""
    idx = [f"i{k}" for k in range(len(shape))]
    cons = [f"0 <= {i} < {n}" for i, n in zip(idx, shape)]
    src = _sum([f"{s}*{i}" for i, s in zip(idx, src_strides) if s])
    dst = _sum([f"{d}*{i}" for i, d in zip(idx, dst_strides) if d])
    return idx, cons, src, dst


def _walk(w: Walk, tag: str, unit: int) -> tuple[list[str], list[str], str, str]:
    """Walk variables, their bounds, and the src / dst element offsets as expressions of
    them (piece coordinates are quasi-affine in the walk variables)."""
    p = w.piece
    per = p.eb // unit  # request elements per piece element
    dims = p.dims
    vars_: list[str] = []
    if w.linear is not None:
        # flat blocks of the row-major flattened piece partition it (l <-> x is the mixed-radix
        # bijection), so the walk is the piece's box itself; floors here would only slow isl
        cons, xs = [], []
        for k, (n, _, _) in enumerate(dims):
            x = f"{tag}x{k}"
            vars_.append(x)
            cons.append(f"0 <= {x} < {n}")
            xs.append(x)
    else:
        cons, xs = [], []
        for k, ((n, _, _), t) in enumerate(zip(dims, w.tiles)):
            g, o = f"{tag}g{k}", f"{tag}o{k}"
            vars_ += [g, o]
            cons += [f"{g} >= 0", f"0 <= {o} < {t}", f"{t}*{g} + {o} < {n}"]
            xs.append(f"({t}*{g} + {o})")
    sub = []
    if per > 1:
        e = f"{tag}e"
        vars_.append(e)
        cons.append(f"0 <= {e} < {per}")
        sub = [e]
    src = _sum([str(p.src_offset // unit)] + [f"{s * per}*{x}" for x, (_, s, _) in zip(xs, dims) if s] + sub)
    dst = _sum([str(p.dst_offset // unit)] + [f"{d * per}*{x}" for x, (_, _, d) in zip(xs, dims) if d] + sub)
    return vars_, cons, src, dst


def _map(params: list[str], dom: list[str], exists: list[str], cons: list[str], src: str, dst: str) -> isl.Map:
    body = " and ".join(list(cons) + [f"sb = {src}", f"db = {dst}"])
    if exists:
        body = f"exists ({', '.join(exists)} : {body})"
    return isl.Map(f"{{ [{', '.join(params + dom)}] -> [sb, db] : {body} }}")


def _plan_maps(walks: list[Walk], params: list[str], unit: int, offsets=("", "")) -> tuple[isl.Map, isl.Map]:
    """(projected relation params -> pairs, full walk relation) of a plan's pieces."""
    proj = full = None
    width = max(len(_walk(w, "", unit)[0]) for w in walks)
    for k, w in enumerate(walks):
        vars_, cons, src, dst = _walk(w, f"p{k}", unit)
        src = _sum([offsets[0], src])
        dst = _sum([offsets[1], dst])
        a = _map(params, [], vars_, cons, src, dst)
        # the full walk is keyed by (piece, walk vars) so pieces never collide by accident
        dom = vars_ + [f"z{j}" for j in range(width - len(vars_))]
        f = _map(params, [str(k)] + dom, [], cons + [f"z{j} = 0" for j in range(width - len(vars_))], src, dst)
        proj = a if proj is None else proj.union(a)
        full = f if full is None else full.union(f)
    return proj, full


def _nests(shape, strides) -> bool:
    """Whether a layout is nested: its strides sorted, each clears the span of the smaller
    ones (so an offset decodes into its index dim by dim)."""
    span = 0
    for k in sorted((k for k, n in enumerate(shape) if n > 1), key=lambda k: strides[k]):
        if strides[k] <= span:
            return False
        span += (shape[k] - 1) * strides[k]
    return True


def _decoder(shape, strides, addr: str) -> list[str] | None:
    """Quasi-affine expressions recovering the index from an element offset `addr` of a
    nested layout (`_nests`), or None."""
    if not _nests(shape, strides):
        return None
    dims = sorted((k for k, n in enumerate(shape) if n > 1), key=lambda k: -strides[k])
    out = ["0"] * len(shape)
    rem = addr
    for k in dims:
        out[k] = f"floor(({rem})/{strides[k]})"
        rem = f"({rem}) - {strides[k]}*floor(({rem})/{strides[k]})"
    return out


def _check_by_decoding(shape, src_strides, dst_strides, walks: list[Walk], unit: int,
                       params: list[str], pcons: list[str]) -> tuple[bool, bool, int] | None:
    """Equal-and-injective check without existentials: decode each walk point's offset on a
    side whose layout nests (dst, else src) into a request index i (quasi-affine), and require (a) i in bounds, (b) the request's
    src and dst offsets at i equal the walk's, for every walk point; (c) the walk injective;
    (d) as many walk points as request elements. Then the walk is a bijection onto the
    request's index set that moves every element to the right place.

    Every walk is checked as its piece's box: a tiled walk's points (g, o), with x = t*g + o,
    0 <= o < t and x < n per dim (see `_walk`), are the mixed-radix split of the box's x, as a
    linear walk's blocks are, and its offsets depend on them through x alone; the box carries
    a third of the floors for isl, and the candidates of one request, which walk the same
    pieces, share its check."""
    total = 0
    equal = injective = True
    for w in walks:
        box = _box_check(tuple(shape), tuple(src_strides), tuple(dst_strides), w.piece, unit, tuple(params),
                         tuple(pcons))
        if box is None:
            return None
        equal &= box[0]
        injective &= box[1]
        total += w.piece.elems * (w.piece.eb // unit)
    return equal, injective, total


@functools.lru_cache(maxsize=4096)
def _box_check(shape: tuple[int, ...], src_strides: tuple[int, ...], dst_strides: tuple[int, ...], piece: Region,
               unit: int, params: tuple[str, ...], pcons: tuple[str, ...]) -> tuple[bool, bool] | None:
    """(a)-(c) of `_check_by_decoding` for the box of one piece (None: neither side's layout
    nests); a pure function of its arguments, so kept."""
    vars_, bounds, src_x, dst_x = _walk(Walk(piece, linear=piece.elems), "p", unit)
    # offsets shared by the request and the plan (a gather's j / r bases) cancel. The index
    # is decoded from the dst offset, or where dst's dims interleave (strides that do not
    # nest) from the src offset: the walk then has to be injective on src, which with (a),
    # (b) and the count makes it a bijection onto the request's indices (whose dst offsets
    # are distinct: the request was refused otherwise)
    by_dst = _nests(shape, dst_strides)
    key_x = dst_x if by_dst else src_x
    idx_x = _decoder(shape, dst_strides if by_dst else src_strides, key_x)
    if idx_x is None:
        return None
    space = f"[{', '.join(params + tuple(vars_))}]"
    base = " and ".join(pcons + tuple(bounds)) or "true"
    req_src = _sum([f"{st}*({e})" for e, st in zip(idx_x, src_strides) if st])
    req_dst = _sum([f"{st}*({e})" for e, st in zip(idx_x, dst_strides) if st])
    inb = " and ".join(f"0 <= {e} < {n}" for e, n in zip(idx_x, shape))
    bad = isl.Set(f"{{ {space} : {base} and not ({inb} and {req_src} = {src_x} and {req_dst} = {dst_x}) }}")
    walk_only = " and ".join(bounds) or "true"
    injective = isl.Map(f"{{ [{', '.join(vars_)}] -> [{key_x}] : {walk_only} }}").is_injective()
    return bad.is_empty(), injective


def forget_proofs() -> None:
    """Drop the box checks and request listings this process keeps (pure functions of their
    arguments, so keeping them never changes an answer; the next proof starts from none)."""
    _box_check.cache_clear()
    _ordered_request.cache_clear()


def prove_copy(shape, src_strides, dst_strides, esize: int, walks: list[Walk]) -> Proof:
    """The plan's pieces and walks cover the copy's element pairs exactly once."""
    numel = prod(shape)
    label_shape = list(shape)
    shape, src_strides, dst_strides = coalesced(shape, src_strides, dst_strides)
    fast = _check_by_decoding(shape, src_strides, dst_strides, walks, esize, [], [])
    if fast is not None:
        equal, injective, total = fast
        # distinct pieces write disjoint dst offsets (each decodes to distinct indices only
        # if their union is injective): count the walk against the request
        if len(walks) > 1:
            _, full = _plan_maps(walks, [], esize)
            injective &= full.is_injective()
        side = "dst" if _nests(shape, dst_strides) else "src"  # the side `_box_check` decodes
        return Proof(equal and total == numel, injective,
                     f"{{ walk -> i }} decoded from {side} offsets over shape {label_shape}")
    if numel <= ENUMERATION_LIMIT:
        # neither side's strides nest (both interleave dims): no quasi-affine decoder, and isl's
        # check with existentials ignores its operation budget (a 3x7x2x3x7 uint8 copy with dst
        # strides [2, 100, 1, 64, 4096] ran for minutes): a small one is checked point by point
        equal, injective = _check_by_enumeration(shape, src_strides, dst_strides, walks, esize)
        return Proof(equal, injective, f"{{ i -> (src, dst) elements }} over shape {label_shape}", "enumeration")
    idx, cons, src, dst = request_copy(shape, src_strides, dst_strides)
    req = _map([], [], idx, cons, src, dst)
    proj, full = _plan_maps(walks, [], esize)
    return Proof(proj.is_equal(req), full.is_injective(),
                 f"{{ i -> (src, dst) elements }} over shape {label_shape}")


# elements of a copy neither side of which nests (no decoder) that are checked point by point
ENUMERATION_LIMIT = 1 << 20


def _points(dims, src_offset: int = 0, dst_offset: int = 0):
    """(src, dst) offsets of every index of `dims` ((extent, src stride, dst stride), outermost
    first), row-major, as the rows of an int64 array."""
    import numpy as np

    src = np.full(1, src_offset, dtype=np.int64)
    dst = np.full(1, dst_offset, dtype=np.int64)
    for n, s, d in dims:
        i = np.arange(n, dtype=np.int64)
        src = (src[:, None] + s * i[None, :]).ravel()
        dst = (dst[:, None] + d * i[None, :]).ravel()
    return np.stack([src, dst], axis=1)


def _check_by_enumeration(shape, src_strides, dst_strides, walks: list[Walk], unit: int) -> tuple[bool, bool]:
    """(equal, injective) by listing every point: the walks' (src, dst) pairs (each walk as
    its piece's box: a tiled walk's (g, o) -> t*g + o is a bijection onto it, see `_walk`) are
    the request's pairs, each once, and no two walk points write one dst element."""
    import numpy as np

    parts = []
    for w in walks:
        p, per = w.piece, w.piece.eb // unit
        dims = [(n, s * per, d * per) for n, s, d in p.dims] + [(per, 1, 1)]
        parts.append(_points(dims, p.src_offset // unit, p.dst_offset // unit))
    plan = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)
    dst = np.sort(plan[:, 1])
    injective = not bool((dst[1:] == dst[:-1]).any())  # (np.unique took as long again as the sort)
    req = _ordered_request(tuple(shape), tuple(src_strides), tuple(dst_strides))
    if len(plan) != len(req):
        return False, injective
    return bool((req == _ordered(plan)).all()), injective


def _ordered(pairs):
    import numpy as np

    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


@functools.lru_cache(maxsize=2)
def _ordered_request(shape: tuple[int, ...], src_strides: tuple[int, ...], dst_strides: tuple[int, ...]):
    """The request's (src, dst) pairs, sorted: one listing for all of its candidates (up to
    ENUMERATION_LIMIT pairs each; two requests' kept)."""
    return _ordered(_points(zip(shape, src_strides, dst_strides)))


def prove_gather(src_shape, src_strides, axis: int, unit: int, count: int, esize: int,
                 walks: list[Walk]) -> Proof:
    """For every index entry j and gathered row r: the plan's slab walk moves exactly
    src[r*unit + t, ...] -> out[j*unit + t, ...] (out contiguous)."""
    shape = list(src_shape)
    rows = shape[axis] // unit
    out_shape = list(shape)
    out_shape[axis] = count * unit
    out_strides = list(contiguous_strides(tuple(out_shape)))
    slab_shape = list(shape)
    slab_shape[axis] = unit
    params, pcons = ["j", "r"], [f"0 <= j < {count}", f"0 <= r < {rows}"]
    offs = (f"{unit * src_strides[axis]}*r", f"{unit * out_strides[axis]}*j")
    fast = _check_by_decoding(*coalesced(slab_shape, src_strides, out_strides), walks, esize, params, pcons)
    label = f"{{ (j, r) -> (src, out) elements }} for {count} indices over {rows} rows"
    slab_numel = prod(slab_shape)
    if fast is not None:
        equal, injective, total = fast
        return Proof(equal and total == slab_numel, injective, label)
    idx, cons, src, dst = request_copy(slab_shape, src_strides, out_strides)
    req = _map(params, [], idx, cons + pcons, _sum([offs[0], src]), _sum([offs[1], dst]))
    proj, _ = _plan_maps(walks, params, esize, offs)
    proj = proj.intersect_domain(isl.Set(f"{{ [j, r] : {' and '.join(pcons)} }}"))
    _, slab_full = _plan_maps(walks, [], esize)
    return Proof(proj.is_equal(req), slab_full.is_injective(), label)


def _layout_offset(layout: StageLayout, index: list[str]) -> str:
    """The stage layout's offset (elements, before the swizzle) of a symbolic tile index."""
    terms = []
    for d in layout.dims:
        p = _sum([f"{mult}*{index[k]}" for k, mult in d.parts])
        if d.boxes == 1:
            terms.append(f"{d.stride}*({p})")
        else:
            terms.append(f"{d.stride}*(({p}) mod {d.box}) + {d.box_stride}*floor(({p})/{d.box})")
    return _sum(terms)


def prove_tile_walk(m, dims: list[tuple[int, int, tuple[tuple[int, int], ...]]], box: tuple[int, ...],
                    boxes, layout: StageLayout) -> Proof:
    """A tile load's walk is the request's, proven by decoding both ways (no existentials):

    - sound: every in-bounds element of every box of every tile T decodes to a tile index i
      with T*tile + i in the tensor, read from the request's src offset of T*tile + i and
      landing at the stage offset layout(i);
    - complete: every in-bounds element i of every tile T falls in a box element whose
      descriptor coordinates are in bounds;
    - once: the boxes tile the tile exactly (their positions are the mixed-radix split of the
      tile's) and the layout is injective on the tile.

    `dims`: descriptor dims innermost first as (extent, stride, coordinate parts); the stage
    layout's dims are the same dims, in the same order."""
    shape, strides, tile, grid = m.src.shape, m.src.strides, m.tile, m.tiles()
    r = len(shape)
    es = layout.element_bytes
    T = [f"T{k}" for k in range(r)]
    tcons = [f"0 <= {t} < {n}" for t, n in zip(T, grid)]
    coord = [_sum([f"{mult}*{T[k]}" for k, mult in parts]) for _, _, parts in dims]
    in_tensor = lambda i: " and ".join(f"0 <= {i[k]} < {tile[k]} and {tile[k]}*{T[k]} + {i[k]} < {shape[k]}"  # noqa: E731
                                       for k in range(r))
    src_of = lambda i: _sum([f"{strides[k]}*({tile[k]}*{T[k]} + {i[k]})" for k in range(r) if strides[k]])  # noqa: E731
    # every box at once: box index B_j along descriptor dim j, element q_j inside it
    B = [f"B{j}" for j in range(len(dims))]
    q = [f"q{j}" for j in range(len(dims))]
    pos = [f"({box[j]}*{B[j]} + {q[j]})" for j in range(len(dims))]
    cons = tcons + [f"0 <= {q[j]} < {box[j]} and 0 <= {B[j]} < {d.boxes}" for j, d in enumerate(layout.dims)]
    cons += [f"{_sum([coord[j], pos[j]])} < {extent}" for j, (extent, _, _) in enumerate(dims)]
    i = ["0"] * r
    for j, d in enumerate(layout.dims):
        for k, mult in d.parts:
            i[k] = f"(floor({pos[j]}/{mult}) mod {tile[k]})"
    src = _sum([f"{stride}*({_sum([coord[j], pos[j]])})" for j, (_, stride, _) in enumerate(dims) if stride])
    sm = _sum([f"{d.box_stride}*{B[j]} + {d.stride}*{q[j]}" for j, d in enumerate(layout.dims)])
    ok = f"{in_tensor(i)} and {src_of(i)} = {src} and {_layout_offset(layout, i)} = {sm}"
    sound = isl.Set(f"{{ [{', '.join(T + B + q)}] : {' and '.join(cons)} and not ({ok}) }}").is_empty()
    # the plan's boxes are that grid: box (B) starts at B * box and lands at sum(B * box_stride)
    grid_boxes = {(tuple(o // b for o, b in zip(bx.origin, box)), bx.smem_offset_bytes) for bx in boxes}
    sound &= grid_boxes == {(bi, sum(x * d.box_stride for x, d in zip(bi, layout.dims)) * es) for bi, _ in grid_boxes}
    idx = [f"i{k}" for k in range(r)]
    req = tcons + [in_tensor(idx)]
    pos = [_sum([f"{mult}*{idx[k]}" for k, mult in d.parts]) for d in layout.dims]
    covered = " and ".join(f"{_sum([coord[j], pos[j]])} < {extent}" for j, (extent, _, _) in enumerate(dims)) or "true"
    complete = isl.Set(f"{{ [{', '.join(T + idx)}] : {' and '.join(req)} and not ({covered}) }}").is_empty()
    # once: boxes split each dim's positions exactly, and the layout is injective on the tile
    exact = all(len({bx.origin[j] for bx in boxes}) * box[j] == d.extent for j, d in enumerate(layout.dims))
    exact &= len(boxes) == prod(d.boxes for d in layout.dims)
    spans = [k for d in layout.dims for k, _ in d.parts]
    tile_dom = " and ".join(f"0 <= {idx[k]} < {tile[k]}" for k in spans) or "true"
    inj = isl.Map(f"{{ [{', '.join(idx[k] for k in spans)}] -> [{_layout_offset(layout, idx)}] : {tile_dom} }}")
    return Proof(sound and complete, exact and inj.is_injective(),
                 f"{{ (tile, box element) -> (src, stage element) }} for tile {list(tile)} over {list(grid)} "
                 f"tiles, {len(boxes)} box(es) of {list(box)}")
