"""The README's term-language reference covers every constructor the planner declares, and its
codes are the enums' (so neither can drift from the rules)."""

from __future__ import annotations

import re
from pathlib import Path

from legalsat.planner.rules.language import LANGUAGE
from legalsat.terms.movement import Consumer, Distribution
from legalsat.terms.strategy import Strategy

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
SECTION = README[README.index("### The term language"):README.index("## Tile loads")]


def _constructors() -> set[str]:
    """The constructors of every `datatype` and every `constructor` declaration."""
    code = re.sub(r";[^\n]*", "", LANGUAGE)  # comments off
    datatypes = code[:code.index("(constructor")]
    names = set(re.findall(r"\((\w+)", datatypes)) - {"datatype"}
    return names | set(re.findall(r"\(constructor (\w+)", code))


def test_every_constructor_is_documented():
    names = _constructors()
    assert {"Copy", "DCons", "Cand", "Lower", "Direct", "Bcast", "Load"} <= names  # the parse found them
    missing = sorted(n for n in names if f"`({n}" not in SECTION and f"({n} " not in SECTION)
    assert missing == []


def _codes(enum) -> str:
    return ", ".join(f"{m.code} {m.value}" for m in sorted(enum, key=lambda m: m.code))


def test_codes_match_the_enums():
    flat = " ".join(SECTION.split())
    for enum in (Strategy, Distribution, Consumer):
        assert _codes(enum) in flat, enum.__name__
