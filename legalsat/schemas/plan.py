"""The optimize response: pydantic models whose JSON Schema legalsat publishes
(`legalsat schema`, and `schemas/` in the repository). `pipeline.optimize` returns dicts of
exactly this shape; the tests validate every suite response against these models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Reason(_Out):
    rule: str
    message: str
    fix: str


class DescriptorOut(_Out):
    """Exactly the validate-descriptor input fields (innermost first), plus the role."""

    dtype: str
    rank: int
    global_address: int
    global_dim: list[int]
    global_strides: list[int]
    box_dim: list[int]
    element_strides: list[int]
    interleave: str
    swizzle: str
    l2_promotion: str
    oob_fill: str
    role: Literal["load", "store"]


class SmemOut(_Out):
    bytes_per_stage: int
    stages: int
    swizzle: str
    padding_bytes: int
    write_conflict_ways: float | None
    read_conflict_ways: float | None
    store_buffer_bytes: int | None = None
    boxes_per_stage: int | None = None


class AsyncOut(_Out):
    protocol: dict
    verified: bool
    verifier: str
    violations: list[dict]


class ProofOut(_Out):
    method: Literal["isl"]
    verified: bool
    equal: bool
    injective: bool
    relation: str


class CostOut(_Out):
    estimated_us: float
    bytes_moved: int
    estimated_tbps: float | None
    model: str


class DimOut(_Out):
    extent: int
    src_stride: int
    dst_stride: int


class PieceOut(_Out):
    """One region of a copy (a core, or a ragged tail) and how it is moved."""

    src_offset_bytes: int
    dst_offset_bytes: int
    element_bytes: int
    dims: list[DimOut]
    strategy: str
    tile: list[int]
    grid: list[int]
    num_warps: int
    vector_bytes: int
    store_vector_bytes: int | None = None
    num_stages: int | None = None
    descriptors: list[DescriptorOut] | None = None
    smem: SmemOut | None = None
    async_: AsyncOut | None = Field(None, alias="async")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RelayoutOut(_Out):
    side: Literal["src", "dst"]
    old_stride_bytes: int
    new_stride_bytes: int


class PlanOut(_Out):
    strategy: Literal["direct", "tma", "staged_smem", "shuffle", "inspector_executor"]
    term: str
    tile: list[int]
    grid: list[int]
    num_warps: int
    num_stages: int
    vector_bytes: int | None
    descriptors: list[DescriptorOut]
    smem: SmemOut | None
    async_: AsyncOut | None = Field(None, alias="async")
    gather: dict | None
    pieces: list[dict]
    relayout: list[RelayoutOut]
    cost: CostOut
    proof: ProofOut
    explain: list[str] | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RejectedOut(_Out):
    strategy: str
    term: str | None
    reasons: list[Reason]


class EgraphOut(_Out):
    enodes: int
    eclasses: int
    iterations: int
    stop_reason: Literal["saturated", "node_limit", "time_limit", "iteration_limit"]
    snapshot: str | None = Field(None, description="egraph-serialize JSON (command line / Python API "
                                 "with keep_egraph)")
    id: str | None = Field(None, description="the service keeps the e-graph instead: GET "
                           "/v1/egraphs/{id} (JSON) and /v1/egraphs/{id}/view (HTML)")


class TimingsOut(_Out):
    parse: float
    saturate: float
    extract: float
    solve: float
    verify: float
    total: float


class OptimizeResponse(_Out):
    request_id: str
    target: str
    planner: str
    term: str
    status: Literal["ok", "infeasible"]
    plans: list[PlanOut]
    rejected: list[RejectedOut]
    egraph: EgraphOut
    timings_ms: TimingsOut


def validate_response(obj: dict) -> OptimizeResponse:
    """Check a response dict against the published models."""
    return OptimizeResponse.model_validate(obj)
