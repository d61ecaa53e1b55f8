"""Hardware targets: the facts each analysis needs, one module per target.

A target is data, not code: the analyses are generic and read their bounds from here, so a
new architecture is a new module with its own facts (and, when it has been measured, its
own driver- or profiler-verified corpus).
"""

from __future__ import annotations

from legalsat.analyses.targets.base import BankFacts, CostFacts, Target, TmaFacts
from legalsat.analyses.targets.gfx942 import GFX942
from legalsat.analyses.targets.sm90 import SM90
from legalsat.analyses.targets.sm100 import SM100

TARGETS: dict[str, Target] = {t.name: t for t in (SM90, SM100, GFX942)}


class UnknownTarget(ValueError):
    """Raised for a target name legalsat does not know; the message lists the known ones."""


def get_target(name: str) -> Target:
    """The target called `name` (e.g. "sm90"); raises UnknownTarget naming the valid ones."""
    try:
        return TARGETS[name]
    except KeyError:
        raise UnknownTarget(
            f"unknown target {name!r}; use one of: {', '.join(sorted(TARGETS))}") from None


__all__ = ["TARGETS", "BankFacts", "CostFacts", "Target", "TmaFacts", "UnknownTarget", "get_target"]
