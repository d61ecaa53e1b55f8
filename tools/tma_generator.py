"""Deterministic generator of `cuTensorMapEncodeTiled` argument sets for differential testing.

Every descriptor it yields is representable in the driver's C types (uint32 / uint64 and
valid enum values), so the driver gives a verdict for each; whether the verdict is legal is
what is being probed. The mix is weighted toward the boundaries of every documented bound
and toward realistic descriptors one to three mutations away from legal:

- `realistic`: tensors, strides and boxes as compilers build them (dense or padded pitches,
  power-of-two and ragged boxes, swizzle matched to the inner box), then 0-3 mutations that
  push one field to or past a boundary;
- `boundary`: every field drawn independently from its boundary set;
- `wild`: broad random values, to catch what neither of the above thought of.

Reproducibility: `descriptors(seed, n)` depends only on `random.Random(seed)`, so a corpus
can be regenerated from its seed and checked against the recorded digest.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator

DTYPE_BITS = {
    "uint8": 8, "uint16": 16, "uint32": 32, "int32": 32, "uint64": 64, "int64": 64,
    "float16": 16, "float32": 32, "float64": 64, "bfloat16": 16, "float32_ftz": 32,
    "tfloat32": 32, "tfloat32_ftz": 32,
    "16u4_align8b": 4, "16u4_align16b": 8, "16u6_align16b": 8,
}
DTYPES = tuple(DTYPE_BITS)
COMMON = ("bfloat16", "float16", "float32", "uint8", "int32", "float64", "int64")
INTERLEAVES = ("none", "16B", "32B")
SWIZZLES = ("none", "32B", "64B", "128B", "128B_atom_32B", "128B_atom_32B_flip_8B", "128B_atom_64B")
SPAN = {"none": 0, "32B": 32, "64B": 64, "128B": 128, "128B_atom_32B": 128,
        "128B_atom_32B_flip_8B": 128, "128B_atom_64B": 128}
L2S = ("none", "64B", "128B", "256B")
OOBS = ("none", "nan_request_zero_fma")

U32 = (1 << 32) - 1
U64 = (1 << 64) - 1
MAX_RANK_PROBED = 8


def _ebytes(dt: str) -> float:
    return DTYPE_BITS[dt] / 8


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    """An integer in [lo, hi] spread evenly over orders of magnitude."""
    if hi <= lo:
        return lo
    bits = rng.uniform(max(lo, 1).bit_length() - 1, hi.bit_length())
    return max(lo, min(hi, int(2 ** bits)))


def _dim_boundary(rng: random.Random, box: int) -> int:
    return rng.choice([
        0, 1, 2, 3, box - 1 if box > 1 else 1, box, box + 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32,
        2 ** 32 + 1, 2 ** 33, 2 ** 40, 2 ** 63, U64, rng.randint(1, 1 << 20),
        _log_uniform(rng, 1, 1 << 34),
    ])


def _stride_boundary(rng: random.Random, row_bytes: int) -> int:
    base = _round_up(max(row_bytes, 16), 16)
    return rng.choice([
        0, 1, 8, 16, 24, 32, 48, base, base + 16, base - 16 if base > 16 else 16,
        base + rng.randint(1, 15), base + 8, base * 2, max(16, row_bytes // 2 // 16 * 16),
        (1 << 40) - 16, (1 << 40) - 32, 1 << 40, (1 << 40) + 16, (1 << 40) - 1, 1 << 39,
        1 << 41, 1 << 48, U64 - 15, _round_up(_log_uniform(rng, 16, 1 << 41), 16),
        _log_uniform(rng, 1, 1 << 41),
    ])


def _box_boundary(rng: random.Random, dt: str, inner: bool, swizzle: str) -> int:
    eb = _ebytes(dt)
    cands = [0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256,
             257, 511, 512, 1024, 65536, U32, rng.randint(1, 256), 1 << rng.randint(0, 9)]
    if inner:
        for nbytes in (8, 16, 24, 32, 48, 64, 96, 128, 144, 192, 256, 512):
            n = int(nbytes / eb)
            cands += [n, n + 1, max(n - 1, 0)]
        span = SPAN[swizzle]
        if span:
            n = int(span / eb)
            cands += [n, n + int(16 / eb), max(n - int(16 / eb), 0), n * 2]
    return rng.choice(cands)


def _elem_stride(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.6:
        return 1
    if r < 0.97:
        return rng.randint(0, 9)
    return rng.choice([16, 255, 256, U32])


def _address(rng: random.Random, align: int) -> int:
    r = rng.random()
    base = rng.randrange(1 << 20, 1 << 47) & ~((1 << 12) - 1)
    if r < 0.6:
        return base + align * rng.randint(0, 64)
    if r < 0.8:
        return base + rng.choice([1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 8 * rng.randint(0, 31)])
    return rng.choice([0, 16, 32, 1 << 47, 1 << 48, 1 << 49, 1 << 56, 1 << 57, 1 << 63,
                       U64 - 15, U64 - 31, (1 << 48) - 16, (1 << 57) - 32, base | (1 << 52)])


def realistic(rng: random.Random) -> dict:
    """A descriptor as a compiler would build it for a real tensor."""
    dt = rng.choice(COMMON) if rng.random() < 0.8 else rng.choice(DTYPES)
    eb = _ebytes(dt)
    interleave = "none" if rng.random() < 0.8 else rng.choice(("16B", "32B"))
    rank = rng.choice((1, 2, 2, 2, 3, 3, 4, 5)) if interleave == "none" else rng.randint(3, 5)
    dims = [_log_uniform(rng, 1, 1 << rng.choice((8, 12, 16, 20))) for _ in range(rank)]
    if rng.random() < 0.3:
        dims[0] = rng.choice((16, 32, 64, 80, 96, 128, 256, 4096, 50257, 8192))
    align = rng.choice((16, 16, 16, 32, 64, 128, 1))
    strides = []
    pitch = _round_up(max(int(dims[0] * eb), 1), align)
    if rng.random() < 0.2:
        pitch += rng.choice((16, 32, 128, 8))
    for i in range(1, rank):
        strides.append(pitch)
        pitch *= dims[i]
        if rng.random() < 0.1:
            pitch += 16
    if interleave == "none":
        swizzle = rng.choice(SWIZZLES[:4]) if rng.random() < 0.85 else rng.choice(SWIZZLES)
        span = SPAN[swizzle] or rng.choice((16, 32, 64, 128, 256, 512))
        inner_bytes = rng.choice([b for b in (16, 32, 64, 128, 256, 512) if b <= span] or [16])
        box0 = max(1, int(inner_bytes / eb))
        if rng.random() < 0.15:
            box0 = rng.randint(1, 256)
    else:
        swizzle = "32B" if interleave == "32B" and rng.random() < 0.8 else rng.choice(SWIZZLES[:4])
        box0 = max(1, int(rng.choice((16, 32, 64)) / eb))
        if rng.random() < 0.2:
            box0 = rng.randint(1, 64)
    box = [min(256, box0)]
    for i in range(1, rank):
        b = rng.choice((1, 2, 4, 8, 16, 32, 64, 128, 256, rng.randint(1, 256)))
        box.append(b if rng.random() < 0.7 else min(b, dims[i]))
    es = [1] * rank
    if rng.random() < 0.15:
        i = rng.randrange(rank)
        es[i] = rng.randint(2, 8)
    d = {
        "dtype": dt, "rank": rank, "global_address": _address(rng, align if align > 1 else 16),
        "global_dim": dims, "global_strides": strides, "box_dim": box, "element_strides": es,
        "interleave": interleave, "swizzle": swizzle,
        "l2_promotion": rng.choice(L2S),
        "oob_fill": "nan_request_zero_fma" if rng.random() < 0.2 else "none",
    }
    return d


def mutate(rng: random.Random, d: dict) -> dict:
    """Push one field of `d` to (or past) one of its boundaries."""
    d = {k: (list(v) if isinstance(v, list) else v) for k, v in d.items()}
    rank = d["rank"]
    field = rng.choice(("dtype", "rank", "global_address", "global_dim", "global_dim",
                        "global_strides", "global_strides", "box_dim", "box_dim", "box_dim",
                        "element_strides", "interleave", "swizzle", "swizzle", "l2_promotion",
                        "oob_fill"))
    eb = _ebytes(d["dtype"])
    if field == "dtype":
        d["dtype"] = rng.choice(DTYPES)
    elif field == "rank":
        new = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, max(rank - 1, 0), rank + 1))
        _resize(rng, d, new)
    elif field == "global_address":
        d["global_address"] = _address(rng, rng.choice((16, 32)))
    elif field == "global_dim" and rank:
        i = rng.randrange(rank)
        d["global_dim"][i] = _dim_boundary(rng, d["box_dim"][i])
    elif field == "global_strides" and rank > 1:
        i = rng.randrange(rank - 1)
        row = int(d["global_dim"][0] * eb) if i == 0 else d["global_strides"][i - 1] * d["global_dim"][i]
        d["global_strides"][i] = min(U64, _stride_boundary(rng, row))
    elif field == "box_dim" and rank:
        i = 0 if rng.random() < 0.5 else rng.randrange(rank)
        d["box_dim"][i] = _box_boundary(rng, d["dtype"], i == 0, d["swizzle"])
    elif field == "element_strides" and rank:
        i = rng.randrange(rank)
        d["element_strides"][i] = _elem_stride(rng)
        if rng.random() < 0.3:
            d["box_dim"][i] = max(1, min(256, d["box_dim"][i] * d["element_strides"][i]))
    elif field == "interleave":
        d["interleave"] = rng.choice(INTERLEAVES)
    elif field == "swizzle":
        d["swizzle"] = rng.choice(SWIZZLES)
    elif field == "l2_promotion":
        d["l2_promotion"] = rng.choice(L2S)
    elif field == "oob_fill":
        d["oob_fill"] = rng.choice(OOBS)
    return d


def _resize(rng: random.Random, d: dict, new: int) -> None:
    """Change the rank, keeping list lengths consistent with it."""
    d["rank"] = new
    for key, fill in (("global_dim", lambda: rng.randint(1, 4096)),
                      ("box_dim", lambda: rng.choice((1, 8, 16, 64, 256))),
                      ("element_strides", lambda: 1)):
        v = d[key][:new]
        while len(v) < new:
            v.append(fill())
        d[key] = v
    s = d["global_strides"][: max(new - 1, 0)]
    while len(s) < max(new - 1, 0):
        prev = s[-1] if s else _round_up(int(d["global_dim"][0] * _ebytes(d["dtype"])) or 16, 16)
        s.append(min(U64 - 15, prev * d["global_dim"][len(s)] if s else prev))
    d["global_strides"] = s


def boundary(rng: random.Random) -> dict:
    """Every field drawn independently from its boundary set."""
    dt = rng.choice(DTYPES)
    rank = rng.choice((1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 0, 6))
    swizzle = rng.choice(SWIZZLES)
    box = [_box_boundary(rng, dt, i == 0, swizzle) if rng.random() < 0.5 else
           rng.choice((1, 8, 16, 32, 64, 128, 256)) for i in range(rank)]
    dims = [_dim_boundary(rng, box[i]) if rng.random() < 0.3 else _log_uniform(rng, 1, 1 << 16)
            for i in range(rank)]
    strides = []
    row = int(dims[0] * _ebytes(dt)) if rank else 16
    for i in range(1, rank):
        s = _stride_boundary(rng, row) if rng.random() < 0.4 else _round_up(max(row, 16), 16)
        s = min(s, U64)
        strides.append(s)
        row = min(s * dims[i], U64)
    return {
        "dtype": dt, "rank": rank, "global_address": _address(rng, rng.choice((16, 32, 64))),
        "global_dim": dims, "global_strides": strides, "box_dim": box,
        "element_strides": [_elem_stride(rng) for _ in range(rank)],
        "interleave": rng.choice(INTERLEAVES), "swizzle": swizzle,
        "l2_promotion": rng.choice(L2S), "oob_fill": rng.choice(OOBS),
    }


def wild(rng: random.Random) -> dict:
    """Broad random values in the C types' ranges."""
    rank = rng.randint(0, MAX_RANK_PROBED)
    return {
        "dtype": rng.choice(DTYPES), "rank": rank,
        "global_address": rng.choice((rng.randrange(0, 1 << 49), rng.randrange(0, 1 << 64))) & ~rng.choice((0, 15, 31)),
        "global_dim": [_log_uniform(rng, 0, rng.choice((1 << 12, 1 << 33, U64))) for _ in range(rank)],
        "global_strides": [rng.choice((16, 1)) * _log_uniform(rng, 0, rng.choice((1 << 20, 1 << 41, U64 // 16)))
                           for _ in range(max(rank - 1, 0))],
        "box_dim": [_log_uniform(rng, 0, rng.choice((256, 512, U32))) for _ in range(rank)],
        "element_strides": [rng.randint(0, 9) for _ in range(rank)],
        "interleave": rng.choice(INTERLEAVES), "swizzle": rng.choice(SWIZZLES),
        "l2_promotion": rng.choice(L2S), "oob_fill": rng.choice(OOBS),
    }


def one(rng: random.Random) -> dict:
    """One descriptor from the weighted mix."""
    r = rng.random()
    if r < 0.6:
        d = realistic(rng)
        for _ in range(rng.choice((0, 0, 1, 1, 1, 2, 2, 3))):
            d = mutate(rng, d)
    elif r < 0.85:
        d = boundary(rng)
        if rng.random() < 0.5:
            d = mutate(rng, d)
    else:
        d = wild(rng)
    return _clamp(d)


def _clamp(d: dict) -> dict:
    """Keep every integer inside its C type so the driver, not the binding, judges it."""
    d["global_address"] = min(max(d["global_address"], 0), U64)
    d["global_dim"] = [min(max(x, 0), U64) for x in d["global_dim"]]
    d["global_strides"] = [min(max(x, 0), U64) for x in d["global_strides"]]
    d["box_dim"] = [min(max(x, 0), U32) for x in d["box_dim"]]
    d["element_strides"] = [min(max(x, 0), U32) for x in d["element_strides"]]
    return d


def descriptors(seed: int, n: int) -> Iterator[dict]:
    """The `n` descriptors of corpus `seed`, always the same ones."""
    rng = random.Random(seed)
    for _ in range(n):
        yield one(rng)


def canonical(d: dict) -> str:
    """One JSON line with sorted keys: the form digests and corpora use."""
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


def digest(ds) -> str:
    """SHA-256 over the canonical lines, to check that a regenerated corpus is the probed one."""
    h = hashlib.sha256()
    for d in ds:
        h.update(canonical(d).encode())
        h.update(b"\n")
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# Boundary grid: every bound walked across its edge, one or two fields at a time, from
# legal bases. Unlike `descriptors`, this is exhaustive over its small ranges.

def _base(dt: str = "bfloat16", rank: int = 3, interleave: str = "none", swizzle: str = "none") -> dict:
    eb = _ebytes(dt)
    box0 = max(1, int(32 / eb)) if eb >= 1 else 64
    dims = [256, 64, 8, 4, 2][:rank]
    strides, pitch = [], _round_up(int(dims[0] * eb), 32)
    for i in range(1, rank):
        strides.append(pitch)
        pitch *= dims[i]
    return {"dtype": dt, "rank": rank, "global_address": 1 << 40, "global_dim": dims,
            "global_strides": strides, "box_dim": [box0] + [4] * (rank - 1),
            "element_strides": [1] * rank, "interleave": interleave, "swizzle": swizzle,
            "l2_promotion": "none", "oob_fill": "none"}


def _with(d: dict, **kw) -> dict:
    out = {k: (list(v) if isinstance(v, list) else v) for k, v in d.items()}
    out.update(kw)
    return out


def _factor_boxes(target_elems: int, rank: int, inner_mult: int) -> list[int] | None:
    """Box dims (each 1..256, box[0] a multiple of inner_mult) whose product is target_elems."""
    for b0 in range(256 // inner_mult * inner_mult, 0, -inner_mult):
        if target_elems % b0:
            continue
        rest = target_elems // b0
        outer = []
        for _ in range(rank - 2):
            f = next((x for x in range(min(256, rest), 0, -1) if rest % x == 0), 1)
            outer.append(f)
            rest //= f
        if rest <= 256:
            return [b0] + outer + [rest]
    return None


def grid() -> list[dict]:
    """The boundary grid (deterministic, ~40k descriptors)."""
    out: list[dict] = []
    real = [d for d in DTYPES if not d.startswith("16u")]
    # inner box bytes x swizzle x interleave x dtype
    for dt in DTYPES:
        eb = _ebytes(dt)
        for il in INTERLEAVES:
            for sw in SWIZZLES:
                for nbytes in range(0, 552, 8):
                    box0 = int(nbytes / eb)
                    if box0 > 300:
                        continue
                    out.append(_with(_base(dt, 3, il, sw), box_dim=[box0, 4, 4]))
    # box footprint around the shared-memory limit, with and without element strides
    for dt in ("uint8", "bfloat16", "float32", "float64"):
        eb = int(_ebytes(dt))
        for target in range(233472 - 512, 234496 + 528, 16):
            if target % eb:
                continue
            for rank in (3, 4, 5):
                box = _factor_boxes(target // eb, rank, max(1, 16 // eb))
                if box:
                    out.append(_with(_base(dt, rank), box_dim=box))
                    es = [1] * rank
                    es[-1] = 2
                    out.append(_with(_base(dt, rank), box_dim=box[:-1] + [box[-1] * 2], element_strides=es))
                    out.append(_with(_base(dt, rank), box_dim=box[:-1] + [box[-1] * 2 + 1], element_strides=es))
        for rank in (2, 3, 4, 5):
            for b in (1, 2, 3, 7, 8, 9):
                for e in range(1, 10):
                    # 256-byte rows, 256 of them per outer step: the last dim decides
                    box = [256 // eb] + [256] * (rank - 1)
                    box[-1] = b
                    es = [1] * rank
                    es[-1] = e
                    out.append(_with(_base(dt, rank), box_dim=box, element_strides=es))
    # footprints one byte apart across the limit: element strides make any count reachable
    f0_choices = {}
    for b0 in range(16, 257, 16):
        for e0 in range(1, 9):
            f0_choices.setdefault(b0 // e0, (b0, e0))
    for target in range(233472 - 48, 233472 + 64):
        for f0, (b0, e0) in sorted(f0_choices.items(), reverse=True):
            if target % f0:
                continue
            rest, outer = target // f0, []
            for _ in range(3):
                f = next((x for x in range(min(256, rest), 0, -1) if rest % x == 0), 1)
                outer.append(f)
                rest //= f
            if rest == 1:
                out.append(_with(_base("uint8", 4), box_dim=[b0] + outer, element_strides=[e0, 1, 1, 1]))
                break
    # element strides on every index, with boxes below, at and above them
    for rank in (1, 2, 3, 4, 5):
        for i in range(rank):
            for e in (0, 1, 2, 3, 7, 8, 9, 16, U32):
                for box in (1, 2, 7, 8, 9, 16, 64, 256):
                    d = _base("float32", rank)
                    d["element_strides"][i] = e
                    if i > 0 or box * 4 % 16 == 0:
                        d["box_dim"][i] = box
                    out.append(d)
    # box dims 0 / 1 / 255 / 256 / 257 / 2^32-1 on every index
    for dt in ("uint8", "float16", "float64"):
        for rank in (1, 2, 3, 4, 5):
            for i in range(rank):
                for box in (0, 1, 2, 16, 128, 255, 256, 257, 512, U32):
                    d = _base(dt, rank)
                    d["box_dim"][i] = box
                    out.append(d)
    # global dims at 0 / 1 / 2^32 edges on every index
    for dt in ("uint8", "float32", "16u4_align8b"):
        for rank in (1, 2, 3, 4, 5):
            for i in range(rank):
                for dim in (0, 1, 2, 127, 128, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, 1 << 33, U64):
                    d = _base(dt, rank)
                    d["global_dim"][i] = dim
                    out.append(d)
    # global strides: alignment and the 2^40 bound, per interleave, on every index
    for il in INTERLEAVES:
        for rank in (2, 3, 4, 5):
            for i in range(rank - 1):
                for s in (0, 8, 16, 24, 32, 48, 64, 4096 + 16, (1 << 40) - 32, (1 << 40) - 16,
                          1 << 40, (1 << 40) + 32, 1 << 41, U64 - 15, 1, 2, 4):
                    d = _base("float16", max(rank, 3) if il != "none" else rank, il)
                    d["global_strides"][min(i, len(d["global_strides"]) - 1)] = s
                    out.append(d)
                # strides smaller than the row they step over, or decreasing
                d = _base("float16", max(rank, 3), il)
                d["global_strides"][-1] = 32
                out.append(d)
    # global address: alignment and the virtual-address bound, small and huge tensors
    for il in INTERLEAVES:
        for dt in ("uint8", "float32"):
            for addr in (0, 8, 16, 24, 32, 48, 64, 1 << 40, (1 << 40) + 16, (1 << 48) - 16, 1 << 48,
                         (1 << 56) + 16, (1 << 57) - 64, (1 << 57) - 32, (1 << 57) - 16, 1 << 57,
                         (1 << 57) + 16, (1 << 57) + 32, 1 << 58, 1 << 63, U64 - 15, U64 - 31):
                for huge in (False, True):
                    d = _base(dt, 3, il)
                    d["global_address"] = addr
                    if huge:
                        d["global_dim"] = [1 << 20, 1 << 20, 1 << 10]
                        row = _round_up(int((1 << 20) * _ebytes(dt)), 32)
                        d["global_strides"] = [row, row << 20]
                    out.append(d)
    # rank 0..8 with consistent lists, per interleave
    for il in INTERLEAVES:
        for rank in range(0, 9):
            d = _base("float32", 5, il)
            _resize(random.Random(rank), d, rank)
            out.append(d)
    # oob fill x dtype x interleave; l2 promotion x swizzle
    for dt in DTYPES:
        for il in INTERLEAVES:
            for oob in OOBS:
                out.append(_with(_base(dt, 3, il), oob_fill=oob))
    for l2 in L2S:
        for sw in SWIZZLES:
            for dt in real:
                out.append(_with(_base(dt, 3, "none", sw), l2_promotion=l2))
    return [_clamp(d) for d in out]
