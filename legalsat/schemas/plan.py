"""The optimize response: the pydantic models whose JSON Schema legalsat publishes
(`legalsat schema response`, the OpenAPI document). The planner's typed plans are converted
to these once (legalsat.schemas.convert); the Triton client validates a plan it is given
into `PlanOut` before it emits anything.

Units: extents and strides in elements of the piece's `element_bytes`; offsets and byte
counts in bytes; TMA descriptors exactly as `cuTensorMapEncodeTiled` takes them (innermost
dim first, `global_strides` in bytes with rank-1 entries).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from legalsat.schemas.base import ErrorOut, Out
from legalsat.schemas.protocol import ProtocolIn, ProtocolViolationOut
from legalsat.terms.movement import MAX_GROUPS, MovementKind
from legalsat.terms.strategy import Strategy

StrategyName = Literal[tuple(s.value for s in Strategy)]  # type: ignore[valid-type]
KindName = Literal[tuple(k.value for k in MovementKind)]  # type: ignore[valid-type]
Warps = Literal[1, 2, 4, 8, 16, 32]  # a program's warps: a power of two (Triton's num_warps)
AccessBytes = Literal[1, 2, 4, 8, 16]  # one access's width
SwizzleName = Literal["none", "32B", "64B", "128B"]  # TMA's shared-memory swizzles
# pipeline stages: past what any shared memory holds (a stage is at least a 16-byte box)
Stages = Annotated[int, Field(ge=1, le=64)]


class ReasonOut(Out):
    """Why a strategy has no plan: a stable code from the catalogue (`legalsat codes`)."""

    rule: str = Field(description="the reason's stable code, e.g. global_strides.align, smem_budget")
    message: str = Field(description="what keeps the strategy out, with the request's numbers")
    fix: str = Field(description="what would change it (a request field, an option, the tensor's layout)")


class DescriptorOut(Out):
    """A TMA descriptor: exactly the validate-descriptor input fields (innermost dim first,
    `role` included: a plan's descriptor can be validated as it stands)."""

    dtype: str = Field(description="element type the descriptor moves (words of the plan's element width)")
    rank: int = Field(ge=1, le=5, description="number of dims (1-5)")
    global_address: int = Field(description="a PLACEHOLDER address with the base alignment the plan assumes "
                                "(2^40 + alignment): the client passes the real pointer")
    global_dim: list[int] = Field(description="extent of each dim, innermost first")
    global_strides: list[int] = Field(description="byte stride of each dim but the innermost (rank-1 entries)")
    box_dim: list[int] = Field(description="box extent of each dim, innermost first (1-256)")
    element_strides: list[int] = Field(description="traversal stride of each dim (1 = dense)")
    interleave: str = Field(description="none, 16B or 32B")
    swizzle: SwizzleName = Field(description="none, 32B, 64B or 128B: how the box lands in shared memory")
    l2_promotion: str = Field(description="none, 64B, 128B or 256B")
    oob_fill: str = Field(description="none (out-of-bounds elements read as zero) or nan_request_zero_fma")
    role: Literal["load", "store"] = Field(description="load: global -> shared; store: shared -> global")

    @field_validator("global_dim", "global_strides", "box_dim", "element_strides")
    @classmethod
    def _one_entry_per_dim(cls, v: list[int], info: ValidationInfo) -> list[int]:
        rank = info.data.get("rank")
        want = None if rank is None else rank - 1 if info.field_name == "global_strides" else rank
        if want is not None and len(v) != want:
            raise ValueError(f"has {len(v)} entries; a descriptor of rank {rank} has {want}")
        return v


class SmemOut(Out):
    """The shared-memory tile of one pipeline stage and the bank model's verdict on it. For a
    staged_smem plan it is the layout the plan proposes to a compiler that stages the tile
    itself (padded rows, or a swizzle); legalsat's own Triton kernel leaves the staging to
    Triton's layout conversion, which picks its own swizzled layout (so its footprint and
    conflicts are Triton's, not these)."""

    bytes_per_stage: int = Field(description="bytes of one stage's tile (padding included)")
    stages: int = Field(description="pipeline stages (buffers in flight)")
    swizzle: SwizzleName = Field(description="TMA swizzle of the tile: none, 32B, 64B or 128B")
    padding_bytes: int = Field(description="bytes added to each row of the tile (0: none)")
    write_conflict_ways: float | None = Field(description="bank-conflict ways of the writes into the tile "
                                              "(1.0 = conflict-free; null: not modelled)")
    read_conflict_ways: float | None = Field(description="bank-conflict ways of the reads out of the tile "
                                             "(1.0 = conflict-free; null: not modelled)")
    store_buffer_bytes: int | None = Field(None, description="bytes of the store side: the buffer a TMA store "
                                           "reads from, and for a transposing copy the box's layout-conversion "
                                           "scratch (one more box)")
    boxes_per_stage: int | None = Field(None, description="TMA boxes that complete one stage (on one mbarrier "
                                        "phase, with their bytes summed in expect_tx)")


class AsyncOut(Out):
    """The asynchronous protocol the plan's kernel runs, verified before the plan was returned."""

    protocol: ProtocolIn = Field(description="the protocol, in verify-pipeline's input form (fields at their "
                                 "defaults left out)")
    verified: bool = Field(description="the typestate verifier found no hazard")
    verifier: str = Field(description="which verifier checked it")
    violations: list[ProtocolViolationOut] = Field(description="the verifier's findings (always empty: a plan "
                                                   "with a hazard is never returned)")


class ProofOut(Out):
    """islpy's proof that the plan moves exactly the request's elements, each once."""

    method: Literal["isl", "enumeration"] = Field(
        description="the prover: isl (symbolic), or enumeration (every element of a copy of at most 2^20 elements "
                    "neither of whose sides' strides nest, which isl's existential check cannot bound)")
    verified: bool = Field(description="equal and injective")
    equal: bool = Field(description="the plan's element map equals the request's")
    injective: bool = Field(description="no element is moved twice")
    relation: str = Field(description="the relation that was compared")


class CostOut(Out):
    """The planner's estimate (its cost model, not a measurement)."""

    estimated_us: float = Field(description="estimated kernel time in microseconds")
    bytes_moved: int = Field(description="bytes read plus bytes written (a tile load: the tiles read from global "
                             "memory plus their writes to shared memory)")
    estimated_tbps: float | None = Field(description="bytes_moved / estimated time, in TB/s (a tile load's counts "
                                         "its shared-memory writes: half of it is the global-memory rate)")
    model: str = Field(description="where the cost facts come from: analytic, or the calibration run")


class DimOut(Out):
    """One dim of a piece: its extent and its stride on each side (in elements of the piece)."""

    extent: int = Field(ge=1, lt=1 << 40, description="number of elements along the dim")
    src_stride: int = Field(ge=0, description="stride in the source, in elements of element_bytes")
    dst_stride: int = Field(ge=0, description="stride in the destination, in elements of element_bytes")


class PieceOut(Out):
    """One region of the movement (a core, a ragged tail, a gather's slab) and how it is moved."""

    src_offset_bytes: int = Field(description="byte offset of the region from the source's base (a gather: "
                                  "from where the index's slab starts)")
    dst_offset_bytes: int = Field(description="byte offset of the region from the destination's base")
    element_bytes: int = Field(description="bytes per element of this piece (contiguous runs widened, up to 16)")
    dims: list[DimOut] = Field(description="the region's dims, outermost first (none: a single element)")
    strategy: StrategyName = Field(description="how this piece is moved (a ragged tail may be direct)")
    tile: list[Annotated[int, Field(ge=1)]] = Field(description="elements per program: per dim (tiled strategies) "
                                                    "or one flat block; "
                            "for a gather, index entries per program, and where a program moves part of each "
                            "slab (a gather along an inner axis, whose entries are the output's contiguous dim; "
                            "a direct gather of long contiguous slabs, one entry a program) also the slab elements "
                            "per program")
    grid: list[Annotated[int, Field(ge=1)]] = Field(description="programs to launch")
    num_warps: Warps = Field(description="warps per program")
    vector_bytes: AccessBytes = Field(description="bytes per load access")
    store_vector_bytes: AccessBytes | None = Field(None, description="bytes per store access, when they differ")
    num_stages: Stages | None = Field(None, description="pipeline stages of a TMA piece")
    descriptors: list[DescriptorOut] | None = Field(None, description="the piece's TMA descriptors")
    smem: SmemOut | None = Field(None, description="the piece's shared-memory tile")
    async_: AsyncOut | None = Field(None, alias="async", description="the piece's asynchronous protocol")
    shifted_loads: bool | None = Field(None, description="a direct copy whose source rows start off 16 bytes (its "
                                       "destination's do not): each row is read as the aligned 16-byte vectors that "
                                       "hold it and shifted into place in registers, so vector_bytes is 16 on both "
                                       "sides; absent: loads are as wide as the source's alignment allows")
    skewed_stores: bool | None = Field(None, description="a staged tile whose destination rows start off a 32-byte "
                                       "sector: each row's segment is stored from a sector of its own (the tile loads "
                                       "a sector's worth of extra source rows and shifts each column by its row's "
                                       "offset), so stores are whole vectors filling whole sectors; absent: the "
                                       "kernels skew a tile whose rows start off 16 bytes and whose store_vector_bytes "
                                       "exceed an element (plans without this field)")


class InspectorOut(Out):
    """The GPU inspector of an inspector-executor gather."""

    buckets: int = Field(description="buckets the indices are sorted into (experts for MoE)")
    passes: list[str] = Field(description="its passes over the indices, in order")
    index_bytes: int = Field(description="bytes of (index, position) pairs it writes")
    step_elements: int | None = Field(None, description="int32 elements one step of a pass scans (rows x "
                                      "groups, groups padded to a power of two); the kernels' default when absent")
    smem_bytes: int | None = Field(None, description="the most shared memory one of its passes takes (bytes)")


class ExecutorOut(Out):
    """The dense row copy that follows the inspector."""

    tile_rows: int = Field(description="index entries per program")
    grouped_by: Literal["expert", "bucket"] = Field(description="what the reordered entries are grouped by")


class GatherOut(Out):
    """How a gather walks its indices."""

    index_count: int = Field(ge=1, lt=1 << 40, description="index entries")
    distribution: str = Field(description="what the request says about the index values")
    unit: int = Field(ge=1, description="consecutive positions along the axis one index selects (a page, or 1)")
    slab_bytes: int = Field(ge=1, lt=1 << 40, description="bytes one index moves")
    rows_per_program: int = Field(ge=1, le=1 << 24, description="index entries per program")
    axis: int = Field(ge=0, description="the gathered axis of the source")
    index_bound: int = Field(ge=1, lt=1 << 40, description="valid index values are 0 .. index_bound-1")
    src_index_stride_bytes: int = Field(ge=0, lt=1 << 40, description="bytes between the slabs of index values i "
                                        "and i+1 in the source")
    out_index_stride_bytes: int = Field(ge=0, lt=1 << 40, description="bytes between the slabs of entries j and "
                                        "j+1 in the output")
    out_shape: list[Annotated[int, Field(ge=1, lt=1 << 40)]] = Field(description="the (contiguous) output's shape")
    groups: int | None = Field(ge=1, le=MAX_GROUPS, description="buckets (experts) the entries are routed to, for "
                               "MoE")
    inspector: InspectorOut | None = Field(None, description="inspector-executor plans: the inspector")
    executor: ExecutorOut | None = Field(None, description="inspector-executor plans: the executor")
    window_rows: int | None = Field(None, description="shuffle plans: rows of the window one warp loads")


class LayoutDimOut(Out):
    """One dim of a shared-memory stage (a descriptor dim, innermost first)."""

    parts: list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]] = Field(
        description="[tile dim, multiplier] pairs: tile index i lands at position p = sum(i[dim] * multiplier) "
                    "along this dim")
    box: int = Field(ge=1, le=1 << 31, description="elements of one box along it (TMA boxes are 1-256; a "
                     "direct plan's pointer loads take a tile of many boxes as one)")
    boxes: int = Field(ge=1, le=1 << 24, description="boxes along it per tile")
    stride: int = Field(description="elements between neighbours inside a box")
    box_stride: int = Field(description="elements between neighbouring boxes along it")


class StageLayoutOut(Out):
    """Where every tile element lands in its stage: byte offset = element_bytes * sum over dims of
    ((p mod box) * stride + (p div box) * box_stride), then the swizzle (16-byte chunk index XOR
    bits 7.. of the offset, within the span) as TMA writes it; stages are 1024-byte aligned. Tile
    dims in no dim's parts have stride 0 (broadcast dims, and dims the tile does not span)."""

    dims: list[LayoutDimOut] = Field(description="the stage's dims, innermost (contiguous) first")
    element_bytes: int = Field(description="bytes per element")
    swizzle: SwizzleName = Field(description="none, 32B, 64B or 128B")


class TileBoxOut(Out):
    """One TMA box of a tile."""

    origin: list[int] = Field(description="its first element's offset from the tile's coordinates, per "
                              "descriptor dim (innermost first)")
    smem_offset_bytes: int = Field(description="where it lands in the stage")


class KSliceOut(Out):
    """One wgmma instruction's k-slice of the operand."""

    k0: int = Field(description="its first K index within the tile")
    start_offset_bytes: int = Field(description="the descriptor's start address, from the stage's base")
    base_offset: int = Field(description="the descriptor's matrix base offset (bits 49-51)")


class WgmmaOut(Out):
    """The wgmma shared-memory matrix descriptor of the operand tile (PTX "Matrix Descriptor
    Format"), checked element by element against the stage layout."""

    major: Literal["k", "mn"] = Field(description="the dim contiguous in shared memory (trans-a/b 0 for K-major)")
    layout_type: int = Field(description="descriptor bits 62-63: 0 interleave, 1 128B, 2 64B, 3 32B swizzle")
    swizzle: SwizzleName = Field(description="the stage's swizzle: none, 32B, 64B or 128B")
    lbo_bytes: int = Field(description="leading dimension byte offset")
    sbo_bytes: int = Field(description="stride dimension byte offset")
    k_slices: list[KSliceOut] = Field(description="per instruction k-slice (32 bytes of K), its start and base offset")
    mn_block: int | None = Field(None, description="the rows of M (wgmma_a: 64) or columns of N (wgmma_b: the "
                                 "instruction's n; without one, N up to 256) that one instruction reads (absent in "
                                 "plans of planner versions before 8)")
    mn_block_bytes: int = Field(description="what each k-slice's start advances from one such block to the next "
                                "(0: the tile is one block)")
    element: str = Field(description="the element type the tensor core reads")


class TileLoadOut(Out):
    """How a tile load walks the tensor and where each tile lands."""

    grid: list[int] = Field(description="tile positions per request dim (outermost first): ceil(shape / tile)")
    coords: list[list[Annotated[list[int], Field(min_length=2, max_length=2)]]] = Field(
        description="per descriptor dim (innermost first): [request dim, multiplier] pairs; a tile T's "
                    "coordinate is sum(T[dim] * multiplier)")
    boxes: list[TileBoxOut] = Field(description="the boxes of one tile, completing one stage on one mbarrier phase")
    layout: StageLayoutOut = Field(description="where every element of the tile lands in its stage")
    oob_fill: Literal["zero"] = Field(description="what the overhang of an edge tile reads as")
    folded: list[int] = Field(description="request dims folded into one descriptor dim (box 1; CuTe's fold of "
                              "modes past rank 5)")
    broadcast: list[int] = Field(description="broadcast (stride-0) request dims, loaded once: stride 0 in the stage")
    extents: list[int] | None = Field(None, description="the tensor's extent per request dim (outermost first); a "
                                      "tile's positions past it read zero, along broadcast dims too (absent in plans "
                                      "of planner versions before 8)")
    consumer: str = Field(description="what reads the tile")
    read_conflict_ways: float = Field(description="the bank model's verdict on the consumer's reads (1.0: none)")
    wgmma: WgmmaOut | None = Field(description="wgmma operands: the matrix descriptor of every k-slice")
    estimated_us_per_tile: float = Field(description="the walk's estimated time divided by its tiles")
    note: str | None = Field(None, description="why a wgmma consumer gets no descriptor (TMA still loads the tile)")

    @field_validator("coords", "folded", "broadcast")
    @classmethod
    def _request_dims(cls, v: list, info: ValidationInfo) -> list:
        """Every request dim named is one of the tile's (`grid` has one entry per dim)."""
        rank = len(info.data.get("grid") or ())
        named = [pair[0] for dim in v for pair in dim] if info.field_name == "coords" else v
        if rank and any(not 0 <= d < rank for d in named):
            raise ValueError(f"names request dim {next(d for d in named if not 0 <= d < rank)}; the tile has "
                             f"{rank} dims (0 to {rank - 1})")
        return v


class RelayoutOut(Out):
    """A row pitch the plan needs re-allocated (options.allow_padding)."""

    side: Literal["src", "dst"] = Field(description="which tensor")
    old_stride_bytes: int = Field(description="the pitch as given")
    new_stride_bytes: int = Field(description="the pitch the plan moves into (a multiple of 16 bytes)")


class PlanOut(Out):
    """One lowering plan. The plan-level fields repeat its core (first) piece's; `descriptors`
    are every piece's. `term` is the planner's formulation (see the README's term language)."""

    kind: KindName = Field(description="what the plan moves: copy, gather or load_tile")
    strategy: StrategyName = Field(description="how: direct, tma, staged_smem, shuffle or inspector_executor")
    term: str = Field(description="the planner's formulation as an s-expression: e.g. (Staged (Copy eb sa da "
                      "(DCons extent src_stride dst_stride ...))), strides in elements of eb bytes (Copy's first "
                      "argument; contiguous elements widened up to 16 bytes); every constructor is documented in "
                      "the README's 'The term language'")
    tile: list[int] = Field(description="the core piece's tile")
    grid: list[int] = Field(description="the core piece's grid")
    num_warps: Warps = Field(description="the core piece's warps per program")
    num_stages: Stages = Field(description="pipeline stages (1 when not pipelined)")
    smem_budget_bytes: int = Field(description="shared memory per block the plan's fields fit (options.smem_bytes, "
                                   "or the target's limit)")
    vector_bytes: int | None = Field(description="the core piece's bytes per access")
    descriptors: list[DescriptorOut] = Field(description="every TMA descriptor of the plan")
    placeholder_addresses: list[int] | None = Field(
        None, description="the PLACEHOLDER values the descriptors' global_address fields hold (2^40 + the base "
                          "alignment the plan assumes), not real pointers: the client (legalsat.clients.triton) "
                          "encodes each descriptor with its tensor's pointer; null when the plan has no descriptor")
    smem: SmemOut | None = Field(description="the core piece's shared-memory tile")
    async_: AsyncOut | None = Field(alias="async", description="the core piece's asynchronous protocol")
    gather: GatherOut | None = Field(description="gathers: how the indices are walked")
    pieces: list[PieceOut] = Field(description="every region and how it is moved")
    relayout: list[RelayoutOut] = Field(description="pitches the plan needs re-allocated")
    cost: CostOut = Field(description="the estimate that ranked this plan")
    proof: ProofOut = Field(description="the islpy proof")
    explain: list[str] | None = Field(None, description="options.explain: why this plan ranks where it does: its "
                                      "headline (what dominates the estimate), its rank against the others, the "
                                      "estimate taken apart (launches; bytes at the target's copy bandwidth x the "
                                      "efficiency it implies), access widths, sector use, bank-conflict ways, TMA "
                                      "boxes and stages, the inspector's passes, and per solved field the "
                                      "constraint that is tight ('limit: ...')")
    tile_load: TileLoadOut | None = Field(None, description="tile loads: the walk, the boxes and the stage layout")


class RejectedOut(Out):
    """A strategy without a plan."""

    strategy: StrategyName = Field(description="the strategy")
    term: str | None = Field(description="its best formulation, or null when the e-graph offered none")
    reasons: list[ReasonOut] = Field(description="why it has no plan")


class RulesetStepOut(Out):
    """One ruleset's run inside one saturation iteration."""

    iteration: int = Field(description="the iteration (0: the final strategy passes)")
    ruleset: str = Field(description="analysis, layout, padding or strategy")
    matches: int = Field(description="rule matches applied")
    nodes_added: int = Field(description="e-nodes the run added (all tables)")
    time_ms: float = Field(description="wall time of the run")


class SaturationReportOut(Out):
    """What saturation did, iteration by iteration and ruleset by ruleset."""

    steps: list[RulesetStepOut] = Field(description="every ruleset run, in order")
    rule_matches: dict[str, int] = Field(description="matches per named rule over the whole run (rules that "
                                         "never matched are left out)")


class EgraphOut(Out):
    """The saturated e-graph's size and how saturation ended."""

    enodes: int = Field(description="e-nodes of the term sorts")
    eclasses: int = Field(description="e-classes of the term sorts")
    iterations: int = Field(description="completed saturation rounds")
    stop_reason: Literal["saturated", "node_limit", "time_limit", "iteration_limit"] = Field(
        description="saturated: nothing changed; node_limit / time_limit / iteration_limit: a limit stopped it")
    report: SaturationReportOut | None = Field(None, description="per iteration and ruleset")
    snapshot: str | None = Field(None, description="egraph-serialize JSON (command line / Python API with "
                                 "keep_egraph)")
    id: str | None = Field(None, description="the service keeps the e-graph instead: GET /v1/egraphs/{id} "
                           "(JSON) and /v1/egraphs/{id}/view (HTML)")


class TimingsOut(Out):
    """Milliseconds per stage."""

    parse: float = Field(description="validation of the request")
    saturate: float = Field(description="equality saturation")
    extract: float = Field(description="extraction of the best term per strategy")
    solve: float = Field(description="z3 field solving, descriptors, protocols")
    verify: float = Field(description="islpy proofs")
    total: float = Field(description="the whole request")


class OptimizeResponse(Out):
    """Plans, best first, for one request; or status infeasible with every strategy's reasons."""

    request_id: str = Field(description="the request's id, or a generated one")
    target: str = Field(description="the hardware target planned for")
    planner: str = Field(description="the planner's version (plans are cached per version)")
    term: str = Field(description="the request's movement as an s-expression")
    status: Literal["ok", "infeasible", "incomplete"] = Field(
        description="ok: at least one plan; infeasible: none, each strategy's reasons in rejected; incomplete: none, "
                    "and a limit (options.timeout_ms, the service's deadline, options.node_limit) cut some strategy "
                    "short (its reasons in rejected say which): a larger budget may plan it")
    # (1.1: legalsat.planner.rank.LAUNCH_BOUND, which the kernels' import of this module may not load)
    plans: list[PlanOut] = Field(description="plans of distinct strategies, best first: by estimate, except "
                                 "that plans within 1.1 x one launch (launch-bound: their estimates differ by less "
                                 "than the model resolves) rank by estimate + their largest program's time, pointer "
                                 "kernels before TMA pipelines and shuffles (each plan's explain says which applied)")
    rejected: list[RejectedOut] = Field(description="strategies without a plan, and why")
    egraph: EgraphOut = Field(description="the saturated e-graph")
    timings_ms: TimingsOut = Field(description="time per stage")
    warnings: list[ErrorOut] | None = Field(None, description="valid input that is likely not what was "
                                            "meant (e.g. strides given in bytes), each with its field and "
                                            "what to do; absent when there is none")


def validate_response(obj: dict) -> OptimizeResponse:
    """Check a response dict against the published models."""
    return OptimizeResponse.model_validate(obj)
