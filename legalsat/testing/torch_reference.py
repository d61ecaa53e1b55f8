"""PyTorch's own op for a planned movement, and the inputs both are run on.

What decides "right" for a kernel: bitwise equality with PyTorch on random bits, with the
output poisoned first, compared over the whole destination allocation (so a write outside
the plan's elements is caught too). Used by the kernel tests (interpreter, CPU) and by
benchmarks/bench_kernels.py (GPU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from math import prod

import torch

from legalsat.clients.triton import TORCH_OF, WORD_DTYPE
from legalsat.terms.integers import cdiv, span
from legalsat.terms.sexpr import op_from_sexp

TORCH_DTYPES = TORCH_OF  # the client's table: every element type a view may name
POISON = 0xA5


def random_bits(n: int, dtype: torch.dtype, device, gen: torch.Generator) -> torch.Tensor:
    """n elements of `dtype` with uniformly random bits (NaNs and all: moves are bit copies)."""
    es = torch.empty(0, dtype=dtype).element_size()
    raw = torch.randint(0, 256, (n * es,), dtype=torch.uint8, device=device, generator=gen)
    return raw.view(dtype)


@dataclass
class Inputs:
    """One movement's tensors. Copies: `src` and `dst` views over `src_buf` / `dst_buf`.
    Gathers: `src`, `index`, `out` (+ `group` for grouped gathers)."""

    kind: str
    torch_op: str
    moved_bytes: int
    src: torch.Tensor
    dst: torch.Tensor | None = None
    dst_buf: torch.Tensor | None = None
    index: torch.Tensor | None = None
    group: torch.Tensor | None = None
    out: torch.Tensor | None = None
    ref_out: dict = field(default_factory=dict)
    unit: int = 1
    axis: int = 0

    def call(self, k, check: bool = True):
        """Run kernel k on these inputs; returns what to compare (see `same_bits`)."""
        if self.kind == "copy":
            k(self.src, self.dst)
            return self.dst_buf
        if self.group is not None:
            out, order, _ = k(self.src, self.index, self.out, group=self.group, check_bounds=check)
            return (out, order)
        k(self.src, self.index, self.out, check_bounds=check)
        return self.out


def make_inputs(response: dict, workload: dict, device, gen: torch.Generator) -> Inputs:
    """Random inputs of a response's request (its `term`); `workload` names the PyTorch op
    and the extras the request does not carry (top_k for MoE)."""
    op = op_from_sexp(response["term"])
    sv = op["src"]
    dtype = TORCH_DTYPES[sv["dtype"]]
    es = torch.empty(0, dtype=dtype).element_size()
    # a base aligned to fewer than 16 bytes starts exactly that far into its allocation, so a
    # plan that assumed more alignment than the request gave is caught
    skew = sv.get("base_align", 16) // es if sv.get("base_align", 16) < 16 else 0
    src_buf = random_bits(skew + span(sv["shape"], sv["strides"]), dtype, device, gen)
    src = src_buf.as_strided(sv["shape"], sv["strides"], skew)
    torch_op = workload.get("torch_op", "copy" if op["kind"] == "copy" else "index_select")
    if op["kind"] == "copy":
        dv = op["dst"]
        dst_buf = torch.empty(span(dv["shape"], dv["strides"]), dtype=dtype, device=device)
        return Inputs("copy", torch_op, 2 * prod(sv["shape"]) * es, src,
                      dst_buf.as_strided(dv["shape"], dv["strides"]), dst_buf)
    ix = op["index"]
    axis = op["axis"]
    unit = ix.get("page_size") or 1
    bound = sv["shape"][axis] // unit
    count = ix["count"]
    out_shape = list(sv["shape"])
    out_shape[axis] = count * unit
    out = torch.empty(out_shape, dtype=dtype, device=device)
    group = None
    if ix.get("groups"):
        # k slots a row (rows in order): enough that count slots stay within the bound
        top_k = (workload.get("extra") or {}).get("top_k", cdiv(count, bound))
        index = torch.arange(count, device=device) // top_k
        group = torch.randint(0, ix["groups"], (count,), device=device, generator=gen)
    elif ix.get("unique"):
        index = torch.randperm(bound, device=device, generator=gen)[:count]
    elif ix.get("distribution") == "warp_local":  # each 32 entries within 32 consecutive rows
        base = torch.randint(0, max(bound - 31, 1), ((count + 31) // 32,), device=device, generator=gen)
        off = torch.randint(0, min(32, bound), (count,), device=device, generator=gen)
        index = (base.repeat_interleave(32)[:count] + off).clamp_(max=bound - 1)
    else:
        index = torch.randint(0, bound, (count,), device=device, generator=gen)
        if ix.get("distribution") in ("sorted", "clustered"):
            index = index.sort().values
    return Inputs("gather", torch_op, 2 * out.numel() * es, src, index=index, group=group, out=out, unit=unit,
                  axis=axis)


def _moved(t: torch.Tensor, shift: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`t` (a view) and its whole storage copied so that the view's first element lies `shift`
    bytes past a 16-byte boundary: (the same view there, the storage there)."""
    nbytes = t.untyped_storage().nbytes()
    raw = torch.empty(nbytes + 16, dtype=torch.uint8, device=t.device)
    start = (shift - raw.data_ptr() - t.storage_offset() * t.element_size()) % 16
    raw = raw[start:start + nbytes]
    raw.copy_(torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage()))
    storage = raw.view(t.dtype)
    return _at(storage, t), storage


def _at(storage: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """`t`'s view (shape, strides, offset) over `storage`, a 1-D tensor that may itself start
    past its allocation's first element (as_strided's offset counts from there)."""
    return storage.as_strided(t.shape, t.stride(), storage.storage_offset() + t.storage_offset())


def misaligned(inp: Inputs, shift: int) -> Inputs:
    """`inp` with its source and destination (a gather's output) moved so that each view's
    first element lies `shift` bytes past a 16-byte boundary, values, strides and offsets kept:
    tensors a caller passes to a plan made for 16-byte aligned bases (a view into a packed
    buffer, a slice past its first element).
    `shift` is a multiple of the element size below 16. The reference (`reference`) is the
    same; compute it on `inp`."""
    es = inp.src.element_size()
    if shift % es or not 0 < shift < 16:
        raise ValueError(f"shift {shift} is not a multiple of the {es}-byte element below 16")
    src, _ = _moved(inp.src, shift)
    if inp.kind == "copy":
        dst_buf, storage = _moved(inp.dst_buf, shift)
        return replace(inp, src=src, dst=_at(storage, inp.dst), dst_buf=dst_buf)
    out, _ = _moved(inp.out, shift)
    return replace(inp, src=src, out=out)


def _moe_permute(src: torch.Tensor, index: torch.Tensor, group: torch.Tensor):
    order = torch.argsort(group, stable=True)
    return src.index_select(0, index[order]), order


def torch_op(inp: Inputs) -> tuple[Callable, tuple, torch.Tensor | None]:
    """PyTorch's op for the movement as (function, arguments, destination buffer): a copy's
    function writes into a view of a fresh, poisoned buffer (the third member, compared over
    all of it); a gather's returns its result (None)."""
    if inp.kind == "copy":
        buf = torch.empty_like(inp.dst_buf)
        buf.view(torch.uint8).fill_(POISON)
        return (lambda dst, src: dst.copy_(src)), (buf.as_strided(inp.dst.shape, inp.dst.stride()), inp.src), buf
    axis, unit = inp.axis, inp.unit
    if inp.group is not None:
        return _moe_permute, (inp.src, inp.index, inp.group), None
    if unit > 1:
        shape = list(inp.src.shape)
        paged, out = shape[:axis] + [shape[axis] // unit, unit] + shape[axis + 1:], list(inp.out.shape)
        return (lambda src, index: src.reshape(paged).index_select(axis, index).reshape(out)), (inp.src, inp.index), None
    return (lambda src, index: src.index_select(axis, index)), (inp.src, inp.index), None


def compiled_peer(inp: Inputs) -> Callable[[], object]:
    """`torch.compile` of `torch_op` (what a PyTorch user would pick instead): a function of
    no arguments returning what `reference` returns."""
    fn, args, buf = torch_op(inp)
    compiled = torch.compile(fn, dynamic=False)
    return (lambda: compiled(*args)) if buf is None else (lambda: (compiled(*args), buf)[1])


def poison(inp: Inputs) -> None:
    """Fill every output byte with a pattern no correct kernel leaves behind unchanged."""
    target = inp.dst_buf if inp.kind == "copy" else inp.out
    target.view(torch.uint8).fill_(POISON)


def reference(inp: Inputs):
    """PyTorch's result (`torch_op`, eager). A copy's lands in a buffer kept across calls
    (poisoned once, then overwritten exactly where the copy writes), so the benchmark times the
    op alone."""
    if "op" not in inp.ref_out:
        inp.ref_out["op"] = torch_op(inp)
    fn, args, buf = inp.ref_out["op"]
    out = fn(*args)
    return out if buf is None else buf


def same_bits(got, want) -> bool:
    """Bitwise equality (tuples: every member)."""
    if isinstance(got, tuple):
        return len(got) == len(want) and all(same_bits(g, w) for g, w in zip(got, want))
    if got.dtype in (torch.int32, torch.int64) and want.dtype in (torch.int32, torch.int64):
        return torch.equal(got.to(torch.int64), want.to(torch.int64))
    if got.shape != want.shape:
        return False
    es = got.element_size()
    return torch.equal(got.contiguous().view(WORD_DTYPE[es]), want.contiguous().view(WORD_DTYPE[es]))
