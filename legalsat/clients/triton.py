"""The Triton client: a plan (as returned over HTTP) becomes a kernel you can call.

    plan = requests.post(".../v1/optimize", json=req).json()["plans"][0]
    k = build_kernel(plan)          # or the whole response: its first plan
    k(src, dst)                     # copies
    k(src, index, out)              # gathers; MoE (plan.gather.groups): k(src, index, out, group=experts)
    print(k.source)                 # the emitted module

Imports only torch, triton and legalsat's light modules (never egglog or z3), so a compiler
can use it anywhere. Tensors are moved as integer words (bit-exact for every dtype); the
kernel checks that the tensors it is given are the views the plan was made for (shape and
strides when the request is known, else the bytes the plan reaches) and aligned as the
plan assumed, and raises InputError naming the argument otherwise.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import weakref
from functools import cache, cached_property
from math import prod
from pathlib import Path

import torch

from legalsat.analyses.overlap import views_meet
from legalsat.clients.plan_checks import check_plan, check_request, check_term, view_bytes
from legalsat.diagnostics import Code, InputError
from legalsat.kernels import chosen_variant, emit, fields_as_passed, response_target, select_plan
from legalsat.kernels.source import DescriptorSpec, Emitted
from legalsat.kernels.words import plan_error, word_piece
from legalsat.schemas.plan import PlanOut
from legalsat.terms.integers import span
from legalsat.terms.movement import MovementKind, relaid_out

INDEX_DTYPES = (torch.int32, torch.int64)
# integers of each word width: data moved (or compared) as these is bit-exact whatever its dtype
WORD_DTYPE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# the torch dtype of each element type a request may name
TORCH_OF = {"uint8": torch.uint8, "int8": torch.int8, "bool": torch.bool, "float8_e4m3fn": torch.float8_e4m3fn,
            "float8_e5m2": torch.float8_e5m2, "uint16": torch.uint16, "int16": torch.int16,
            "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
            "float32_ftz": torch.float32, "tfloat32": torch.float32, "tfloat32_ftz": torch.float32,
            "uint32": torch.uint32, "int32": torch.int32, "uint64": torch.uint64, "int64": torch.int64,
            "float64": torch.float64, "float8_e4m3fnuz": torch.float8_e4m3fnuz,
            "float8_e5m2fnuz": torch.float8_e5m2fnuz, "complex64": torch.complex64}


def _described(t: object) -> str:
    """What a tensor argument is, for a refusal: dtype, shape, strides where not contiguous, device
    (what else it is, for an argument that is no tensor)."""
    if not isinstance(t, torch.Tensor):
        return "None" if t is None else f"a {type(t).__name__}"
    strides = "" if t.is_contiguous() else f" strides {list(t.stride())}"
    return f"{t.dtype} of shape {list(t.shape)}{strides} on {t.device}"


def _arg_error(field: str, message: str, fix: str) -> InputError:
    return Code.INVALID_ARGUMENT.error(message, fix, field)


def load_module(source: str):
    """Import emitted source as a module (Triton reads a kernel's source from its file)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    folder = Path(tempfile.gettempdir()) / f"legalsat-kernels-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"legalsat_kernel_{digest}.py"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        tmp.replace(path)
    modname = f"legalsat_kernels_{digest}"
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod



@cache
def _sm_count(dev: torch.device) -> int:
    """Streaming multiprocessors of a device (persistent kernels launch a multiple of them)."""
    return torch.cuda.get_device_properties(dev).multi_processor_count


def words(t: torch.Tensor, word: int, offset: int = 0, name: str = "src") -> torch.Tensor:
    """A 1-D view of `word`-byte integers starting `offset` words after t's first element,
    reaching to the end of its storage."""
    start = t.storage_offset() * t.element_size()
    if (t.data_ptr() + offset * word) % word:
        # a request states src's and dst's alignment (base_align); a gather's out and index it does not
        fix = (f"plan the request with the tensor's real alignment (op.{name}.base_align), or pass {name}.clone()"
               if name in ("src", "dst") else f"pass {name} aligned to {word} bytes (as a tensor torch allocates "
               f"is: {name}.clone() of a view that is not)")
        raise _arg_error(name, f"{name} starts at an address that is not {word}-byte aligned; the plan moves "
                         f"{word}-byte words", fix)
    storage = t.untyped_storage()
    if (start + offset * word) % word:  # torch views words only from a storage offset of whole words
        raise _arg_error(name, f"{name} is aligned, but the memory block it lies in does not start on a {word}-byte "
                         f"boundary (a view into a foreign buffer): torch cannot view it as the plan's {word}-byte "
                         "words", f"pass {name}.clone(), or a tensor torch allocated")
    flat = torch.empty(0, dtype=torch.uint8, device=t.device)
    flat.set_(storage, 0, (storage.nbytes(),), (1,))
    begin = start + offset * word
    n = (storage.nbytes() - begin) // word
    return flat[begin:begin + n * word].view(WORD_DTYPE[word])


def aligned_words(view: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(a word view starting at the 16-byte boundary at or before `view`'s first word, the
    words from there to it): what a kernel with `shifted_loads` reads its source through.
    (view, -1) when that boundary lies before the view's storage (a foreign buffer whose
    base is not 16-byte aligned): the kernel then copies word by word."""
    skew = view.data_ptr() % 16 // view.element_size()
    if view.storage_offset() < skew:
        return view, -1
    return view.as_strided((view.numel() + skew,), (1,), view.storage_offset() - skew), skew


def _relaid_out(op: dict | None, plan: PlanOut) -> dict | None:
    """The request's views as the plan moves them: each `relayout` applied (the caller passes
    tensors re-allocated with the new pitches)."""
    if op is None or not plan.relayout:
        return op
    check_term(op)  # the term as sent, blamed as the term; what a relayout makes of it, as that relayout
    op = dict(op)
    for i, r in enumerate(plan.relayout):
        view = op.get(r.side)
        es = view_bytes(view) if isinstance(view, dict) else 0
        new = relaid_out(view["shape"], view["strides"], es, r.old_stride_bytes, r.new_stride_bytes) if es else None
        if new is None:
            raise plan_error(f"relayout[{i}]", f"no dim of the request's {r.side} view has the pitch "
                             f"{r.old_stride_bytes} bytes the relayout replaces: the plan is not the request's",
                             "plan the request again")
        op[r.side] = {**view, "strides": list(new)}
        try:
            check_term(op)
        except InputError as e:
            raise plan_error(f"relayout[{i}]", f"relaid out to the pitch of {r.new_stride_bytes} bytes, the request's "
                             f"{r.side} view is no valid view: {e.headline.message}", "plan the request again") from None
    return op


def _room(t: torch.Tensor) -> int:
    """Bytes of `t`'s storage from its first element on."""
    return t.untyped_storage().nbytes() - t.storage_offset() * t.element_size()


def _extent_bytes(t: torch.Tensor) -> tuple[int, int]:
    """[first, last + 1) bytes of `t`'s storage its view touches (non-negative strides)."""
    start = t.storage_offset() * t.element_size()
    return start, start + (span(t.shape, t.stride()) * t.element_size() if t.numel() else 0)


def _check_apart(a: torch.Tensor, b: torch.Tensor, a_name: str, b_name: str) -> None:
    """InputError when `b` (written) shares bytes of memory with `a`, which the kernel reads:
    it reads and writes without ordering (PyTorch refuses such a copy too). Judged on addresses,
    not storages: two storages over one buffer (numpy, DLPack) share its bytes as well."""
    if not a.numel() or not b.numel() or a.device != b.device:
        return
    (a0, a1), (b0, b1) = _extent_bytes(a), _extent_bytes(b)
    shift = a.untyped_storage().data_ptr() - b.untyped_storage().data_ptr()  # a's bytes in b's storage's frame
    a0, a1 = a0 + shift, a1 + shift
    if a0 < b1 and b0 < a1 and views_meet((a0, tuple(a.shape), tuple(s * a.element_size() for s in a.stride()),
                                           a.element_size()),
                                          (b0, tuple(b.shape), tuple(s * b.element_size() for s in b.stride()),
                                           b.element_size())):
        # (ranges that overlap, of views that interleave without a common byte, pass: views_meet)
        raise _arg_error(b_name, f"{a_name} and {b_name} share memory: the kernel would read what it has "
                         "overwritten", f"pass {b_name} in memory of its own (clone {a_name} first if they must "
                         "overlap)")


def check_dense(t: torch.Tensor, name: str) -> None:
    """InputError unless `t`'s memory holds its values as they read: a dense strided tensor
    without PyTorch's lazy conjugate or negative bit (a `.conj()` or negated view shares the
    unconjugated memory, which a kernel would move as it is: copy_ resolves the bit, a kernel
    of raw words cannot), and no sparse layout (whose memory is not the view's)."""
    if t.layout is not torch.strided:
        raise _arg_error(name, f"{name} is a {str(t.layout).removeprefix('torch.')} tensor; the kernel moves a dense "
                         "strided tensor's memory", f"pass {name}.to_dense()")
    for bit, verb, is_set, resolve in (("conjugate", "conjugation", t.is_conj(), "resolve_conj"),
                                       ("negative", "negation", t.is_neg(), "resolve_neg")):
        if is_set:
            raise _arg_error(name, f"{name} has PyTorch's lazy {bit} bit set: its memory holds the values before "
                             f"the {verb}, which the kernel would move as they are",
                             f"pass {name}.{resolve}() (an output: a tensor without the bit, then apply the "
                             f"{verb} to it)")


def _check_written(t: torch.Tensor, name: str, need: int, src: torch.Tensor) -> None:
    """A tensor the kernel writes (which its call checked dense first, `check_dense`): no
    autograd leaf (an in-place write outside autograd), room for the `need` bytes the kernel
    writes from its first element, and no memory shared with `src`, which it reads."""
    if t.requires_grad:
        raise _arg_error(name, f"{name} requires grad: the kernel writes it in place, outside autograd",
                         f"pass {name}.detach() (or a tensor that does not require grad)")
    if need > _room(t):
        raise _arg_error(name, f"the kernel writes {need} bytes from {name}'s first element; its storage holds "
                         f"{_room(t)}", f"allocate {name} as the kernel asks (its shape, contiguous)")
    _check_apart(src, t, "src", name)


def _within(t: torch.Tensor, bound: int) -> bool:
    """0 <= every entry < bound (one pass, one host sync)."""
    lo, hi = torch.aminmax(t)
    return int(lo) >= 0 and int(hi) < bound


def _descriptor_reach(emitted: Emitted) -> dict[str, int]:
    """Bytes past each side's first element that the emitted descriptors address (a TMA
    load or store stays inside its descriptor's extents), and Triton's own constraint on
    them: power-of-two boxes."""
    reach = {"src": 0, "dst": 0}
    for ln in emitted.launches:
        for arg in ln.args:
            if not arg.startswith("desc:") or arg[5:] not in emitted.descriptors:
                continue
            spec = emitted.descriptors[arg[5:]]
            if any(b < 1 or b & (b - 1) for b in spec.block):
                raise plan_error("descriptors", f"a descriptor's box is {list(reversed(spec.block))} (innermost first); "
                                 "Triton's descriptors take power-of-two boxes only")
            last = spec.offset + sum((n - 1) * st for n, st in zip(spec.shape, spec.strides))
            reach[spec.side] = max(reach[spec.side], (last + 1) * ln.word)
    return reach


def _called(method, args: tuple, kw: dict, what: str, usage: str):
    """method(*args, **kw); a TypeError that the arguments cause (not the method's own: its
    signature is bound only then, once per failure, never on a good call) is said as the call
    it should be."""
    try:
        return method(*args, **kw)
    except TypeError:
        try:
            _signature(method.__func__).bind(None, *args, **kw)
        except TypeError as bad:  # its words ("too many positional arguments"), not the private method's
            raise _arg_error("arguments", f"{what} was called with {len(args)} positional argument(s) and "
                             f"{sorted(kw) or 'no keywords'}: {bad}", f"call it as {usage}") from None
        raise


@cache
def _signature(func) -> inspect.Signature:
    return inspect.signature(func)


class Kernel:
    """A plan's kernel: call it like the movement (see the module docstring).

    Invariants: `source` is exactly what runs; every launch covers the plan's pieces once;
    outputs are written only where the plan's element map says."""

    def __init__(self, plan: PlanOut, emitted: Emitted, request_op: dict | None = None, target: str | None = None,
                 term_checked: bool = False):
        """`term_checked`: `request_op` already passed `check_term` (build_kernel's relayouts
        check each view they make)."""
        self.plan = plan
        self.emitted = emitted
        self.kind = MovementKind(plan.kind)
        self.strategy = emitted.strategy
        self.variant = emitted.variant
        self.request_op = request_op
        if request_op is not None:  # the term and a gather's fields first: every check below reads them
            check_request(plan, request_op, term_checked)
        # key -> (base pointer, descriptor, the tensor weakly): see _cached_desc
        self._descs: dict[object, tuple[int, object, weakref.ref]] = {}
        # (argument, word) -> (the tensor, weakly; its data pointer and storage bytes; its word
        # view): a call with the same tensors builds no view, and a tensor the caller drops
        # takes its view (and so its storage) with it
        self._views: dict[tuple[str, int], tuple[weakref.ref, int, int, torch.Tensor]] = {}
        # bytes past each side's first element that the plan's pieces reach (checked every call)
        pieces = [word_piece(p, f"pieces[{i}]") for i, p in enumerate(plan.pieces)]
        self._reach = {side: max(((wp.src_offset if side == "src" else wp.dst_offset) + wp.span(side)) * wp.word
                                 for wp in pieces) for side in ("src", "dst")}
        for side, reach in _descriptor_reach(emitted).items():
            self._reach[side] = max(self._reach[side], reach)
        g = plan.gather
        if g is not None:  # a slab per index entry: the farthest entry's slab on each side
            self._reach["src"] += (g.index_bound - 1) * g.src_index_stride_bytes
            self._reach["dst"] += max(g.index_count - 1, 0) * g.out_index_stride_bytes
            # out's bytes: its shape's (the request's element) where the request is known, else
            # what the entries' slabs hold (checked against the tensor passed at each call)
            if request_op is None:
                self._check_out_bytes(g.index_count * g.slab_bytes)
            else:  # out_shape is the request's (check_request): the pieces reach past it
                self._check_out_bytes(prod(g.out_shape) * view_bytes(request_op["src"]), "pieces")
        if request_op is not None and self.kind is MovementKind.COPY:  # every element once: as many as the views
            moved = sum(prod(d.extent for d in p.dims) * p.element_bytes for p in plan.pieces)
            src = request_op["src"]
            want = prod(src["shape"]) * view_bytes(src)
            if moved != want:
                raise plan_error("pieces", f"the plan's pieces move {moved} bytes; the request's views hold {want}: the "
                                 "plan is not the request's", "plan the request again (a plan edited after planning "
                                 "no longer covers its views)")
        for side, view in (request_op or {}).items():  # once: a call's tensors must match these views
            if side in self._reach and isinstance(view, dict) and "strides" in view:
                spans = span(view["shape"], view["strides"]) * view_bytes(view)
                if self._reach[side] > spans:
                    raise plan_error("pieces", f"the plan's pieces reach {self._reach[side]} bytes past {side}'s "
                                     f"first element; the request's view of {side} spans {spans}: the plan is not "
                                     "the request's", "plan the request again (a plan edited after planning no "
                                     "longer fits its views)")
        check_plan(plan, request_op, target)

    def _check_out_bytes(self, out_bytes: int, field: str = "gather.out_shape") -> None:
        """A gather's entries reach no further than its out_shape holds (`out_bytes`); `field`:
        what is blamed (the out_shape of a plan alone; the pieces where the request gave it)."""
        if self._reach["dst"] > out_bytes:
            raise plan_error(field, f"the plan's entries reach {self._reach['dst']} bytes of out; "
                             f"out_shape {list(self.plan.gather.out_shape)} holds {out_bytes}: the plan is not one "
                             "the planner made", "send the plan as the planner returned it")

    @property
    def source(self) -> str:
        return self.emitted.source

    @cached_property
    def module(self):
        return load_module(self.emitted.source)

    def __getstate__(self) -> dict:
        """What a pickle takes (to a worker process): the kernel's plan and source; the module
        and the per-tensor caches (this process's tensors, weakly, and their descriptors) stay
        behind and refill at the first call there."""
        state = {k: v for k, v in self.__dict__.items() if k != "module"}
        state["_descs"], state["_views"] = {}, {}
        return state

    def __repr__(self) -> str:
        return f"<legalsat kernel {self.strategy}/{self.variant}: {len(self.emitted.launches)} launch(es)>"

    # ---- arguments ----
    def _check_view(self, t: torch.Tensor, view: dict | None, name: str, side: str) -> None:
        if not isinstance(t, torch.Tensor):
            raise _arg_error(name, f"{name} is a {type(t).__name__}, not a torch.Tensor", f"pass {name} as a tensor")
        check_dense(t, name)
        if t.is_meta:
            raise _arg_error(name, f"{name} is a meta tensor: it has no data to move",
                             f"pass {name} with storage: on a CUDA device (or the CPU under TRITON_INTERPRET=1)")
        if not t.is_cuda and os.environ.get("TRITON_INTERPRET") != "1":
            raise _arg_error(name, f"{name} is on {t.device}; the kernel runs on a CUDA device",
                             f"move {name} to the GPU (or set TRITON_INTERPRET=1 to run it in Triton's interpreter)")
        if view is not None:
            want = TORCH_OF.get(view["dtype"])
            if want is not None and t.dtype != want:
                raise _arg_error(name, f"{name} is {t.dtype}; the plan is for {view['dtype']}",
                                 f"pass {name} as the dtype the plan was made for, or plan this tensor")
        elif self.plan.pieces and self.plan.pieces[0].element_bytes % t.element_size():
            raise _arg_error(name, f"{name} has {t.element_size()}-byte elements; the plan moves "
                             f"{self.plan.pieces[0].element_bytes}-byte ones", "pass the tensor the plan was made for")
        # an extent-1 dim's stride addresses nothing (only its index 0 is read): torch sets such
        # strides as it likes (unsqueeze, a [1, n] row of a larger tensor), so they are not compared
        # (the strides compared whole first: the per-dim loop only where they differ)
        if view is not None and (list(t.shape) != list(view["shape"]) or (list(t.stride()) != view["strides"] and any(
                n > 1 and a != b for n, a, b in zip(view["shape"], t.stride(), view["strides"])))):
            relaid = [r for r in self.plan.relayout if r.side == side]
            raise _arg_error(name, f"{name} has shape {list(t.shape)} strides {list(t.stride())}; the plan "
                             f"is for shape {view['shape']} strides {view['strides']}"
                             + "".join(f" (its relayout: the {r.old_stride_bytes}-byte pitch re-allocated as "
                                       f"{r.new_stride_bytes} bytes)" for r in relaid),
                             (f"allocate {name} with the relayout's pitch and pass that view, " if relaid else
                              "pass the view the plan was made for, ") + "or plan this view")
        # the pieces' reach against the storage (against the request's views: when the kernel was
        # built); without the request, against the view's own extent too
        reach = self._reach[side]
        have = _room(t)
        if reach > have:
            raise _arg_error(name, f"the plan reaches {reach} bytes past {name}'s first element; {name} has {have}",
                             "pass the tensor the plan was made for (after the plan's relayout, if any)")
        extent = _extent_bytes(t)
        if view is None and reach > extent[1] - extent[0]:
            raise _arg_error(name, f"the plan reaches {reach} bytes past {name}'s first element; {name}'s view "
                             f"spans {extent[1] - extent[0]}", "pass the view the plan was made for (build the "
                             "kernel from the whole response to have every view checked)")

    def _cached_desc(self, key, t: torch.Tensor, ptr: int, build):
        """The descriptor cached under `key`, or `build()`'s, kept while the same tensor `t`
        keeps its address `ptr` (a call with the same tensors builds no descriptor). A
        descriptor holds a view of `t`'s storage, so the entry goes when the caller drops `t`:
        a kernel never keeps a tensor alive."""
        cached = self._descs.get(key)
        if cached is None or cached[0] != ptr or cached[2]() is not t:
            ref = weakref.ref(t, lambda r, descs=self._descs, key=key: descs.get(key, (0, 0, None))[2] is r
                              and descs.pop(key))
            self._descs[key] = cached = (ptr, build(), ref)
        return cached[1]

    def _desc(self, spec: DescriptorSpec, t: torch.Tensor, word: int):
        """The host descriptor of `spec` over `t`'s words (see _cached_desc)."""
        ptr = t.data_ptr() + spec.offset * word
        if ptr % 16:
            raise _arg_error(spec.side, f"{spec.side} is not 16-byte aligned where the plan's TMA "
                             "descriptor starts", "plan the request with the tensor's real "
                             "base_align (a TMA plan needs 16), or pass an aligned tensor")
        return self._cached_desc(spec, t, ptr, lambda: self._make_desc(words(t, word, spec.offset, spec.side), spec))

    def _make_desc(self, base: torch.Tensor, spec: DescriptorSpec, **gluon_options):
        """A host descriptor of `spec` over `base`: Gluon's, with the NVMMA shared layout of
        the spec's swizzle (and `gluon_options`), for the Gluon variant; triton.tools' else."""
        if self.variant == "gluon":
            from triton.experimental.gluon import language as gl
            from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor

            layout = gl.NVMMASharedLayout(swizzle_byte_width=spec.swizzle, element_bitwidth=8 * base.element_size(),
                                          rank=len(spec.shape))
            return GluonDescriptor(base, list(spec.shape), list(spec.strides), list(spec.block), layout,
                                   **gluon_options)
        from triton.tools.tensor_descriptor import TensorDescriptor

        return TensorDescriptor(base, list(spec.shape), list(spec.strides), list(spec.block))

    def _words(self, name: str, t: torch.Tensor, word: int) -> torch.Tensor:
        """`words(t, word)`, kept while the same tensor keeps its address and storage."""
        ptr, nbytes = t.data_ptr(), t.untyped_storage().nbytes()
        key = (name, word)
        hit = self._views.get(key)
        if hit is not None and hit[0]() is t and hit[1] == ptr and hit[2] == nbytes:
            return hit[3]
        view = words(t, word, name=name)
        ref = weakref.ref(t, lambda r, views=self._views, key=key: views.get(key, (None,))[0] is r
                          and views.pop(key))
        self._views[key] = (ref, ptr, nbytes, view)
        return view

    def _run(self, named: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        em = self.emitted
        dev = next(iter(named.values())).device
        bufs = {k: torch.empty(n, dtype=getattr(torch, dt), device=dev) for k, (dt, n) in em.buffers.items()}
        mod = self.module
        views: dict[tuple[str, int], torch.Tensor] = {}  # one word view per tensor and width per call
        for ln in em.launches:
            for z in ln.zero:
                bufs[z].zero_()
            args = []
            for a in ln.args:
                if a.startswith("buf:"):
                    args.append(bufs[a[4:]])
                elif a.startswith("desc:"):
                    spec = em.descriptors[a[5:]]
                    args.append(self._desc(spec, named[spec.side], ln.word))
                elif a in ("src", "dst", "out"):
                    if (a, ln.word) not in views:
                        views[(a, ln.word)] = self._words(a, named[a], ln.word)
                    args.append(views[(a, ln.word)])
                elif a in ("src:aligned", "src:skew"):
                    if ("src:aligned", ln.word) not in views:  # one (base, skew) per call
                        views[("src:aligned", ln.word)] = aligned_words(self._words("src", named["src"], ln.word))
                    args.append(views[("src:aligned", ln.word)][a == "src:skew"])
                else:
                    args.append(named[a])
            grid = ln.grid
            if grid == "persistent":
                grid = max(1, min(ln.tiles, _sm_count(dev) * ln.blocks_per_sm))
            getattr(mod, ln.kernel)[(grid,)](*args, num_warps=ln.num_warps)
        return bufs

    def __call__(self, *args, **kw):
        call = self._copy if self.kind is MovementKind.COPY else self._gather
        usage = "k(src, dst)" if self.kind is MovementKind.COPY else "k(src, index, out[, group=...])"
        return _called(call, args, kw, f"this {self.kind.value} kernel", usage)

    def _copy(self, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        op = self.request_op
        self._check_view(src, op and op["src"], "src", "src")
        self._check_view(dst, op and op["dst"], "dst", "dst")
        if src.device != dst.device:
            raise _arg_error("dst", f"src is on {src.device}, dst on {dst.device}", "put both on one device")
        _check_written(dst, "dst", self._reach["dst"], src)
        self._run({"src": src, "dst": dst})
        return dst

    def _gather(self, src: torch.Tensor, index: torch.Tensor, out: torch.Tensor, *,
                group: torch.Tensor | None = None, check_bounds: bool = True):
        """k(src, index, out[, group=]): `check_bounds=False` skips the index/group range check
        (one host sync) for entries the caller has bounded; an entry out of range then reads
        outside src (README, Kernels)."""
        if not isinstance(check_bounds, bool):  # "no" or "false" is truthy: the check would stay on, unasked
            raise _arg_error("check_bounds", f"check_bounds is {check_bounds!r}, not True or False",
                             "pass check_bounds=True (the default) or False")
        g = self.plan.gather
        count, bound = g.index_count, g.index_bound
        op = self.request_op
        self._check_view(src, op and op["src"], "src", "src")
        elements = prod(g.out_shape)
        if op is None and count and elements:  # a plan alone: its element size from the slab of an entry
            es = g.slab_bytes * count // elements
            for name, t in (("src", src), ("out", out)):
                if isinstance(t, torch.Tensor) and t.element_size() != es:
                    raise _arg_error(name, f"{name} has {t.element_size()}-byte elements; the plan gathers {es}-byte "
                                     f"ones ({g.slab_bytes} bytes an entry)", "pass the tensors the plan was made for")
            # index values step src along the plan's axis: a transposed src or one of another pitch
            # ran, gathering other bytes than the rows the plan was made for
            step = src.stride(g.axis) * g.unit * src.element_size() if g.axis < src.dim() else None
            if g.index_bound > 1 and step != g.src_index_stride_bytes:
                raise _arg_error("src", f"src steps {step} bytes along its axis {g.axis} an index value; the plan "
                                 f"steps {g.src_index_stride_bytes} (src is {_described(src)})",
                                 "pass the tensor the plan was made for (build the kernel from the whole response to "
                                 "have every view checked)")
        for name, t in (("index", index), ("out", out)):
            if not isinstance(t, torch.Tensor):
                raise _arg_error(name, f"{name} is {'None' if t is None else 'a ' + type(t).__name__}, not a "
                                 "torch.Tensor", f"pass {name} as a tensor: k(src, index, out)")
            check_dense(t, name)
        for name, t in (("index", index), ("group", group)):
            if t is None:
                continue
            if name == "group" and isinstance(t, torch.Tensor):  # index: checked dense with out above
                check_dense(t, name)
            if not isinstance(t, torch.Tensor) or t.dtype not in INDEX_DTYPES or t.dim() != 1 or t.numel() != count:
                raise _arg_error(name, f"{name} must be a 1-D int32/int64 tensor of {count} entries; it is "
                                 f"{_described(t)}", f"pass {name} as torch.int32 or torch.int64 with {count} entries")
        for name, t in (("index", index), ("out", out), ("group", group)):
            if isinstance(t, torch.Tensor) and t.device != src.device:
                raise _arg_error(name, f"src is on {src.device}, {name} on {t.device}", "put every tensor on one device")
        if not index.is_contiguous():
            index = index.contiguous()
        if list(out.shape) != list(g.out_shape) or not out.is_contiguous() or out.dtype != src.dtype:
            raise _arg_error("out", f"out must be a contiguous {src.dtype} tensor of shape {g.out_shape}; it is "
                             f"{_described(out)}",
                             "allocate out with torch.empty(plan['gather']['out_shape'], dtype=src.dtype, ...)")
        self._check_out_bytes(out.numel() * out.element_size())
        _check_written(out, "out", out.numel() * out.element_size(), src)
        for name, t in (("index", index), ("group", group)):
            if t is not None:  # read by every program while others write out (torch's index_select refuses it too)
                _check_apart(t, out, name, "out")
            if t is not None and t.numel() * t.element_size() > _room(t):
                raise _arg_error(name, f"{name}'s storage holds {_room(t)} bytes from its first entry; its "
                                 f"{t.numel()} entries take {t.numel() * t.element_size()}",
                                 f"pass {name} with the storage its view needs")
        if check_bounds and count and not _within(index, bound):
            raise _arg_error("index", f"index holds entries outside [0, {bound})", "clamp or filter the indices")
        groups = g.groups
        if group is not None and not groups:
            raise _arg_error("group", "this plan does not route slots to groups: group= would be ignored",
                             "plan the gather with index.groups (MoE), or leave group out")
        if groups and group is None:
            raise _arg_error("group", "this plan routes slots to groups (MoE): pass group=, the group of each slot",
                             "call k(src, index, out, group=experts)")
        named = {"src": src, "out": out, "index": index}
        if groups and check_bounds and not _within(group, groups):
            raise _arg_error("group", f"group holds entries outside [0, {groups})", "route slots to 0..groups-1")
        if groups and self.strategy != "inspector_executor":
            # the plan's executor is a plain row gather: order the slots by group first
            order = torch.argsort(group, stable=True)
            named["index"] = index[order]
            self._run(named)
            counts = torch.zeros(groups, dtype=torch.int64, device=group.device)
            counts.index_add_(0, group.long(), torch.ones_like(group, dtype=torch.int64))  # no host sync
            offsets = torch.zeros(groups + 1, dtype=torch.int32, device=group.device)
            offsets[1:] = torch.cumsum(counts, 0)
            return out, order.to(torch.int32), offsets
        if groups:
            named["group"] = group.contiguous()
        bufs = self._run(named)
        if groups:
            return out, bufs["order"], bufs["offsets"]
        return out


# the torch dtype a tile probe's wgmma reads (unsigned bytes as int8: the identity product of
# the same bits; the check compares bits)
WGMMA_TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
               "float32_ftz": torch.float32, "tfloat32": torch.float32, "tfloat32_ftz": torch.float32,
               "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2, "int8": torch.int8,
               "uint8": torch.int8}


class TileKernel(Kernel):
    """A load_tile plan's kernel: `k(src)` loads every tile of src as the plan says and
    returns the tiles as its consumer read them, a `[*grid, *tile]` tensor (the overhang of
    edge tiles is zero): src's dtype for rows / cols reads, float32 (int32 for 8-bit
    integers) for the Gluon probe's wgmma reads.

        tiles = k(src)                       # or k(src, out=buffer)
        tiles = k(src, stages=raw)           # Gluon probe: raw[t] = tile t's stage, as int32 words
        k.walk(src)                          # the walk alone (loads, no reads): what to time

    Invariants: every tile position is written once; `source` is exactly what runs."""

    def __init__(self, plan: PlanOut, emitted: Emitted, request_op: dict | None = None, target: str | None = None,
                 term_checked: bool = False):
        super().__init__(plan, emitted, request_op, target, term_checked)
        self.out_shape = emitted.tile.shape
        self.word = emitted.launches[0].word

    def out_dtype(self, src: torch.Tensor) -> torch.dtype:
        element = self.emitted.tile.element
        return {"float32": torch.float32, "int32": torch.int32}.get(element, src.dtype)

    def _check_src(self, src: torch.Tensor) -> None:
        op = self.request_op
        self._check_view(src, op and op["src"], "src", "src")
        if src.element_size() != self.word:
            raise _arg_error("src", f"src has {src.element_size()}-byte elements; the plan moves {self.word}-byte ones",
                             "pass the tensor the plan was made for")
        if op is None:  # without the request, the descriptor's reach is what can be checked
            dims = self.plan.pieces[0].dims
            need = span([d.extent for d in dims], [d.src_stride for d in dims])
            have = src.untyped_storage().nbytes() // self.word - src.storage_offset()
            if need > have:
                raise _arg_error("src", f"the plan walks {need} elements past src's first; src has {have}",
                                 "pass the tensor the plan was made for")

    def _base(self, src: torch.Tensor) -> torch.Tensor:
        wg = self.emitted.tile.wgmma_input
        base = words(src, self.word, 0, "src")
        return base.view(WGMMA_TORCH[wg]) if wg else base

    def _tile_desc(self, src: torch.Tensor):
        spec = self.emitted.descriptors["tile"]
        if src.data_ptr() % 16:
            raise _arg_error("src", "src is not 16-byte aligned where the plan's TMA descriptor starts",
                             "plan the request with the tensor's real base_align, or pass an aligned tensor")
        # edge tiles overhang the tensor: TMA fills what lies outside with zeros
        return self._cached_desc((spec, self.emitted.tile.wgmma_input), src, src.data_ptr(),
                                 lambda: self._make_desc(self._base(src), spec, padding="zero"))

    def _args(self, src: torch.Tensor, out: torch.Tensor, stages: torch.Tensor | None, mode: int) -> list:
        args = []
        for a in self.emitted.launches[0].args:
            if a == "src":
                args.append(words(src, self.word, 0, "src"))
            elif a == "out":
                args.append(out.view(WORD_DTYPE[self.word]) if self.emitted.tile.element == "words" else out)
            elif a == "dump":
                args.append(stages)
            elif a.startswith("desc:"):
                args.append(self._tile_desc(src))
            elif a == "const:MODE":
                args.append(mode)
        return args

    def _launch(self, src: torch.Tensor, out: torch.Tensor, stages: torch.Tensor | None, mode: int) -> None:
        ln = self.emitted.launches[0]
        grid = ln.grid
        if grid == "persistent":
            grid = max(1, min(ln.tiles, _sm_count(src.device) * ln.blocks_per_sm))
        getattr(self.module, ln.kernel)[(grid,)](*self._args(src, out, stages, mode), num_warps=ln.num_warps)

    def warmup(self, src: torch.Tensor, *, out: torch.Tensor, stages: torch.Tensor | None = None) -> None:
        """Compile the kernel (every mode) for src's device without running it."""
        ln = self.emitted.launches[0]
        fn = getattr(self.module, ln.kernel)
        for mode in (0, 1) if "const:MODE" in ln.args else (0,):
            fn.warmup(*self._args(src, out, stages, mode), grid=(1,), num_warps=ln.num_warps)

    def __call__(self, *args, **kw) -> torch.Tensor:
        return _called(self._load, args, kw, "this load_tile kernel", "k(src[, out=...][, stages=...])")

    def _load(self, src: torch.Tensor, *, out: torch.Tensor | None = None,
              stages: torch.Tensor | None = None) -> torch.Tensor:
        self._check_src(src)
        dtype = self.out_dtype(src)
        if out is None:
            out = torch.empty(self.out_shape, dtype=dtype, device=src.device)
        else:
            if isinstance(out, torch.Tensor):
                check_dense(out, "out")
            if (not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(self.out_shape) or out.dtype != dtype
                    or not out.is_contiguous() or out.device != src.device):
                raise _arg_error("out", f"out must be a contiguous {dtype} tensor of shape {list(self.out_shape)} on "
                                 f"{src.device}; it is {_described(out)}", "allocate it with torch.empty(k.out_shape, "
                                 "dtype=k.out_dtype(src), device=src.device)")
        _check_written(out, "out", out.numel() * out.element_size(), src)
        words_per_tile = self.emitted.tile.dump_words
        if stages is not None:
            if not words_per_tile:
                raise _arg_error("stages", "this kernel has no raw stage copy (the tl walk has no stages)",
                                 "build the plan's gluon variant on an sm90 GPU")
            want = (prod(self.plan.tile_load.grid), words_per_tile)
            if tuple(stages.shape) != want or stages.dtype != torch.int32 or not stages.is_contiguous():
                raise _arg_error("stages", f"stages must be a contiguous int32 tensor of shape {list(want)}",
                                 "allocate it with torch.empty(k.stages_shape, dtype=torch.int32)")
        elif words_per_tile:
            stages = torch.empty(prod(self.plan.tile_load.grid), words_per_tile, dtype=torch.int32,
                                 device=src.device)
        self._launch(src, out, stages, 0)
        return out

    @property
    def stages_shape(self) -> tuple[int, int]:
        return (prod(self.plan.tile_load.grid), self.emitted.tile.dump_words)

    def walk(self, src: torch.Tensor, *, out: torch.Tensor | None = None,
             stages: torch.Tensor | None = None) -> None:
        """Load every tile through the plan's pipeline and read nothing (the Gluon probe's
        MODE=1; the tl walk stores its tiles): what the plan's estimate describes."""
        self._check_src(src)
        if self.variant != "gluon":
            self(src, out=out)
            return
        if out is None:
            out = torch.empty(1, dtype=self.out_dtype(src), device=src.device)
        if stages is None:
            stages = torch.empty(1, dtype=torch.int32, device=src.device)
        self._launch(src, out, stages, 1)


def _on_sm90() -> bool:
    """Whether kernels run on an sm90 GPU here (not in Triton's interpreter)."""
    return (os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available()
            and torch.cuda.get_device_capability()[0] == 9)


def build_kernel(plan: object, *, variant: str = "auto", plan_index: int = 0) -> Kernel:
    """The kernel of a plan: a plan (dict or PlanOut), or a whole optimize response (its
    `plan_index`-th plan; the request's views are then checked at every call).

    variant: "tl" (runs anywhere Triton does, the interpreter included), "gluon" (sm90 TMA
    plans), or "auto": `legalsat.kernels.default_variant` (Gluon for straight TMA copies on an
    sm90 GPU, tl otherwise).
    Raises InputError naming the plan field when the plan cannot become a kernel."""
    p, op = select_plan(plan, plan_index)
    with fields_as_passed(plan, plan_index):
        op = _relaid_out(op, p)
        variant = chosen_variant(variant, p, _on_sm90(), response_target(plan), "variant")
        if variant == "gluon" and not _on_sm90():  # Gluon kernels run on an sm90 GPU only, never interpreted
            where = "Triton's interpreter (TRITON_INTERPRET=1)" if os.environ.get("TRITON_INTERPRET") == "1" else \
                "a machine without an sm90 GPU"
            raise _arg_error("variant", f"the gluon variant runs on an sm90 GPU, not in {where}",
                             'use variant="tl" (or "auto"), or run on an H100/H200')
        emitted = emit(p, variant)
        # a relaid-out op was checked as each relayout made it (`_relaid_out`)
        return (TileKernel if p.kind == MovementKind.LOAD_TILE else Kernel)(p, emitted, op, response_target(plan),
                                                                           term_checked=bool(op and p.relayout))


__all__ = ["Kernel", "TileKernel", "build_kernel", "load_module", "matmul", "words"]


def matmul(a: torch.Tensor, b: torch.Tensor, **kw) -> torch.Tensor:
    """C = a @ b through a GEMM whose operand loads legalsat plans: see legalsat.clients.matmul."""
    from legalsat.clients.matmul import matmul as _matmul

    return _matmul(a, b, **kw)
