"""The shape of a target's facts (frozen, so targets can be shared across workers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


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
class CostFacts:
    """The planner's analytic time model of a target (estimated, then calibrated).

    Efficiencies are permille of `copy_bandwidth_gbps` (device-to-device copy, read + write):
    `by_width` for contiguous accesses of that many bytes per lane; `tma`, `staged`,
    `shuffle`, `inspector` for those strategies; `tma_transpose` for a TMA copy whose boxes
    are permuted in registers; `shuffle_gather` for a window-local row gather; `way_penalty`: permille of time added per extra bank-conflict
    way of the best staged tile; `scatter` for a gather that reads element by element,
    `scatter_by_bytes` (element bytes, permille) for a copy that touches one side element by
    element (each element a part of its sector: wider elements waste less; the widest row
    stands for wider elements). `row_overhead_bytes`: a random row costs as if it were this much
    longer (latency and partial sectors). `sort_bytes_per_slot`: what sorting one slot of a
    grouped (MoE) gather by its group costs a direct plan. `tma_latency_ns`: one TMA load's
    round trip (what bounds a tile walk whose SMs hold few tiles). `tile_walk_ns`: the fixed
    time of a tile walk (launch, pipeline fill, tail); `tile_tma`: permille of the copy
    bandwidth that a TMA tile walk reads at (it writes nothing back). `program_gbps`: what one
    program moves (read + write) when it runs alone, the time a launch-bound movement's longest
    program adds to its launch (fitted by `python -m tools.launch_bound_sweep report` to the recorded
--cudagraph sweep; the H100's figure is every
    target's default until it is measured there). `source` says where the
    numbers come from ("analytic", or the calibration run that fitted them).

    What a copy's solved fields cost (the e-graph's estimate assumes the strategy's full
    share; `legalsat.planner.build.copy.fields_cost` applies these once the tile is known):
    `tma_dst_run`: (run bytes, permille of the strategy's share) for a transposing TMA plan
    whose store box writes runs of at most that many bytes per row (a destination that fits
    L2 loses half as much: its partly written sectors merge there); `staged_tile`: (tile
    bytes, permille) for a staged tile of at most that many bytes (smaller tiles: in
    proportion); `program_ns`: the least time one program of a tiled copy (one TMA box, one
    staged tile) holds an SM, so a copy of many tiny tiles takes at least its programs over
    the SMs at this each.
    """

    source: str
    copy_bandwidth_gbps: int = 2960
    launch_ns: int = 3000
    by_width: tuple[tuple[int, int], ...] = ((1, 250), (2, 400), (4, 650), (8, 850), (16, 950))
    tma: int = 900
    tma_transpose: int = 900
    staged: int = 930
    shuffle: int = 850
    shuffle_gather: int = 850
    inspector: int = 900
    scatter: int = 150
    row_overhead_bytes: int = 384
    sort_bytes_per_slot: int = 64
    way_penalty: int = 250
    tma_latency_ns: int = 1000
    tile_walk_ns: int = 5000
    tile_tma: int = 750
    program_gbps: int = 74
    scatter_by_bytes: tuple[tuple[int, int], ...] = ((1, 95), (2, 170), (4, 340), (8, 560))
    tma_dst_run: tuple[tuple[int, int], ...] = ((16, 400), (32, 880))
    staged_tile: tuple[tuple[int, int], ...] = ((1024, 850), (2048, 930), (4096, 950), (8192, 970), (16384, 990))
    program_ns: int = 80


    def scatter_share(self, element_bytes: int) -> int:
        """`scatter_by_bytes`' permille for elements of this many bytes: the row of the widest
        element at most as wide (the first row for narrower ones)."""
        rows = [e for b, e in self.scatter_by_bytes if b <= element_bytes] or [self.scatter_by_bytes[0][1]]
        return rows[-1]


class CostFact(IntEnum):
    """The strategy efficiencies of `CostFacts` as the planner's egglog `Eff` table keys them
    (`(Eff code)` -> permille); the member name, lower-cased, is the CostFacts field."""

    TMA = 1
    STAGED = 2
    SHUFFLE = 3
    INSPECTOR = 4
    TMA_TRANSPOSE = 5
    SHUFFLE_GATHER = 6
    SCATTER = 100

    def of(self, facts: CostFacts) -> int:
        return getattr(facts, self.name.lower())


@dataclass(frozen=True)
class Target:
    """One GPU architecture legalsat plans for."""

    name: str
    description: str
    tma: TmaFacts | None
    banks: BankFacts
    smem_per_block_bytes: int
    cost: CostFacts = CostFacts(source="analytic")
    sm_count: int = 132  # streaming multiprocessors (the persistent kernels' width)
    # L2 bytes: a destination that fits stays resident while neighbouring programs write the
    # rest of its partly written 32-byte sectors, so misaligned rows cost no DRAM read-back
    # (the H100's 50 MiB, as torch.cuda.get_device_properties reports it)
    l2_bytes: int = 50 << 20
    # warpgroup MMA (wgmma.mma_async), whose shared-memory operands the wgmma_a / wgmma_b
    # consumers are laid out for: sm_90a only (Blackwell's tensor cores take tcgen05.mma)
    wgmma: bool = False
