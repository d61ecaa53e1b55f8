"""`legalsat.clients.triton.matmul`: its operands are planned as tile loads, the tl GEMM runs
in the interpreter (fp16: the interpreter has no bf16 descriptors) and matches an fp32
reference as fp16 rounding allows, for K-major and MN-major B, ragged M, N and K, an N whose
row pitch TMA cannot take (relaid out by legalsat's copy plan, C returned as a padded view);
bad arguments are named."""

from __future__ import annotations

import pytest

from legalsat.diagnostics import InputError
from tests.kernels.client import require_client

SHAPES = [  # M, K, N, B stored as [N, K] (K-major) or not
    (128, 64, 128, False),
    (200, 96, 136, True),
    (130, 80, 72, False),
    (64, 48, 300, True),
    (96, 64, 131, False),  # a pitch of 262 bytes: B is relaid out, C is a padded view
]


@pytest.mark.parametrize("m,k,n,kmajor", SHAPES)
def test_tl_gemm_matches_fp32_reference(m, k, n, kmajor):
    require_client()
    import torch

    from legalsat.clients.triton import matmul

    gen = torch.Generator().manual_seed(m * n + k)
    a = torch.randn(m, k, generator=gen).half()
    b = torch.randn(n, k, generator=gen).half().t() if kmajor else torch.randn(k, n, generator=gen).half()
    c = matmul(a, b, variant="tl")
    ref = a.float() @ b.float()
    assert c.shape == (m, n) and c.dtype == torch.float16
    assert (c.float() - ref).abs().max() <= 2 ** -9 * ref.abs().max() + 1e-3 * k ** 0.5
    if (n * 2) % 16:
        assert c.stride(0) % 8 == 0 and c.stride(0) >= n  # rows padded to 16 bytes


def test_operand_plans_are_tma_and_what_the_gemm_takes():
    require_client()
    import torch

    from legalsat.clients.matmul import config, plan_operands

    a = torch.empty(1000, 4096, dtype=torch.bfloat16, device="meta")
    b = torch.empty(4096, 50257, dtype=torch.bfloat16, device="meta")  # pitch 100514 bytes
    a_plan, b_plan, b2 = plan_operands(a, b, 128, 256, 64)
    assert a_plan["strategy"] == b_plan["strategy"] == "tma"
    assert b2.stride(0) == 50264  # relaid out to a 16-byte pitch
    cfg = config(a_plan, b_plan, 128, 256, 64, 2, 2, "gluon")
    assert (cfg.a_swizzle, cfg.b_swizzle, cfg.b_kmajor) == (128, 128, False)
    assert cfg.smem_bytes(2, 2) <= 232448 and cfg.stages >= 2


def test_bad_arguments_are_named():
    require_client()
    import torch

    from legalsat.clients.triton import matmul

    a = torch.zeros(64, 32, dtype=torch.float16)
    with pytest.raises(InputError) as e:
        matmul(a, torch.zeros(16, 64, dtype=torch.float16))
    assert e.value.headline.field == "b"
    with pytest.raises(InputError) as e:
        matmul(a.float(), torch.zeros(32, 64))
    assert e.value.headline.field == "a" and "bfloat16" in e.value.headline.fix
    with pytest.raises(InputError) as e:
        matmul(a, torch.zeros(32, 64, dtype=torch.float16), variant="cuda")
    assert e.value.headline.field == "variant"


def test_bfloat16_in_the_interpreter_is_refused_not_wrong(monkeypatch):
    """bf16 operands in Triton's interpreter came back about 1e10 off (the interpreter reads bf16
    through TMA descriptors as raw integers), with no error; now they are refused by name."""
    require_client()
    import torch

    from legalsat.clients.triton import matmul

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    a, b = torch.zeros(64, 32, dtype=torch.bfloat16), torch.zeros(32, 64, dtype=torch.bfloat16)
    with pytest.raises(InputError) as e:
        matmul(a, b)
    assert e.value.headline.field == "a" and "float16" in e.value.headline.fix
