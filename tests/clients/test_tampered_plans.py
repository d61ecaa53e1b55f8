"""Plans edited after planning, handed to `build_kernel` / `legalsat emit`: each is refused
with its field named before any kernel runs (each of these built, and its kernel wrote outside
its output, read outside its source, or left elements unwritten, in Triton's interpreter)."""

from __future__ import annotations

import copy
import importlib.util

import pytest

from legalsat.api import optimize
from legalsat.diagnostics import InputError
from tests.kernels.client import refused

# triton is imported by the tests, not here: imported while the suite is collected (before
# tests/kernels sets TRITON_INTERPRET), its library functions would not run in the interpreter
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None,
                                reason="needs the client extra (torch, triton)")


def _response(op: dict, plans: int = 1) -> dict:
    resp = optimize({"target": "sm90", "op": op, "options": {"max_plans": plans}})
    assert resp["status"] == "ok", resp
    return resp


GATHER = {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [1000, 64], "strides": [64, 1]}, "axis": 0,
          "index": {"count": 777}}


@pytest.fixture
def gather_call(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")

    def call(g: dict) -> tuple:
        import torch

        src = torch.zeros(1000, 64, dtype=torch.bfloat16)
        index = torch.zeros(g["index_count"], dtype=torch.int32)
        return src, index, torch.empty(g["out_shape"], dtype=torch.bfloat16)
    return call


def test_a_gather_whose_out_shape_is_short_of_its_entries(gather_call):
    plan = _response(GATHER)["plans"][0]
    plan["gather"]["out_shape"][0] -= 1  # the kernel wrote one row past out
    refused(plan, "gather.out_shape", *gather_call(plan["gather"]))


@pytest.mark.parametrize("name", ["out_index_stride_bytes", "src_index_stride_bytes"])
def test_a_gather_with_a_negative_stride(name):
    plan = _response(GATHER)["plans"][0]
    plan["gather"][name] = -128  # wrote (read) 97 KB before out (src)
    refused(plan, f"gather.{name}")


@pytest.mark.parametrize("stride", [0, 64])
def test_a_gather_plan_alone_whose_entries_are_not_one_slab_apart(stride, gather_call):
    """Passed alone, a gather whose entries lie 0 bytes apart in out raced its writes onto the
    first entry (776 of 777 rows never written); half a slab apart, they overlapped. Refused by
    the field (a whole response refused them already: the request's stride differs)."""
    plan = _response(GATHER)["plans"][0]
    assert plan["gather"]["out_index_stride_bytes"] == 128
    plan["gather"]["out_index_stride_bytes"] = stride
    refused(plan, "gather.out_index_stride_bytes", *gather_call(plan["gather"]))


def test_a_gather_whose_count_is_not_the_requests():
    resp = _response(GATHER)
    resp["plans"][0]["gather"]["index_count"] += 1
    refused(resp, "gather.index_count")


def test_a_gather_routing_to_more_groups_than_a_client_keeps():
    plan = _response({**GATHER, "index": {"count": 64, "groups": 8}})["plans"][0]
    plan["gather"]["groups"] = 1 << 28  # 11 GiB of the inspector's buffers, asked at the first call
    refused(plan, "gather.groups")
    with pytest.raises(InputError) as e:
        optimize({"op": {**GATHER, "index": {"count": 64, "groups": 1 << 28}}})
    assert e.value.details[0].field == "op.index.groups"


PAGED = {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [64, 16, 8, 32], "strides": [4096, 256, 32, 1]},
         "axis": 0, "index": {"count": 20, "distribution": "paged", "page_size": 16}}
MOE = {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [256, 128], "strides": [128, 1]}, "axis": 0,
       "index": {"count": 512, "groups": 8}}


def _halve_extent(piece: dict) -> None:
    piece["dims"][0]["extent"] //= 2


def _zero_dst_stride(piece: dict) -> None:
    piece["dims"][-1]["dst_stride"] = 0


def _drop_dim(piece: dict) -> None:
    piece["dims"].pop(0)


# rows of 4 x 64 elements in a padded pitch of 128: a slab piece of two dims (the others have one)
PADDED_ROWS = {"kind": "gather", "src": {"dtype": "bfloat16", "shape": [1000, 4, 64], "strides": [512, 128, 1]},
               "axis": 0, "index": {"count": 777}}


@pytest.mark.parametrize("op,edit", [pytest.param(op, edit, id=f"{o}-{e}")
                                     for o, op in (("rows", GATHER), ("paged", PAGED), ("moe", MOE))
                                     for e, edit in (("halve", _halve_extent), ("zero-stride", _zero_dst_stride))]
                         + [pytest.param(PADDED_ROWS, _drop_dim, id="padded-rows-drop-dim")])
def test_gather_slab_pieces_that_are_not_the_requests(op, edit):
    """A gather's slab piece edited (half its extent, a destination stride of 0, a dim
    dropped): each built, and its kernel left half of every entry unwritten or wrote one
    place twice, in Triton's interpreter. Every plan of each response the edit changes is tried."""
    resp = _response(op, 8)
    tried = 0
    for i in range(len(resp["plans"])):
        bad = copy.deepcopy(resp)
        piece = bad["plans"][i]["pieces"][0]
        if len(piece["dims"]) < (2 if edit is _drop_dim else 1):
            continue
        edit(piece)
        if piece["dims"] == resp["plans"][i]["pieces"][0]["dims"]:
            continue  # the edit changed nothing here (a stride already 0)
        refused(bad, "pieces", plan_index=i)
        tried += 1
    assert tried


@pytest.mark.parametrize("name,value", [("slab_bytes", 64), ("unit", 2), ("axis", 1)])
def test_gather_fields_that_are_not_the_requests(name, value):
    resp = _response(GATHER)
    resp["plans"][0]["gather"][name] = value
    refused(resp, f"gather.{name}")


TILE = {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [40, 72], "strides": [72, 1]},
        "tile": [16, 32], "consumer": "rows"}


@pytest.mark.parametrize("strategy, edit, field", [
    ("direct", lambda tl: tl["layout"]["dims"][0].update(box=33), "layout.dims[0].box"),
    ("direct", lambda tl: tl["layout"]["dims"][0].update(box=4096), "layout.dims[0].box"),
    ("tma", lambda tl: tl["layout"]["dims"][0]["parts"][0].__setitem__(0, 0), "layout.dims[0]"),
    ("tma", lambda tl: tl["layout"]["dims"][0]["parts"][0].__setitem__(1, 2), "layout.dims[0].parts"),
])
def test_a_tile_whose_stage_dims_are_not_its_tiles(strategy, edit, field):
    """A box of 33 over a 32-wide tile row wrote past each row of out."""
    resp = _response(TILE, 8)
    resp = {**resp, "plans": [p for p in resp["plans"] if p["strategy"] == strategy]}
    edit(resp["plans"][0]["tile_load"])
    refused(resp, field)


def test_a_tile_descriptor_that_reaches_past_the_source():
    resp = _response(TILE, 8)
    resp = {**resp, "plans": [p for p in resp["plans"] if p["strategy"] == "tma"]}
    resp["plans"][0]["descriptors"][0]["global_strides"][0] = 4096  # read bytes outside src into out
    refused(resp, "pieces")
    resp["plans"][0]["descriptors"][0]["global_strides"][0] = 1 << 40  # the interpreter process died
    refused(resp["plans"][0], "descriptors[0].global_strides")


TILE_4D = {"kind": "load_tile", "src": {"dtype": "float32", "shape": [3, 20, 24, 40], "strides": [19200, 960, 40, 1]},
           "tile": [1, 4, 8, 32], "consumer": "cols"}


def _descriptor_dim(plan: dict) -> None:
    plan["descriptors"][0]["global_dim"][1] -= 10


def _descriptor_stride(plan: dict) -> None:
    plan["descriptors"][0]["global_strides"][0] += 16


def _coords(plan: dict) -> None:
    plan["tile_load"]["coords"][-1][0][1] *= 2


def _grid(plan: dict) -> None:
    plan["tile_load"]["grid"][0] += 1


def _piece_extent(plan: dict) -> None:
    plan["pieces"][0]["dims"][-1]["extent"] -= 1


def _piece_stride(plan: dict) -> None:
    plan["pieces"][0]["dims"][0]["src_stride"] += 1


@pytest.mark.parametrize("op", [TILE, TILE_4D], ids=["2d", "4d"])
@pytest.mark.parametrize("edit", [_descriptor_dim, _descriptor_stride, _coords, _grid, _piece_extent, _piece_stride])
def test_a_tile_walk_that_is_not_the_requests(op, edit):
    """A tile load's walk edited (the descriptor's extent or stride, a coordinate multiplier,
    the grid, the piece's extent or stride): each built, and its kernel read rows past the
    edit as zero or tiles from the wrong place, in Triton's interpreter."""
    resp = _response(op, 8)
    tried = 0
    for i, plan in enumerate(resp["plans"]):
        if edit in (_descriptor_dim, _descriptor_stride) and not plan.get("descriptors"):
            continue
        bad = copy.deepcopy(resp)
        edit(bad["plans"][i])
        refused(bad, "", plan_index=i)
        tried += 1
    assert tried


RAGGED = {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [50, 4097], "strides": [4097, 1]},
          "dst": {"dtype": "bfloat16", "shape": [50, 4097], "strides": [4097, 1]}}


def test_copy_pieces_that_move_the_right_bytes_but_not_every_element():
    resp = _response(RAGGED)
    plan = resp["plans"][0]
    assert len(plan["pieces"]) > 1, plan["strategy"]
    tail = plan["pieces"][-1]
    tail["src_offset_bytes"] = tail["dst_offset_bytes"] = 0  # over the core's first words: the last ones unwritten
    refused(resp, "pieces")


@pytest.mark.parametrize("strategy", ["staged_smem", "direct"])
def test_a_plan_alone_whose_piece_writes_one_element_along_a_dim(strategy):
    """A destination stride of 0 in a plan passed alone: the staged kernel failed inside Triton
    (a pointer of the wrong shape), the direct one raced its writes, silently."""
    resp = _response({"kind": "copy", "src": {"dtype": "float32", "shape": [64, 96], "strides": [96, 1]},
                      "dst": {"dtype": "float32", "shape": [64, 96], "strides": [1, 64]}}, 8)
    plan = next(p for p in resp["plans"] if p["strategy"] == strategy)
    plan["pieces"][0]["dims"][0]["dst_stride"] = 0
    refused(plan, "pieces[0].dims[0].dst_stride")


def test_a_term_that_casts_and_a_piece_of_another_strategy():
    resp = _response({"kind": "copy", "src": {"dtype": "bfloat16", "shape": [40, 72], "strides": [72, 1]},
                      "dst": {"dtype": "bfloat16", "shape": [40, 72], "strides": [1, 40]}})
    cast = copy.deepcopy(resp)
    cast["term"] = cast["term"].replace("(view bfloat16 (40 72) (1 40)", "(view float16 (40 72) (1 40)")
    assert cast["term"] != resp["term"]
    refused(cast, "term")
    other = copy.deepcopy(resp["plans"][0])
    other["pieces"][0]["strategy"] = "inspector_executor"
    refused(other, "pieces[0].strategy")


@pytest.mark.parametrize("op,edit", [
    (TILE, ("(16 32) rows", "(16 0) rows")),  # a tile extent of 0: ZeroDivisionError in the checks
    (GATHER, ("(1000 64)", "(1000 0)")),  # an extent of 0
    (GATHER, (") 0 (index", ") 2 (index")),  # an axis the source does not have: IndexError
])
def test_a_term_that_is_no_valid_request(op, edit):
    resp = _response(op)
    assert edit[0] in resp["term"], resp["term"]
    resp["term"] = resp["term"].replace(edit[0], edit[1])
    refused(resp, "term")


def test_emit_checks_a_gathers_fields_against_its_term(tmp_path, capsys):
    """`legalsat emit` printed a kernel for a response whose gather count was edited (the client
    refused it): the command runs the same checks."""
    import json

    from legalsat.clients.cli import main

    resp = _response(GATHER)
    resp["plans"][0]["gather"]["index_count"] -= 100
    resp["plans"][0]["gather"]["out_shape"][0] -= 100
    (tmp_path / "r.json").write_text(json.dumps(resp))
    assert main(["emit", str(tmp_path / "r.json")]) == 2
    assert "gather.index_count" in capsys.readouterr().err


def test_emit_refuses_a_descriptor_the_driver_refuses(tmp_path):
    """`legalsat emit` printed a kernel whose boxes (1024 x 1024) the driver and Triton refuse."""
    import json

    from legalsat.clients.cli import main

    plans = [p for p in optimize({"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, 4096],
                                                                   "strides": [4096, 1]},
                                         "dst": {"dtype": "bfloat16", "shape": [64, 4096], "strides": [1, 64]}},
                                  "options": {"max_plans": 8}})["plans"] if p["strategy"] == "tma"]
    assert plans
    plan = plans[0]
    for d in plan["pieces"][0]["descriptors"]:
        d["box_dim"] = [1024] * len(d["box_dim"])
    (tmp_path / "p.json").write_text(json.dumps(plan))
    assert main(["emit", str(tmp_path / "p.json")]) == 2


@pytest.mark.parametrize("target", ["sm90", "sm100"])
def test_every_plan_the_planner_returns_passes_the_checks(target):
    """The checks refuse edited plans only: every plan of a few responses builds, its
    descriptors judged by the response's own target's rules."""
    from legalsat.clients.triton import build_kernel

    for op in (GATHER, PAGED, MOE, TILE, TILE_4D, RAGGED, {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [64, 4096],
                                                               "strides": [4096, 1]},
                                      "dst": {"dtype": "bfloat16", "shape": [64, 4096], "strides": [1, 64]}}):
        resp = optimize({"target": target, "op": op, "options": {"max_plans": 8}})
        for i in range(len(resp["plans"])):
            build_kernel(resp, plan_index=i, variant="tl")
