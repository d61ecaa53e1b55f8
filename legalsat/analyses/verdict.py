"""Verdicts: what an analysis says about one input, and why.

A `Violation` names the rule (a stable id such as ``box_dim.inner_bytes``), the input field
and index it is about, what is wrong in the user's terms, and a fix the user can act on.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken rule. `index` is the position in a list field, or None for scalars."""

    rule: str
    field: str
    index: int | None
    message: str
    fix: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "field": self.field, "index": self.index,
                "message": self.message, "fix": self.fix}


@dataclass(frozen=True)
class Verdict:
    """Legal exactly when there are no violations (the invariant every producer keeps)."""

    violations: tuple[Violation, ...] = ()

    @property
    def legal(self) -> bool:
        return not self.violations

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(v.rule for v in self.violations)

    def to_dict(self) -> dict:
        return {"legal": self.legal, "violations": [v.to_dict() for v in self.violations]}
