"""One diagnostic catalogue: stable unique codes, a real fix for each, and every problem
legalsat reports (input errors, legality violations, rejection reasons, protocol hazards)
drawn from it."""

from __future__ import annotations

import pickle

import pytest

import legalsat
from legalsat.analyses.tma_legality import RULES
from legalsat.diagnostics import Category, Code, InputError, catalogue
from legalsat.protocols.verify import verify_protocol
from legalsat.testing.planner_suite import load_suite
from legalsat.testing.protocols import SEEDS, protocol_json, warp_specialized


def test_codes_are_unique_and_every_fix_is_actionable():
    ids = [c.id for c in Code]
    assert len(ids) == len(set(ids))
    for c in Code:
        assert c.summary and c.default_fix and "none needed" not in c.default_fix.lower(), c
    assert {row["code"] for row in catalogue()} == set(ids)


def test_legality_rules_are_catalogue_codes_with_their_field():
    assert RULES and all(r.code.category is Category.LEGALITY and r.code.field for r in RULES)
    assert len({r.name for r in RULES}) == len(RULES)


def test_input_errors_survive_pickling():
    """The streaming commands answer lines in worker processes: their errors cross them."""
    e = Code.INVALID_INPUT.error("op.src.shape has 0 dims", "give 1 to 8 dims", "op.src.shape")
    back = pickle.loads(pickle.dumps(e))
    assert isinstance(back, InputError) and back.details == e.details and back.to_dict() == e.to_dict()


@pytest.fixture(scope="module")
def suite_responses():
    return [legalsat.optimize(q) for q in load_suite()]


def test_every_reason_is_a_catalogue_code_with_a_real_fix(suite_responses):
    for out in suite_responses:
        for rej in out["rejected"]:
            assert rej["reasons"], rej
            for reason in rej["reasons"]:
                Code.by_id(reason["rule"])
                assert "none needed" not in reason["fix"], (out["request_id"], reason)


def test_solver_internals_are_not_reasons(suite_responses):
    """Only constraints a user can act on appear by name; the planner's own are summarised."""
    internal = ("_within_extent", "tile_a_extent", "tile_b_extent", "run_a", "run_b", "block_fits",
                "rows_within_count", "small_side_whole", "box_divides_tile")
    for out in suite_responses:
        for rej in out["rejected"]:
            for reason in rej["reasons"]:
                assert not any(reason["rule"].endswith(x) for x in internal), reason


def test_protocol_hazards_carry_a_fix():
    v = verify_protocol(SEEDS["tx_mismatch"](warp_specialized(2)))
    assert v.violations and all(x.code.category is Category.PROTOCOL and x.fix for x in v.violations)
    out = legalsat.verify_pipeline(protocol_json(SEEDS["tx_mismatch"](warp_specialized(2))))
    assert out.violations[0].fix
