"""uvicorn's httptools protocol with a bound on the request head.

httptools hands uvicorn a header only once it is complete, holding all of it meanwhile: a
256 MB header line costs 256 MB and minutes before the application sees the request. This
protocol counts a request's head as it arrives (the bytes up to the blank line that ends it)
and answers 431 in the service's error shape once it is over LEGALSAT_MAX_HEADER_BYTES,
closing the connection. Everything else is uvicorn's.
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from legalsat.diagnostics import Code

_END = b"\r\n\r\n"


def bounded_protocol(max_head_bytes: int) -> type[HttpToolsProtocol]:
    """An HttpToolsProtocol class refusing request heads over `max_head_bytes`."""

    class BoundedHead(HttpToolsProtocol):
        # counting while a head is being received: from a request's first byte (httptools'
        # on_message_begin; the connection's start) to the blank line that ends its head
        def connection_made(self, transport) -> None:
            self._head_left, self._tail = max_head_bytes, b""
            super().connection_made(transport)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._head_left is None:  # a request that began inside data already counted
                self._head_left, self._tail = max_head_bytes, b""

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            self._head_left = None  # the body follows: not counted here

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

        def _refuse(self) -> None:
            body = json.dumps({"error": Code.HEADERS_TOO_LARGE.at(
                f"the request head is over {max_head_bytes} bytes").to_error()}).encode()
            self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
                                 b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
            self.transport.close()

    return BoundedHead
