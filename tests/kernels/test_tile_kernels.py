"""load_tile plans as kernels: every plan of the small tile loads (legalsat's own workloads
and the public suites' tiles) runs in Triton's interpreter and hands out every tile bit for
bit as PyTorch cuts it, zeros beyond the tensor, over a poisoned output; the Gluon probe's
source follows the plan; the kernel checks what it is given."""

from __future__ import annotations

import json
import subprocess
import sys
from math import prod

import pytest

from legalsat.diagnostics import InputError
from legalsat.testing.tile_workloads import edge_tile_workloads, suite_workloads, tile_workloads
from tests.kernels.client import require_client


def _small(items, limit):
    """Loads whose tensors and tile counts the interpreter runs in a moment."""
    out = []
    for name, req in items:
        op = req["op"]
        grid = prod(-(-n // t) for n, t in zip(op["src"]["shape"], op["tile"]))
        if grid <= 48 and prod(op["tile"]) <= 32768:
            out.append((name, req))
    return out[:limit]


def _features(items):
    """Suite tiles chosen for what they exercise: folded dims, broadcast, tiles over the tensor,
    over 256, ranks past 5, wgmma operands."""
    picks: dict[str, tuple[str, dict]] = {}
    for name, req in items:
        op = req["op"]
        shape, tile, strides = op["src"]["shape"], op["tile"], op["src"]["strides"]
        for key, hit in (("rank>5", len(shape) > 5), ("broadcast", 0 in strides), ("over", any(t > n for t, n in
                         zip(tile, shape))), ("big", max(tile) > 256), ("wgmma", str(op["consumer"]).find("wgmma") >= 0),
                         ("1d", len(shape) == 1), ("8byte", op["src"]["dtype"] in ("float64", "int64"))):
            if hit and sum(1 for k in picks if k.startswith(key)) < 3:
                picks[f"{key}:{name}"] = (name, req)
    return list(picks.values())


# extent-1 dims the tile spans, whose torch strides no descriptor takes: the kernel is called
# with the tensor as given
UNIT_SPANNED = [(n, r) for n, r in tile_workloads() if n.startswith(("row vector [1,509]", "column [509,1]"))]
# broadcast dims whose last tile overhangs the tensor (their overhang was filled with data)
BROADCAST_OVERHANG = [(n, r) for n, r in tile_workloads() if n.startswith("broadcast overhang")]
# one-element views and tiles widened past their rows (bench_tiles run-edges ran them on the H100)
EDGE = edge_tile_workloads()
OWN = _small(tile_workloads(), 24) + UNIT_SPANNED + BROADCAST_OVERHANG + EDGE
SUITE = _features(_small(suite_workloads(), 10**6))
CASES = OWN + SUITE


@pytest.mark.parametrize("case", CASES, ids=[n for n, _ in CASES])
def test_every_tile_plan_is_bit_exact_in_the_interpreter(case):
    require_client()
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.tiles import consumer_view, poison, reference_tiles, same_bits, source_tensor

    _, req = case
    resp = optimize(req)
    assert resp["plans"], resp["rejected"]
    src = req["op"]["src"]
    x = source_tensor(src["shape"], src["strides"], src["dtype"], "cpu", torch.Generator().manual_seed(3))
    want = reference_tiles(x, req["op"]["tile"])
    for i, plan in enumerate(resp["plans"]):
        try:
            k = build_kernel(resp, plan_index=i, variant="tl")
        except InputError as e:  # a box Triton cannot express: said so, with the field and a fix
            assert e.headline.field == f"plans[{i}].tile_load.layout.dims" and "power-of-two" in e.headline.message
            assert any(d["box"] & (d["box"] - 1) for d in plan["tile_load"]["layout"]["dims"])
            continue
        out = poison(torch.empty(k.out_shape, dtype=k.out_dtype(x)))
        k(x, out=out)
        assert same_bits(out, consumer_view(want, k.emitted.tile.element)), f"{plan['strategy']} plan {i}\n{k.source}"


def test_suite_sample_exercises_every_feature():
    kinds = set()
    for _, req in SUITE:
        op = req["op"]
        kinds |= {"rank>5"} if len(op["src"]["shape"]) > 5 else set()
        kinds |= {"broadcast"} if 0 in op["src"]["strides"] else set()
        kinds |= {"over"} if any(t > n for t, n in zip(op["tile"], op["src"]["shape"])) else set()
    assert kinds == {"rank>5", "broadcast", "over"}


def _tma_plan(req):
    from legalsat.api import optimize

    return next(p for p in optimize(req)["plans"] if p["strategy"] == "tma")


def test_gluon_probe_runs_the_plans_pipeline_and_consumer():
    from legalsat.kernels import emit

    req = dict(tile_workloads())["B MN-major [4096,4096] bfloat16 tile 64x256"]
    plan = _tma_plan(req)
    em = emit(plan, "gluon")
    tl = plan["tile_load"]
    expect = len(tl["boxes"]) * prod(plan["descriptors"][0]["box_dim"]) * 2
    assert f"mbarrier.expect(bars.index(p0), {expect})" in em.source
    assert em.source.count("tma.async_copy_global_to_shared") == 2 * len(tl["boxes"])  # prologue + refill
    assert "warpgroup_mma(ident, b_op" in em.source and em.tile.read.startswith("wgmma B operand, MN-major")
    assert em.tile.element == "float32" and em.tile.shape == (64, 16, 64, 256)
    assert f"STAGES: gl.constexpr = {plan['num_stages']}" in em.source


def test_emit_command_prints_a_tile_plans_probe(tmp_path):
    resp = tmp_path / "resp.json"
    from legalsat.api import optimize

    resp.write_text(json.dumps(optimize(dict(tile_workloads())["Q [2,16,1000,128] bfloat16"])))
    r = subprocess.run([sys.executable, "-m", "legalsat.clients.cli", "emit", str(resp), "--variant", "gluon"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "def tile_probe(desc, out, dump, MODE: gl.constexpr)" in r.stdout
    assert "# launch tile_probe[persistent over" in r.stderr


@pytest.mark.parametrize("mutate,field", [
    (lambda p: p.update(tile_load=None), "tile_load"),
    (lambda p: p["tile_load"]["boxes"].pop(), "tile_load.boxes"),
    (lambda p: p["tile_load"]["boxes"][0].update(smem_offset_bytes=3), "tile_load.boxes[0].smem_offset_bytes"),
    (lambda p: p["descriptors"][0].update(box_dim=[8, 8]), "descriptors[0].box_dim"),
    (lambda p: p["tile_load"]["layout"]["dims"].pop(), "tile_load.layout.dims"),
])
def test_bad_tile_plans_name_the_field(mutate, field):
    from legalsat.kernels import emit

    plan = json.loads(json.dumps(_tma_plan(dict(tile_workloads())["tile 512x64 bfloat16"])))
    mutate(plan)
    with pytest.raises(InputError) as e:
        emit(plan, "gluon")
    assert e.value.headline.field == field and e.value.headline.fix


def test_tile_kernel_checks_its_arguments():
    require_client()
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel

    req = {"op": {"kind": "load_tile", "tile": [16, 32], "consumer": "rows",
                  "src": {"dtype": "float16", "shape": [40, 64], "strides": [64, 1]}}}
    k = build_kernel(optimize(req), variant="tl")
    with pytest.raises(InputError) as e:
        k(torch.zeros(40, 65, dtype=torch.float16))
    assert e.value.headline.field == "src"
    with pytest.raises(InputError) as e:
        k(torch.zeros(40, 64, dtype=torch.float16), out=torch.zeros(3, dtype=torch.float16))
    assert e.value.headline.field == "out"
    with pytest.raises(InputError) as e:
        k(torch.zeros(40, 64, dtype=torch.float16), stages=torch.zeros(1, dtype=torch.int32))
    assert e.value.headline.field == "stages"


def test_a_direct_tile_kernel_walks_its_rows_in_a_loop_whatever_its_boxes():
    """Odd tile extents made hundreds of boxes (720 for this tile, 3,840 of one element for
    the second; a 2,899- and a 15,377-line kernel unrolled, minutes per call in the
    interpreter; a uint8 [7, 33, 1001] tile: 231,231 boxes, each listed in the plan, which
    ran past its deadline). A direct plan of more than MAX_TMA_BOXES boxes lands the tile as
    one box, and its kernel loops over the tile's rows."""
    require_client()
    import torch

    from legalsat.api import optimize
    from legalsat.clients.triton import build_kernel
    from legalsat.testing.tiles import consumer_view, poison, reference_tiles, same_bits, source_tensor

    reqs = [{"op": {"kind": "load_tile", "tile": [24, 6, 1, 4, 5, 2], "consumer": "wgmma_a",
                    "src": {"dtype": "uint8", "shape": [2, 5, 3, 5, 5, 8], "strides": [6000, 1200, 400, 40, 8, 1],
                            "base_align": 8}}},
            {"op": {"kind": "load_tile", "tile": [2, 5, 128, 3, 1], "consumer": "wgmma_a",
                    "src": {"dtype": "uint16", "shape": [2, 17, 8, 1, 5], "strides": [2094, 123, 15, 10, 1],
                            "base_align": 128}}},
            {"op": {"kind": "load_tile", "tile": [3, 5, 1001], "consumer": "cols",
                    "src": {"dtype": "uint8", "shape": [3, 5, 1001], "strides": [5005, 1001, 1]}}}]
    for req in reqs:
        resp = optimize(req)
        plan = next(p for p in resp["plans"] if p["strategy"] == "direct")
        assert len(plan["tile_load"]["boxes"]) == 1 and len(json.dumps(resp)) < 20_000
        k = build_kernel(resp, plan_index=resp["plans"].index(plan), variant="tl")
        assert k.source.count("\n") < 60
        src = req["op"]["src"]
        x = source_tensor(src["shape"], src["strides"], src["dtype"], "cpu", torch.Generator().manual_seed(5))
        out = poison(torch.empty(k.out_shape, dtype=k.out_dtype(x)))
        k(x, out=out)
        assert same_bits(out, consumer_view(reference_tiles(x, req["op"]["tile"]), k.emitted.tile.element))
