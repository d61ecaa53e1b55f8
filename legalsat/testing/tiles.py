"""What a load_tile plan's kernels must produce, computed with PyTorch and the plan's own
stage layout: the reference tiles (every tile of the tensor, zero beyond its edges), what a
wgmma against an identity makes of them, and the raw bytes each stage holds where the plan
says every element lands. Used by the kernel tests (interpreter) and benchmarks/bench_tiles.py.
"""

from __future__ import annotations

from math import prod

import numpy as np
import torch

from legalsat.clients.triton import TORCH_OF, WORD_DTYPE
from legalsat.schemas.plan import PlanOut
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.integers import span
from legalsat.terms.smem import LayoutDim, StageLayout

POISON_BYTE = 0xA5


def source_tensor(shape, strides, dtype: str, device, gen: torch.Generator, *, wgmma: str | None = None) -> torch.Tensor:
    """A strided view over fresh storage with random contents. Plain loads get random bits;
    a tensor read by the tensor core (`wgmma`: the element it reads) gets finite values it
    reads exactly (tf32: 10 mantissa bits) and no -0.0 (an identity product returns +0.0)."""
    span_elems = span(shape, strides)
    t = TORCH_OF[dtype]
    es = torch.empty(0, dtype=t).element_size()
    if wgmma is None or dtype in ("int8", "uint8"):
        raw = torch.randint(0, 256, (span_elems * es,), dtype=torch.uint8, device=device, generator=gen)
        flat = raw.view(t) if t is not torch.bool else (raw & 1).view(torch.bool)
    else:
        vals = torch.randn(span_elems, device=device, generator=gen) * 4
        flat = vals.to(t)
        if wgmma in ("float32", "tfloat32", "float32_ftz", "tfloat32_ftz"):
            flat = (flat.view(torch.int32) & ~0x1FFF).view(torch.float32)
        zero = flat.float() == 0
        flat = torch.where(zero, torch.zeros_like(flat), flat)
    return torch.as_strided(flat, tuple(shape), tuple(strides))


def reference_tiles(src: torch.Tensor, tile) -> torch.Tensor:
    """Every `tile`-shaped block of src, zero beyond src's edges: shape [*grid, *tile]."""
    grid = [-(-n // t) for n, t in zip(src.shape, tile)]
    padded = torch.zeros([g * t for g, t in zip(grid, tile)], dtype=src.dtype, device=src.device)
    padded[tuple(slice(0, n) for n in src.shape)] = src
    inter = [x for g, t in zip(grid, tile) for x in (g, t)]
    rank = len(tile)
    return padded.reshape(inter).permute([*range(0, 2 * rank, 2), *range(1, 2 * rank, 2)]).contiguous()


def consumer_view(tiles: torch.Tensor, element: str) -> torch.Tensor:
    """What a probe writes for the reference tiles: their words (rows / cols reads), or their
    values in the tensor core's accumulator type (float32; int32 for 8-bit integers, unsigned
    bytes read as signed ones)."""
    if element == "words":
        return tiles
    if element == "int32":
        return tiles.view(torch.int8).to(torch.int32) if tiles.dtype == torch.uint8 else tiles.to(torch.int32)
    return tiles.float()


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaNs and signed zeros included)."""
    if a.shape != b.shape or a.element_size() != b.element_size():
        return False
    w = WORD_DTYPE[a.element_size()]
    return bool(torch.equal(a.contiguous().view(w), b.contiguous().view(w)))


def stage_layout(plan: PlanOut) -> StageLayout:
    lay = plan.tile_load.layout
    dims = tuple(LayoutDim(tuple((k, m) for k, m in d.parts), d.box, d.boxes, d.stride, d.box_stride)
                 for d in lay.dims)
    return StageLayout(dims, lay.element_bytes, Swizzle(lay.swizzle))


def stage_addresses(plan: PlanOut) -> np.ndarray:
    """The byte address in its stage of every tile element (row-major over the tile), swizzled
    as the plan says TMA writes it."""
    layout = stage_layout(plan)
    tile = tuple(plan.tile)
    index = np.indices(tile).reshape(len(tile), -1).T
    return layout.addresses(index)


def expected_stages(plan: PlanOut, tiles: torch.Tensor, words_per_tile: int) -> torch.Tensor:
    """The int32 words of every tile's stage: each element's bytes where the plan's layout
    puts them (`tiles`: the reference tiles, [*grid, *tile]). The positions of a broadcast
    dim share one place, which holds index 0's (the loaded one; the others may be overhang,
    which the consumer reads as zero but the stage does not hold)."""
    eb = plan.tile_load.layout.element_bytes
    n = prod(plan.tile_load.grid)
    addr, first = np.unique(stage_addresses(plan) // eb, return_index=True)  # the first index of each place
    w = WORD_DTYPE[eb]
    stage = torch.full((n, words_per_tile * 4 // eb), 0, dtype=w, device=tiles.device)
    stage[:, torch.as_tensor(addr, device=tiles.device)] = tiles.reshape(n, -1).view(w)[:, torch.as_tensor(
        first, device=tiles.device)]
    return stage.view(torch.int32)


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fill t with the poison byte (what an unwritten element shows)."""
    t.view(torch.uint8).fill_(POISON_BYTE)
    return t
