"""Extraction: the cheapest term of every strategy the saturated e-graph offers."""

from __future__ import annotations

from legalsat.planner.egglog_bindings import bindings
from legalsat.planner.formulation import Candidate, formulation
from legalsat.planner.saturate import Saturation
from legalsat.terms.strategy import Strategy


def extract(sat: Saturation) -> list[Candidate]:
    """Best term per strategy that has one, cheapest first."""
    eg = sat.egraph
    out = []
    for strategy in Strategy:
        try:
            eg.run_program(*eg.parse_program(f"(check (Has {strategy.code} $root))"))
        except bindings.EggSmolError:
            continue  # no plan of this strategy exists for the request
        best = eg.run_program(*eg.parse_program(f"(extract (Cand {strategy.code} $root))"))[-1]
        term = best.termdag.to_string(best.term)
        form = formulation(term)
        # the extracted cost also holds the tie-break that prefers fewer, wider accesses
        # (each Copy node costs its element count in ps, rule `copy-tiebreak`): not time
        tiebreak = sum(r.elems for r in form.regions)
        out.append(Candidate(strategy, term, max(int(best.cost) - tiebreak, 0), form))
    return sorted(out, key=lambda c: c.cost)
