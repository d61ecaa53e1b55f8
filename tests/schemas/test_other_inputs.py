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
