"""uvicorn's httptools protocol with bounds on the request head: its size and its time.

httptools hands uvicorn a header only once it is complete, holding all of it meanwhile: a
256 MB header line costs 256 MB and minutes before the application sees the request. This
protocol counts a request's head as it arrives (the bytes up to the blank line that ends it)
and answers 431 in the service's error shape once it is over LEGALSAT_MAX_HEADER_BYTES,
closing the connection. uvicorn times out neither a head that never ends nor a connection
that never sends one (its keep-alive timeout starts after a response), so a client holding
thousands of half-sent heads would exhaust the process's file descriptors, /healthz
included: a head must be complete LEGALSAT_HEAD_TIMEOUT_S after the connection was made or
after the head's first byte (a kept-alive connection between requests is uvicorn's
keep-alive timeout's), else 408 in the error shape, or a bare close when not one byte came,
and the connection is closed. A request httptools cannot parse gets its 400 in the error shape
too (uvicorn's is plain text). A request whose target is in absolute form
(`POST http://host/v1/optimize`) has its Host header replaced by the target's authority, which
RFC 9112 makes the request's host, so the host allow-list judges that. Everything else is
uvicorn's.
"""

from __future__ import annotations

import json

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from legalsat.diagnostics import Code

_END = b"\r\n\r\n"


def bounded_protocol(max_head_bytes: int, head_timeout_s: float = 10.0) -> type[HttpToolsProtocol]:
    """An HttpToolsProtocol class refusing request heads over `max_head_bytes` and heads not
    complete `head_timeout_s` after the connection was made or after their first byte."""

    class BoundedHead(HttpToolsProtocol):
        # counting while a head is being received: from a request's first byte (httptools'
        # on_message_begin; the connection's start) to the blank line that ends its head
        def connection_made(self, transport) -> None:
            self._head_left, self._tail = max_head_bytes, b""
            self._head_timer = None
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._head_left is None:  # a request that began inside data already counted
                self._head_left, self._tail = max_head_bytes, b""
                self._arm()

        def on_headers_complete(self) -> None:
            if self.url[:8].lower().startswith((b"http://", b"https://")):
                # an absolute-form target names the host itself (RFC 9112 3.2.2: a server ignores
                # the Host header then), so the host allow-list judges the target's authority
                url = httptools.parse_url(self.url)
                host = (url.host or b"") + (b":%d" % url.port if url.port else b"")
                self.headers[:] = [(k, v) for k, v in self.headers if k != b"host"] + [(b"host", host)]
            super().on_headers_complete()
            self._head_left = None  # the body follows: not counted here (the body timeout's)
            self._disarm()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(head_timeout_s, self._head_timed_out)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self._head_left is None or self.transport.is_closing():
                return
            if self._head_left == max_head_bytes and not self._tail:  # not one byte: nothing to answer
                self.transport.close()
                return
            self._answer(408, "Request Timeout", Code.HEAD_TIMEOUT.at(
                f"the request line and headers did not arrive within {head_timeout_s:g} s"))

        def data_received(self, data: bytes) -> None:
            if self._head_left is not None:
                seen = self._tail + data
                end = seen.find(_END)
                self._head_left -= len(data) if end < 0 else max(0, end + len(_END) - len(self._tail))
                if self._head_left < 0:
                    self._refuse()
                    return
                self._tail = seen[-(len(_END) - 1):]
            super().data_received(data)

        def send_400_response(self, msg: str) -> None:  # httptools could not parse the request
            self._answer(400, "Bad Request", Code.BAD_HTTP.at(f"{msg} (the HTTP parser stopped at it)"))

        def _refuse(self) -> None:
            self._answer(431, "Request Header Fields Too Large", Code.HEADERS_TOO_LARGE.at(
                f"the request head is over {max_head_bytes} bytes"))

        def _answer(self, status: int, reason: str, problem) -> None:
            """The error in the service's shape, then close: the head never reached the app."""
            self._disarm()
            body = json.dumps({"error": problem.to_error()}).encode()
            self.transport.write(f"HTTP/1.1 {status} {reason}\r\n".encode() + b"content-type: application/json\r\n"
                                 b"x-content-type-options: nosniff\r\ncontent-length: " + str(len(body)).encode()
                                 + b"\r\nconnection: close\r\n\r\n" + body)
            self.transport.close()

    return BoundedHead
