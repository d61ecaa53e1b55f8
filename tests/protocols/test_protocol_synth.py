"""Protocol synthesis for TMA plans: every stage count verifies, the budget is respected."""

from __future__ import annotations

import json

import pytest

from legalsat.diagnostics import InputError
from legalsat.protocols.model import OpKind
from legalsat.protocols.synth import TmaPipelineSpec, fit_stages, synthesize_tma_pipeline
from legalsat.protocols.verify import verify_protocol
from legalsat.schemas.protocol import parse_protocol
from legalsat.testing.protocols import protocol_json


@pytest.mark.parametrize("stages", range(1, 7))
@pytest.mark.parametrize("roles", [1, 2])
@pytest.mark.parametrize("store_bytes, store_buffers", [(0, 1), (16384, 1), (16384, 2)])
def test_synthesized_protocols_verify(stages, roles, store_bytes, store_buffers):
    spec = TmaPipelineSpec((16384, 8192), store_bytes=store_bytes, store_buffers=store_buffers,
                           stages=stages, roles=roles, smem_bytes=1 << 20)
    proto = synthesize_tma_pipeline(spec)
    assert verify_protocol(proto).ok
    # the round trip through the JSON form plans carry
    assert parse_protocol(json.dumps(protocol_json(proto))) == proto


def test_expect_tx_announces_exactly_the_stage_bytes():
    proto = synthesize_tma_pipeline(TmaPipelineSpec((16384, 8192, 48), stages=3))
    expects = {op.bytes for r in proto.roles for op in r.ops() if op.kind is OpKind.EXPECT_TX}
    assert expects == {16384 + 8192 + 48}


def test_stage_count_fits_the_shared_memory_budget():
    # 3 x (64 KiB + 8 B) fits in 227 KiB, 4 stages do not
    assert fit_stages(TmaPipelineSpec((65536,), max_stages=8)) == 3
    assert fit_stages(TmaPipelineSpec((16384,), max_stages=4)) == 4
    with pytest.raises(InputError) as e:
        synthesize_tma_pipeline(TmaPipelineSpec((65536,), stages=4))
    assert e.value.headline.field == "stages" and "at most 3" in e.value.headline.fix
    with pytest.raises(InputError):
        synthesize_tma_pipeline(TmaPipelineSpec((300000,)))


def test_two_role_shape_has_full_and_empty_barriers():
    proto = synthesize_tma_pipeline(TmaPipelineSpec((16384,), stages=2, roles=2))
    assert [b.name for b in proto.barriers] == ["full", "empty"]
    assert [r.name for r in proto.roles] == ["producer", "consumer"]
