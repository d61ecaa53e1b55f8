"""On a GPU machine: ask the live driver again, on the shipped corpus and on fresh
descriptors, and require the sm90 model to agree with every answer."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from conftest import DATA

from legalsat.analyses.tma_legality import check_descriptor
from legalsat.targets import SM90
from legalsat.terms.descriptor import TmaDescriptor

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def driver():
    import tma_probe

    tma_probe._init_worker()
    tma_probe._init_ctypes()
    return tma_probe


def _disagreements(driver, descriptors):
    bad = []
    for d in descriptors:
        code = driver.encode(d)
        if code == 254:  # the binding cannot pass rank > 5: ask the same entry point directly
            code = driver.encode_c(d)
        legal = check_descriptor(TmaDescriptor.from_fields(**d), SM90).legal
        if legal != (code == 0):
            bad.append((d, code))
    return bad


def test_shipped_corpus_still_matches_the_live_driver(driver):
    with gzip.open(os.path.join(DATA, "tma_sm90_driver_corpus.jsonl.gz"), "rt") as f:
        ds = [json.loads(line)["descriptor"] for line in f]
    assert _disagreements(driver, ds) == []


def test_fresh_descriptors_match_the_live_driver(driver):
    import tma_generator

    ds = list(tma_generator.descriptors(seed=424242, n=50000)) + tma_generator.grid()
    assert _disagreements(driver, ds) == []
