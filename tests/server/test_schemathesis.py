"""Schemathesis against the live OpenAPI document: no 5xx, no response outside the schema."""

from __future__ import annotations

import subprocess

from legalsat.testing.live_server import LiveServer

from .conftest import need

CHECKS = "not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance"


def test_generated_requests_get_no_5xx_and_schema_conforming_answers(tmp_path):
    exe = need("schemathesis")
    with LiveServer(workers=2, cache_path="", deadline_ms=3000, log_level="warning",
                    log_path=str(tmp_path / "server.log")) as srv:
        run = subprocess.run([exe, "run", srv.url + "/openapi.json", "--checks", CHECKS, "-n", "30",
                              "--generation-deterministic", "--request-timeout", "30",
                              "--report", "junit", "--report-dir", str(tmp_path)],
                             capture_output=True, text=True, timeout=900)
    tail = run.stdout[-4000:]
    assert run.returncode == 0, tail
    assert "generated" in tail
