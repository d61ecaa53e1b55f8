"""The one conversion of the planner's typed answer to the published models.

Models are built with exactly the fields the plan has (a direct piece has no `smem`), so
`model_dump(exclude_unset=True)` writes each plan as compactly as it is; the JSON Schema
still describes every field.
"""

from __future__ import annotations

from legalsat.diagnostics import Diagnostic
from legalsat.planner.plan import (
    AsyncPipeline,
    Descriptor,
    GatherPlan,
    Piece,
    Plan,
    PlanResponse,
    Rejected,
    SmemLayout,
    TileLoadPlan,
)
from legalsat.planner.reports import SaturationReport
from legalsat.schemas.base import ErrorOut
from legalsat.schemas.plan import (
    AsyncOut,
    CostOut,
    DescriptorOut,
    DimOut,
    EgraphOut,
    ExecutorOut,
    GatherOut,
    InspectorOut,
    KSliceOut,
    LayoutDimOut,
    OptimizeResponse,
    PieceOut,
    PlanOut,
    ProofOut,
    ReasonOut,
    RejectedOut,
    RelayoutOut,
    RulesetStepOut,
    SaturationReportOut,
    SmemOut,
    StageLayoutOut,
    TileBoxOut,
    TileLoadOut,
    TimingsOut,
    WgmmaOut,
)
from legalsat.schemas.protocol import protocol_model


def _set(**fields) -> dict:
    """The fields that have a value (the others stay unset)."""
    return {k: v for k, v in fields.items() if v is not None}


def descriptor_out(d: Descriptor) -> DescriptorOut:
    t = d.tma
    return DescriptorOut(dtype=t.dtype.name, rank=t.rank, global_address=t.global_address,
                         global_dim=list(t.global_dim), global_strides=list(t.global_strides),
                         box_dim=list(t.box_dim), element_strides=list(t.element_strides),
                         interleave=t.interleave.value, swizzle=t.swizzle.value,
                         l2_promotion=t.l2_promotion.value, oob_fill=t.oob_fill.value, role=d.role)


def smem_out(s: SmemLayout | None) -> SmemOut | None:
    if s is None:
        return None
    return SmemOut(bytes_per_stage=s.bytes_per_stage, stages=s.stages, swizzle=s.swizzle.value,
                   padding_bytes=s.padding_bytes, write_conflict_ways=s.write_conflict_ways,
                   read_conflict_ways=s.read_conflict_ways,
                   **_set(store_buffer_bytes=s.store_buffer_bytes, boxes_per_stage=s.boxes_per_stage))


def async_out(p: AsyncPipeline | None) -> AsyncOut | None:
    if p is None:
        return None
    return AsyncOut(protocol=protocol_model(p.protocol), verified=p.verified, verifier=p.verifier, violations=[])


def piece_out(p: Piece) -> PieceOut:
    return PieceOut(src_offset_bytes=p.src_offset_bytes, dst_offset_bytes=p.dst_offset_bytes,
                    element_bytes=p.element_bytes,
                    dims=[DimOut(extent=d.extent, src_stride=d.src_stride, dst_stride=d.dst_stride) for d in p.dims],
                    strategy=p.strategy.value, tile=list(p.tile), grid=list(p.grid), num_warps=p.num_warps,
                    vector_bytes=p.vector_bytes,
                    **_set(store_vector_bytes=p.store_vector_bytes, num_stages=p.num_stages,
                           descriptors=None if p.descriptors is None else [descriptor_out(d) for d in p.descriptors],
                           smem=smem_out(p.smem), async_=async_out(p.pipeline),
                           shifted_loads=p.shifted_loads or None, skewed_stores=p.skewed_stores or None))


def gather_out(g: GatherPlan | None) -> GatherOut | None:
    if g is None:
        return None
    more = _set(
        inspector=g.inspector and InspectorOut(buckets=g.inspector.buckets, passes=list(g.inspector.passes),
                                               index_bytes=g.inspector.index_bytes,
                                               step_elements=g.inspector.step_elements,
                                               smem_bytes=g.inspector.smem_bytes),
        executor=g.executor and ExecutorOut(tile_rows=g.executor.tile_rows, grouped_by=g.executor.grouped_by),
        window_rows=g.window_rows)
    return GatherOut(index_count=g.index_count, distribution=g.distribution, unit=g.unit, slab_bytes=g.slab_bytes,
                     rows_per_program=g.rows_per_program, axis=g.axis, index_bound=g.index_bound,
                     src_index_stride_bytes=g.src_index_stride_bytes,
                     out_index_stride_bytes=g.out_index_stride_bytes, out_shape=list(g.out_shape), groups=g.groups,
                     **more)


def tile_load_out(t: TileLoadPlan) -> TileLoadOut:
    w = t.wgmma
    layout = StageLayoutOut(dims=[LayoutDimOut(parts=[list(x) for x in d.parts], box=d.box, boxes=d.boxes,
                                               stride=d.stride, box_stride=d.box_stride) for d in t.layout.dims],
                            element_bytes=t.layout.element_bytes, swizzle=t.layout.swizzle.value)
    wgmma = None if w is None else WgmmaOut(
        major=w.major.value, layout_type=w.layout_type, swizzle=w.swizzle.value, lbo_bytes=w.lbo_bytes,
        sbo_bytes=w.sbo_bytes, k_slices=[KSliceOut(k0=s.k0, start_offset_bytes=s.start_offset_bytes,
                                                   base_offset=s.base_offset) for s in w.k_slices],
        mn_block=w.mn_block, mn_block_bytes=w.mn_block_bytes, element=w.element)
    return TileLoadOut(grid=list(t.grid), coords=[[list(x) for x in c] for c in t.coords],
                       boxes=[TileBoxOut(origin=list(b.origin), smem_offset_bytes=b.smem_offset_bytes) for b in t.boxes],
                       layout=layout, oob_fill=t.oob_fill, folded=list(t.folded), broadcast=list(t.broadcast),
                       extents=list(t.extents) or None,
                       consumer=t.consumer, read_conflict_ways=t.read_conflict_ways, wgmma=wgmma,
                       estimated_us_per_tile=t.estimated_us_per_tile,
                       **_set(note=t.note.message if t.note else None))


def plan_out(p: Plan) -> PlanOut:
    c = p.cost
    return PlanOut(
        kind=p.kind.value, strategy=p.strategy.value, term=p.term, tile=list(p.tile), grid=list(p.grid),
        num_warps=p.num_warps, num_stages=p.num_stages, smem_budget_bytes=p.smem_budget_bytes,
        vector_bytes=p.vector_bytes,
        descriptors=[descriptor_out(d) for d in p.descriptors],
        placeholder_addresses=sorted({d.tma.global_address for d in p.descriptors}) or None, smem=smem_out(p.smem),
        async_=async_out(p.pipeline), gather=gather_out(p.gather), pieces=[piece_out(x) for x in p.pieces],
        relayout=[RelayoutOut(side=r.side, old_stride_bytes=r.old_stride_bytes, new_stride_bytes=r.new_stride_bytes)
                  for r in p.relayout],
        cost=CostOut(estimated_us=c.estimated_us, bytes_moved=c.bytes_moved, estimated_tbps=c.estimated_tbps,
                     model=c.model),
        proof=ProofOut(method=p.proof.method, verified=p.proof.ok, equal=p.proof.equal, injective=p.proof.injective,
                       relation=p.proof.relation),
        **_set(explain=None if p.explain is None else list(p.explain),
               tile_load=None if p.tile_load is None else tile_load_out(p.tile_load)))


def reason_out(d: Diagnostic) -> ReasonOut:
    return ReasonOut(rule=d.id, message=d.message, fix=d.fix)


def rejected_out(r: Rejected) -> RejectedOut:
    return RejectedOut(strategy=r.strategy.value, term=r.term, reasons=[reason_out(d) for d in r.reasons])


def report_out(s: SaturationReport) -> SaturationReportOut:
    return SaturationReportOut(
        steps=[RulesetStepOut(iteration=x.iteration, ruleset=x.ruleset, matches=x.matches,
                              nodes_added=x.nodes_added, time_ms=x.time_ms) for x in s.steps],
        rule_matches=dict(s.rule_matches))


def response_out(r: PlanResponse, parse_ms: float = 0.0) -> OptimizeResponse:
    """The published response of a planner answer; `parse_ms` is the validation time the
    caller spent before planning (added to the stage timings)."""
    s = r.saturation
    t = r.timings_ms
    return OptimizeResponse(
        request_id=r.request_id, target=r.target, planner=r.planner, term=r.term, status=r.status,
        plans=[plan_out(p) for p in r.plans], rejected=[rejected_out(x) for x in r.rejected],
        egraph=EgraphOut(enodes=s.enodes, eclasses=s.eclasses, iterations=s.iterations,
                         stop_reason=s.stop_reason.value, report=report_out(s), **_set(snapshot=r.snapshot)),
        timings_ms=TimingsOut(parse=round(parse_ms, 3), **{k: t[k] for k in ("saturate", "extract", "solve", "verify")},
                              total=round(t["total"] + parse_ms, 3)),
        **_set(warnings=[ErrorOut(**w.to_error()) for w in r.warnings] or None))
