"""Why a strategy has no plan for a request, in the catalogue's terms.

A strategy the saturated e-graph never offered gets the reason that keeps it out (for TMA,
the legality verdict of the descriptor a compiler would write for the views as given); an
offered strategy that could not be realized carries its builder's reasons instead.
"""

from __future__ import annotations

from dataclasses import replace

from legalsat.analyses.tma_legality import check_descriptor
from legalsat.diagnostics import Code, Diagnostic
from legalsat.planner.budget import budget_fix
from legalsat.planner.build.common import placeholder_address
from legalsat.planner.build.tile import MAX_BOX, boxes_land
from legalsat.planner.request import PlanRequest
from legalsat.targets import Target
from legalsat.terms.descriptor import TmaDescriptor, store_row_overrun
from legalsat.terms.integers import cdiv, lowbit
from legalsat.terms.movement import Copy, Gather, LoadTile, View
from legalsat.terms.strategy import Strategy

# strategies the e-graph offers only for some movements: what keeps them out otherwise
_NOT_OFFERED = {
    Strategy.STAGED_SMEM: Code.NOT_TRANSPOSING,
    Strategy.SHUFFLE: Code.NOT_TRANSPOSING_SMALL,
    Strategy.INSPECTOR_EXECUTOR: Code.INDICES_UNSTRUCTURED,
    Strategy.DIRECT: Code.NO_FIELDS,
}


def _inner_box(extent: int, es: int) -> int:
    """The innermost box a compiler writes for a dim of `extent` elements: 128 bytes at most,
    in whole 16-byte units (past a short dim's end TMA fills loads and drops stores), so that
    a dim of 5 fp32 is boxed as 8 and refused for what is wrong with the view, not for a box no
    request named."""
    unit = max(1, 16 // es)
    return min(cdiv(extent, unit) * unit, max(unit, 128 // es))


def natural_descriptor(view: View, target: Target, tile: tuple[int, ...] | None = None) -> list[Diagnostic]:
    """Why TMA is out for a request: the legality verdict of the descriptor a compiler would
    write for the view as given (innermost dim first), its box the view's extents (up to 256),
    or a tile load's `tile` (a box of the view's whole extents named a box no tile load
    asked for: 8 MB for a 1 x 1 x 1 x 1 tile). The messages say "the view"; see `_of` for the
    request's name of it."""
    order = sorted((k for k, n in enumerate(view.shape) if n > 1), key=lambda k: view.strides[k])
    order = order or [view.rank - 1]
    if len(order) > target.tma.max_rank:
        return [Code.RANK.at(f"the view has {len(order)} dims of extent > 1 that do not coalesce; TMA takes "
                             f"at most {target.tma.max_rank}")]
    es = view.esize
    ext = view.shape if tile is None else tile
    desc = TmaDescriptor.from_fields(
        dtype=view.dtype.tma_name, rank=len(order), global_address=placeholder_address(view.base_align),
        global_dim=[view.shape[k] for k in order], global_strides=[view.strides[k] * es for k in order[1:]],
        box_dim=[min(ext[k], 256) if i else _inner_box(ext[k], es) for i, k in enumerate(order)],
        element_strides=[1] * len(order))
    out = []
    if view.strides[order[0]] != 1:
        out.append(Code.INNER_CONTIGUOUS.at(f"the innermost dim has stride {view.strides[order[0]]}; TMA's dim 0 "
                                            "is contiguous"))
    return out + list(check_descriptor(desc, target).violations)


def _whole_dim_merges(m: LoadTile, k: int) -> bool:
    """Whether a tile holding the whole contiguous dim `k` boxes as one run with the next dim:
    that dim's stride is dim k's extent (the rows lie end to end) and the tile's rows along it
    make whole 16-byte units, so every box starts on 16 bytes."""
    n, es = m.src.shape[k], m.src.esize
    return any(j != k and m.src.shape[j] > 1 and m.src.strides[j] == n and (n * m.tile[j] * es) % 16 == 0
               for j in range(m.src.rank))


def _one_row_widths(t: int, unit: int, es: int) -> list[int]:
    """The widths next to `t` elements that a one-row tile lands with TMA, as the tile builder
    boxes it (its largest power-of-two divisor up to MAX_BOX a box: `boxes_land`); at least a
    16-byte `unit`."""
    def lands(v: int) -> bool:
        box = lowbit(v, MAX_BOX)
        return boxes_land(box, v // box, es)

    below = next((v for v in range(t // unit * unit, 0, -unit) if lands(v)), None)
    above = next(v for v in range(max(unit, -(-t // unit) * unit), 1 << 30, unit) if lands(v))
    return [v for v in (below, above) if v]


def tile_inner_reasons(m: LoadTile) -> list[Diagnostic]:
    """Why a tile's extent along the source's contiguous dim keeps its boxes out of TMA: a box
    holds whole 16-byte units there, and the tile walk's boxes start at multiples of the tile,
    which the hardware needs on 16-byte boundaries. A tile holding the whole dim exactly is
    left to the descriptor's own rules where its rows merge with the next dim's
    (`_whole_dim_merges`); where they do not (a row pitch wider than the row), its box is
    the dim's width, which must be whole 16-byte units as any other."""
    es = m.src.esize
    src = m.src
    out = []
    for k in src.contiguous_dims:
        n, t = src.shape[k], m.tile[k]
        if (t * es) % 16 == 0 or (t == n and _whole_dim_merges(m, k)):
            continue
        unit = 16 // es
        fits = [v for v in (t // unit * unit, t // unit * unit + unit) if v > 0]
        if t >= n and all(u == 1 for j, u in enumerate(m.tile) if j != k):
            fits = _one_row_widths(t, unit, es)
        if t >= n:  # one box start along the dim (at 0): the box's width is what does not fit
            message = (f"op.tile[{k}] is {t} element{'s' if t > 1 else ''} ({t * es} bytes) along op.src's "
                       f"contiguous dim of {n}: a TMA box holds whole 16-byte units there")
            whole = [n] if t != n and _whole_dim_merges(m, k) else []
            more = [v for v in fits if v not in whole]
            fix = f"make op.tile[{k}] " + " or ".join(
                [f"{n} (the whole dim)"] * bool(whole) + [f"a multiple of {unit} ({' or '.join(map(str, more))}: "
                                                          "past the dim's end the box reads zeros)"] * bool(more))
        else:
            message = (f"op.tile[{k}] is {t} element{'s' if t > 1 else ''} ({t * es} bytes) along op.src's "
                       "contiguous dim: a TMA box holds whole 16-byte units there, and a box that starts off a "
                       "16-byte boundary faults (on the H100 a TMA load or store at such a start is an illegal "
                       "instruction: tools/tma_offset_probe.py)")
            fix = f"make op.tile[{k}] a multiple of {unit} elements ({' or '.join(map(str, fits))})"
        out.append(Code.INNER_BOX_16B.at(message, fix + ", or use the plan's direct candidate", field=f"op.tile[{k}]"))
    return out


def _why_not_tma(req: PlanRequest) -> list[Diagnostic]:
    m = req.movement
    if req.target.tma is None:
        return [Code.NO_TMA_UNIT.at(f"{req.target.name} has no tensor memory accelerator")]
    if isinstance(m, Gather):
        return [Code.GATHER_TMA.at()]
    views = [("op.src", m.src)] + ([("op.dst", m.dst)] if isinstance(m, Copy) else [])
    tile = m.tile if isinstance(m, LoadTile) else None
    reasons = [_in_request_terms(name, v, r) for name, v in views for r in natural_descriptor(v, req.target, tile)]
    if isinstance(m, LoadTile):
        reasons += tile_inner_reasons(m)
    if isinstance(m, Copy) and m.src.base_align % 16 == 0 and m.dst.base_align % 16 == 0 and not reasons:
        reasons = [Code.INNER_EXTENT.at()]
    if any(r.code is Code.GLOBAL_STRIDES_ALIGN for r in reasons) and not req.options.allow_padding \
            and _padding_helps(m):
        reasons.append(Code.ALLOW_PADDING.at())
    return reasons or [Code.TMA_UNAVAILABLE.at()]


def _padding_helps(m) -> bool:
    """Whether options.allow_padding can give `m` a TMA plan: it re-allocates a copy's tensors
    with padded pitches (a tile load reads the caller's tensor as it is), and a TMA store of
    destination rows that are not whole 16-byte chunks is refused whatever their pitch
    (`tma_store_row`)."""
    if not isinstance(m, Copy):
        return False
    inner = next((n for n, s in zip(m.dst.shape, m.dst.strides) if s == 1 and n > 1), None)
    return inner is None or not store_row_overrun(inner * m.dst.esize)


def _in_request_terms(name: str, v: View, d: Diagnostic) -> Diagnostic:
    """A descriptor rule's reason about the view `name`, in the request's own terms: the base's
    alignment is the view's base_align (the descriptor's address is a placeholder the request
    never sent), else `_of`."""
    if d.code is Code.GLOBAL_ADDRESS_ALIGN:  # 16 bytes: a view's descriptor has no interleave, no packed type
        return Code.GLOBAL_ADDRESS_ALIGN.at(f"{name}.base_align is {v.base_align}; TMA needs a 16-byte aligned base",
                                            "allocate the tensor (and start the view) on a 16-byte boundary, then "
                                            "send that base_align", field=f"{name}.base_align")
    return _of(name, d)


def _of(name: str, d: Diagnostic) -> Diagnostic:
    """`d` about the view `name` (op.src, op.dst): said in the message (the field stays the
    descriptor's, where a descriptor rule names one; else the view)."""
    return replace(d, message=f"{name}: {d.message}", field=d.field or name)


# the TMA reasons a request's views give whatever formulation moves them
FORM_INDEPENDENT_TMA = frozenset({Code.GLOBAL_ADDRESS_ALIGN, Code.GLOBAL_ADDRESS_RANGE, Code.DTYPE_SUPPORTED})


def why_not(req: PlanRequest, strategy: Strategy, stopped: str | None = None) -> list[Diagnostic]:
    """The reasons `strategy` was never offered for `req` (never empty). `stopped`: the limit
    that stopped saturation, if one did; then a strategy the request's kind allows was perhaps
    only not reached, which is what is said rather than a guess at its shape (a rank-8 permute
    cut short was told it does not transpose)."""
    m = req.movement
    if strategy is Strategy.TMA:
        reasons = _why_not_tma(req)
        if stopped is None or not isinstance(m, (Copy, LoadTile)) or req.target.tma is None:
            return reasons
        # what the request's own views say holds for every formulation only where it is about
        # the base or the element type; the rest (a box as large as the tensor) was said of a
        # form the e-graph had not yet coalesced or tiled
        fix = budget_fix(Code.NOT_REACHED.default_fix) if stopped == "time_limit" else None
        return [Code.NOT_REACHED.at(f"saturation stopped by its {stopped} before it found a tma formulation", fix),
                *(r for r in reasons if r.code in FORM_INDEPENDENT_TMA)]
    if isinstance(m, LoadTile) and strategy is not Strategy.DIRECT:
        return [Code.LOAD_TILE_STRATEGY.at(f"tile loads use tma or direct staging, not {strategy.value}")]
    if isinstance(m, Copy) and strategy is Strategy.INSPECTOR_EXECUTOR:
        return [Code.NO_INDICES.at()]
    if isinstance(m, Gather) and strategy is Strategy.STAGED_SMEM:
        return [Code.GATHER_STAGED.at()]
    if isinstance(m, Gather) and strategy is Strategy.SHUFFLE:
        return [Code.NOT_WARP_LOCAL.at()]
    if isinstance(m, Copy) and strategy in (Strategy.STAGED_SMEM, Strategy.SHUFFLE):
        sides = [name for name, v in (("op.src", m.src), ("op.dst", m.dst)) if not v.has_contiguous_dim]
        if sides:  # the e-graph's transposes pair a stride-1 dim of each side: none is what keeps them out
            return [Code.NO_UNIT_STRIDE.at(f"{' and '.join(sides)} {'has' if len(sides) == 1 else 'have'} no dim of "
                                           f"stride 1 with more than one element, and a {strategy.value} tile pairs a "
                                           "stride-1 dim of each side", field=sides[0] + ".strides")]
    if stopped is not None:
        fix = budget_fix(Code.NOT_REACHED.default_fix) if stopped == "time_limit" else None
        return [Code.NOT_REACHED.at(f"saturation stopped by its {stopped} before it found a {strategy.value} "
                                    "formulation", fix)]
    return [_NOT_OFFERED[strategy].at()]
