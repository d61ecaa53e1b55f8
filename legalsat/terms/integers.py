"""Integer helpers every layer shares (sizes, tiles, alignments), written once."""

from __future__ import annotations

from collections.abc import Iterable
from math import gcd


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for b > 0."""
    return -(-a // b)


def pow2_at_least(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1): Triton block extents."""
    return 1 << max(n - 1, 0).bit_length()


def pow2_at_most(n: int) -> int:
    """The largest power of two <= n (1 for n <= 1)."""
    return 1 << floor_log2(n)


def floor_log2(n: int) -> int:
    """floor(log2(n)) for n >= 1 (0 for n <= 1)."""
    return max(n, 1).bit_length() - 1


def lowbit(x: int, cap: int = 1 << 12) -> int:
    """Largest power of two dividing x (x == 0: `cap`), at most `cap`."""
    return min(x & -x, cap) if x else cap


def span(shape: Iterable[int], strides: Iterable[int]) -> int:
    """One past the largest offset a strided view of `shape` touches (in units of the strides)."""
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def gcd_all(values: Iterable[int]) -> int:
    """gcd of `values` (0 for none)."""
    out = 0
    for v in values:
        out = gcd(out, v)
    return out
