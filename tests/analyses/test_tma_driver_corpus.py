"""Replay the driver-verified corpus: the sm90 model must agree with cuTensorMapEncodeTiled
on every recorded descriptor, both ways (recorded on an H100 by tools/tma_probe.py)."""

from __future__ import annotations

import collections
import gzip
import json
import os

from conftest import DATA

from legalsat.analyses.tma_legality import check_descriptor
from legalsat.schemas.descriptors import parse_descriptor
from legalsat.targets import SM90

CORPUS = os.path.join(DATA, "tma_sm90_driver_corpus.jsonl.gz")


def test_model_agrees_with_the_driver_on_every_recorded_descriptor():
    outcomes = collections.Counter()
    misses = []
    with gzip.open(CORPUS, "rt") as f:
        for line in f:
            rec = json.loads(line)
            verdict = check_descriptor(parse_descriptor(rec["descriptor"]), SM90)
            driver_legal = rec["driver_result"] == 0
            outcomes[(driver_legal, verdict.legal)] += 1
            if verdict.legal != driver_legal and len(misses) < 5:
                misses.append((rec, verdict.rules))
    total = sum(outcomes.values())
    assert total >= 50000
    # both verdicts are well represented, so agreement is not trivial
    assert outcomes[(True, True)] > 5000 and outcomes[(False, False)] > 5000
    assert outcomes[(False, True)] == 0, f"false-legal: {misses}"
    assert outcomes[(True, False)] == 0, f"false-illegal: {misses}"


def test_corpus_covers_every_sm90_rule():
    seen = set()
    with gzip.open(CORPUS, "rt") as f:
        for line in f:
            rec = json.loads(line)
            seen.update(check_descriptor(parse_descriptor(rec["descriptor"]), SM90).rules)
    # the sm100-only rule (documented interleave/swizzle coupling) is off on sm90
    from legalsat.analyses.tma_legality import RULES
    assert seen == {r.name for r in RULES} - {"swizzle.interleave_32b"}
