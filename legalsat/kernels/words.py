"""Plan pieces in machine words: what every emitter indexes.

A plan piece moves `element_bytes`-byte elements (1 to 16 bytes: the planner widens
contiguous runs into wider words). Kernels move integer words of `word` = min(element_bytes,
8) bytes, so a copy is bit-exact whatever the dtype (no float canonicalization, NaNs kept);
a 16-byte element is two 8-byte words, an extra innermost dim of 2 contiguous on both sides.

Pure Python: emitting a kernel's source needs neither torch nor triton.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from legalsat.diagnostics import Code, InputError
from legalsat.schemas.plan import GatherOut, PieceOut
from legalsat.terms.integers import span
from legalsat.terms.movement import transposed_pair

INT32_LIMIT = (1 << 31) - 1


def plan_error(field: str, message: str, fix: str = "send the plan as the planner returned it") -> InputError:
    """An error about the plan handed to the Triton client (field: its JSON path)."""
    return Code.INVALID_PLAN.error(message, fix, field)


@dataclass(frozen=True)
class WordDim:
    """One dim of a piece in words: extent, src stride, dst stride (strides in words)."""

    extent: int
    src: int
    dst: int


@dataclass(frozen=True)
class WordPiece:
    """A plan piece in words. `dims` outermost first as the plan gives them, lane dim (if
    any) last; `tile` per dim (1 where the strategy does not tile it); offsets in words."""

    word: int
    lanes: int
    dims: tuple[WordDim, ...]
    tile: tuple[int, ...]
    src_offset: int
    dst_offset: int

    @property
    def elems(self) -> int:
        return prod(d.extent for d in self.dims)

    def coalesced(self) -> WordPiece:
        """The same element map with unit dims dropped and dims that continue each other on
        both sides merged (for flat traversals, whose tiles are not per dim)."""
        dims = sorted((d for d in self.dims if d.extent > 1), key=lambda d: (d.dst, d.src))
        out: list[WordDim] = []
        for d in dims:  # innermost first
            if out and d.src == out[-1].src * out[-1].extent and d.dst == out[-1].dst * out[-1].extent:
                out[-1] = WordDim(out[-1].extent * d.extent, out[-1].src, out[-1].dst)
            else:
                out.append(d)
        out.reverse()
        return WordPiece(self.word, self.lanes, tuple(out), (1,) * len(out), self.src_offset, self.dst_offset)

    def span(self, side: str) -> int:
        """Words from the piece's first to one past its last word on `side` (src|dst)."""
        return span((d.extent for d in self.dims), (d.src if side == "src" else d.dst for d in self.dims))

    def index_bits(self) -> int:
        """32 when every offset the piece forms fits int32, else 64."""
        hi = max(self.src_offset + self.span("src"), self.dst_offset + self.span("dst"), self.elems)
        return 32 if hi <= INT32_LIMIT else 64


def word_bytes(element_bytes: int) -> int:
    """The word a kernel moves for elements of `element_bytes` (a power of two, 1..16)."""
    return min(element_bytes, 8)


def word_piece(piece: PieceOut, field: str) -> WordPiece:
    """A plan piece in words; raises InputError naming the bad field."""
    eb = piece.element_bytes
    if eb not in (1, 2, 4, 8, 16):
        raise plan_error(f"{field}.element_bytes", f"{field}.element_bytes is {eb!r}; plans move "
                         "1, 2, 4, 8 or 16-byte elements")
    w = word_bytes(eb)
    lanes = eb // w
    for j, d in enumerate(piece.dims):  # what the kernel's addresses are made of: never below a base
        for name, v, low in (("extent", d.extent, 1), ("src_stride", d.src_stride, 0), ("dst_stride", d.dst_stride, 0)):
            if v < low:
                raise plan_error(f"{field}.dims[{j}].{name}", f"{field}.dims[{j}].{name} is {v}; a plan's "
                                 f"{'extents are at least 1' if low else 'strides are at least 0'}")
    for name in ("src_offset_bytes", "dst_offset_bytes"):
        if getattr(piece, name) < 0:
            raise plan_error(f"{field}.{name}", f"{field}.{name} is {getattr(piece, name)}; offsets are at least 0")
    dims = [WordDim(d.extent, d.src_stride * lanes, d.dst_stride * lanes) for d in piece.dims]
    tile = list(piece.tile)
    if len(tile) != len(dims):
        tile = [1] * len(dims)  # direct pieces tile the flat traversal, not the dims
    if lanes > 1:
        dims.append(WordDim(lanes, 1, 1))
        tile.append(lanes)
    for name in ("src_offset_bytes", "dst_offset_bytes"):
        if getattr(piece, name) % w:
            raise plan_error(f"{field}.{name}", f"{field}.{name} is not a multiple of the {w}-byte word")
    return WordPiece(w, lanes, tuple(dims), tuple(tile), piece.src_offset_bytes // w, piece.dst_offset_bytes // w)


def index_strides(gather: GatherOut, p: WordPiece, i: int) -> tuple[int, int]:
    """An index entry's step on each side (src, out) in piece `i`'s words; InputError when
    the word does not divide them (each entry's slab would start between words)."""
    for name in ("src_index_stride_bytes", "out_index_stride_bytes"):
        if getattr(gather, name) % p.word:
            raise plan_error(f"pieces[{i}].element_bytes", f"pieces[{i}] moves {p.word}-byte words; gather.{name} "
                             f"({getattr(gather, name)}) is no whole number of them: each entry's slab would start "
                             "between words")
    return gather.src_index_stride_bytes // p.word, gather.out_index_stride_bytes // p.word


def piece_transposed_dims(piece: PieceOut | dict, field: str = "pieces[0]") -> tuple[int, int] | None:
    """`transposed_dims` of a plan's piece as the plan gives it (a PieceOut or its JSON)."""
    raw = piece if isinstance(piece, PieceOut) else PieceOut.model_validate(piece)
    return transposed_dims(word_piece(raw, field))


def transposed_dims(p: WordPiece) -> tuple[int, int] | None:
    """The planner's rule (`transposed_pair`) on words: (a, b), the dim contiguous in src only
    and the dim contiguous in dst only, or None. A 16-byte element is a pair of words
    contiguous on both sides, so at word level its transpose has no such pair (None): the
    word-tiled emitters treat it as a tiled copy of word pairs."""
    return transposed_pair((d.extent, d.src, d.dst) for d in p.dims)

