"""What every builder shares: descriptors checked by the legality model, the verified
asynchronous pipeline of a TMA plan, and a region's fields as a plan piece."""

from __future__ import annotations

import functools

from legalsat.analyses.tma_legality import check_descriptor
from legalsat.diagnostics import Code, InputError
from legalsat.planner.formulation import Region
from legalsat.planner.plan import AsyncPipeline, Descriptor, Dim
from legalsat.planner.solve import Infeasible
from legalsat.protocols.synth import TmaPipelineSpec, synthesize_tma_pipeline
from legalsat.targets import Target
from legalsat.terms.descriptor import Swizzle, TmaDescriptor, store_row_overrun
from legalsat.terms.dtypes import WORD_DTYPES

PLACEHOLDER_BASE = 1 << 40


def placeholder_address(align: int) -> int:
    """A global address whose alignment is exactly `align`: plans carry it where the real
    pointer goes (the client substitutes it; legality depends only on the alignment)."""
    return PLACEHOLDER_BASE + (align if align < 4096 else 0)


def checked(desc: TmaDescriptor, target: Target, role: str, prefix: str = "") -> Descriptor:
    """`desc` with its role, or Infeasible with the legality model's violations, and for a
    store, with the row rule the driver does not check: the TMA unit writes each box row in
    whole 16-byte chunks, so a row of n bytes (n not a multiple of 16) gets the bytes up to the
    next 16 written past its end: the gap before the next row, which is not the copy's."""
    violations = check_descriptor(desc, target).violations
    if violations:
        raise Infeasible([v.code.at(prefix + v.message, v.fix, field=v.field, index=v.index) for v in violations])
    row = desc.global_dim[0] * desc.dtype.storage_bits // 8
    if role == "store" and store_row_overrun(row):
        raise Infeasible([Code.TMA_STORE_ROW.at(
            f"{prefix}its rows are {row} bytes: a TMA store would write {store_row_overrun(row)} bytes past the end "
            "of each (whole 16-byte chunks), into the gap before the next row")])
    return Descriptor(desc, role)


def region_descriptor(r: Region, order: tuple[int, ...], box: tuple[int, ...], side: str, align: int,
                      target: Target, swizzle: Swizzle = Swizzle.NONE) -> Descriptor:
    """A descriptor over the region's dims in `order` (innermost first) in words of at most
    8 bytes (16-byte elements are word pairs), checked by the legality model."""
    dt_bytes = min(r.eb, 8)
    scale = r.eb // dt_bytes
    dims = [r.dims[k] for k in order]
    stride = 1 if side == "src" else 2
    desc = TmaDescriptor.from_fields(
        dtype=WORD_DTYPES[dt_bytes].name, rank=len(dims), global_address=placeholder_address(align),
        global_dim=[dims[0][0] * scale] + [d[0] for d in dims[1:]],
        global_strides=[d[stride] * r.eb for d in dims[1:]], box_dim=list(box),
        element_strides=[1] * len(dims), swizzle=swizzle.value, l2_promotion="128B")
    return checked(desc, target, "load" if side == "src" else "store", f"{side} descriptor: ")


def region_dims(r: Region) -> tuple[Dim, ...]:
    return tuple(Dim(n, s, d) for n, s, d in r.dims)


@functools.lru_cache(maxsize=512)
def _pipeline(spec: TmaPipelineSpec) -> AsyncPipeline:
    # cached: plans share pipeline shapes, and synthesis verifies every protocol it returns
    return AsyncPipeline(synthesize_tma_pipeline(spec))


def pipeline(spec: TmaPipelineSpec) -> AsyncPipeline:
    """The verified protocol of a TMA pipeline, or Infeasible when not one stage fits."""
    try:
        return _pipeline(spec)
    except InputError as e:
        raise Infeasible([Code.SMEM_BUDGET.at(e.headline.message, e.headline.fix)]) from None
