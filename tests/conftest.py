"""Shared test configuration: GPU-only tests skip where no NVIDIA driver answers."""

from __future__ import annotations

import functools
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")


@functools.cache
def gpu_available() -> bool:
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        return False
    try:
        (err,) = cu.cuInit(0)
        if int(err) != 0:
            return False
        err, count = cu.cuDeviceGetCount()
        return int(err) == 0 and count > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with its driver (cuda-bindings)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
