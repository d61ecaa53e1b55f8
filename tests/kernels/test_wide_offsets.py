"""Kernels whose offsets pass 2^31 words: every index term is int64 (tile loads' direct walk,
row gathers, staged and shuffle copies formed int32 terms, a block index times a stride or a
tile index that is a plain 0, and read at wrapped negative offsets: the interpreter died). Run
in Triton's interpreter over views whose storage is allocated but touched only at their
elements."""

from __future__ import annotations

import re

import pytest

from legalsat.api import optimize

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

G = 1 << 30
CASES = {
    "tile direct": ({"kind": "load_tile", "src": {"dtype": "uint8", "shape": [3, 16], "strides": [G, 1]},
                     "tile": [1, 16], "consumer": "rows"}, "direct"),
    "tile direct, a stride past int32": ({"kind": "load_tile", "src": {"dtype": "uint8", "shape": [2],
                                                                       "strides": [2 * G + 16]},
                                          "tile": [1], "consumer": "rows"}, "direct"),
    "row gather": ({"kind": "gather", "src": {"dtype": "uint8", "shape": [1, 3], "strides": [3, G]}, "axis": 0,
                    "index": {"count": 1}}, "direct"),
    "MoE row gather": ({"kind": "gather", "src": {"dtype": "uint8", "shape": [4, 3], "strides": [3, G]}, "axis": 0,
                        "index": {"count": 4, "groups": 2}}, "direct"),
    "staged copy": ({"kind": "copy", "src": {"dtype": "uint8", "shape": [16, 3], "strides": [1, G]},
                     "dst": {"dtype": "uint8", "shape": [16, 3], "strides": [3, 1]}}, "staged_smem"),
    "shuffle copy": ({"kind": "copy", "src": {"dtype": "uint8", "shape": [13, 2, 4], "strides": [1, 13, 715827888]},
                      "dst": {"dtype": "uint8", "shape": [13, 2, 4], "strides": [8, 4, 1]}}, "shuffle"),
    "staged copy, a stride past int32": ({"kind": "copy", "src": {"dtype": "uint8", "shape": [16, 2], "strides": [2, 1]},
                                          "dst": {"dtype": "uint8", "shape": [16, 2], "strides": [1, 2 * G + 16]}},
                                         "staged_smem"),
}


def _plan(op: dict, strategy: str) -> tuple[dict, int]:
    resp = optimize({"op": op, "options": {"max_plans": 16}})
    return resp, next(i for i, p in enumerate(resp["plans"]) if p["strategy"] == strategy)


def _lazy(shape, strides, seed: int) -> torch.Tensor:
    """A view over a storage that is allocated (lazily, by the OS) but written only at its elements."""
    buf = torch.empty(1 + sum((n - 1) * s for n, s in zip(shape, strides)) + 64, dtype=torch.uint8)
    idx = torch.zeros(1, dtype=torch.int64)
    for n, s in zip(shape, strides):
        idx = (idx[:, None] + torch.arange(n)[None, :] * s).reshape(-1)
    buf[idx] = torch.randint(0, 256, (idx.numel(),), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))
    return buf.as_strided(shape, strides)


@pytest.mark.parametrize("name", list(CASES))
def test_kernels_past_2_31_words_index_in_int64(name, monkeypatch):
    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    op, strategy = CASES[name]
    resp, i = _plan(op, strategy)
    k = build_kernel(resp, plan_index=i, variant="tl")
    assert not re.search(r"tl\.arange\([^)]*\)(?!\.to\(tl\.int64\))", k.source), k.source
    src = _lazy(op["src"]["shape"], op["src"]["strides"], 0)
    if op["kind"] == "load_tile":
        from legalsat.testing.tiles import reference_tiles

        out = torch.full(k.out_shape, 0xA5, dtype=torch.uint8)
        k(src, out=out)
        assert torch.equal(out, reference_tiles(src, op["tile"]))
    elif op["kind"] == "gather":
        count = op["index"]["count"]
        index = torch.randint(0, src.shape[0], (count,), generator=torch.Generator().manual_seed(1))
        out = torch.full([count, *src.shape[1:]], 0xA5, dtype=torch.uint8)
        if op["index"].get("groups"):
            group = torch.randint(0, op["index"]["groups"], (count,), generator=torch.Generator().manual_seed(2))
            k(src, index, out, group=group)
            index = index[torch.argsort(group, stable=True)]
        else:
            k(src, index, out)
        assert torch.equal(out, src.index_select(0, index))
    else:
        dv = op["dst"]
        dst = _lazy(dv["shape"], dv["strides"], 3)
        k(src, dst)
        assert torch.equal(dst, src)
