"""`staged_smem`: a transposing copy staged through shared memory.

Each program loads one tile along the source's contiguous dim and stores it along the
destination's. The load and the store are each contiguous (16-byte vectors where the
plan's alignment allows); Triton's layout conversion between the two goes through a
swizzled shared-memory tile, which is the staging the plan describes (its `smem` field
gives the bank model's verdict on that tile). Dims the plan does not tile advance one
index per program.

Destination rows that do not start on 16 bytes (a pitch of 50257 bf16) make the stores
scalar; the field solver gives such tiles long destination runs and 4 warps (measured best).
"""

from __future__ import annotations

from legalsat.kernels.source import Launch, program_id, tile_index
from legalsat.kernels.words import WordPiece, plan_error, transposed_dims


def tile_axes(p: WordPiece, tile: tuple[int, ...]) -> list[int]:
    """Block axes: the tiled dims, the destination-contiguous one first and the
    source-contiguous one last (the load's fast axis)."""
    tr = transposed_dims(p)
    axes = [k for k, t in enumerate(tile) if t > 1]
    if tr:
        a, b = tr
        axes = [b] + [k for k in axes if k not in (a, b)] + [a]
        axes = [k for k in axes if tile[k] > 1] or [a]
    return axes


def staged_copy_kernel(name: str, p: WordPiece, tile: tuple[int, ...]) -> tuple[str, int]:
    """Source of one piece's tiled transposing copy and its program count."""
    ti = tile_index(p, tile, tile_axes(p, tile))
    lines = [f"@triton.jit\ndef {name}(src, dst):", program_id(p.index_bits()), *ti.lines]
    if ti.masked:
        lines += ["    x = tl.load(src + so, mask=mask)", "    tl.store(dst + do, x, mask=mask)"]
    else:
        lines += ["    x = tl.load(src + so)", "    tl.store(dst + do, x)"]
    return "\n".join(lines) + "\n", ti.tiles


def emit_staged(pieces: list[tuple[WordPiece, dict]]) -> tuple[list[str], list[Launch]]:
    """One tiled kernel per piece (a ragged tail the plan copies directly is not staged:
    its piece says `direct`, and the caller emits it so)."""
    texts, launches = [], []
    for i, (p, raw) in enumerate(pieces):
        if any(t & (t - 1) for t in p.tile):
            raise plan_error(f"plans[].pieces[{i}].tile", f"tile {list(p.tile)} has an extent that is not "
                             "a power of two", "send the plan as the planner returned it")
        text, grid = staged_copy_kernel(f"staged_copy_{i}", p, p.tile)
        texts.append(text)
        launches.append(Launch(f"staged_copy_{i}", grid, raw.get("num_warps", 4), ("src", "dst")))
    return texts, launches

