"""The malformed-input catalogue (legalsat.testing.malformed, 399 requests over every route)
against a real server: no 5xx, no answer over 10 s, the error shape on every refusal, and a
4xx for every case that is not a valid request at some bound (for a batch: a 4xx, or an error
in place of every item, which fails alone)."""

from __future__ import annotations

import time

import httpx

from legalsat.testing.malformed import catalogue


def test_no_malformed_request_gets_a_5xx_or_waits(server):
    problems = []
    with httpx.Client(base_url=server.url, timeout=30) as c:
        for case in catalogue():
            headers = {"content-type": case.content_type} if case.content_type else {}
            t = time.perf_counter()
            r = c.request(case.method, case.path, content=case.body, headers=headers)
            took = time.perf_counter() - t
            if r.status_code >= 500 or took > 10:
                problems.append((case.name, r.status_code, round(took, 2), r.text[:200]))
            elif r.status_code >= 400:
                err = r.json().get("error", {})
                if set(err) < {"code", "message", "fix", "field"} or not err.get("fix"):
                    problems.append((case.name, r.status_code, "error shape", r.text[:200]))
            elif case.refused and case.path.endswith("/batch"):  # each item fails alone: all of them here
                errors = [item.get("error", {}) for item in r.json()]
                if not all(set(e) >= {"code", "message", "fix", "field"} and e["fix"] for e in errors):
                    problems.append((case.name, r.status_code, "an item accepted", r.text[:200]))
            elif case.refused:
                problems.append((case.name, r.status_code, "accepted", r.text[:200]))
    assert not problems, "\n".join(map(str, problems))
