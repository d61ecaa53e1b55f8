"""The Triton client's calls: a tensor passed again is not re-viewed as words, and a tensor
the caller drops is not kept alive by the kernel."""

from __future__ import annotations

import pytest


@pytest.fixture
def client():
    from tests.kernels.client import require_client

    require_client()


def test_a_dropped_tensor_takes_its_word_view_with_it(client):
    """The kernel keeps a word view per argument between calls, but not past the tensor."""
    import gc

    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import view

    flat = view("uint8", (4096,))
    k = build_kernel(optimize({"target": "sm90", "op": {"kind": "copy", "src": flat, "dst": flat}}))
    src = torch.zeros(4096, dtype=torch.uint8)
    first = k._words("src", src, 8)
    assert k._words("src", src, 8) is first  # the same tensor: the same view
    del src, first
    gc.collect()
    assert ("src", 8) not in k._views


def test_a_dropped_tensor_takes_its_tma_descriptor_with_it(client):
    """A TMA plan's host descriptor is built once per tensor and kept between calls, but it
    holds a view of the tensor's storage: the kernel drops it with the caller's tensor."""
    import gc

    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import permuted, view

    resp = optimize({"target": "sm90", "op": {"kind": "copy", "src": view("bfloat16", (256, 128)),
                                              "dst": permuted("bfloat16", (256, 128), (1, 0))}})
    i = next(i for i, p in enumerate(resp["plans"]) if p["strategy"] == "tma")
    k = build_kernel(resp, plan_index=i, variant="tl")
    (spec, word), = {(k.emitted.descriptors[a[5:]], ln.word) for ln in k.emitted.launches for a in ln.args
                     if a.startswith("desc:") and k.emitted.descriptors[a[5:]].side == "src"}
    src = torch.zeros(256 * 128, dtype=torch.bfloat16)
    first = k._desc(spec, src, word)
    assert k._desc(spec, src, word) is first  # the same tensor: the same descriptor
    other = torch.zeros_like(src)
    assert k._desc(spec, other, word) is not first
    del src, other, first
    gc.collect()
    assert spec not in k._descs


def test_a_dropped_source_takes_its_tile_descriptor_with_it(client):
    import gc

    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import view

    resp = optimize({"target": "sm90", "op": {"kind": "load_tile", "src": view("bfloat16", (256, 128)),
                                              "tile": [64, 64], "consumer": "rows"}})
    k = build_kernel(resp, variant="tl")
    src = torch.zeros(256, 128, dtype=torch.bfloat16)
    first = k._tile_desc(src)
    assert k._tile_desc(src) is first and len(k._descs) == 1
    del src, first
    gc.collect()
    assert not k._descs


def test_a_plan_edited_past_its_views_does_not_run(client, monkeypatch):
    """A response whose plan was edited after planning (a piece made longer, a stride made
    negative) is refused before any store (when its kernel is built): it would write past dst's view into the rest of its
    storage, or below its base."""
    import copy

    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError
    from legalsat.testing.planner_suite import view

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    resp = optimize({"target": "sm90", "op": {"kind": "copy", "src": view("float32", (64, 64)),
                                              "dst": view("float32", (64, 64), (1, 64))}})
    longer = copy.deepcopy(resp)
    longer["plans"][0]["pieces"][0]["dims"][-1]["extent"] *= 2
    room = torch.full((4 * 4096,), -7.0)  # dst's storage is larger than its view
    src = torch.arange(4096, dtype=torch.float32).view(64, 64)
    with pytest.raises(InputError) as e:  # refused when built, against the request's views
        build_kernel(longer)(src, torch.as_strided(room, (64, 64), (1, 64)))
    assert "not the request's" in e.value.headline.message
    assert (room[4096:] == -7).all()
    negative = copy.deepcopy(resp)
    negative["plans"][0]["pieces"][0]["dims"][0]["src_stride"] = -64
    with pytest.raises(InputError) as e:
        build_kernel(negative)
    assert e.value.headline.field.endswith("dims[0].src_stride")


def test_a_relaid_out_plan_runs_from_its_response_on_relaid_out_tensors(client, monkeypatch):
    """A plan with a `relayout` (options.allow_padding) moves into the re-allocated pitch:
    built from its response it checks the caller's tensors against the relaid-out views (it
    refused every such plan: "the plan's pieces reach 4604 bytes past src's first element;
    the request's view of src spans 4510"), and it copies them exactly."""
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    src_v = {"dtype": "bfloat16", "shape": [1, 48, 23, 2, 1], "strides": [2256, 47, 2, 1, 1000], "base_align": 16}
    dst_v = {"dtype": "bfloat16", "shape": [1, 48, 23, 2, 1], "strides": [0, 46, 2, 1, 1], "base_align": 16}
    resp = optimize({"op": {"kind": "copy", "src": src_v, "dst": dst_v},
                     "options": {"max_plans": 3, "allow_padding": True}})
    i = next(i for i, p in enumerate(resp["plans"]) if p.get("relayout"))
    k = build_kernel(resp, plan_index=i, variant="tl")
    pitch = {r["side"]: r["new_stride_bytes"] // 2 for r in resp["plans"][i]["relayout"]}
    src_s = [pitch["src"] if s == 47 else s for s in src_v["strides"]] if "src" in pitch else src_v["strides"]
    dst_s = [pitch["dst"] if s == 46 else s for s in dst_v["strides"]] if "dst" in pitch else dst_v["strides"]
    shape = src_v["shape"]
    src = torch.as_strided(torch.randn(48 * 128, dtype=torch.float32).to(torch.bfloat16), shape, src_s)
    dst = torch.as_strided(torch.zeros(48 * 128, dtype=torch.bfloat16), shape, dst_s)
    k(src, dst)
    assert torch.equal(dst.view(torch.int16), src.view(torch.int16))


def _gather_response():
    from legalsat.api import optimize

    return optimize({"op": {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [100, 64], "strides": [64, 1]},
                            "axis": 0, "index": {"count": 77, "distribution": "random"}}})


def _refusal(call, field: str):
    """The headline of the InputError `call` raises, which names `field`."""
    from legalsat.diagnostics import InputError

    with pytest.raises(InputError) as e:
        call()
    assert e.value.headline.field == field, e.value.headline
    return e.value.headline


def _refused(call, field: str) -> str:
    return _refusal(call, field).message


def test_a_gather_never_writes_or_reads_past_its_tensors(client, monkeypatch):
    """out's storage, the index bound's reach into src and the gather fields of an edited plan
    are checked before any store: a 16-byte out was written 9,856 bytes (the process died), a
    one-row src was read 12,672 bytes past its end, an edited index bound or entry stride read
    and wrote outside the tensors."""
    import copy

    import torch

    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    resp = _gather_response()
    src = torch.randn(100, 64).to(torch.bfloat16)
    index = torch.randint(0, 100, (77,))
    short = torch.empty(77, 64, dtype=torch.bfloat16)
    short.untyped_storage().resize_(16)
    assert "storage holds 16" in _refused(lambda: build_kernel(resp)(src, index, short), "out")
    one_row = torch.randn(1, 64).to(torch.bfloat16)
    alone = build_kernel(resp["plans"][0])  # the plan alone: no request views to check against
    _refused(lambda: alone(one_row, torch.full((77,), 0), torch.empty(77, 64, dtype=torch.bfloat16)), "src")
    for name, value in (("index_bound", 1000), ("src_index_stride_bytes", 256), ("out_index_stride_bytes", 256)):
        edited = copy.deepcopy(resp)
        edited["plans"][0]["gather"][name] = value
        _refused(lambda edited=edited: build_kernel(edited), f"plans[0].gather.{name}")  # the response's field
    edited = copy.deepcopy(resp["plans"][0])  # the plan alone: its own fields must agree
    edited["gather"]["out_index_stride_bytes"] = 256
    _refused(lambda: build_kernel(edited), "gather.out_shape")
    out = torch.empty(77, 64, dtype=torch.bfloat16, requires_grad=True)
    _refused(lambda: build_kernel(resp)(src, index, out), "out")
    _refused(lambda: build_kernel(resp)(src, index, src[:77]), "out")  # out inside src's storage


def test_a_copy_refuses_views_it_would_write_outside_or_read_while_writing(client, monkeypatch):
    """Built from the plan alone, a dst view smaller than the plan's reach was written past its
    end (within the storage); src and dst sharing memory, and a dst that requires grad, were
    written silently."""
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import permuted, view

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    resp = optimize({"op": {"kind": "copy", "src": view("bfloat16", (40, 72)),
                            "dst": permuted("bfloat16", (40, 72), (1, 0))}})
    src = torch.randn(40, 72).to(torch.bfloat16)
    buf = torch.full((8192,), 7.0, dtype=torch.bfloat16)
    alone = build_kernel(resp["plans"][0])
    assert "view spans" in _refused(lambda: alone(src, buf[100:110]), "dst")
    assert (buf == 7).all()
    both = torch.zeros(2 * 40 * 72, dtype=torch.bfloat16)
    _refused(lambda: build_kernel(resp)(both[:2880].view(40, 72), torch.as_strided(both, (40, 72), (1, 40), 8)),
             "dst")
    dst = torch.as_strided(torch.zeros(2880, dtype=torch.bfloat16, requires_grad=True), (40, 72), (1, 40))
    _refused(lambda: build_kernel(resp)(src, dst), "dst")


def test_memory_the_kernel_reads_while_it_writes_is_refused_whichever_storage_holds_it(client, monkeypatch):
    """A gather's index sharing memory with its out (torch's index_select refuses it; the
    kernel overwrote indices later programs read), and src and dst as two storages over one
    numpy buffer (the check compared storages), ran and gave wrong answers."""
    import numpy as np
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import permuted, view

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    n, rows, cols = 4096, 64, 4
    gather = optimize({"op": {"kind": "gather", "src": view("int64", (rows, cols)), "axis": 0,
                              "index": {"count": n}}})
    src = torch.arange(rows * cols, dtype=torch.int64).view(rows, cols)
    buf = torch.empty(n * cols + n, dtype=torch.int64)
    out, index = buf[n:].view(n, cols), buf[n // 2: n + n // 2]
    index.copy_(torch.randint(0, rows, (n,)))
    assert "share memory" in _refused(lambda: build_kernel(gather, variant="tl")(src, index, out), "out")
    copy = optimize({"op": {"kind": "copy", "src": view("float32", (17, 33)),
                            "dst": permuted("float32", (17, 33), (1, 0))}})
    arr = np.random.default_rng(0).standard_normal(600).astype(np.float32)
    a = torch.from_numpy(arr[:561]).view(17, 33)
    b = torch.from_numpy(arr[5:566]).view(33, 17).t()  # another storage over the same bytes
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert "share memory" in _refused(lambda: build_kernel(copy, variant="tl")(a, b), "dst")


def test_views_that_interleave_without_a_common_byte_are_not_refused(client, monkeypatch):
    """The even and the odd columns of one buffer span each other's bytes but share none; the
    check compared byte ranges and refused them ("share memory (1016 bytes)"), where copy_
    takes them."""
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    strided = {"dtype": "float32", "shape": [16, 8], "strides": [16, 2], "base_align": 4}
    k = build_kernel(optimize({"op": {"kind": "copy", "src": strided, "dst": strided}}), variant="tl")
    buf = torch.randn(258, generator=torch.Generator().manual_seed(2))
    src, dst = buf[0:256:2].view(16, 8), buf[1:257:2].view(16, 8)
    want = src.clone()
    k(src, dst)
    assert torch.equal(dst, want)
    # the even elements shifted by one: the views share 127 elements, refused
    assert "share memory" in _refused(lambda: k(buf[0:256:2].view(16, 8), buf[2:258:2].view(16, 8)), "dst")


def test_plans_and_variants_no_kernel_can_run_are_refused_by_name(client, monkeypatch):
    """A Gluon kernel under the interpreter failed on its first call (a raw AssertionError from
    torch.cuda); an error answer passed as a response was 'kind: Field required'; a piece tile
    that is no power of two reached Triton's own error."""
    import copy

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import permuted, view

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    resp = optimize({"op": {"kind": "copy", "src": view("bfloat16", (64, 128)),
                            "dst": permuted("bfloat16", (64, 128), (1, 0))}})
    tma = next(i for i, p in enumerate(resp["plans"]) if p["strategy"] == "tma")
    assert "interpreter" in _refused(lambda: build_kernel(resp, plan_index=tma, variant="gluon"), "variant")
    answer = {"error": {"code": "invalid_input", "message": "op.src.dtype: 'x' is not a valid value", "fix": "-"}}
    assert "error answer" in _refused(lambda: build_kernel(answer), "error")
    edited = copy.deepcopy(resp)
    direct = next(i for i, p in enumerate(edited["plans"]) if p["strategy"] == "direct")
    edited["plans"][direct]["pieces"][0]["tile"] = [3]
    _refused(lambda: build_kernel(edited, plan_index=direct), f"plans[{direct}].pieces[0].tile")


def test_a_call_with_the_wrong_arguments_is_named(client, monkeypatch):
    """k(src, dst, dst) raised Python's own TypeError; group= on a plan without groups was
    ignored (an ungrouped gather where the caller meant a grouped one)."""
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import view

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    copy_k = build_kernel(optimize({"op": {"kind": "copy", "src": view("float32", (8, 8)),
                                           "dst": view("float32", (8, 8), (1, 8))}}))
    src, dst = torch.zeros(8, 8), torch.zeros(8, 8).t()
    assert "3 positional" in _refused(lambda: copy_k(src, dst, dst), "arguments")
    gather_k = build_kernel(_gather_response())
    src = torch.zeros(100, 64, dtype=torch.bfloat16)
    index, out = torch.zeros(77, dtype=torch.int64), torch.empty(77, 64, dtype=torch.bfloat16)
    _refused(lambda: gather_k(src, index, out, group=index), "group")
    # a grouped gather's group as a list (not a tensor) raised AttributeError describing it
    grouped = build_kernel(optimize({"op": {"kind": "gather", "src": view("bfloat16", (100, 64)), "axis": 0,
                                            "index": {"count": 77, "distribution": "clustered", "groups": 4}}}))
    assert "a list" in _refused(lambda: grouped(src, index, out, group=[0] * 77), "group")


def test_a_response_without_plans_is_described_by_its_own_status(client):
    """It said "(status infeasible)" whatever the response's status was."""
    from legalsat.clients.triton import build_kernel

    assert _refused(lambda: build_kernel({"status": "ok", "plans": []}), "plans").endswith("(status ok)")
    assert _refused(lambda: build_kernel({"plans": []}), "plans") == "the response holds no plan"


COPY = {"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]},
               "dst": {"dtype": "bfloat16", "shape": [64, 96], "strides": [1, 64]}}}
GATHER = {"op": {"kind": "gather", "src": {"dtype": "float32", "shape": [512, 64], "strides": [64, 1]}, "axis": 0,
                 "index": {"count": 100}}}


def test_a_response_whose_plan_no_longer_covers_its_views_is_refused(client):
    """An extent of the first piece edited to 32 (or to true, read as 1): the kernel built,
    ran, and wrote half of dst (or one row), without a word."""
    import copy

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError

    resp = optimize(COPY)
    for value in (32, True):
        edited = copy.deepcopy(resp)
        edited["plans"][0]["pieces"][0]["dims"][0]["extent"] = value
        with pytest.raises(InputError) as e:
            build_kernel(edited, variant="tl")
        assert e.value.headline.field == "plans[0].pieces" and "move" in e.value.headline.message


def test_a_term_its_plan_cannot_have_come_from_is_named(client):
    """A newer planner's element type in the term, or another request's term: KeyError."""
    import copy

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError

    copy_resp, gather_resp = optimize(COPY), optimize(GATHER)
    for resp, term in ((copy_resp, copy_resp["term"].replace("bfloat16", "bfloat99")),
                       (gather_resp, copy_resp["term"]), (copy_resp, gather_resp["term"])):
        edited = copy.deepcopy(resp)
        edited["term"] = term
        with pytest.raises(InputError) as e:
            build_kernel(edited, variant="tl")
        assert e.value.headline.field == "term", e.value.headline


def test_a_gather_plan_alone_refuses_tensors_of_another_element_size(client, monkeypatch):
    """float64 tensors through a float32 gather plan (its words are 16 bytes, which 8 divides)
    ran and left half the rows unwritten."""
    import torch

    if not torch.cuda.is_available():  # CPU tensors: the kernel runs in Triton's interpreter
        monkeypatch.setenv("TRITON_INTERPRET", "1")

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError

    k = build_kernel(optimize(GATHER)["plans"][0], variant="tl")
    idx = torch.randint(0, 512, (100,))
    with pytest.raises(InputError) as e:
        k(torch.zeros(512, 64, dtype=torch.float64), idx, torch.zeros(100, 64, dtype=torch.float64))
    assert e.value.headline.field == "src" and "4-byte" in e.value.headline.message
    src, out = torch.randn(512, 64), torch.zeros(100, 64)
    k(src, idx, out)
    assert torch.equal(out, src[idx])


def test_a_tile_kernel_called_with_the_wrong_arguments_says_how_to_call_it(client):
    """k(src, out) and k() raised a bare TypeError (the copy and gather kernels name the call)."""
    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError

    req = {"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [64, 64], "strides": [64, 1]},
                  "tile": [16, 64], "consumer": "rows"}}
    k = build_kernel(optimize(req), variant="tl")
    for args in ((), (1, 2)):
        with pytest.raises(InputError) as e:
            k(*args)
        assert e.value.headline.field == "arguments" and "k(src" in e.value.headline.fix


def test_a_responses_plan_field_is_named_under_its_plan(client):
    """A check after validation named pieces[0] where the response's field is plans[0].pieces[0]."""
    import copy

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError

    edited = copy.deepcopy(optimize(COPY))
    edited["plans"][0]["pieces"][0]["dims"][0]["extent"] = 32
    with pytest.raises(InputError) as e:
        build_kernel(edited, variant="tl")
    assert e.value.headline.field == "plans[0].pieces"
    with pytest.raises(InputError) as e:  # the response's own fields stay as they are
        build_kernel({**edited, "term": edited["term"].replace("bfloat16", "bfloat99")}, variant="tl")
    assert e.value.headline.field == "term"


def test_a_responses_relayout_and_a_response_model_name_their_plan(client):
    """The relayout check and a response passed as the OptimizeResponse model named the plan's
    field alone (relayout[0], pieces) where the response's field is plans[N].relayout[0]."""
    import copy

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import InputError
    from legalsat.schemas.plan import OptimizeResponse

    src_v = {"dtype": "bfloat16", "shape": [1, 48, 23, 2, 1], "strides": [2256, 47, 2, 1, 1000], "base_align": 16}
    dst_v = {"dtype": "bfloat16", "shape": [1, 48, 23, 2, 1], "strides": [0, 46, 2, 1, 1], "base_align": 16}
    resp = optimize({"op": {"kind": "copy", "src": src_v, "dst": dst_v},
                     "options": {"max_plans": 3, "allow_padding": True}})
    i = next(i for i, p in enumerate(resp["plans"]) if p.get("relayout"))
    resp["plans"][i]["relayout"][0]["old_stride_bytes"] += 2
    with pytest.raises(InputError) as e:
        build_kernel(resp, plan_index=i, variant="tl")
    assert e.value.headline.field == f"plans[{i}].relayout[0]" and "pitch" in e.value.headline.message
    edited = copy.deepcopy(optimize(COPY))
    edited["plans"][0]["pieces"][0]["dims"][0]["extent"] = 32
    with pytest.raises(InputError) as e:
        build_kernel(OptimizeResponse.model_validate(edited), variant="tl")
    assert e.value.headline.field == "plans[0].pieces"


def test_a_gathers_argument_refusals_say_what_was_passed(client, monkeypatch):
    """A float index, a 2-D one and a short one all got "index must be a 1-D int32/int64 tensor
    of 77 entries"; an out of the wrong strides or dtype, the same sentence for each."""
    import torch

    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    k = build_kernel(_gather_response())
    src, out = torch.randn(100, 64).to(torch.bfloat16), torch.empty(77, 64, dtype=torch.bfloat16)
    index = torch.randint(0, 100, (77,))
    assert "it is torch.float32 of shape [77]" in _refused(lambda: k(src, index.float(), out), "index")
    assert "it is torch.int64 of shape [7, 11]" in _refused(lambda: k(src, index.view(7, 11), out), "index")
    assert "it is torch.int64 of shape [16]" in _refused(lambda: k(src, index[:16], out), "index")
    transposed = torch.empty(64, 77, dtype=torch.bfloat16).t()
    assert "strides [1, 77]" in _refused(lambda: k(src, index, transposed), "out")
    assert "it is torch.float32" in _refused(lambda: k(src, index, out.float()), "out")


def test_a_plan_index_into_one_plan_and_a_check_bounds_string_are_refused(client, monkeypatch):
    """`build_kernel(plan, plan_index=1)` built the one plan without a word (the command line
    refuses `--plan 1` for a plan file); `check_bounds="no"` was taken as true."""
    import torch

    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    resp = _gather_response()
    assert "this is one plan" in _refused(lambda: build_kernel(resp["plans"][0], plan_index=1), "plan_index")
    k = build_kernel(resp["plans"][0])
    src, out = torch.randn(100, 64).to(torch.bfloat16), torch.empty(77, 64, dtype=torch.bfloat16)
    index = torch.randint(0, 100, (77,))
    assert "'no'" in _refused(lambda: k(src, index, out, check_bounds="no"), "check_bounds")
    k(src, index, out, check_bounds=False)
    assert torch.equal(out, src.index_select(0, index))


def test_a_calls_argument_is_named_as_passed_and_a_plans_field_under_its_plan(client):
    """Errors inside the kernel build were re-pathed under plans[N]. unless their field was on a
    hand-kept list of call arguments; now the plan's own fields (invalid_plan) are, and an
    argument (invalid_argument) is named as the caller passed it."""
    import copy

    from legalsat.clients.triton import build_kernel
    from legalsat.diagnostics import Code, InputError

    resp = _gather_response()
    with pytest.raises(InputError) as e:
        build_kernel(resp, variant="cuda")
    assert (e.value.headline.field, e.value.headline.code) == ("variant", Code.INVALID_ARGUMENT)
    edited = copy.deepcopy(resp)
    edited["plans"][0]["num_warps"] = 3
    with pytest.raises(InputError) as e:
        build_kernel(edited)
    assert e.value.headline.field.startswith("plans[0].") and e.value.headline.code is Code.INVALID_PLAN, e.value


def test_an_extent_1_dims_stride_is_not_compared(client, monkeypatch):
    """A [1, 64] row planned with the stride its producer gave the unit dim (2^41: far past any
    tensor, or 1) was refused for a tensor whose unit dim torch strides as 64: a stride only
    index 0 ever multiplies addresses nothing."""
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for unit in (1 << 41, 1):
        resp = optimize({"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [1, 64], "strides": [unit, 1]},
                                "dst": {"dtype": "bfloat16", "shape": [1, 64], "strides": [64, 1]}}})
        for i in range(len(resp["plans"])):
            src, dst = torch.randn(1, 64).to(torch.bfloat16), torch.zeros(1, 64, dtype=torch.bfloat16)
            build_kernel(resp, plan_index=i, variant="tl")(src, dst)
            assert torch.equal(src, dst), (unit, resp["plans"][i]["strategy"])


def test_building_a_relaid_out_plan_checks_each_form_of_its_term_once(client, monkeypatch):
    """The term as sent and as each relayout leaves it are checked once each: the kernel took
    the relaid-out term through `check_term` a second time (3 checks for one relayout)."""
    from legalsat.api import optimize
    from legalsat.clients import plan_checks
    from legalsat.clients import triton as client_triton
    from legalsat.clients.triton import build_kernel

    checked: list[dict] = []
    real = plan_checks.check_term

    def counted(op: dict) -> None:
        checked.append(op)
        real(op)

    monkeypatch.setattr(plan_checks, "check_term", counted)
    monkeypatch.setattr(client_triton, "check_term", counted)
    src_v = {"dtype": "bfloat16", "shape": [1, 48, 23, 2, 1], "strides": [2256, 47, 2, 1, 1000], "base_align": 16}
    dst_v = {"dtype": "bfloat16", "shape": [1, 48, 23, 2, 1], "strides": [0, 46, 2, 1, 1], "base_align": 16}
    resp = optimize({"op": {"kind": "copy", "src": src_v, "dst": dst_v},
                     "options": {"max_plans": 3, "allow_padding": True}})
    i = next(i for i, p in enumerate(resp["plans"]) if p.get("relayout"))
    build_kernel(resp, plan_index=i, variant="tl")
    assert len(checked) == 1 + len(resp["plans"][i]["relayout"])
    assert checked[0]["src"]["strides"] == src_v["strides"]  # the term as sent first
    checked.clear()
    build_kernel(resp, plan_index=next(j for j, p in enumerate(resp["plans"]) if not p.get("relayout")), variant="tl")
    assert len(checked) == 1  # without a relayout, the kernel checks the term itself


def _said(call, field: str) -> str:
    """The message and fix of the InputError `call` raises, which names `field`."""
    d = _refusal(call, field)
    return f"{d.message} {d.fix}"


def _transpose_response(dtype: str = "float32", shape=(9, 11)):
    from legalsat.api import optimize
    from legalsat.testing.planner_suite import permuted, view

    return optimize({"op": {"kind": "copy", "src": view(dtype, shape), "dst": permuted(dtype, shape, (1, 0))}})


@pytest.mark.parametrize("make, side, fix", [
    (lambda s, d: (s.conj(), d), "src", "src.resolve_conj()"),
    (lambda s, d: (s, d.conj()), "dst", "dst.resolve_conj()"),
    (lambda s, d: (torch_neg(s), d), "src", "src.resolve_neg()"),
    (lambda s, d: (s.to_sparse(), d), "src", "src.to_dense()"),
    (lambda s, d: (s.to_sparse_csr(), d), "src", "src.to_dense()"),
])
def test_tensors_whose_memory_is_not_their_values_are_refused(client, monkeypatch, make, side, fix):
    """A conjugate or negative view shares the unconjugated memory, which a kernel moved as it
    was (a .conj() source copied unconjugated, a negated matmul operand multiplied positive);
    a sparse tensor's memory is not its view (CSR: a raw RuntimeError, COO: its strides blamed)."""
    import torch

    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    dtype = torch.complex64 if "conj" in fix else torch.float32
    k = build_kernel(_transpose_response("complex64" if dtype == torch.complex64 else "float32"), variant="tl")
    src, dst = torch.randn(9, 11, dtype=dtype), torch.zeros(11, 9, dtype=dtype).t()
    message = _said(lambda: k(*make(src, dst)), side)
    assert fix in message


def torch_neg(t):
    import torch

    return torch._neg_view(t)


def test_a_negated_matmul_operand_is_refused(client, monkeypatch):
    import torch

    from legalsat.clients.triton import matmul

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    a, b = torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    assert "a.resolve_neg()" in _said(lambda: matmul(torch._neg_view(a), b), "a")


def test_a_response_without_its_term_is_refused(client):
    """Without the term no tensor was checked against the request's views: a transposed source
    or a destination of another layout ran, wrong."""
    from legalsat.clients.triton import build_kernel

    resp = _transpose_response()
    for term, says in ((None, "no term"), ("", "an empty term")):
        bad = {**resp, "term": term} if term is not None else {k: v for k, v in resp.items() if k != "term"}
        assert says in _said(lambda bad=bad: build_kernel(bad), "term")


def test_a_response_built_in_python_may_hold_its_plans_in_a_tuple(client):
    from legalsat.clients.triton import build_kernel

    resp = _transpose_response()
    assert build_kernel({**resp, "plans": tuple(resp["plans"])}, variant="tl").source == \
        build_kernel(resp, variant="tl").source


def test_an_unknown_response_target_is_named_as_the_responses(client):
    """It was checked only for plans with TMA descriptors, and then named plans[0].target."""
    from legalsat.clients.triton import build_kernel

    resp = _transpose_response()
    assert all(not p.get("descriptors") for p in resp["plans"][:1])
    assert "bogus" in _said(lambda: build_kernel({**resp, "target": "bogus"}, variant="tl"), "target")


def test_a_kernel_pickles_after_its_first_call(client, monkeypatch):
    """Its per-tensor caches hold weak references: `cannot pickle 'weakref.ReferenceType'`."""
    import pickle

    import torch

    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    k = build_kernel(_transpose_response(), variant="tl")
    src, dst = torch.randn(9, 11), torch.zeros(11, 9).t()
    k(src, dst)
    again = pickle.loads(pickle.dumps(k))
    out = torch.zeros(11, 9).t()
    again(src, out)
    assert again.source == k.source and torch.equal(out, src)


def test_a_wrong_call_is_said_without_the_private_method(client):
    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.planner_suite import view

    k = build_kernel(optimize({"op": {"kind": "load_tile", "src": view("float32", (64, 64)), "tile": [32, 32],
                                      "consumer": "rows"}}), variant="tl")
    import torch

    message = _said(lambda: k(torch.zeros(64, 64), torch.zeros(32, 32)), "arguments")
    assert "_load" not in message and "too many positional arguments" in message


def test_a_relaid_out_plan_given_the_tensor_as_sent_names_its_relayout(client, monkeypatch):
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    src_v = {"dtype": "bfloat16", "shape": [48, 46], "strides": [47, 1]}
    dst_v = {"dtype": "bfloat16", "shape": [48, 46], "strides": [1, 49]}
    resp = optimize({"op": {"kind": "copy", "src": src_v, "dst": dst_v},
                     "options": {"max_plans": 5, "allow_padding": True}})
    i = next((i for i, p in enumerate(resp["plans"]) if p.get("relayout")), None)
    if i is None:
        pytest.skip("no relaid-out plan for this request")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    k = build_kernel(resp, plan_index=i, variant="tl")
    r = resp["plans"][i]["relayout"][0]
    src = torch.as_strided(torch.zeros(48 * 47, dtype=torch.bfloat16), (48, 46), (47, 1))
    dst = torch.as_strided(torch.zeros(49 * 46, dtype=torch.bfloat16), (48, 46), (1, 49))
    message = _said(lambda: k(src, dst), r["side"])
    assert f"{r['new_stride_bytes']} bytes" in message and "relayout" in message


def test_a_gather_plan_alone_refuses_a_source_of_another_layout(client, monkeypatch):
    """Passed alone, a gather plan ran on a transposed source or one of a wider pitch and
    gathered other bytes than the rows it was made for; its own source matches and runs."""
    import torch

    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    k = build_kernel(_gather_response()["plans"][0], variant="tl")
    index = torch.randint(0, 100, (77,))
    out = torch.empty(77, 64, dtype=torch.bfloat16)
    src = torch.randn(100, 64).to(torch.bfloat16)
    k(src, index, out)
    assert torch.equal(out.view(torch.int16), src[index].view(torch.int16))
    transposed = torch.randn(64, 100).to(torch.bfloat16).t()
    wide = torch.randn(100, 72).to(torch.bfloat16)[:, :64]
    for bad in (transposed, wide):
        assert "the plan steps 128" in _said(lambda bad=bad: k(bad, index, out), "src")


def test_a_misaligned_gather_out_is_told_to_align_out(client, monkeypatch):
    """A gather's out off its plan's word was told to plan the request with its real base_align,
    which a gather request does not have for out."""
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    req = {"op": {"kind": "gather", "src": {"dtype": "float32", "shape": [100, 32], "strides": [32, 1]}, "axis": 0,
                  "index": {"count": 40}}}
    k = build_kernel(optimize(req), variant="tl")
    out = torch.empty(40 * 32 + 1)[1:].view(40, 32)  # 4-byte aligned
    e = _refusal(lambda: k(torch.randn(100, 32), torch.randint(0, 100, (40,)), out), "out")
    assert "base_align" not in e.fix and "out.clone()" in e.fix, e
