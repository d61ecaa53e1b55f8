"""An extracted term as plain data: the formulation a plan is built from.

    (PadDst 2006 2016 (Tma (Pieces (Copy 16 16 16 (DCons ...)) (Shift 8 8 (Copy 2 16 16 ...)))))

becomes a `Formulation`: strategy, the relayouts it needs, the movement kind and its regions
(each a copy of `eb`-byte elements over dims (extent, src stride, dst stride) at byte offsets).
"""

from __future__ import annotations

from dataclasses import dataclass

from legalsat.terms.movement import MovementKind
from legalsat.terms.sexpr import parse_sexp
from legalsat.terms.strategy import Strategy


@dataclass(frozen=True)
class Region:
    """One copy of a formulation: dims outermost first as extracted, strides in elements of
    `eb` bytes; offsets in bytes from the movement's bases."""

    eb: int
    src_align: int
    dst_align: int
    dims: tuple[tuple[int, int, int], ...]
    src_offset: int = 0
    dst_offset: int = 0

    @property
    def elems(self) -> int:
        out = 1
        for n, _, _ in self.dims:
            out *= n
        return out

    @property
    def bytes(self) -> int:
        return self.elems * self.eb


@dataclass(frozen=True)
class Relayout:
    """A pitch the formulation needs changed: `side` src|dst, stride in bytes before and after."""

    side: str
    old_bytes: int
    new_bytes: int


@dataclass(frozen=True)
class Formulation:
    """A plan term as data. Copies and gathers: `regions`. Tile loads: `tile_dims`, the walk's
    (tensor extent, tile extent, src stride) outermost first, and `broadcast` when the walk
    loads each broadcast value once (its dims are not in `tile_dims`)."""

    strategy: Strategy
    kind: MovementKind
    regions: tuple[Region, ...]
    relayouts: tuple[Relayout, ...] = ()
    tile_dims: tuple[tuple[int, int, int], ...] = ()
    broadcast: bool = False


@dataclass(frozen=True)
class Candidate:
    """The best term of one strategy: its text, its formulation and estimated time (ps, the
    strategy's cost alone)."""

    strategy: Strategy
    term: str
    cost: int
    form: Formulation


def _dims(x) -> tuple[tuple[int, int, int], ...]:
    out = []
    while x[0] in ("DCons", "TCons"):
        out.append((x[1], x[2], x[3]))
        x = x[4]
    return tuple(out)


def _regions(x, so: int = 0, do: int = 0) -> list[Region]:
    head = x[0]
    if head == "Copy":
        return [Region(x[1], x[2], x[3], _dims(x[4]), so, do)]
    if head == "Pieces":
        return _regions(x[1], so, do) + _regions(x[2], so, do)
    if head == "Shift":
        return _regions(x[3], so + x[1], do + x[2])
    raise ValueError(f"not a copy movement: {head}")


def formulation(term: str) -> Formulation:
    """Parse an extracted plan term (see the module docstring)."""
    x = parse_sexp(term)
    relayouts, broadcast = [], False
    while x[0] in ("PadSrc", "PadDst", "Bcast"):
        if x[0] == "Bcast":
            broadcast, x = True, x[1]
            continue
        relayouts.append(Relayout("src" if x[0] == "PadSrc" else "dst", x[1], x[2]))
        x = x[3]
    strategy = Strategy.from_constructor(x[0])
    mov = x[1]
    # a gather's count / distribution and a tile's consumer are the request's own: not kept
    if mov[0] == "Gath":
        return Formulation(strategy, MovementKind.GATHER, tuple(_regions(mov[3])), tuple(relayouts))
    if mov[0] == "Load":
        return Formulation(strategy, MovementKind.LOAD_TILE, (), tuple(relayouts), _dims(mov[4]), broadcast)
    return Formulation(strategy, MovementKind.COPY, tuple(_regions(mov)), tuple(relayouts))
