"""tools/misaligned_transpose_probe.py's class tile: bit-exact into misaligned rows of every
class count (interpreter), and its stores away from the edges whole 16-byte vectors (sm90)."""

from __future__ import annotations

import pytest

from legalsat.kernels.source import HEADER_TL
from tests.kernels.client import compiled_in_child, require_client
from tools.misaligned_transpose_probe import class_kernel, shear_kernel


@pytest.mark.parametrize("na,nb,pitch", [(24, 37, 37), (40, 45, 46), (19, 70, 75), (16, 33, 36), (16, 40, 40)])
def test_the_class_tile_is_bit_exact_into_misaligned_rows(monkeypatch, na, nb, pitch):
    require_client()
    import torch

    from legalsat.clients.triton import load_module

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    text, grid = class_kernel(na, nb, na, pitch, ta=16, tb=16)
    fn = load_module(HEADER_TL + "\n" + text).class_tile
    src = torch.randn(nb, na).to(torch.bfloat16)
    dst = torch.full((na * pitch,), float("nan"), dtype=torch.bfloat16)
    fn[(grid,)](src, dst)
    got = dst.view(na, pitch)
    assert torch.equal(got[:, :nb].view(torch.int16), src.t().contiguous().view(torch.int16))
    assert got[:, nb:].isnan().all()  # nothing past a row's end


def test_the_class_tile_stores_whole_vectors_away_from_the_edges():
    require_client()
    out = compiled_in_child("from tools.misaligned_transpose_probe import sm90_ptx; "
                            "print(sm90_ptx().count('st.global.v4.b32'))")
    # one vector store a thread for each of the 8 classes of rows (pitch 50257: 8 alignments)
    assert int(out.split()[-1]) == 8


def test_a_tile_the_alignment_hint_would_not_hold_for_is_refused():
    with pytest.raises(ValueError, match="power-of-two multiple of the 8 classes"):
        class_kernel(4096, 50257, 4096, 50257, ta=4, tb=64)
    with pytest.raises(ValueError, match="whole 8-element vectors"):
        class_kernel(4096, 50257, 4096, 50257, ta=128, tb=4)


def test_the_shear_tile_shuffles_once_an_element_and_stores_whole_vectors():
    require_client()
    out = compiled_in_child("from tools.misaligned_transpose_probe import shear_sm90_ptx; "
                            "p = shear_sm90_ptx(128, 2, 4); print(p.count('shfl.sync.idx'), "
                            "p.count('st.global.v4.b32'), p.count('ld.global.v4.b32'))")
    shuffles, stores, loads = map(int, out.split()[-3:])
    # 128 threads, 32 x 128 elements a segment: 32 a thread; 3 segments loaded (two and the
    # next one's half), 2 stored as 16-byte vectors (4 a thread each) away from the edges
    assert shuffles == 3 * 32 and stores == 2 * 4
    assert loads == 2 * 3 * 4  # whole vectors, in both branches


def test_a_shear_tile_of_unsupported_shape_is_refused():
    with pytest.raises(ValueError, match="ta a power of two in 16..256"):
        shear_kernel(4096, 50257, 4096, 50257, ta=96, segments=2, warps=4)
    with pytest.raises(ValueError, match="warps a power of two up to ta / 8"):
        shear_kernel(4096, 50257, 4096, 50257, ta=16, segments=2, warps=4)
    with pytest.raises(ValueError, match="align 64: 16, 32 or 64 elements, dividing the step of 32"):
        shear_kernel(4096, 50257, 4096, 50257, ta=128, segments=1, warps=4, align=64)
