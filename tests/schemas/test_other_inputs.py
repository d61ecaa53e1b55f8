"""One command's input sent to another (a descriptor to the bank route, a protocol to optimize,
...): the refusal names the command and route that take it, not a field to remove or add."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import legalsat
from legalsat.diagnostics import InputError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
INPUTS = {"validate-descriptor": json.loads((EXAMPLES / "descriptors.jsonl").read_text().splitlines()[0]),
          "bank-conflicts": json.loads((EXAMPLES / "bank_conflicts.jsonl").read_text().splitlines()[0]),
          "verify-pipeline": json.loads((EXAMPLES / "pipelines.jsonl").read_text().splitlines()[0]),
          "optimize": json.loads((EXAMPLES / "optimize_transpose.json").read_text())}
CALLS = {"validate-descriptor": legalsat.validate_descriptor, "bank-conflicts": legalsat.analyze_bank_conflicts,
         "verify-pipeline": legalsat.verify_pipeline, "optimize": legalsat.optimize}


@pytest.mark.parametrize("sent", list(INPUTS))
@pytest.mark.parametrize("to", list(CALLS))
def test_another_commands_input_is_named_with_its_command(sent, to):
    """A descriptor at the bank route was told 'access_bytes: Field required'; a bank request
    at the descriptor route 'addresses: did you mean global_address'."""
    if sent == to:
        return
    with pytest.raises(InputError) as e:
        CALLS[to](INPUTS[sent])
    assert f"legalsat {sent}" in e.value.headline.fix, (sent, to, e.value.headline)


COPY_TERM = "(copy (view float32 (64 64) (64 1) 16) (view float32 (64 64) (1 64) 16))"
DESC = {"dtype": "bfloat16", "global_address": 1 << 40, "global_dim": [4096, 1024], "global_strides": [8192],
        "box_dim": [64, 64]}


@pytest.mark.parametrize("call,field,message,fix", [
    # a 100,000-character target came back whole in the message (other fields were cut)
    (lambda: legalsat.optimize({"target": "a" * 100_000, "term": COPY_TERM}), "target", "'aaaa", "sm90"),
    # Python's spellings of JSON values: "None is not a valid value"
    (lambda: legalsat.validate_descriptor({**DESC, "dtype": None}), "dtype", "dtype: null is not", None),
    (lambda: legalsat.validate_descriptor({**DESC, "dtype": True}), "dtype", "dtype: true is not", None),
    # the fix offered vector 0 (4 bytes / 8)
    (lambda: legalsat.analyze_bank_conflicts({"op": "load", "pattern": "cols", "vector": 8,
                                              "tile": {"dtype": "float64", "shape": [64, 64]}}),
     "vector", "64 bytes per lane", "use vector 1 or 2 for float64"),
    # a target in a descriptor: "remove the field"
    (lambda: legalsat.validate_descriptor({**DESC, "target": "sm90"}), "target", "unknown field", "?target=sm90"),
    # rank 0 blamed global_dim ("give global_dim exactly 0 entries")
    (lambda: legalsat.validate_descriptor({**DESC, "rank": 0}), "rank", "1 to 5 dimensions", "give rank 2"),
    # an empty shape was told to merge dims
    (lambda: legalsat.optimize({"op": {"kind": "copy", "src": {"dtype": "float32", "shape": [], "strides": []},
                                       "dst": {"dtype": "float32", "shape": [], "strides": []}}}),
     "op.src.shape", "0 dims", "shape [1]"),
    # "unknown field 'dst'; did you mean 'dst'?" for a copy's field sent with a gather
    (lambda: legalsat.optimize({"op": {"kind": "gather", "src": {"dtype": "float32", "shape": [100, 64],
                                                                  "strides": [64, 1]},
                                       "dst": {"dtype": "float32", "shape": [100, 64], "strides": [64, 1]},
                                       "axis": 0, "index": {"count": 32}}}),
     "op.dst", "op of kind 'gather' has no field 'dst': dst is a field of kind 'copy'", "op.kind"),
    # a raw instruction's field in a tile request: "unknown field", with a fix for filling it in
    (lambda: legalsat.analyze_bank_conflicts({"pattern": "cols", "vector": 8, "access_bytes": 16,
                                              "tile": {"dtype": "bfloat16", "shape": [64, 64]}}),
     "access_bytes", "access_bytes goes with addresses", "remove access_bytes"),
    # a vector that does not divide the row was first blamed on a row_pitch_bytes never sent
    (lambda: legalsat.analyze_bank_conflicts({"pattern": "rows", "vector": 8,
                                              "tile": {"dtype": "bfloat16", "shape": [64, 12]}}),
     "vector", "12 columns do not split into vectors of 8", "divides 12"),
    (lambda: legalsat.analyze_bank_conflicts({"pattern": "rows", "vector": 2,
                                              "tile": {"dtype": "float32", "shape": [64, 1]}}),
     "vector", "1 column does not split into vectors of 2", "divides 1"),
    # a kind that is not a string was quoted as one: "op.kind is 'None'"
    (lambda: legalsat.optimize({"op": {"kind": None}}), "op.kind", "op.kind is null,", None),
    # a list in Python's spelling: "['128B'] is not a valid value"
    (lambda: legalsat.validate_descriptor({**DESC, "swizzle": ["128B"]}), "swizzle", '["128B"] is not', None),
    # a consumer of null was told "expected a JSON object / send a JSON object": a name is the usual form
    (lambda: legalsat.optimize({"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [64, 64],
                                                                     "strides": [64, 1]},
                                       "tile": [64, 64], "consumer": None}}),
     "op.consumer", "op.consumer is null", "'wgmma_a'"),
], ids=["long-target", "null", "true", "vector-0", "target-in-descriptor", "rank-0", "empty-shape",
        "field-of-another-kind", "field-of-another-form", "vector-before-pitch", "one-column", "kind-null", "list-as-json",
        "consumer-null"])
def test_messages_name_the_field_at_fault_quote_json_and_offer_valid_fixes(call, field, message, fix):
    with pytest.raises(InputError) as e:
        call()
    d = e.value.headline
    assert d.field == field and message in d.message and len(d.message) < 300, d
    assert fix is None or fix in d.fix, d
