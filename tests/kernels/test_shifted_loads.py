"""Direct copies of 2-byte elements whose source rows start off 16 bytes (a column slice from
a 2-byte aligned base, an odd pitch) while the destination's do not: the plan reads them as
aligned 16-byte vectors and shifts them into place (`shifted_loads`). Each runs bit-exact in
Triton's interpreter, ragged rows and blocks included, and from a buffer whose own base is not
on 16 bytes (the word-by-word branch); the kernel takes words of 1, 4 and 8 bytes too (plans
whose pieces say so), which the planner does not shift (measured: no gain at 4 and 8 bytes, a
loss at 1); a plan that claims the shift for a piece that cannot take it is refused naming the
field."""

from __future__ import annotations

import copy
import math

import pytest

from legalsat.api import optimize
from tests.kernels.client import require_client, sm90_access_counts

CASES = [  # dtype, shape, source strides, source base alignment
    ("bfloat16", [40, 104], [105, 1], 2),
    ("bfloat16", [37, 296], [303, 1], 2),
    ("bfloat16", [3, 2000], [2001, 1], 2),
    ("uint8", [9, 208], [211, 1], 1),
    ("uint8", [33, 4096], [4097, 1], 1),
    ("float32", [5, 3, 72], [700, 230, 1], 4),
    ("int16", [130, 64], [67, 1], 8),
    ("bfloat16", [5000], [1], 2),  # one misaligned run: rows of one, blocks along it
]


def _request(dtype: str, shape: list[int], strides: list[int], align: int) -> dict:
    dst = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    return {"op": {"kind": "copy", "src": {"dtype": dtype, "shape": shape, "strides": strides, "base_align": align},
                   "dst": {"dtype": dtype, "shape": shape, "strides": dst}}}


@pytest.mark.parametrize("dtype,shape,strides,align", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_a_misaligned_source_is_read_as_aligned_vectors_and_shifted(monkeypatch, dtype, shape, strides, align):
    require_client()
    import torch

    from legalsat.clients.triton import build_kernel
    from legalsat.testing.torch_reference import make_inputs, poison, reference, same_bits

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    resp = optimize(_request(dtype, shape, strides, align))
    plan = resp["plans"][0]
    planned = plan["pieces"][0]["element_bytes"] == 2
    assert plan["strategy"] == "direct" and bool(plan["pieces"][0].get("shifted_loads")) == planned
    if planned:
        assert plan["pieces"][0]["vector_bytes"] == 16
    else:  # the kernel's own generality: the same piece, told to shift
        plan["pieces"][0] |= {"shifted_loads": True, "vector_bytes": 16}
    inp = make_inputs(resp, {"torch_op": "copy"}, "cpu", torch.Generator().manual_seed(3))
    want = reference(inp)
    k = build_kernel(resp, variant="tl")
    assert k.emitted.launches[0].args == ("src:aligned", "dst", "src:skew")
    poison(inp)
    assert same_bits(inp.call(k), want), k.source


def test_a_source_whose_storage_is_not_16_byte_aligned_is_copied_word_by_word(monkeypatch):
    """The 16-byte boundary before such a view lies outside its storage: the client passes
    the view itself and a skew of -1, and the kernel takes its word-by-word branch."""
    require_client()
    import torch

    from legalsat.clients.triton import aligned_words, build_kernel, words

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    rows, cols, pitch = 37, 296, 303
    raw = bytearray(2 * (rows * pitch) + 64)
    offset = next(o for o in range(2, 16, 2) if torch.frombuffer(raw, dtype=torch.uint8, offset=o).data_ptr() % 16)
    storage = torch.frombuffer(raw, dtype=torch.int16, offset=offset, count=rows * pitch)
    storage.copy_(torch.randint(-30000, 30000, (rows * pitch,), dtype=torch.int16))
    src = storage.view(torch.bfloat16).as_strided((rows, cols), (pitch, 1))
    assert aligned_words(words(src, 2))[1] == -1
    k = build_kernel(optimize(_request("bfloat16", [rows, cols], [pitch, 1], 2)), variant="tl")
    dst = torch.full((rows, cols), float("nan"), dtype=torch.bfloat16)
    k(src, dst)
    assert torch.equal(dst.view(torch.int16), src.contiguous().view(torch.int16))


def test_the_shift_is_planned_only_where_it_applies():
    """An aligned source keeps its own 16-byte loads, a misaligned destination its element
    stores (the shift aligns loads only), a short run is not worth the shift, and 1-, 4- and
    8-byte elements are not shifted (on the H100: 4 and 8 bytes ran at the copy limit either
    way, the 1-byte shift 63.5 us against 52.2 plain: benchmarks/shifted_load_dtypes.json)."""
    aligned = optimize(_request("bfloat16", [37, 296], [304, 1], 16))["plans"][0]["pieces"][0]
    assert not aligned.get("shifted_loads") and aligned["vector_bytes"] == 16
    req = _request("bfloat16", [37, 300], [303, 1], 2)  # 600-byte destination rows: off 16 bytes
    assert not any(p.get("shifted_loads") for p in optimize(req)["plans"][0]["pieces"])
    short = optimize(_request("bfloat16", [512, 8], [9, 1], 2))["plans"][0]["pieces"][0]
    assert not short.get("shifted_loads")
    for dtype, cols in (("uint8", 8192), ("float32", 2048), ("int64", 1024)):
        eb = {"uint8": 1, "float32": 4, "int64": 8}[dtype]
        piece = optimize(_request(dtype, [64, cols], [cols + 1, 1], eb))["plans"][0]["pieces"][0]
        assert not piece.get("shifted_loads") and piece["vector_bytes"] == eb


def test_a_plan_claiming_the_shift_where_it_cannot_apply_is_refused():
    from legalsat.diagnostics import InputError
    from legalsat.kernels import emit

    plan = optimize(_request("bfloat16", [37, 296], [303, 1], 2))["plans"][0]
    bad = copy.deepcopy(plan)
    bad["pieces"][0]["dims"][-1]["dst_stride"] = 2  # the run is no longer contiguous in the destination
    with pytest.raises(InputError) as e:
        emit(bad)
    assert "pieces[0].shifted_loads" in str(e.value)


def test_a_source_that_is_one_aligned_run_is_not_shifted():
    """Rows of 50257 bf16 copied into a padded pitch: the source rows start off 16 bytes, but
    the source is one contiguous run from an aligned base, which the flat copy already loads
    as 16-byte vectors (1.00 of a same-size copy on the H100)."""
    req = {"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, 50257], "strides": [50257, 1]},
                  "dst": {"dtype": "bfloat16", "shape": [64, 50257], "strides": [50264, 1]}}}
    piece = optimize(req)["plans"][0]["pieces"][0]
    assert not piece.get("shifted_loads")
    req["op"]["src"]["base_align"] = 2  # the same run from a 2-byte aligned base is shifted
    assert optimize(req)["plans"][0]["pieces"][0].get("shifted_loads")


def test_the_column_slice_kernel_loads_and_stores_16_byte_vectors_without_shared_memory():
    """Compiled for sm90 (no GPU needed): the shift is a gather within each thread's registers
    (a gather along the whole row compiled to 128 shuffles a word; here, no shared memory) and
    both the loads and the stores are 16-byte vectors."""
    require_client()
    counts = sm90_access_counts(_request("bfloat16", [8192, 4096], [4098, 1], 2))
    assert counts["ld_v4"] >= 2 and counts["st_v4"] >= 1 and counts["shared"] == 0, counts


def test_the_launch_benchmark_passes_a_shifted_copy_its_aligned_source(monkeypatch):
    """benchmarks/bench_launch.py skipped every plan whose launch took other arguments than the
    movement's tensors; it now launches a shifted copy with its aligned source and skew."""
    require_client()
    import torch

    import benchmarks.bench_launch as bench_launch
    from legalsat.testing import torch_reference

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    made = []  # the benchmark's inputs, to check what its direct launch wrote
    monkeypatch.setattr(torch_reference, "make_inputs", lambda *a, f=torch_reference.make_inputs: made.append(f(*a))
                        or made[-1])
    timed = []
    monkeypatch.setattr(bench_launch, "host_us", lambda fn: timed.append(fn) or 1.0)
    resp = optimize(_request("bfloat16", [37, 296], [303, 1], 2))
    row = bench_launch.measure("slice", {"response": resp, "workload": {"torch_op": "copy"}}, "cpu")
    assert row is not None and row["jit_launch_us"] == 1.0 and len(timed) == 3
    inp = made[0]
    torch_reference.poison(inp)
    timed[1]()  # the kernel launched directly, with the arguments the benchmark built
    assert torch.equal(inp.dst.view(torch.int16), inp.src.contiguous().view(torch.int16))


def test_explain_says_what_the_shift_does_and_what_the_estimate_takes():
    """explain said "16-byte loads ... 16-byte accesses run at 98% of copy bandwidth" next to an
    estimate at 92%: the one it takes is the source's 2-byte alignment."""
    req = _request("bfloat16", [8192, 4096], [4098, 1], 2) | {"options": {"explain": True}}
    lines = optimize(req)["plans"][0]["explain"]
    assert lines[0].startswith("bandwidth-bound at 92%") and "shifted into place" in lines[0]
    assert any("shifted into place" in line and "2-byte accesses (92% of copy bandwidth" in line for line in lines)
