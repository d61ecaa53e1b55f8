"""Live `legalsat serve` processes on loopback ports (real uvicorn, real worker processes)."""

from __future__ import annotations

import httpx
import pytest

from legalsat.testing.live_server import LiveServer
from legalsat.testing.planner_suite import permuted, suite_request, view
from legalsat.testing.tools import need, required  # noqa: F401 (the server tests import them from here)

SMALL = {"op": {"kind": "copy",
                "src": {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]},
                "dst": {"dtype": "bfloat16", "shape": [64, 96], "strides": [1, 64]}}}
# seconds of planning: the suite's rank-7 copy with a node limit far above the default
RANK7_OP = suite_request("rank7-contiguous-fp32")["op"]
SLOW = {"op": RANK7_OP, "options": {"node_limit": 400_000, "timeout_ms": 60_000}}
# a request whose planning overruns a 150 ms deadline by far (its rank-8 reversal's candidates
# take about 0.2 s past saturation on a 2-core machine): what a deadline must stop from outside
_SHAPE = (3, 5, 7, 2, 3, 5, 7, 64)
OVERRUN = {"op": {"kind": "copy", "src": view("float32", _SHAPE), "dst": permuted("float32", _SHAPE, tuple(range(8))[::-1])},
           "options": {"node_limit": 400_000, "timeout_ms": 60_000}}


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
