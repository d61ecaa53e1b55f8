"""The floor of LEGALSAT_WORKER_MEMORY_MB holds a warmed-up worker: measured as the worker
warms up (benchmarks/bench_worker_memory.py), not assumed."""

from __future__ import annotations

from benchmarks.bench_worker_memory import warm
from legalsat.settings import Settings


def test_a_warmed_up_worker_fits_the_settings_floor_and_a_tight_limit_stops_its_warm_up():
    floor = Settings.model_fields["worker_memory_mb"].metadata
    least = min(m.ge for m in floor if hasattr(m, "ge"))
    figures = warm(0, "sm90")
    assert figures is not None and 0 < figures["vm_data_mib"] < least, (figures, least)
    assert warm(least, "sm90") is not None
    assert warm(64, "sm90") is None  # the warm-up's MemoryError: the worker's exit, not a crash
