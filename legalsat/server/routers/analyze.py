"""POST /v1/descriptors/validate and /v1/analyze/bank-conflicts: answered in the event loop
(microseconds each, no worker needed: their bodies hold at most SMALL_REQUEST_VALUES values)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request

from legalsat import api
from legalsat.schemas.bank import BankReportOut, RawAccessIn, TileAccessIn
from legalsat.schemas.descriptors import DescriptorIn, VerdictOut
from legalsat.server.deps import ServiceState, parse_json, read_body, service
from legalsat.server.errors import error_responses
from legalsat.server.openapi import json_body

# values in a descriptor or a bank-conflict request: tens (a 32-lane instruction's offsets,
# a rank-5 descriptor's lists); a body of a million is refused by a count, not validated
SMALL_REQUEST_VALUES = 4096

router = APIRouter(tags=["analyses"])
_ERRORS = error_responses(401, 408, 413, 415, 422)


# set fields only, as the commands write them (`model_json`): no "error": null of the command
# line's JSON Lines answers
@router.post("/v1/descriptors/validate", response_model=VerdictOut, response_model_exclude_unset=True,
             openapi_extra=json_body(DescriptorIn),
             responses=_ERRORS, summary="Is this TMA descriptor legal?")
async def validate_descriptor(request: Request, target: str | None = Query(
        None, description="hardware target (default: the server's LEGALSAT_TARGET)"),
        state: ServiceState = Depends(service)) -> VerdictOut:
    """Judges the arguments of one `cuTensorMapEncodeTiled` call (innermost dimension first,
    strides in bytes) with the model that agrees with the CUDA driver; each violation names
    its rule, field and fix."""
    obj = await parse_json(await read_body(request), "a descriptor", max_values=SMALL_REQUEST_VALUES)
    return api.validate_descriptor(obj, state.settings.target if target is None else target)


@router.post("/v1/analyze/bank-conflicts", response_model=BankReportOut, response_model_exclude_unset=True,
             openapi_extra=json_body(RawAccessIn, TileAccessIn), responses=_ERRORS,
             summary="Shared-memory wavefronts of a warp access")
async def bank_conflicts(request: Request, state: ServiceState = Depends(service)) -> BankReportOut:
    """Wavefronts of one warp instruction (per-lane byte offsets) or of a tile walked by a
    warp pattern (rows, cols, ldmatrix); the request's `target` defaults to the server's."""
    obj = await parse_json(await read_body(request), "a bank-conflict request", max_values=SMALL_REQUEST_VALUES)
    return api.analyze_bank_conflicts(obj, state.settings.target)
