"""A header read timeout for uvicorn, which has none of its own.

uvicorn closes a keep-alive connection that stays idle between requests
(`timeout_keep_alive`), but a connection that sends its request line and headers a byte at a
time (slowloris), or nothing at all, stays open for as long as the client likes. Here each
connection must deliver a request's headers within `header_timeout_s` of the request's first
byte (for the first request, of the connection's opening); otherwise it gets 408 and is
closed. Bodies have their own deadline in the app (`create_app(body_timeout_s=...)`), where
the request is known and a 408 can be answered properly.

This subclasses uvicorn's httptools protocol (the `server` extra installs httptools): the
timer starts in `connection_made` / `on_message_begin` and stops in `on_headers_complete`.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["with_header_timeout"]

_TIMEOUT_BODY = b"request headers not received in time"
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


def with_header_timeout(header_timeout_s: float) -> type[Any]:
    """uvicorn's httptools HTTP protocol, closing connections whose headers come too slowly.

    Pass the result as `uvicorn.Config(http=...)`.
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HeaderTimeoutProtocol(HttpToolsProtocol):  # type: ignore[misc]
        """uvicorn's httptools protocol with a deadline on each request's headers."""

        _header_timer: asyncio.TimerHandle | None = None
        _message_begun = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._start_header_timer()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._message_begun = True
            if self._header_timer is None:
                self._start_header_timer()

        def on_headers_complete(self) -> None:
            self._stop_header_timer()
            self._message_begun = False
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_timer()
            super().connection_lost(exc)

        def _start_header_timer(self) -> None:
            self._header_timer = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _stop_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            if self._message_begun:  # a request was on its way: tell the client why
                self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()

    return HeaderTimeoutProtocol
