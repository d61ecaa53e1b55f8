"""A lowering plan as frozen data: what the builders return and the boundary serializes once
(legalsat.schemas.convert -> legalsat.schemas.plan, the published response models).

Units: extents and strides in elements of the piece's `element_bytes` (the planner widens
contiguous runs into words of up to 16 bytes); offsets and byte counts in bytes; TMA
descriptors exactly as `cuTensorMapEncodeTiled` takes them (innermost first, byte strides),
at a placeholder address the client replaces with the real pointer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from legalsat.diagnostics import Diagnostic
from legalsat.planner.reports import SaturationReport
from legalsat.protocols.model import Protocol
from legalsat.terms.descriptor import Swizzle, TmaDescriptor
from legalsat.terms.movement import Major, MovementKind
from legalsat.terms.smem import SCAN_BYTES_PER_ELEMENT, StageLayout
from legalsat.terms.strategy import Strategy


@dataclass(frozen=True)
class Dim:
    """One dim of a piece: extent, and its strides on the source and destination side."""

    extent: int
    src_stride: int
    dst_stride: int


@dataclass(frozen=True)
class Descriptor:
    """A TMA descriptor and what the plan does with it (load from src, store to dst)."""

    tma: TmaDescriptor
    role: str  # load | store


@dataclass(frozen=True)
class SmemLayout:
    """The shared-memory tile of one stage and the bank model's verdict on its accesses
    (conflict ways: 1.0 = none; None where the model has no access pattern for it)."""

    bytes_per_stage: int
    stages: int
    swizzle: Swizzle
    padding_bytes: int
    write_conflict_ways: float | None
    read_conflict_ways: float | None
    store_buffer_bytes: int | None = None
    boxes_per_stage: int | None = None


@dataclass(frozen=True)
class AsyncPipeline:
    """The asynchronous protocol a TMA plan's kernel runs, verified before it is returned."""

    protocol: Protocol
    verified: bool = True
    verifier: str = "legalsat typestate"


@dataclass(frozen=True)
class Piece:
    """One region of the movement (a core, or a ragged tail; a gather's slab) and how it is
    moved. `tile` per dim (or the flat block of a direct copy), `grid` programs."""

    src_offset_bytes: int
    dst_offset_bytes: int
    element_bytes: int
    dims: tuple[Dim, ...]
    strategy: Strategy
    tile: tuple[int, ...]
    grid: tuple[int, ...]
    num_warps: int
    vector_bytes: int
    store_vector_bytes: int | None = None
    num_stages: int | None = None
    descriptors: tuple[Descriptor, ...] | None = None
    smem: SmemLayout | None = None
    pipeline: AsyncPipeline | None = None
    shifted_loads: bool = False  # source rows read as the aligned vectors around them, shifted
    skewed_stores: bool = False  # a staged tile whose row segments each start on a sector of their own


@dataclass(frozen=True)
class Inspector:
    """The inspector passes of an inspector-executor gather."""

    buckets: int
    passes: tuple[str, ...]
    index_bytes: int
    step_elements: int  # int32 elements one step of a pass scans

    @property
    def smem_bytes(self) -> int:
        """The most shared memory a pass takes: its step's scan."""
        return SCAN_BYTES_PER_ELEMENT * self.step_elements


@dataclass(frozen=True)
class Executor:
    tile_rows: int
    grouped_by: str  # expert | bucket


@dataclass(frozen=True)
class GatherPlan:
    """How a gather walks its indices: the slab one index moves, where each index's slab
    starts on each side, and the inspector / executor / window of the strategy."""

    index_count: int
    distribution: str
    unit: int
    slab_bytes: int
    rows_per_program: int
    axis: int
    index_bound: int
    src_index_stride_bytes: int
    out_index_stride_bytes: int
    out_shape: tuple[int, ...]
    groups: int | None
    inspector: Inspector | None = None
    executor: Executor | None = None
    window_rows: int | None = None


@dataclass(frozen=True)
class KSlice:
    """One wgmma instruction's slice of the operand: its first K index and where it starts."""

    k0: int
    start_offset_bytes: int
    base_offset: int


@dataclass(frozen=True)
class WgmmaOperand:
    """What a wgmma shared-memory matrix descriptor of the tile holds (PTX ISA, "Matrix
    Descriptor Format"), checked element by element against the stage layout: the operand's
    major-ness, its layout type (0 interleave, 1 128B, 2 64B, 3 32B swizzle), the leading and
    stride byte offsets, and per k-slice the start offset from the stage and the base offset;
    `mn_block`: the rows of M (A) or columns of N (B) one instruction reads, and
    `mn_block_bytes` what the start advances from one such block to the next."""

    major: Major
    layout_type: int
    swizzle: Swizzle
    lbo_bytes: int
    sbo_bytes: int
    k_slices: tuple[KSlice, ...]
    mn_block: int
    mn_block_bytes: int
    element: str


@dataclass(frozen=True)
class TileBox:
    """One TMA box of a tile: its origin in descriptor coordinates (innermost first) relative to
    the tile's, and where it lands in the stage."""

    origin: tuple[int, ...]
    smem_offset_bytes: int


@dataclass(frozen=True)
class TileLoadPlan:
    """How a tile load walks the tensor. `grid`: tile positions per request dim (outermost
    first); `coords`: per descriptor dim (innermost first), the (request dim, multiplier) pairs
    whose tile positions give its coordinate (coordinate = sum(T[k] * mult)); `boxes` complete
    one stage on one mbarrier phase; `layout` places every tile element in the stage; `folded`
    request dims share one descriptor dim (CuTe's fold of modes past rank 5); `broadcast` dims
    are loaded once (stride 0 in the stage); `extents`: the tensor's, per request dim (what
    a kernel masks the overhang of broadcast dims by: the descriptor does not walk them)."""

    grid: tuple[int, ...]
    coords: tuple[tuple[tuple[int, int], ...], ...]
    boxes: tuple[TileBox, ...]
    layout: StageLayout
    oob_fill: str
    folded: tuple[int, ...]
    broadcast: tuple[int, ...]
    consumer: str
    read_conflict_ways: float
    wgmma: WgmmaOperand | None
    estimated_us_per_tile: float
    note: Diagnostic | None = None  # a wgmma consumer's: why it cannot read the tile (`wgmma_unreadable`)
    extents: tuple[int, ...] = ()


@dataclass(frozen=True)
class Relayout:
    """A pitch the plan needs changed: `side` src|dst, stride in bytes before and after."""

    side: str
    old_stride_bytes: int
    new_stride_bytes: int


@dataclass(frozen=True)
class Proof:
    """islpy's verdict: the plan's walk moves exactly the request's elements (`equal`), each
    once (`injective`); `relation` names what was compared."""

    equal: bool
    injective: bool
    relation: str
    method: str = "isl"  # or "enumeration": every point of a small copy neither side of which nests

    @property
    def ok(self) -> bool:
        return self.equal and self.injective


@dataclass(frozen=True)
class Cost:
    estimated_us: float
    bytes_moved: int
    estimated_tbps: float | None
    model: str


@dataclass(frozen=True)
class Plan:
    """One lowering plan. The plan-level fields repeat its first (core) piece's; a TMA plan's
    `descriptors` are every piece's."""

    kind: MovementKind
    strategy: Strategy
    term: str
    tile: tuple[int, ...]
    grid: tuple[int, ...]
    num_warps: int
    num_stages: int
    smem_budget_bytes: int
    vector_bytes: int | None
    descriptors: tuple[Descriptor, ...]
    smem: SmemLayout | None
    pipeline: AsyncPipeline | None
    gather: GatherPlan | None
    pieces: tuple[Piece, ...]
    relayout: tuple[Relayout, ...]
    cost: Cost
    proof: Proof
    explain: tuple[str, ...] | None = None
    tile_load: TileLoadPlan | None = None


@dataclass(frozen=True)
class Rejected:
    """A strategy without a plan: its best formulation (None if none was offered) and why."""

    strategy: Strategy
    term: str | None
    reasons: tuple[Diagnostic, ...]


@dataclass(frozen=True)
class PlanResponse:
    """The planner's answer to one request (see legalsat.schemas.plan.OptimizeResponse)."""

    request_id: str
    target: str
    planner: str
    term: str
    status: str  # ok | infeasible | incomplete
    plans: tuple[Plan, ...]
    rejected: tuple[Rejected, ...]
    saturation: SaturationReport
    timings_ms: dict[str, float]
    snapshot: str | None = field(default=None, repr=False)  # egraph-serialize JSON (keep_egraph)
    warnings: tuple[Diagnostic, ...] = ()
