"""The shape of a target's facts (frozen, so targets can be shared across workers)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TmaFacts:
    """What `cuTensorMapEncodeTiled` accepts on a target.

    Each flag or bound corresponds to one legality rule in `legalsat.analyses.tma_legality`.
    `source` says where the numbers come from: "driver" (measured against the driver, with a
    replayed corpus) or "documentation" (the CUDA driver API reference only).
    """

    source: str
    max_rank: int = 5
    min_rank_interleaved: int = 3
    max_box_dim: int = 256
    max_element_stride: int = 8
    max_global_dim: int = 1 << 32  # inclusive
    global_stride_limit: int = 1 << 40  # exclusive
    address_limit: int | None = None  # exclusive upper bound of global_address, if any
    box_footprint_limit: int | None = None  # bytes one copy may move, if bounded
    dtypes: frozenset[str] = field(default_factory=frozenset)
    swizzles: frozenset[str] = field(default_factory=frozenset)
    inner_16b_with_interleave: bool = False  # box_dim[0] bytes % 16 also when interleaved
    interleave_32b_needs_swizzle_32b: bool = True  # documented; not enforced by every driver


@dataclass(frozen=True)
class BankFacts:
    """Shared-memory (LDS) banking of a target."""

    banks: int
    bank_bytes: int
    lanes: int


@dataclass(frozen=True)
class Target:
    """One GPU architecture legalsat plans for."""

    name: str
    description: str
    tma: TmaFacts | None
    banks: BankFacts
    smem_per_block_bytes: int
