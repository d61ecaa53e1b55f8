"""Does a strided view map two logical indices to one address? (A destination that does
is a write race: the request is rejected.)

A quick sufficient test (strides sorted ascending, each clears the span of the smaller ones)
decides almost every real layout; the rest are decided exactly by islpy: the view is
non-overlapping iff its index -> offset map is injective.
"""

from __future__ import annotations

from functools import lru_cache


def _nested(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    span = 0  # largest offset reachable with the dims seen so far
    for n, s in sorted(((n, s) for n, s in zip(shape, strides) if n > 1), key=lambda t: t[1]):
        if s <= span:
            return False
        span += (n - 1) * s
    return True


def overlaps(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """True iff two distinct indices of `shape` share an offset under `strides` (all >= 0)."""
    if any(n > 1 and s == 0 for n, s in zip(shape, strides)):
        return True
    if _nested(shape, strides):
        return False
    import islpy as isl

    dims = [f"i{k}" for k in range(len(shape))]
    bounds = " and ".join(f"0 <= {d} < {n}" for d, n in zip(dims, shape))
    off = " + ".join(f"{s}*{d}" for d, s in zip(dims, strides))
    m = isl.Map(f"{{ [{', '.join(dims)}] -> [{off}] : {bounds} }}")
    return not m.is_injective()


@lru_cache(maxsize=256)
def views_meet(a: tuple[int, tuple[int, ...], tuple[int, ...], int],
               b: tuple[int, tuple[int, ...], tuple[int, ...], int]) -> bool:
    """True iff some byte of view `a` is a byte of view `b`; each view is (start byte, shape,
    strides in bytes (all >= 0), element bytes), both in one address frame. Exact (islpy), for
    views whose byte ranges overlap: every other column of one buffer and the columns between
    them share no byte, though each spans the other."""
    import islpy as isl

    def bytes_of(name: str, view: tuple[int, tuple[int, ...], tuple[int, ...], int]) -> isl.Set:
        start, shape, strides, es = view
        dims = [f"{name}{k}" for k in range(len(shape))] + [f"{name}e"]
        bounds = [f"0 <= {d} < {n}" for d, n in zip(dims, [*shape, es])]
        off = " + ".join([str(start), *(f"{s}*{d}" for d, s in zip(dims, strides)), dims[-1]])
        return isl.Set(f"{{ [x] : exists ({', '.join(dims)} : x = {off} and {' and '.join(bounds)}) }}")

    return not bytes_of("a", a).intersect(bytes_of("b", b)).is_empty()
