"""tools/misaligned_transpose_probe.py's tiles: the class tile bit-exact into misaligned rows of
every class count (interpreter) and its stores away from the edges whole 16-byte vectors (sm90);
the carry tile bit-exact with either halo, at the edges and across its programs' chunks."""

from __future__ import annotations

import pytest

from legalsat.kernels.source import HEADER_TL
from tests.kernels.client import compiled_in_child, require_client
from tools.misaligned_transpose_probe import carry_kernel, class_kernel, shear_kernel


@pytest.mark.parametrize("na,nb,pitch", [(24, 37, 37), (40, 45, 46), (19, 70, 75), (16, 33, 36), (16, 40, 40)])
def test_the_class_tile_is_bit_exact_into_misaligned_rows(monkeypatch, na, nb, pitch):
    require_client()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _transposes_bit_exact("class_tile", *class_kernel(na, nb, na, pitch, ta=16, tb=16), na, nb, pitch)


def _transposes_bit_exact(fn_name: str, text: str, grid: int, na: int, nb: int, pitch: int) -> None:
    """Kernel `fn_name` of `text` run (interpreted) on `grid` programs writes the transpose of a
    random nb x na bf16 source into na rows of pitch `pitch`, and nothing past a row's end."""
    import torch

    from legalsat.clients.triton import load_module

    fn = getattr(load_module(HEADER_TL + "\n" + text), fn_name)
    src = torch.randn(nb, na).to(torch.bfloat16)
    dst = torch.full((na * pitch,), float("nan"), dtype=torch.bfloat16)
    fn[(grid,)](src, dst)
    got = dst.view(na, pitch)
    assert torch.equal(got[:, :nb].view(torch.int16), src.t().contiguous().view(torch.int16))
    assert got[:, nb:].isnan().all()


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


@pytest.mark.parametrize("na,nb,pitch,ta,tb,steps,halo", [
    (64, 1001, 1001, 32, 16, 3, "carry"), (64, 1001, 1003, 32, 32, 4, "reload"),
    (96, 777, 777, 64, 64, 2, "carry"),  # rows past the last full tile of rows
    (40, 300, 310, 16, 64, 1, "reload"), (16, 33, 40, 16, 16, 1, "carry")])
def test_the_carry_tile_is_bit_exact_into_misaligned_rows(monkeypatch, na, nb, pitch, ta, tb, steps, halo):
    require_client()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _transposes_bit_exact("carry_tile", *carry_kernel(na, nb, na, pitch, ta, tb, steps, halo), na, nb, pitch)


def test_a_carry_tile_of_unsupported_shape_is_refused():
    with pytest.raises(ValueError, match="tb at least a sector"):
        carry_kernel(4096, 50257, 4096, 50257, ta=128, tb=8, steps=4)
    with pytest.raises(ValueError, match="halo 'carry' or 'reload'"):
        carry_kernel(4096, 50257, 4096, 50257, ta=128, tb=64, steps=4, halo="both")
