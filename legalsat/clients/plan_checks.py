"""Checks of a plan handed back to legalsat (`legalsat emit`, `build_kernel`) that need more than
its own fields: its TMA descriptors as the driver would judge them, and, where the response's
term gives the request, that a copy's pieces move the request's elements once each. A plan
edited after planning fails here with its field named, before any kernel is built or run.
No torch: the command line runs them too."""

from __future__ import annotations

from legalsat.diagnostics import InputError
from legalsat.kernels.words import plan_error
from legalsat.schemas.plan import PlanOut
from legalsat.terms.dtypes import ELEMENT_TYPES
from legalsat.terms.movement import MovementKind
from legalsat.terms.strategy import Strategy


def check_plan(plan: PlanOut, request_op: dict | None, target: str | None = None) -> None:
    """InputError naming the first field of `plan` that no plan of the planner's has: a piece
    moved by another strategy than its plan's (a ragged tail may be direct), a descriptor the
    driver refuses, or (with the request) a copy between element types or one whose pieces do
    not cover its views once. `target`: the response's (its descriptors are judged by that
    target's rules; sm90's for a plan alone)."""
    for i, p in enumerate(plan.pieces):
        if p.strategy not in (plan.strategy, Strategy.DIRECT.value):
            raise plan_error(f"pieces[{i}].strategy", f"a {plan.strategy} plan's piece is moved {p.strategy}; its "
                             f"pieces are {plan.strategy} (a ragged tail direct)")
    _check_descriptors(plan, target or "sm90")
    if request_op is not None and MovementKind(plan.kind) is MovementKind.COPY:
        src, dst = request_op.get("src"), request_op.get("dst")
        if isinstance(src, dict) and isinstance(dst, dict) and src.get("dtype") != dst.get("dtype"):
            raise plan_error("term", f"the response's term copies {src.get('dtype')} into {dst.get('dtype')}; a "
                             "copy keeps its element type (the planner refuses a cast)",
                             "pass the response as the planner returned it")
        _check_covers(plan, request_op)


def _check_descriptors(plan: PlanOut, target_name: str) -> None:
    """Every TMA descriptor of the plan, as cuTensorMapEncodeTiled would take it on
    `target_name`: the rules `legalsat validate-descriptor` applies (a plan's descriptor is
    that command's input as it stands). A descriptor edited after planning fails here, named, rather than in
    the driver or in Triton at the first call."""
    from legalsat.analyses.tma_legality import check_descriptor
    from legalsat.schemas.descriptors import parse_descriptor
    from legalsat.targets import resolve_target

    found = [(f"descriptors[{i}]", d) for i, d in enumerate(plan.descriptors or [])]
    found += [(f"pieces[{j}].descriptors[{i}]", d) for j, p in enumerate(plan.pieces)
              for i, d in enumerate(p.descriptors or [])]
    if not found:
        return
    try:
        target = resolve_target(target_name, field="target")
    except InputError:
        raise plan_error("target", f"the response's target {str(target_name)[:40]!r} is not one this client knows",
                         "pass the response as the planner returned it") from None
    if target.tma is None:
        raise plan_error("descriptors", f"a plan for {target.name} carries TMA descriptors; {target.name} has no TMA")
    for where, d in found:
        try:
            verdict = check_descriptor(parse_descriptor(d.model_dump()), target)
        except InputError as e:
            bad = e.details[0]
            raise plan_error(f"{where}.{bad.field}" if bad.field else where, bad.message) from None
        if not verdict.legal:
            bad = verdict.violations[0]
            raise plan_error(f"{where}.{bad.field}" if bad.field else where,
                             f"the driver refuses this descriptor ({bad.id}): {bad.message}")


def _check_covers(plan: PlanOut, op: dict) -> None:
    """The copy plan's pieces move every element of the request's views once, each to its
    place: the planner's own proof (legalsat.planner.prove), run on the pieces as passed (as
    many bytes as the views hold is not enough: two pieces over one run left another unwritten)."""
    from legalsat.planner.formulation import Region
    from legalsat.planner.prove import Walk, prove_copy

    src, dst = op["src"], op["dst"]
    es = ELEMENT_TYPES[src["dtype"]].storage_bits // 8
    walks = []
    for i, p in enumerate(plan.pieces):
        if p.element_bytes % es:
            raise plan_error(f"pieces[{i}].element_bytes", f"{p.element_bytes}-byte elements are not whole "
                             f"{es}-byte elements of the request", "plan the request again")
        dims = tuple((d.extent, d.src_stride, d.dst_stride) for d in p.dims)
        walks.append(Walk(Region(p.element_bytes, 1, 1, dims, p.src_offset_bytes, p.dst_offset_bytes), linear=1))
    proof = prove_copy(tuple(src["shape"]), list(src["strides"]), list(dst["strides"]), es, walks)
    if not proof.ok:
        raise plan_error("pieces", "the plan's pieces do not move every element of the request's views once, each "
                         f"to its place ({'some twice' if not proof.injective else 'some elsewhere'}): the plan "
                         "is not the request's", "plan the request again (a plan edited after planning no longer "
                         "covers its views)")
