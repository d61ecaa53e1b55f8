"""System tools the tests need (Chromium, redis-server, Ray, wrk, ...): skip where one is
missing, fail where CI says it must be there.

CI sets LEGALSAT_CI_REQUIRE (comma-separated tool names) so that a missing tool fails there
instead of skipping.
"""

from __future__ import annotations

import os
import shutil


def required(tool: str) -> bool:
    """CI requires `tool` (LEGALSAT_CI_REQUIRE)."""
    return tool in os.environ.get("LEGALSAT_CI_REQUIRE", "").split(",")


def need(tool: str, path: str | None = None) -> str:
    """The executable of `tool` (at `path` if given and present); skips the test where it is
    missing, fails it where CI requires the tool."""
    import pytest

    exe = path if path and os.path.exists(path) else shutil.which(tool)
    if exe is None:
        if required(tool):
            pytest.fail(f"{tool} is required here (LEGALSAT_CI_REQUIRE) but not installed")
        pytest.skip(f"{tool} is not installed")
    return exe


def need_module(name: str):
    """The Python module `name`, with need()'s skip-or-fail rule when it is not installed."""
    import importlib

    import pytest

    try:
        return importlib.import_module(name)
    except ImportError:
        if required(name):
            pytest.fail(f"the Python module {name} is required here (LEGALSAT_CI_REQUIRE) but not installed")
        pytest.skip(f"the Python module {name} is not installed")
