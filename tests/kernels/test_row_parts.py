"""Direct gathers of slabs over 4 KiB move each slab in 4 KiB parts, a program each
(`legalsat.planner.solve.solve_row_parts`): their kernels stay bit-exact on ragged rows, odd
word sizes, pages and strided rows, load and store whole 16-byte vectors, the row gather probe
(tools/row_gather_probe.py) re-emits its variants bit-exact, and the H100 runs it recorded
(benchmarks/row_gather_probe*.json, benchmarks/gpu_plan_check_gathers_all*.json) hold what the
rule rests on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legalsat.api import optimize
from legalsat.testing.planner_suite import gather, view
from tests.kernels.client import interpreted, require_client, sm90_access_counts

ROOT = Path(__file__).resolve().parents[2]


def _paged(shape: tuple[int, ...], count: int, page: int) -> dict:
    req = gather("paged", view("bfloat16", shape), 0, count)
    req["op"]["index"].update(distribution="paged", page_size=page, unique=True)
    return req


def _strided_rows() -> dict:
    req = gather("strided", view("bfloat16", (40, 4096)), 0, 50)
    req["op"]["src"]["strides"] = [4104, 1]  # each row 16 bytes past the last one's end
    return req


CASES = {
    "bf16 rows of 8 KiB": gather("emb", view("bfloat16", (300, 4096)), 0, 500),
    "bf16 rows of 7 KiB (a last part of 3 KiB)": gather("seven", view("bfloat16", (40, 3584)), 0, 33),
    "uint8 rows of 6 KiB (a last part of 2 KiB)": gather("u8", view("uint8", (12, 6144)), 0, 20),
    "fp64 rows of 12 KiB": gather("f64", view("float64", (12, 1536)), 0, 20),
    "KV pages of 16 tokens": _paged((1024, 8, 128), 32, 16),
    "HND blocks": gather("hnd", view("bfloat16", (64, 4, 16, 128)), 0, 40),
    "rows with a pitch past their end": _strided_rows(),
}
# rows the parts leave whole: narrower than 16-byte elements, a last part under half a part
WHOLE = {
    "fp32 rows of 9,001 (4-byte words)": gather("ragged", view("float32", (40, 9001)), 0, 33),
    "bf16 rows of 2,056 (4,112 bytes: a last part of 16)": gather("tail", view("bfloat16", (40, 2056)), 0, 33),
}


def parted(plan: dict) -> bool:
    piece = plan["pieces"][0]
    return len(piece["tile"]) == 2 and piece["tile"][0] == 1 and \
        piece["tile"][1] * piece["element_bytes"] < plan["gather"]["slab_bytes"] <= plan["gather"]["out_index_stride_bytes"]


@pytest.mark.parametrize("name", [*CASES, *WHOLE])
def test_parted_gathers_are_bit_exact(name):
    require_client()
    resp = optimize({**CASES, **WHOLE}[name])
    direct = next(i for i, p in enumerate(resp["plans"]) if p["strategy"] == "direct")
    assert parted(resp["plans"][direct]) == (name in CASES), resp["plans"][direct]["pieces"][0]["tile"]
    interpreted(resp, {"name": name, "extra": {}}, 11, plan_index=direct, variant="tl")


def test_a_parted_kernel_moves_whole_16_byte_vectors():
    """Its tile runs along the slab (the dim the entries' one index leaves contiguous): every
    global load and store but the index's is a 16-byte vector in the sm90 PTX (two 8-byte
    words: the slab's word view)."""
    require_client()
    counts = sm90_access_counts(CASES["bf16 rows of 8 KiB"])
    assert counts["ld"] - counts["ld_16"] == 1 and counts["st"] == counts["st_16"] > 0, counts


def test_the_probe_re_emits_its_variants_bit_exact(monkeypatch):
    """Every variant the probe times, checked as it checks them (`tools.sweep.checked`): on the
    benchmark's random entries, or on entries 0, 1, ... for the identity variants."""
    require_client()
    import dataclasses

    import torch

    import legalsat.clients.triton as client
    from legalsat.testing.torch_reference import make_inputs, reference
    from tools import row_gather_probe as probe
    from tools.sweep import checked

    monkeypatch.setattr(client, "_sm_count", lambda dev: 3)  # persistent grids of a few programs
    # the identity variants read entries 0, 1, ...: no more entries than rows
    for req in (gather("emb", view("bfloat16", (64, 4096)), 0, 40), CASES["KV pages of 16 tokens"]):
        resp = optimize(req)
        inp = make_inputs(resp, {"name": "probe", "extra": {}}, "cpu", torch.Generator().manual_seed(5))
        ident = dataclasses.replace(inp, index=torch.arange(inp.index.numel()), ref_out={})
        want, want_ident = reference(inp), reference(ident)
        tried = [*probe.variants(resp, probe.solved_rows(resp)), *probe.split_variants(resp)]
        fns, labels = checked("probe", [(label, k, *((ident, want_ident) if on_ident else (inp, want)))
                                        for label, k, on_ident in tried])
        assert labels == [label for label, _, _ in tried] and len(labels) >= 10, labels


def _us(record: str) -> dict[str, dict[str, tuple[float, float]]]:
    run = json.loads((ROOT / "benchmarks" / record).read_text())
    assert run["env"]["gpu"].startswith("NVIDIA H100")
    return {w["workload"]: {k["variant"]: (k["us"], k["eager_us"]) for k in w["kernels"]} for w in run["workloads"]}


def test_the_recorded_parts_beat_whole_slabs_on_every_long_row_gather():
    """benchmarks/row_gather_probe.json (planner/22's plans): 4 KiB parts of 4 warps faster
    than the 32 KiB programs on all six embeddings and KV caches, 1 and 2 KiB parts slower than
    4 KiB; row_gather_probe_after.json (the parts as planned now): faster than the whole slabs
    from CUDA graphs everywhere, and never slower eagerly."""
    before = _us("row_gather_probe.json")
    assert len(before) == 6
    for name, us in before.items():
        assert us["split 4096 w4"][0] < us["planned"][0], name
        assert us["split 4096 w4"][0] < min(us["split 1024 w2"][0], us["split 2048 w4"][0]), name
    after = _us("row_gather_probe_after.json")
    plans = json.loads((ROOT / "benchmarks" / "kernel_plans.json").read_text())
    assert set(after) == set(before)
    for name, us in after.items():
        first = optimize({"op": plans[name]["workload"]["op"]})["plans"][0]
        assert parted(first) and first["pieces"][0]["tile"] == [1, 256], name  # what the record calls planned
        assert us["planned"][0] < us["whole slabs"][0] and us["planned"][1] <= us["whole slabs"][1], name


def test_the_gpu_corpora_s_gathers_ran_bit_exact_in_parts():
    """benchmarks/gpu_plan_check_gathers_all.json: every plan of the corpora's 108 gathers
    bit-exact on the H100 (as planned at commit 232c5bf, whose rule parted six of them, rows of
    4- and 8-byte words among them, which the rule now leaves whole); moved off 16 bytes, each
    either bit-exact or refused by name."""
    lines = (ROOT / "benchmarks" / "gpu_plan_check_gathers_all_requests.jsonl").read_text().splitlines()
    requests = [json.loads(line)["request"] for line in lines]
    assert len(requests) == 108 and all(r["op"]["kind"] == "gather" for r in requests)
    plain = json.loads((ROOT / "benchmarks" / "gpu_plan_check_gathers_all.json").read_text())
    assert plain["requests"] == 108 and not plain["faults"] and not plain["differing"] and not plain["misaligned"]
    assert all(key.endswith(" exact") for key in plain["counts"]) and sum(plain["counts"].values()) == 240
    moved = json.loads((ROOT / "benchmarks" / "gpu_plan_check_gathers_all_misalign.json").read_text())
    assert moved["misaligned"] and not moved["faults"] and not moved["differing"]
    assert {key.rsplit(" ", 1)[1] for key in moved["counts"]} == {"exact", "refused"}
    assert sum(moved["counts"].values()) == 240
