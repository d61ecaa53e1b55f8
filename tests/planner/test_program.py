"""The egglog program is assembled from the enums the rest of legalsat uses: every code the
rules rely on is pinned here, so reordering an enum cannot silently change what a rule means."""

from __future__ import annotations

import re

from legalsat.planner.formulation import formulation
from legalsat.planner.rules.language import LANGUAGE
from legalsat.planner.rules.program import base_program, placeholders
from legalsat.targets import SM90, CostFact
from legalsat.terms.movement import Consumer, Distribution
from legalsat.terms.strategy import Strategy


def test_codes_are_pinned():
    assert {s.value: s.code for s in Strategy} == {
        "direct": 0, "tma": 1, "staged_smem": 2, "shuffle": 3, "inspector_executor": 4}
    assert {d.value: d.code for d in Distribution} == {
        "random": 0, "sorted": 1, "clustered": 2, "paged": 3, "warp_local": 4}
    assert {c.value: c.code for c in Consumer} == {"wgmma_a": 0, "wgmma_b": 1, "rows": 2, "cols": 3}
    assert {f.name: int(f) for f in CostFact} == {
        "TMA": 1, "STAGED": 2, "SHUFFLE": 3, "INSPECTOR": 4, "TMA_TRANSPOSE": 5, "SHUFFLE_GATHER": 6, "SCATTER": 100}


def test_every_strategy_is_a_plan_constructor_and_back():
    plan_sort = LANGUAGE[LANGUAGE.index("(datatype Plan"):]
    for s in Strategy:
        assert f"({s.constructor} Mov)" in plan_sort
        assert Strategy.from_constructor(s.constructor) is s
        assert formulation(f"({s.constructor} (Copy 2 16 16 (DCons 8 1 1 (DNil))))").strategy is s


def test_the_program_has_no_placeholder_left_and_every_code_seeded():
    program = base_program(SM90)
    assert not re.search(r"\{[a-z_]+\}", program)
    for f in CostFact:
        assert f"(set (Eff {int(f)}) {f.of(SM90.cost)})" in program
    clustered = sorted(d.code for d in Distribution if d.clusters)
    assert clustered == [Distribution.CLUSTERED.code, Distribution.PAGED.code]
    for code in clustered:
        assert f"(ClusteredDist {code})" in program
    assert placeholders(SM90)["warp_local"] == Distribution.WARP_LOCAL.code


def test_every_rule_has_a_unique_name():
    program = base_program(SM90)
    rules = re.findall(r"\((?:rule|rewrite)\b", program)
    names = re.findall(r':name "([^"]+)"', program)
    assert len(names) == len(rules) and len(set(names)) == len(names)
