"""Protocol input: any JSON-shaped input gets a verdict or an InputError naming its field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import legalsat
from legalsat.diagnostics import InputError
from legalsat.schemas.protocol import PipelineVerdictOut
from legalsat.testing.protocols import arrivals, protocol_json, warp_specialized


def verdict_or_error(obj) -> PipelineVerdictOut | InputError:
    try:
        return legalsat.verify_pipeline(obj)
    except InputError as e:
        assert e.details and all(d.fix for d in e.details)
        return e

anything = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5000) | st.text(max_size=10),
    lambda c: st.lists(c, max_size=5) | st.dictionaries(
        st.sampled_from(["name", "op", "bar", "buffer", "roles", "blocks", "ops", "count",
                         "barriers", "buffers", "phase", "bytes", "iterations", "x"]), c, max_size=5),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(anything)
def test_verdict_never_crashes(obj):
    out = verdict_or_error(obj)
    if isinstance(out, PipelineVerdictOut):
        assert out.ok == (not out.violations)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 40), st.integers(0, 3))
def test_mutated_valid_protocols_never_crash(n_ops, role):
    d = protocol_json(warp_specialized(2))
    ops = d["roles"][role % 2]["blocks"][0]["ops"]
    if n_ops < len(ops):
        del ops[n_ops]
    d["iterations"] = n_ops
    assert isinstance(verdict_or_error(json.dumps(d)), (PipelineVerdictOut, InputError))


def test_undeclared_names_are_reported_with_their_path():
    d = protocol_json(warp_specialized(2))
    d["roles"][1]["blocks"][0]["ops"][0]["bar"] = "fulll"
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline(d)
    assert e.value.headline.field == "roles[1].blocks[0].ops[0].bar"
    assert "not declared" in e.value.headline.message


@pytest.mark.parametrize("where", ["buffer", "op"])
def test_a_field_named_bytes_is_named_in_its_error(where):
    """`bytes` is a field here, not the name pydantic gives a union's bytes member."""
    d = protocol_json(warp_specialized(2))
    if where == "buffer":
        d["buffers"][0]["bytes"], want = 10 ** 30, "buffers[0].bytes"
    else:
        op = next(o for o in d["roles"][0]["blocks"][0]["ops"] if "bytes" in o)
        k = d["roles"][0]["blocks"][0]["ops"].index(op)
        op["bytes"], want = -1, f"roles[0].blocks[0].ops[{k}].bytes"
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline(d)
    assert e.value.headline.field == want


def test_missing_operand_is_reported():
    d = protocol_json(warp_specialized(2))
    del d["roles"][0]["blocks"][0]["ops"][0]["phase"]
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline(d)
    assert e.value.headline.field == "roles[0].blocks[0].ops[0].phase"


def test_shorthands():
    proto = {"barriers": [{"name": "bar"}], "buffers": [{"name": "buf", "bytes": 4096}],
             "setup": [{"op": "init", "bar": "bar"}],
             "roles": [{"name": "main", "blocks": [{"count": "N", "ops": [
                 {"op": "expect_tx", "bar": "bar", "bytes": 4096},
                 {"op": "tma_load", "bar": "bar", "buffer": "buf", "bytes": 4096},
                 {"op": "wait", "bar": "bar", "phase": {}},
                 {"op": "consume", "buffer": "buf"}]}]}]}
    out = legalsat.verify_pipeline(proto)
    assert out.ok, out
    proto["roles"][0]["blocks"][0]["ops"][0]["bytes"] = 4000
    assert [v.rule for v in legalsat.verify_pipeline(proto).violations] == ["tx_mismatch"]


def _verifier_must_not_run(*_a, **_k):
    raise AssertionError("the verifier ran on a protocol past its work bound")


def test_verification_past_its_work_bound_is_refused_before_it_runs(monkeypatch):
    """8 roles x 4,096 x 6 operations is under 200,000 per run, but undeclared iterations
    make the verifier run it at every trip count of 2 x lcm(stages) + 2: minutes of work."""
    import legalsat.api

    with monkeypatch.context() as m:
        m.setattr(legalsat.api, "verify_protocol", _verifier_must_not_run)  # refused by the bound, never run
        with pytest.raises(InputError) as e:
            legalsat.verify_pipeline(arrivals(8, {"n": 1, "c": 0}))  # N iterations: 48 N operations, N up to 129
        assert e.value.headline.field == "roles[0].blocks[0].count" and "trip count" in e.value.headline.message
        # a fixed count of 4,096 iterations: every trip count up to past it would be checked
        with pytest.raises(InputError) as e:
            legalsat.verify_pipeline(arrivals(8, 4096))
        assert e.value.headline.field == "iterations"
        # stage counts whose common multiple is huge: refused without enumerating the trip counts
        with pytest.raises(InputError) as e:
            legalsat.verify_pipeline(arrivals(1, 1, (64, 63, 61, 59, 53)))
        assert e.value.headline.field == "iterations"
    assert legalsat.verify_pipeline(arrivals(8, 20)).trip_counts  # under the bound: verified


def test_setup_and_teardown_count_in_the_work_bound(monkeypatch):
    """A teardown of 128 invalidates of a whole 63-barrier array, next to a 32-barrier array
    (4,034 trip counts checked), was left out of the bound: 35 s of verification, a 504 from
    the service. Each whole-array operation now counts once per element, at every trip count."""
    import legalsat.api

    teardown = [{"op": "invalidate", "bar": {"name": "a", "all": True}}] * 128
    proto = {"barriers": [{"name": "a", "count": 63}, {"name": "b", "count": 32}],
             "setup": [{"op": "init", "bar": {"name": "a", "all": True}, "count": 1}],
             "roles": [{"name": "r", "blocks": [{"count": 0, "ops": []}]}], "teardown": teardown}
    with monkeypatch.context() as m, pytest.raises(InputError) as e:
        m.setattr(legalsat.api, "verify_protocol", _verifier_must_not_run)  # refused by the bound, never run
        legalsat.verify_pipeline(proto)
    assert e.value.headline.field == "teardown" and "teardown" in e.value.headline.fix
    proto["teardown"] = teardown[:1]
    assert legalsat.verify_pipeline(proto).trip_counts  # one invalidate per element: verified


def _one_role(*ops) -> dict:
    return {"roles": [{"name": "p", "blocks": [{"count": 2, "ops": list(ops)}]}]}


@pytest.mark.parametrize("declared,field", [
    ({"barriers": [{"name": "full", "count": 2}], "buffers": [{"name": "full", "count": 2, "bytes": 64}]},
     "buffers[0].name"),
    ({"barriers": [{"name": "full", "count": 2}, {"name": "full", "count": 4}]}, "barriers[1].name"),
])
def test_a_name_declared_twice_is_refused(declared, field):
    """Two arrays of one name (two barrier arrays, or a barrier and a buffer) were accepted,
    the later silently standing for both: the trip counts checked changed from 6 to 14."""
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline({**declared, **_one_role({"op": "arrive", "bar": "full"})})
    assert e.value.headline.field == field and "declared twice" in e.value.headline.message


@pytest.mark.parametrize("fixed", [True, False, 1.0, 0.0])
def test_a_fixed_parity_is_an_integer(fixed):
    """`phase.fixed` took true, false, 1.0 and 0.0 (a Literal[0, 1] compares by equality)."""
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline({"barriers": [{"name": "b"}],
                                  **_one_role({"op": "wait", "bar": "b", "phase": {"fixed": fixed}})})
    assert e.value.headline.field.endswith("phase.fixed")


def test_an_object_in_a_union_field_is_told_what_is_wrong_inside_it():
    """{"n": 2} for a count was headlined 'should be a valid integer' (the integer branch's
    complaint), and a misspelt field of a buffer slot 'send a JSON string'."""
    from legalsat.testing.protocols import arrivals

    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline(arrivals(1, {"n": 2}))
    assert e.value.headline.field == "roles[0].blocks[0].count.n" and len(e.value.details) == 1
    doc = arrivals(1, 4)
    doc["roles"][0]["blocks"][0]["ops"] = [{"op": "arrive", "bar": {"name": "b0", "shfit": 1}}]
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline(doc)
    assert "unknown field 'shfit'" in e.value.headline.message, e.value.details


@pytest.mark.parametrize("call,doc,field,suggestion", [
    ("analyze_bank_conflicts", {"pattern": "cols", "vector": 8, "tile": {"dtype": "bfloat16", "shape": [64, 64],
                                                                         "swizle": "128B"}}, "tile.swizle", "'swizzle'"),
    ("analyze_bank_conflicts", {"pattern": "cols", "vector": 8, "tile": {"dtype": "BFloat16", "shape": [64, 64]}},
     "tile.dtype", "'bfloat16'"),
    ("verify_pipeline", {"roles": [{"name": "p", "blocks": [{"count": 1, "ops": [
        {"op": "wait", "bar": "b", "phase": {"flp": True}}]}]}], "barriers": [{"name": "b"}]},
     "roles[0].blocks[0].ops[0].phase.flp", "'flip'"),
])
def test_a_misspelt_name_is_matched_against_its_siblings(call, doc, field, suggestion):
    """tile.swizle was offered 'tile', ops[i].buffr 'buffers', phase.flp nothing, and
    'BFloat16' 'float16': nested names were matched against the top level's, and case was
    not tried first."""
    with pytest.raises(InputError) as e:
        getattr(legalsat, call)(doc)
    d = e.value.headline
    assert d.field == field and f"did you mean {suggestion}" in d.message, d


@pytest.mark.parametrize("op,field", [
    ({"op": "release", "bar": {"name": "b0", "all": True}}, "roles[0].blocks[0].ops[0].bar.all"),
    ({"op": "arrive", "bar": {"name": "b0", "fixed": 0, "shift": 1}}, "roles[0].blocks[0].ops[0].bar"),
    ({"op": "wait", "bar": "b0", "phase": {}, "buffer": "x"}, "roles[0].blocks[0].ops[0].buffer"),
    ({"op": "arrive", "bar": "b0", "phase": {}}, "roles[0].blocks[0].ops[0].phase"),
])
def test_slot_and_operation_fields_that_would_be_ignored_are_refused(op, field):
    """"all" on a release quietly meant element 0; fixed with shift kept one of them; a
    buffer on a wait was ignored."""
    from legalsat.testing.protocols import arrivals

    doc = arrivals(1, 4)
    doc["buffers"] = [{"name": "x", "count": 1, "bytes": 64}]
    doc["roles"][0]["blocks"][0]["ops"] = [op]
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline(doc)
    assert field in {d.field for d in e.value.details}, e.value.details


def test_a_value_outside_a_fixed_set_is_told_the_set():
    """'use one of the documented spellings' named none of them."""
    with pytest.raises(InputError) as e:
        legalsat.analyze_bank_conflicts({"pattern": "cols", "vector": 8,
                                         "tile": {"dtype": "bfloat16", "shape": [64, 64], "swizzle": "99B"}})
    assert "'128B'" in e.value.headline.fix and "documented" not in e.value.headline.fix, e.value.headline


def _warp_specialized_example() -> dict:
    from pathlib import Path

    lines = (Path(__file__).resolve().parents[2] / "examples" / "pipelines.jsonl").read_text().splitlines()
    return json.loads(next(ln for ln in lines if '"warp-specialized' in ln and "broken" not in ln))


@pytest.mark.parametrize("edit,field,says", [
    (lambda p: p["setup"][0].update(count=0), "setup[0].count", "1 to 1048575"),  # was taken as the default
    (lambda p: [o.update(bytes=1 << 21) for o in p["roles"][0]["blocks"][0]["ops"] if o["op"] == "expect_tx"],
     "roles[0].blocks[0].ops[1].bytes", "transaction count is at most 1048575"),
    (lambda p: p["roles"][1]["blocks"][0]["ops"][1].update(bytes=64), "roles[1].blocks[0].ops[1].bytes",
     "consume takes no bytes"),  # accepted and ignored, where a bar on it was refused
    (lambda p: p["roles"][1]["blocks"][0]["ops"][0]["phase"].update(fixed=1, shift=1), "roles[1].blocks[0].ops[0].phase",
     "fixed and shift"),  # a slot with both was refused, a phase with both accepted
], ids=["init-count-0", "tx-past-2^20", "consume-bytes", "phase-fixed-and-shift"])
def test_counts_and_fields_mbarriers_cannot_take_are_named(edit, field, says):
    proto = _warp_specialized_example()
    assert legalsat.verify_pipeline(proto).ok
    edit(proto)
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline(proto)
    assert e.value.headline.field == field and says in e.value.headline.message, e.value.headline


def test_a_copy_past_its_buffer_and_an_arrival_past_its_phase_are_violations():
    """A 16 KiB copy into an 8 KiB buffer element and 5 arrivals on a phase that expects 1
    were `ok: true` (the buffer's bytes were never read; the extra arrivals vanished)."""
    proto = _warp_specialized_example()
    proto["buffers"][0]["bytes"] //= 2
    out = legalsat.verify_pipeline(proto)
    assert not out.ok and {v.rule for v in out.violations} == {"buffer_overflow"}
    assert out.violations[0].op == "tma_load" and out.violations[0].role == proto["roles"][0]["name"]
    proto = _warp_specialized_example()
    release = next(i for i, o in enumerate(proto["roles"][1]["blocks"][0]["ops"]) if o["op"] == "release")
    proto["roles"][1]["blocks"][0]["ops"][release] = {"op": "arrive", "bar": proto["roles"][1]["blocks"][0]["ops"][
        release]["bar"], "count": 5}
    out = legalsat.verify_pipeline(proto)
    assert "over_arrival" in {v.rule for v in out.violations}


def test_every_protocol_a_plan_returns_is_accepted_back_and_verifies():
    """A plan's async.protocol is verify-pipeline input as it is: the field checks (a field
    an operation does not read is refused) must accept every field the planner writes
    (release names its buffer, tma_load its descriptor)."""
    from legalsat.testing.planner_suite import view

    reqs = [{"op": {"kind": "copy", "src": view("bfloat16", (4096, 4096)),
                    "dst": view("bfloat16", (4096, 4096), (1, 4096))}, "options": {"max_plans": 8}},
            {"op": {"kind": "load_tile", "src": view("bfloat16", (4096, 4096)), "tile": [128, 64],
                    "consumer": {"kind": "wgmma_a"}}}]
    protocols = [a["protocol"] for r in reqs for p in legalsat.optimize(r)["plans"]
                 for a in [p.get("async"), *(q.get("async") for q in p.get("pieces", []))] if a and a.get("protocol")]
    assert len(protocols) >= 4 and all(legalsat.verify_pipeline(json.loads(json.dumps(p))).ok for p in protocols)


def test_a_negative_block_count_gets_the_counts_own_fix():
    """A count of -5 was told to keep to the range the JSON Schema states, which (shared with
    `start`) takes -4096 to 4096."""
    proto = {"barriers": [{"name": "full", "count": 1}],
             "roles": [{"name": "p", "blocks": [{"count": -5, "ops": [{"op": "arrive", "bar": "full"}]}]}]}
    with pytest.raises(InputError) as e:
        legalsat.verify_pipeline(proto)
    assert e.value.headline.field == "roles[0].blocks[0].count"
    assert "0 or more" in e.value.headline.fix and "JSON Schema" not in e.value.headline.fix
