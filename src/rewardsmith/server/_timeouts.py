"""Connection limits for uvicorn, which has none of these of its own.

uvicorn closes a keep-alive connection that stays idle between requests
(`timeout_keep_alive`), but otherwise a connection holds its socket for as long as the
client likes:

- a request line and headers sent a byte at a time (slowloris), or nothing at all: here a
  request's headers must arrive within `header_timeout_s` of its first byte (for the first
  request, of the connection's opening), else 408 and the connection is closed;
- headers of any size, all buffered before the app sees them (and before the token is
  checked): here the bytes received while a request's headers are read are counted, and
  past `MAX_HEADER_BYTES` the request gets 431 and the connection is closed;
- a body trickled after the app answered without reading it (401, 404, 405, 413,
  `/health`): the answer carries `Connection: close`, and the rest of the body is read and
  dropped until it ends or until `body_timeout_s` after the headers (whichever comes
  first), then the connection is closed. (Closing at once would reset the connection under
  a client still sending, which can lose the answer it was sent.)

- a request asking to upgrade the connection (`Connection: upgrade` with `Upgrade:`, or
  CONNECT): the parser stops at its headers and would read its body as the next request
  (request smuggling past a proxy) or hand the app an empty one; the server serves no
  upgrades, so such a request gets 400 and the connection is closed.

A body the app reads has its deadline in the app (`create_app(body_timeout_s=...)`), where
a 408 can be answered properly.

This subclasses uvicorn's httptools protocol (the `server` extra installs httptools): the
header timer starts in `connection_made` / `on_message_begin` and stops in
`on_headers_complete`; `data_received` counts header bytes before the parser sees them.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["MAX_HEADER_BYTES", "with_connection_limits"]

MAX_HEADER_BYTES = 64 * 2**10
"""Most bytes a request line and its headers may take (counted before they are parsed; a
request pipelined behind another's body in one read is not counted)."""


def _refusal(status: bytes, text: bytes) -> bytes:
    return (
        b"HTTP/1.1 %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (status, len(text), text)
    )


_TIMEOUT_RESPONSE = _refusal(b"408 Request Timeout", b"request headers not received in time")
_UPGRADE_RESPONSE = _refusal(b"400 Bad Request", b"this server does not upgrade connections")
_TOO_LARGE_RESPONSE = _refusal(
    b"431 Request Header Fields Too Large",
    b"request line and headers over %d bytes" % MAX_HEADER_BYTES,
)


def with_connection_limits(header_timeout_s: float, body_timeout_s: float) -> type[Any]:
    """uvicorn's httptools HTTP protocol with the limits above.

    Pass the result as `uvicorn.Config(http=...)`.
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class LimitedProtocol(HttpToolsProtocol):  # type: ignore[misc]
        """uvicorn's httptools protocol with a deadline on each request's headers, a cap on
        their size, and no socket held by a body nobody reads."""

        _header_timer: asyncio.TimerHandle | None = None
        _header_bytes = 0
        _header_tail = b""
        """The last bytes of the headers read so far: their blank line may span two reads."""
        _message_begun = False
        _in_body = False
        """Between a request's headers and the end of its body."""
        _answered_early = False
        """The current request was answered before its body was received."""
        _drain_timer: asyncio.TimerHandle | None = None
        _body_due = 0.0
        """Loop time by which the current request's body must have arrived."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._start_header_timer()

        def data_received(self, data: bytes) -> None:
            if not self._in_body:  # headers are coming: they end at the first blank line
                seen = self._header_tail + data
                end = seen.find(b"\r\n\r\n")
                self._header_bytes += len(data) if end < 0 else end + 4 - len(self._header_tail)
                self._header_tail = seen[-3:]
                if self._header_bytes > MAX_HEADER_BYTES:
                    self._refuse(_TOO_LARGE_RESPONSE)
                    return
            super().data_received(data)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._message_begun = True
            if self._header_timer is None:
                self._start_header_timer()

        def on_headers_complete(self) -> None:
            self._stop_header_timer()
            if self.parser.should_upgrade():  # the parser will not read on past the headers
                self._refuse(_UPGRADE_RESPONSE)
                return
            self._message_begun = False
            self._in_body, self._header_bytes, self._header_tail = True, 0, b""
            self._body_due = self.loop.time() + body_timeout_s
            super().on_headers_complete()
            if self.cycle is not None:
                self._close_if_answered_early(self.cycle)

        def on_message_complete(self) -> None:
            self._in_body = False
            if not self._answered_early:
                super().on_message_complete()
            elif self.cycle.response_complete:  # the rest of a body nobody read: close
                self._stop_drain_timer()
                self.transport.close()
            else:  # the answer is still being written: uvicorn closes after it
                self.cycle.keep_alive = False

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._answered_early and not self.transport.is_closing():
                left = self._body_due - self.loop.time()
                self._stop_drain_timer()
                self._drain_timer = self.loop.call_later(max(0.0, left), self.transport.close)

        def _unsupported_upgrade_warning(self) -> None:
            """Silent: the request was refused with its reason (uvicorn would log a missing
            websocket library, which is not why)."""

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_timer()
            self._stop_drain_timer()
            super().connection_lost(exc)

        def _close_if_answered_early(self, cycle: Any) -> None:
            """Make an answer sent before its request's body was received say
            `Connection: close`, and keep the connection only to drain that body.

            The wrapper holds its request weakly: stored on it, a strong reference would make
            every request a reference cycle, left for the garbage collector's pauses."""
            request = weakref.ref(cycle)
            send: Callable[[Any, MutableMapping[str, Any]], Awaitable[None]] = type(cycle).send

            async def send_closing(message: MutableMapping[str, Any]) -> None:
                cycle = request()  # alive: the app sends while uvicorn runs it
                if not (message["type"] == "http.response.start" and cycle.more_body):
                    await send(cycle, message)
                    return
                headers = list(message.get("headers", []))
                if not any(name.lower() == b"connection" for name, _ in headers):
                    message = {**message, "headers": [*headers, (b"connection", b"close")]}
                await send(cycle, message)
                if not self.transport.is_closing():
                    # uvicorn would close as soon as the answer is written, resetting a
                    # client still sending; the connection closes once the body is drained
                    self._answered_early = True
                    cycle.keep_alive = True

            cycle.send = send_closing

        def _refuse(self, response: bytes) -> None:
            self._stop_header_timer()
            if not self.transport.is_closing():
                self.transport.write(response)
                self.transport.close()

        def _start_header_timer(self) -> None:
            self._header_timer = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _stop_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _stop_drain_timer(self) -> None:
            if self._drain_timer is not None:
                self._drain_timer.cancel()
                self._drain_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            if self._message_begun:  # a request was on its way: tell the client why
                self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()

    return LimitedProtocol
