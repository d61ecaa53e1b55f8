"""Built e-graph pages and documents, kept in the service's process for the next GET.

A kept e-graph's page is built by a worker from the stored snapshot (2.7 s for one of
79,175 e-nodes on the 2-core machine, benchmarks/egraph_fetch_results.json: a breadth-first walk
over every e-node); a page is a pure function of the e-graph (ids are
never reused) and of the view's settings, so a refresh or a second reader is answered from
here. Bounded by bytes (LEGALSAT_EGRAPH_PAGES_BYTES), least recently used first out; the
routes check that the e-graph is still kept before answering from it.
"""

from __future__ import annotations

from collections import OrderedDict


class BuiltPages:
    """An LRU of built bodies keyed by (e-graph id, view settings), at most `max_bytes` of
    bodies (0: none kept). Used from the event loop only (no lock)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._bodies: OrderedDict[tuple[str, str], bytes] = OrderedDict()

    def get(self, key: tuple[str, str]) -> bytes | None:
        body = self._bodies.get(key)
        if body is not None:
            self._bodies.move_to_end(key)
        return body

    def put(self, key: tuple[str, str], body: bytes) -> None:
        """Keep `body` (a body over the whole bound is not kept), evicting the least recently used."""
        if len(body) > self.max_bytes:
            return
        old = self._bodies.pop(key, None)
        self.bytes += len(body) - (len(old) if old is not None else 0)
        self._bodies[key] = body
        while self.bytes > self.max_bytes:
            _, evicted = self._bodies.popitem(last=False)
            self.bytes -= len(evicted)

    def __len__(self) -> int:
        return len(self._bodies)
