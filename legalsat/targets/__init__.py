"""Hardware targets: the facts each analysis needs, one module per target.

A target is data, not code: the analyses are generic and read their bounds from here, so a
new architecture is a new module with its own facts (and, when it has been measured, its
own driver- or profiler-verified corpus).
"""

from __future__ import annotations

from legalsat.diagnostics import Code, shown
from legalsat.targets.base import BankFacts, CostFact, CostFacts, Target, TmaFacts
from legalsat.targets.gfx942 import GFX942
from legalsat.targets.sm90 import SM90
from legalsat.targets.sm100 import SM100

TARGETS: dict[str, Target] = {t.name: t for t in (SM90, SM100, GFX942)}
TARGET_NAMES = tuple(sorted(TARGETS))


def resolve_target(name: object, *, need_tma: bool = False, field: str = "target") -> Target:
    """The target called `name` (e.g. "sm90"): the one resolver of every entry point.

    Raises InputError (`unknown_target`, or `no_tma` when `need_tma` and the target has no
    tensor memory accelerator) naming `field` and the valid choices."""
    target = TARGETS.get(name) if isinstance(name, str) else None
    if target is None:
        raise Code.UNKNOWN_TARGET.error(f"{field}: unknown target {shown(name)}; legalsat plans for "
                                        f"{', '.join(TARGET_NAMES)}", f"set {field} to one of: {', '.join(TARGET_NAMES)}",
                                        field)
    if need_tma and target.tma is None:
        with_tma = ", ".join(n for n in TARGET_NAMES if TARGETS[n].tma is not None)
        raise Code.NO_TMA.error(f"target {name} has no TMA unit", f"use target {with_tma} for TMA descriptors",
                                field)
    return target


__all__ = ["TARGETS", "TARGET_NAMES", "BankFacts", "CostFact", "CostFacts", "Target", "TmaFacts", "resolve_target"]
