"""Live `legalsat serve` processes on loopback ports (real uvicorn, real worker processes)."""

from __future__ import annotations

import httpx
import pytest

from legalsat.testing.live_server import LiveServer
from legalsat.testing.planner_suite import reordered_copy
from legalsat.testing.tools import need, required  # noqa: F401 (the server tests import them from here)

SMALL = {"op": {"kind": "copy",
                "src": {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]},
                "dst": {"dtype": "bfloat16", "shape": [64, 96], "strides": [1, 64]}}}
# seconds of planning with a node limit far above the default; its late saturation rounds each
# take longer than a short deadline (a signal cannot stop a round), so only a deadline
# enforced from outside the worker ends it
RANK7_OP = reordered_copy()
SLOW = {"op": RANK7_OP, "options": {"node_limit": 400_000, "timeout_ms": 60_000}}


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("srv")
    with LiveServer(workers=2, cache_path=str(d / "plans.sqlite3"), log_path=str(d / "server.log"),
                    log_level="warning") as srv:
        yield srv


@pytest.fixture(scope="session")
def client(server):
    with httpx.Client(base_url=server.url, timeout=120) as c:
        yield c
