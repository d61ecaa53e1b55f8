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
