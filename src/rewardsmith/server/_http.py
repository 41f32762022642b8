"""HTTP/1.1 for the reward server: connections parsed by httptools (llhttp, the parser of
Node.js and uvicorn), with the limits a server that many trainer processes call needs.

Why not an ASGI server: with one sample per request, the layers a request passes through
cost more CPU than scoring it, and on a node the server shares its cores with the reward
workers (BENCHMARKS.md, "Reward server under load"). Here a request is parsed by llhttp,
handed to the app as bytes, and answered with one write, made with the other answers of the
same pass of the event loop (`_Server.write_soon`).

What a connection may do:

- a request's line and headers must arrive within `header_timeout_s` of its first byte
  (the first request's: of the connection's opening; one begun while the request before it
  is answered: of its turn), else 408 (if a request had begun)
  and the connection is closed; past `MAX_HEADER_BYTES` (counted as read, and as parsed:
  a chunked body's trailers count with the headers), 431 and closed; a chunked body's
  part that never ends (a trailer, a chunk line: bytes in which the parser finds neither
  data nor a chunk) past that, 400 and closed; more than `MAX_HEADERS` header fields
  (trailers included), 431 and closed. Trailers are dropped, never headers;
- its body must arrive within `body_timeout_s` of its headers (a pipelined request's: of
  its turn), else 408 and closed (not while what was read before it is still being parsed);
  a body over `max_body_bytes` gets 413;
- between requests it may stay idle for `keep_alive_s`, then it is closed;
- an answer that does not need the body (a refusal, 413 included, `/health`) waits for the
  rest of what was read: if the body ends in it, the connection is kept; else the answer
  goes before the body and says `Connection: close`, and the rest of the body is read and
  dropped until it ends or until the body's deadline, then the connection is closed
  (closing at once would reset a client still sending, which can lose the answer it was
  sent); where a request is refused twice, the first refusal is the one sent;
- a request asking to upgrade the connection (`Connection: upgrade` with `Upgrade:`, or
  CONNECT) gets 400 and the connection is closed: the parser stops at its headers, and its
  body must never be read as a request;
- a request the parser refuses (framing, bytes no request has) gets 400 and the connection
  is closed;
- pipelined requests are answered in order, one at a time: reading pauses while a second
  one waits in line, and what was read past it is parsed only once its turn comes (the
  parser calls back into Python for every request and header line: a single read can hold
  thousands of small requests, which the loop would otherwise parse all at once; after a
  slice in which the parser called back more than `_EVENTS_PER_PASS` times, or in which a
  request ended, the rest waits for the loop's next pass);
- a client must read its answers: while the write buffer is full (past what the kernel's
  socket buffers took) no more of its requests are taken, reading pauses and the timers
  above stop (they go on when it reads again), and one that reads none of what is left to
  send for `body_timeout_s` is cut off;
- a client that closes its connection, or only its side of it, cancels the request it
  waits for (as uvicorn and nginx: a killed process's kernel sends the same FIN), once the
  close is read: not while reading pauses;
- an answer to HEAD has no body (no route serves HEAD: it is refused), nor has a refusal of
  one, but for a request line the parser refuses within its URL (the method it read is not
  told to Python until the URL ends);
- a connection the server closes after an answer (a refusal, an answer that says
  `Connection: close`, the end of an early answer's drain) is closed as nginx does: the
  server ends its side once its answers are sent, and reads on, dropping what comes (also
  while the client leaves answers unread), until the client closes its side, or for
  `_LINGER_S` once its answers are handed to the kernel (looked at every `_LINGER_LOOK_S`).
  A close with bytes of the client unread would make the kernel reset the connection, and a
  reset can throw away answers the client has not read yet. One closed for being idle, or
  for a request begun and never answered, is closed at once (at the server's stop it
  lingers if answers to it are still to be handed to the kernel, or reading was paused).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Protocol
from urllib.parse import unquote

import httptools

__all__ = [
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "Answer",
    "Handler",
    "Limits",
    "Refusal",
    "Request",
    "Respond",
    "new_loop",
    "serve_http",
]

MAX_HEADER_BYTES = 64 * 2**10
"""Most bytes a request line and its headers may take (counted before they are parsed; a
request pipelined behind another's body in one read is not counted)."""
MAX_HEADERS = 100
"""Most header fields a request may have, trailers included (Apache's default): the
parser calls back into Python for each one, and 64 KiB hold 16,000 empty ones."""
_FEED_BYTES = 4 * 2**10
"""Most bytes of headers or chunks given to the parser at once (a body of known length is
given whole), so that parsing stops soon after a second request is in line."""
_EVENTS_PER_PASS = 32
"""Header lines, body data and chunks the parser may call back for in the slices of one
pass of the loop (`_Connection._feed_held`)."""
JSON = b"application/json"

Headers = list[tuple[bytes, bytes]]
"""A request's headers in order, names in lower case."""

_log = logging.getLogger("rewardsmith.server")
_access = logging.getLogger("rewardsmith.server.access")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one connection may take; see the module docstring."""

    header_timeout_s: float
    body_timeout_s: float
    keep_alive_s: float
    max_body_bytes: int


@dataclass(slots=True)
class Request:
    """A request whose headers are complete."""

    method: bytes
    path: str
    """Percent-decoded, without the query."""
    headers: Headers
    started: float
    """`time.perf_counter()` when its headers were complete."""

    def header(self, name: bytes) -> str:
        """The first value of the header `name` (lower case), or "" when absent."""
        for key, value in self.headers:
            if key == name:
                return value.decode("latin-1")
        return ""


@dataclass(frozen=True, slots=True)
class Answer:
    """A response: `reject` is the reason counted in the metrics for a refusal; `close`
    closes the connection after it."""

    status: int
    body: bytes
    content_type: bytes = JSON
    headers: tuple[tuple[bytes, bytes], ...] = ()
    reject: str | None = None
    close: bool = False


class Refusal(Exception):
    """An error answer, `{"detail": detail}` (see `Answer` for `reject` and `close`)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        reject: str | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
        close: bool = False,
    ) -> None:
        super().__init__(detail)
        self.status, self.detail, self.reject = status, detail, reject
        self.headers, self.close = headers, close

    def answer(self) -> Answer:
        body = json.dumps({"detail": self.detail}, separators=(",", ":")).encode()
        return Answer(self.status, body, JSON, self.headers, self.reject, self.close)


Respond = Callable[[bytes], Awaitable[Answer]]
"""Answers a request from its whole body (run without a Task: see `_Answering`)."""


class Handler(Protocol):
    """The app behind the server."""

    async def start(self) -> None:
        """Called before the server listens (on its loop: blocking work goes to a thread)."""

    def stop_accepting(self) -> None:
        """The server is stopping: requests still coming should be refused."""

    async def close(self) -> None:
        """Called once the last connection is gone (as `start`)."""

    def open(self, request: Request) -> Answer | Respond:
        """What to do with a request whose headers are complete: answer it now (its body
        unread), or read its body and call the `Respond`. May raise `Refusal`."""

    def answered(self, request: Request, answer: Answer | None) -> None:
        """`answer` was sent (None: the client left before it)."""


_INTERNAL = Answer(500, b'{"detail":"Internal Server Error"}')


def _refusal(status: int, text: bytes) -> bytes:
    """A plain-text refusal that closes the connection, for what is no request to the app."""
    phrase = HTTPStatus(status).phrase.encode()
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (status, phrase, len(text), text)
    )


_HEADERS_TOO_SLOW = _refusal(408, b"request headers not received in time")
_UPGRADE = _refusal(400, b"this server does not upgrade connections")
_MALFORMED = _refusal(400, b"malformed HTTP request")
_HEADERS_TOO_LARGE = _refusal(431, b"request line and headers over %d bytes" % MAX_HEADER_BYTES)
_TOO_MANY_HEADERS = _refusal(431, b"more than %d header fields" % MAX_HEADERS)
_UNPARSED_TOO_LARGE = _refusal(
    400, b"over %d bytes of a chunked body with neither data nor a chunk" % MAX_HEADER_BYTES
)
_LINGER_S = 5.0
"""How long a connection the server closed after an answer reads on, dropping what comes,
for its client to close its side, once the answers are handed to the kernel
(`_Connection._linger`)."""
_LINGER_LOOK_S = 0.25
"""How often a lingering connection looks whether its answers are handed to the kernel."""
_TIMER_SLACK_S = 0.002
"""How early a timer may fire (the loop's timers count in milliseconds)."""
_STATUS_LINES = {s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in HTTPStatus}


class _Exchange:
    """One request on a connection, from its headers to its answer."""

    __slots__ = (
        "answer",
        "chunks",
        "complete",
        "continues",
        "due",
        "keep_alive",
        "request",
        "respond",
        "sent",
        "size",
        "taken",
        "waited",
    )

    def __init__(self, request: Request, keep_alive: bool, continues: bool) -> None:
        self.request = request
        self.keep_alive = keep_alive
        self.continues = continues
        """It asks for `100 Continue` before its body (HTTP/1.1 `Expect: 100-continue`)."""
        self.answer: Answer | None = None
        """The app's answer, given without the body (sent once the body is in)."""
        self.respond: Respond | None = None
        """The app's `Respond`, when it wants the body."""
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False
        """Its whole body was received."""
        self.due = 0.0
        """Loop time by which its body must have arrived (set when it is taken)."""
        self.taken = False
        """The app has seen it (it was first in line)."""
        self.waited = False
        """A read ended before its body was in: its early answer or deadline is set."""
        self.sent = False
        """Its answer was written: what still comes of its body is dropped."""


class _Answering:
    """Runs the coroutine that answers one request without a Task: `start` it on the loop's
    next pass (the requests read in one pass go to the engine together), and it resumes from
    the done callback of the future it awaits. With one sample per request, a Task cost the
    server about 5% of its CPU (BENCHMARKS.md, "Reward server under load").

    `cancel` cancels that future, so the coroutine gets `CancelledError` where it waits, once,
    as in a Task; cancelled before it starts, it never runs. Unlike a Task, there is no
    current task while it runs: a `Respond` must not use `asyncio.timeout` or
    `asyncio.current_task()` (the app's routes use neither), and may await only asyncio
    futures (anything else gets `RuntimeError` where it awaited it)."""

    __slots__ = ("_cancelled", "_coroutine", "_started", "_waiting")

    def __init__(self, coroutine: Coroutine[Any, Any, None]) -> None:
        self._coroutine = coroutine
        self._waiting: asyncio.Future[Any] | None = None
        self._cancelled = False
        self._started = False

    def start(self) -> None:
        self._started = True
        self._step(None)

    def cancel(self) -> bool:
        """Whether the coroutine hears of it (else it never started, and never runs)."""
        self._cancelled = True
        if self._waiting is not None:
            self._waiting.cancel()
        return self._started

    def _step(self, done: asyncio.Future[Any] | None) -> None:
        self._waiting = None
        error: BaseException | None = None
        if self._cancelled:  # delivered once: a coroutine that catches it may go on
            self._cancelled = False
            if done is None or not done.cancelled():  # else awaiting it raises it
                error = asyncio.CancelledError()
        self._resume(error)

    def _resume(self, error: BaseException | None) -> None:
        coroutine = self._coroutine
        try:
            awaited = coroutine.send(None) if error is None else coroutine.throw(error)
        except (StopIteration, asyncio.CancelledError):
            return
        if asyncio.isfuture(awaited):  # the usual: no look-up of the loop (3.11: a getpid)
            self._waiting = awaited
            awaited.add_done_callback(self._step)
        elif awaited is None:  # a bare `yield` (`asyncio.sleep(0)`): on the loop's next pass
            asyncio.get_running_loop().call_soon(self._step, None)
        else:
            error = RuntimeError(f"a Respond awaited {awaited!r}")
            asyncio.get_running_loop().call_soon(self._resume, error)


class _Server:
    """What the connections of one server share."""

    def __init__(self, handler: Handler, limits: Limits, access_log: bool) -> None:
        self.handler = handler
        self.limits = limits
        self.access_log = access_log
        self.connections: set[_Connection] = set()
        self._loop = asyncio.get_running_loop()
        self._outbox: list[_Connection] = []
        """Connections with an answer to write once this pass of the loop is over."""
        self.stopping = False
        self.emptied: asyncio.Event | None = None
        """Set once the last connection is gone, while stopping."""

    def write_soon(self, connection: _Connection) -> None:
        """Have `connection` write what it holds with the other answers of this pass of the
        loop. On loopback a write wakes its reader before it returns, and that cost the
        server as much CPU as parsing the request: written back to back, the answers of one
        pass can wake a client process that reads several of them once (BENCHMARKS.md,
        "Reward server under load")."""
        if not self._outbox:
            self._loop.call_soon(self._flush)
        self._outbox.append(connection)

    def _flush(self) -> None:
        outbox, self._outbox = self._outbox, []
        for connection in outbox:
            connection.flush()

    def forget(self, connection: _Connection) -> None:
        self.connections.discard(connection)
        if not self.connections and self.emptied is not None:
            self.emptied.set()


class _Connection(asyncio.Protocol):
    """One client connection: parses requests, hands them to the app in order, writes the
    answers and enforces the limits."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self._handler = server.handler
        self._limits = server.limits
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.Handle | None = None
        """The connection's one timer, armed for `_armed` (`_due` or sooner)."""
        self._armed = 0.0
        self._due = 0.0
        self._timer_callback: Callable[[], None] | None = None
        """What runs at `_due` (None: nothing is timed)."""
        # the request being parsed
        self._url = bytearray()
        self._headers: Headers = []
        self._parsing: _Exchange | None = None
        """The request whose body is being parsed."""
        self._begun = False
        """A request's first byte came and its headers are not complete."""
        self._header_bytes = 0
        """Bytes read while headers were coming (counted before they are parsed)."""
        self._message_header_bytes = 0
        """The current request's line, headers and trailers as parsed."""
        self._fields = 0
        """The current request's header fields and trailers so far."""
        self._held: memoryview | None = None
        """Bytes read and not yet given to the parser (`_feed_held`); reading pauses."""
        self._held_since = 0.0
        """Loop time of the read that `_held` began with (a body's deadline counts it)."""
        self._feeding = False
        """`_feed_held` is giving slices (what they answer may call it back)."""
        self._resuming: asyncio.Handle | None = None
        """Gives the parser the next slice of `_held` on the loop's next pass."""
        self._events = 0
        """Header lines, body data and chunks the parser gave in the current read."""
        self._ended = 0
        """Requests whose end the parser found in the current read."""
        self._unparsed = 0
        """Bytes of a body read since the parser last gave data, a chunk or a trailer."""
        self._header_tail = b""
        """The last bytes of the headers read so far: their blank line may span two reads."""
        # requests with complete headers, in order; the first is the one being answered
        self._queue: deque[_Exchange] = deque()
        self._task: _Answering | None = None
        self._advancing = False
        """`_next` is taking the requests in line."""
        self._stalled: asyncio.TimerHandle | None = None
        """Cuts off a client that leaves its answers unread."""
        self._unsent: list[bytes] = []
        """Bytes to write once this pass of the loop is over (`_Server.write_soon`)."""
        self._written = 0
        """Bytes handed to the transport so far."""
        self._sent_mark = 0
        """Bytes the transport had sent when `_stalled` was set."""
        self._closed = False
        self._broken = b""
        """What the parser refused: sent (and the connection closed) once the requests
        before it are answered."""
        self._reading = True
        self._writable = True
        self._stopped: tuple[float, Callable[[], None]] | None = None
        """The timer to start when the client reads its answers again (`_set_timer`)."""
        self._paused_at = 0.0
        """Loop time at which the client last stopped reading its answers (`pause_writing`)."""
        self._lingering: asyncio.TimerHandle | None = None
        """Ends a closed connection's reading on (`_linger`)."""

    # -- asyncio ----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._server.connections.add(self)
        if self._server.stopping:
            self._close()
            return
        self._set_timer(self._limits.header_timeout_s, self._headers_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._gone()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        if self._lingering is not None:
            self._lingering.cancel()
            self._lingering = None
        # the parser refers back to this protocol (the task, let go by `_gone`, too): no
        # cycle is left for the garbage collector's pauses
        self._parser = None  # type: ignore[assignment]
        self._unsent = []
        self._held = None
        if self._resuming is not None:
            self._resuming.cancel()
            self._resuming = None
        self._server.forget(self)

    def eof_received(self) -> None:
        """The client closed its side: it counts as gone (its request is cancelled now, and
        the transport closes), but an answer already made is written first, while the client
        reads it (`_stall`; the transport waits for it before it tells `connection_lost`)."""
        self.flush()
        self._gone()
        if self._transport is not None and self._transport.get_write_buffer_size():
            self._stall()

    def _gone(self) -> None:
        """The client left: no more is read or written, and the app drops the request's work."""
        self._closed = True
        self._cancel_timer()
        told = self._task is not None and self._task.cancel()  # it tells the app (`_respond`)
        self._task = None
        head = self._queue[0] if self._queue else None
        if head is not None and head.taken and not head.sent and not told:
            self._handler.answered(head.request, None)
        self._queue.clear()

    def data_received(self, data: bytes) -> None:
        if self._closed or self._broken:
            return
        if self._held is None and len(data) <= _FEED_BYTES:
            self._feed(data)
            return
        if self._held is None:
            self._held_since = self._loop.time()
        self._held = memoryview(bytes(self._held) + data if self._held else data)
        if self._resuming is None:
            self._feed_held()

    def _feed_held(self) -> None:
        """Give the parser what was read past `_FEED_BYTES` a slice at a time, until a
        second request is in line (the rest waits for its turn, `_next`). The parser calls
        back into Python for every request, header line and chunk, and one read can hold
        thousands of them: after a slice in which a request ended, or which the parser
        called back for more than `_EVENTS_PER_PASS` times, the rest waits for the loop's
        next pass, so that other connections go between slices."""
        self._resuming = None
        if self._feeding:  # called back from the loop below, which goes on from there
            return
        self._feeding = True
        busy = False
        try:
            while self._held is not None and len(self._queue) <= 1:
                if self._closed or self._broken:
                    self._held = None
                    break
                if busy:
                    if self._resuming is None:
                        self._resuming = self._loop.call_soon(self._feed_held)
                    break
                size = self._slice()
                data, rest = self._held[:size], self._held[size:]
                self._held = rest if rest else None
                self._feed(data)
                busy = self._ended > 0 or self._events > _EVENTS_PER_PASS
        finally:
            self._feeding = False
        self._pace()

    def _slice(self) -> int:
        """How much the parser gets next: the rest of a body of known length whole (one
        call back), else `_FEED_BYTES`."""
        exchange = self._parsing
        if exchange is not None:
            declared = exchange.request.header(b"content-length")
            if declared.isdigit():  # the parser read it: at most 20 ASCII digits
                return max(_FEED_BYTES, int(declared) - exchange.size)
        return _FEED_BYTES

    def _feed(self, data: bytes | memoryview) -> None:
        parsing = self._parsing
        if parsing is None:  # headers are coming: they end at the first blank line
            seen = self._header_tail + data
            end = seen.find(b"\r\n\r\n")
            self._header_bytes += len(data) if end < 0 else end + 4 - len(self._header_tail)
            self._header_tail = seen[-3:]
            if self._header_bytes > MAX_HEADER_BYTES:
                self._refuse(_HEADERS_TOO_LARGE)
                return
        self._events = self._ended = 0
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # refused in on_headers_complete
            self._refuse(_UPGRADE)
            return
        except httptools.HttpParserError:
            self._refuse(_MALFORMED)
            return
        if parsing is not None and self._parsing is parsing:
            # a trailer, or a chunk line, that never ends: the parser would buffer it whole
            self._unparsed = 0 if self._events else self._unparsed + len(data)
            if self._unparsed > MAX_HEADER_BYTES:
                self._refuse(_UNPARSED_TOO_LARGE)
                return
        self._settle()

    def pause_writing(self) -> None:
        """The client does not read its answers as fast as they come (the kernel's buffers
        are full, and the transport holds its high-water mark): take no more requests, and
        cut it off if it reads nothing more within `body_timeout_s`."""
        self._writable = False
        self._paused_at = self._loop.time()
        self._stall()
        if self._timer_callback is not None:  # stopped until the client reads again
            left = max(0.0, self._due - self._loop.time())
            self._set_timer(left, self._timer_callback)
        self._pace()

    def resume_writing(self) -> None:
        if self._queue and self._queue[0].taken:  # its body's deadline stopped meanwhile too
            self._queue[0].due += self._loop.time() - self._paused_at
        self._writable = True
        stopped, self._stopped = self._stopped, None
        if stopped is not None:
            self._set_timer(*stopped)
        if self._queue and not self._queue[0].taken:  # it waited for the client to read
            self._next()
        else:
            self._pace()

    # -- httptools callbacks --------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._broken:
            return
        self._begun = True
        self._headers = []
        self._message_header_bytes = self._unparsed = self._fields = 0
        if not self._queue and not self._timing(self._headers_too_slow):
            self._set_timer(self._limits.header_timeout_s, self._headers_too_slow)

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._count_header(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._events += 1
        self._fields += 1
        if self._fields > MAX_HEADERS and not self._broken:
            self._refuse(_TOO_MANY_HEADERS)
        self._count_header(len(name) + len(value) + 4)
        if self._parsing is None:  # else a trailer, after a chunked body: never a header
            self._headers.append((name.lower(), value))

    def on_chunk_header(self) -> None:
        self._events += 1

    def _count_header(self, size: int) -> None:
        self._message_header_bytes += size
        if self._message_header_bytes > MAX_HEADER_BYTES and not self._broken:
            self._refuse(_HEADERS_TOO_LARGE)

    def on_headers_complete(self) -> None:
        if self._closed or self._broken:
            return
        self._begun = False
        self._header_bytes, self._header_tail = 0, b""
        if self._parser.should_upgrade():  # the parser will not read on past the headers
            self._refuse(_UPGRADE)
            return
        try:
            path = httptools.parse_url(bytes(self._url)).path.decode("latin-1")
        except httptools.HttpParserInvalidURLError:
            self._refuse(_MALFORMED)
            return
        request = Request(
            self._parser.get_method(),
            unquote(path, encoding="latin-1") if "%" in path else path,
            self._headers,
            time.perf_counter(),
        )
        continues = request.header(b"expect").lower() == "100-continue"
        http11 = self._parser.get_http_version() == "1.1"
        exchange = _Exchange(request, self._parser.should_keep_alive(), continues and http11)
        self._parsing = exchange
        self._queue.append(exchange)
        if len(self._queue) == 1 and self._writable:  # else when the client reads again
            self._cancel_timer()
            self._take(exchange)
        elif self._timing(self._headers_too_slow):  # its headers are in: it waits its turn
            self._cancel_timer()

    def on_body(self, body: bytes) -> None:
        exchange = self._parsing
        if exchange is None or self._closed:
            return
        self._events += 1
        exchange.size += len(body)
        if exchange.sent or (exchange.taken and exchange.respond is None):
            return  # answered, or to be answered without it: dropped
        if exchange.size <= self._limits.max_body_bytes:
            exchange.chunks.append(body)
        elif exchange.taken:
            self._too_large(exchange)
        else:  # a request waiting behind another: refused when its turn comes
            exchange.chunks = []

    def on_message_complete(self) -> None:
        self._ended += 1
        # the next request's URL starts empty: no method of it is read yet (`_as_head_has_it`)
        self._url.clear()
        exchange, self._parsing = self._parsing, None
        if exchange is None or self._closed:
            return
        exchange.complete = True
        if not self._queue or exchange is not self._queue[0]:
            return
        if exchange.sent:  # the rest of a body nobody reads: done
            self._close_answered()
        else:
            self._proceed(exchange)

    # -- answering --------------------------------------------------------------------------

    def _take(self, exchange: _Exchange) -> None:
        """The app's turn for the first request in line: an answer without its body (sent
        once the body is in, or after this read if it is still coming), or a `Respond`."""
        exchange.taken = True
        exchange.due = self._loop.time() + self._limits.body_timeout_s
        try:
            outcome = self._handler.open(exchange.request)
        except Refusal as refusal:
            outcome = refusal.answer()
        except Exception:
            _log.exception("%s %s failed", exchange.request.method.decode(), exchange.request.path)
            outcome = _INTERNAL
        if isinstance(outcome, Answer):
            exchange.answer = outcome
        else:
            exchange.respond = outcome
            declared = exchange.request.header(b"content-length")
            if declared.isdigit() and int(declared) > self._limits.max_body_bytes:
                self._too_large(exchange, declared)
                return
            if exchange.size > self._limits.max_body_bytes:
                self._too_large(exchange)
                return
        if exchange.complete:
            self._proceed(exchange)

    def _proceed(self, exchange: _Exchange) -> None:
        """The first request in line has its body: answer it."""
        if exchange.answer is not None:
            self._send(exchange, exchange.answer)
        elif exchange.respond is not None:
            self._start(exchange)

    def _settle(self) -> None:
        """After a read: the first request in line, its body still coming, is answered now
        if its answer does not need the body, else its body's deadline runs (not while
        bytes read wait to be parsed: the rest of the body may be in them)."""
        if self._queue and not self._closed and self._held is None:
            exchange = self._queue[0]
            if exchange.taken and not (exchange.complete or exchange.sent or exchange.waited):
                exchange.waited = True
                if exchange.answer is not None:
                    self._send(exchange, exchange.answer)
                elif exchange.respond is not None:
                    if exchange.continues:
                        self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    self._set_timer(self._time_left(exchange), self._body_too_slow)
        self._pace()

    def _start(self, exchange: _Exchange) -> None:
        self._cancel_timer()
        body = b"".join(exchange.chunks)
        exchange.chunks = []
        assert exchange.respond is not None
        self._task = _Answering(self._respond(exchange, exchange.respond, body))
        self._loop.call_soon(self._task.start)

    async def _respond(self, exchange: _Exchange, respond: Respond, body: bytes) -> None:
        try:
            answer = await respond(body)
        except Refusal as refusal:
            answer = refusal.answer()
        except asyncio.CancelledError:
            if self._closed:  # the client left: nobody reads an answer
                self._handler.answered(exchange.request, None)
                return
            raise
        except Exception:
            _log.exception("%s %s failed", exchange.request.method.decode(), exchange.request.path)
            answer = _INTERNAL
        self._task = None
        if self._closed:  # the client left as it was answered (`_gone` left it to us)
            self._handler.answered(exchange.request, None)
        else:
            self._send(exchange, answer)

    def _send(self, exchange: _Exchange, answer: Answer) -> None:
        """Write the answer to the first request in line, then go on to the next."""
        early = not exchange.complete
        close = answer.close or early or not exchange.keep_alive or self._server.stopping
        head = [
            _STATUS_LINES.get(answer.status) or b"HTTP/1.1 %d \r\n" % answer.status,
            b"content-type: %s\r\ncontent-length: %d\r\n" % (answer.content_type, len(answer.body)),
        ]
        for name, value in answer.headers:
            head.append(b"%s: %s\r\n" % (name, value))
        if close and not any(name == b"connection" for name, _ in answer.headers):
            head.append(b"connection: close\r\n")
        head.append(b"\r\n")
        request = exchange.request
        self._write(b"".join(head) + (b"" if request.method == b"HEAD" else answer.body))
        exchange.sent = True
        self._handler.answered(request, answer)
        if self._server.access_log:  # the path as a literal: it may hold line breaks
            _access.info('"%s %r" %d', request.method.decode(), request.path, answer.status)
        if not close:
            self._queue.popleft()
            self._next()
        elif not early or answer.close:
            self._close_answered()
        else:  # drop the rest of the body until it ends or its deadline, then close
            exchange.chunks = []
            self._set_timer(self._time_left(exchange), self._close_answered)

    def _next(self) -> None:
        """Take the requests in line one after another while the client reads its answers,
        until one waits for its body or its answer, or none is left; then wait for more.

        A loop, not a call per request: thousands may come pipelined in one read."""
        if self._advancing:  # called back from the loop below, which goes on from there
            return
        self._advancing = True
        try:
            while self._queue and self._writable and not self._closed:
                exchange = self._queue[0]
                if exchange.taken:
                    break
                self._take(exchange)
        finally:
            self._advancing = False
        if self._held is not None and self._resuming is None and not self._feeding:
            # what was read past the request just answered: on the loop's next pass
            self._resuming = self._loop.call_soon(self._feed_held)
        if self._closed:
            return
        if self._queue:
            self._settle()
        elif self._broken:
            self._refuse(self._broken)
        elif self._begun:
            self._set_timer(self._limits.header_timeout_s, self._headers_too_slow)
            self._pace()
        else:
            self._set_timer(self._limits.keep_alive_s, self._close)
            self._pace()

    def _time_left(self, exchange: _Exchange) -> float:
        """Seconds left until the body's deadline of `exchange`, the request taken: it does
        not run while the client does not read its answers (`resume_writing` moves it)."""
        now = self._loop.time()
        stopped = 0.0 if self._writable else now - self._paused_at
        return max(0.0, exchange.due + stopped - now)

    def _pace(self) -> None:
        """Read on unless a second request waits in line or the client does not read its
        answers: what comes meanwhile would only pile up. (While reading is paused, a
        client that goes away is noticed only when a write to it fails, or a half-close once
        reading resumes.)"""
        if self._closed or self._transport is None:
            return
        want = self._writable and len(self._queue) <= 1 and not self._broken and not self._held
        if want != self._reading:
            self._reading = want
            if want:
                self._transport.resume_reading()
            else:
                self._transport.pause_reading()

    def _too_large(self, exchange: _Exchange, declared: str = "") -> None:
        """413, as any answer that does not need the body: once the body is in, if it ends
        in what was read (the connection is kept), else once all that was read is parsed
        (`_settle`: before the body, and closed). Whether the request was first in line or
        waited, and how the read was cut into slices (`_feed_held`), change nothing."""
        limit = self._limits.max_body_bytes
        if declared:
            detail = f"body: {declared} bytes; the limit is {limit}"
        else:
            detail = f"body: over the limit of {limit} bytes"
        answer = Refusal(413, detail, reject="too_large").answer()
        if not exchange.complete:
            exchange.answer, exchange.respond = answer, None
            exchange.waited = False  # `_settle` sends it, if the body is still out
            return
        self._send(exchange, answer)

    def _body_too_slow(self) -> None:
        """The body's deadline: 408, unless what was read by now (in time, then) is still
        being parsed, and may hold the rest of the body: then once it is parsed."""
        if self._closed or not self._queue:
            return
        if self._held is not None:
            self._queue[0].due = self._loop.time()
            self._body_still_held()
            return
        self._refuse_slow_body()

    def _body_still_held(self) -> None:
        """Look again next pass while what was read by the body's deadline is parsed (a read
        that began later does not count: a client could send on and on)."""
        if self._closed or not self._queue:
            return
        if self._held is not None and self._held_since <= self._queue[0].due:
            self._set_timer(0.0, self._body_still_held)
        else:
            self._refuse_slow_body()

    def _refuse_slow_body(self) -> None:
        detail = f"body: not received within {self._limits.body_timeout_s:g} s"
        refusal = Refusal(408, detail, reject="too_slow", close=True)
        self._send(self._queue[0], refusal.answer())

    def _headers_too_slow(self) -> None:
        if self._closed:
            return
        if self._begun:  # a request was on its way: tell the client why
            self._write(self._as_head_has_it(_HEADERS_TOO_SLOW))
            self._close_answered()
        else:
            self._close()

    def shutdown(self) -> None:
        """The server stops: close now if no request is being answered, else after it;
        lingering (`_linger`) if answers are still to be handed to the kernel, or what the
        client sent may be unread (reading paused, bytes held)."""
        if not self._queue:
            unread = not self._reading or self._held is not None
            self._close(linger=unread or bool(self._unsent) or self.sending)

    @property
    def answering(self) -> bool:
        """A request is being answered (not a connection closed and lingering, nor one whose
        early answer is sent while the rest of its body is drained)."""
        return bool(self._queue) and not self._closed and not self._queue[0].sent

    @property
    def sending(self) -> bool:
        """Answers are still to be handed to the kernel (the client does not read them)."""
        return self._transport is not None and self._transport.get_write_buffer_size() > 0

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def _refuse(self, response: bytes) -> None:
        """Answer what is no request with `response` and close: after the answers owed to
        the whole requests before it, so that each answer still meets its request. The
        first refusal is the one sent: one the first request in line has, waiting for its
        body (413, 401...), or the first that came to this call."""
        self._broken = self._broken or self._as_head_has_it(response)
        head = self._queue[0] if self._queue else None
        if head is not None and head.taken and not (head.sent or head.complete):
            refused = head.answer  # the app opened it, its body still coming
            if refused is not None and refused.status >= 400:
                self._send(head, refused)
            else:  # this refusal is its answer: the app hears of it as of any other
                status = int(self._broken[9:12])
                reason = "too_large" if status == 431 else "malformed"
                self._handler.answered(head.request, Answer(status, b"", reject=reason))
        self._cancel_timer()
        answered = False
        while self._queue and not self._queue[-1].complete:  # never to be whole
            answered = self._queue.pop().sent  # the first, answered before its body
        if self._queue:
            self._pace()
        else:
            if not answered:  # else it had its answer: a second would meet no request
                self._write(self._broken)
            self._close_answered()

    def _as_head_has_it(self, response: bytes) -> bytes:
        """One of the connection's own refusals (`_refusal`) of the request being parsed:
        without its body if that is a HEAD, as any answer to HEAD. (Its method is read once
        its URL has begun: the parser keeps the last method it read until another is.)"""
        if self._url and self._parser.get_method() == b"HEAD":
            return response[: response.index(b"\r\n\r\n") + 4]
        return response

    def _write(self, data: bytes) -> None:
        """Write `data` once this pass of the loop is over; a second write meanwhile (a
        pipelined request answered at once) writes both now, so that a client that does not
        read is noticed (`pause_writing`) one answer late at most, as the limits need."""
        if self._closed or self._transport is None:
            return
        self._unsent.append(data)
        if len(self._unsent) == 1:
            self._server.write_soon(self)
        else:
            self.flush()

    def flush(self) -> None:
        """Hand what `_write` holds to the transport."""
        if not self._unsent:
            return
        data = b"".join(self._unsent)
        self._unsent = []
        if not self._closed and self._transport is not None:
            self._written += len(data)
            self._transport.write(data)

    def _close(self, linger: bool = False) -> None:
        """Close once what is written is sent: with `linger`, as `_linger` says (after an
        answer); else at once (an idle connection, or one that sent half a request). A
        client that sends on after that close is reset, as at the close of any idle
        keep-alive connection: an answer the kernel still held for it may be lost."""
        self._cancel_timer()
        if not self._closed and self._transport is not None:
            self.flush()
            self._closed = True
            if linger:
                self._linger(self._transport)
            else:
                self._transport.close()
            if self._transport.get_write_buffer_size():
                self._stall()

    def _close_answered(self) -> None:
        """`_close` after an answer: lingering (a timer's callback takes no argument)."""
        self._close(linger=True)

    def _linger(self, transport: asyncio.Transport) -> None:
        """Close as nginx does after an answer (its lingering close): end the server's side
        once what is written is sent, and read on, dropping what comes, until the client
        closes its side (`eof_received`), or for `_LINGER_S` once the answers are handed to
        the kernel. A socket closed with bytes of the client unread makes the kernel reset
        the connection, and a reset throws away the answers not yet sent, or not yet read by
        the client: those owed before a refusal, or an early answer whose body a pipelining
        client sent on behind, or a request's at SIGTERM."""
        self._held = None
        if transport.is_closing():
            return
        try:
            transport.write_eof()
        except OSError:  # the client reset it already (asyncio's loop raises it here)
            transport.abort()
            return
        if not self._reading:
            self._reading = True
            transport.resume_reading()
        self._linger_on()

    def _linger_on(self) -> None:
        """Close `_LINGER_S` after the answers are handed to the kernel (looked at every
        `_LINGER_LOOK_S` until they are; `_stall` cuts off a client that reads none)."""
        transport = self._transport
        if transport is None:
            return
        if transport.get_write_buffer_size():
            self._lingering = self._loop.call_later(_LINGER_LOOK_S, self._linger_on)
        else:
            self._lingering = self._loop.call_later(_LINGER_S, transport.close)

    def _stall(self) -> None:
        """Watch the answers not yet sent: a client that reads none of them for
        `body_timeout_s` is cut off (one whose reads make room for them is not; looked at
        once per `body_timeout_s`, so it takes up to twice that)."""
        if self._stalled is None and self._transport is not None:
            self._sent_mark = self._written - self._transport.get_write_buffer_size()
            self._stalled = self._loop.call_later(self._limits.body_timeout_s, self._stalling)

    def _stalling(self) -> None:
        self._stalled = None
        if self._transport is None or not self._transport.get_write_buffer_size():
            return
        if self._written - self._transport.get_write_buffer_size() <= self._sent_mark:
            self._transport.abort()  # nothing of it read meanwhile
        else:
            self._stall()

    def _set_timer(self, delay: float, callback: Callable[[], None]) -> None:
        """Run `callback` in `delay` seconds, instead of what was timed. The armed timer is
        kept when it fires no later (it looks again then): arming and cancelling one for
        every request (keep-alive, headers) cost as much as parsing it. While the client
        does not read its answers, no timer runs (reading pauses, so neither headers nor a
        body can come in, and `_stall` watches the client): this one starts, with all of
        `delay`, when it reads again."""
        if not self._writable:
            self._stopped = (delay, callback)
            self._timer_callback = None
            return
        self._due = self._loop.time() + delay
        self._timer_callback = callback
        if self._timer is None or self._armed > self._due:
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._armed = self._loop.call_at(self._due, self._fire), self._due

    def _fire(self) -> None:
        self._timer = None
        callback = self._timer_callback
        if callback is None:
            return
        if self._loop.time() < self._due - _TIMER_SLACK_S:  # moved on since it was armed
            self._timer, self._armed = self._loop.call_at(self._due, self._fire), self._due
            return
        self._timer_callback = None
        callback()

    def _timing(self, callback: Callable[[], None]) -> bool:
        """Whether `callback` is what is timed (armed, or kept while the client does not read)."""
        pending = self._stopped[1] if self._stopped is not None else self._timer_callback
        return pending == callback

    def _cancel_timer(self) -> None:
        self._timer_callback = self._stopped = None  # an armed timer fires for nothing


def new_loop() -> asyncio.AbstractEventLoop:
    """An event loop for the server: uvloop's where it is installed (the `server` extra, but
    for Windows), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()  # type: ignore[no-any-return]


async def serve_http(
    handler: Handler,
    host: str,
    port: int,
    limits: Limits,
    *,
    until: Awaitable[Any],
    graceful_timeout_s: float,
    access_log: bool = False,
    ready: Callable[[], None] | None = None,
) -> None:
    """Start the handler, serve HTTP on `host:port` until `until` is done, then stop: no new
    connections, idle ones closed, requests in flight answered, and early answers' drains
    and lingering closes waited out, for at most `graceful_timeout_s` (then their
    connections are cut), and the handler closed."""
    loop = asyncio.get_running_loop()
    await handler.start()
    server = _Server(handler, limits, access_log)
    try:
        listener = await loop.create_server(lambda: _Connection(server), host, port, backlog=2048)
        _log.info("serving on http://%s:%d", host, port)
        if ready is not None:
            ready()
        try:
            await until
        finally:
            listener.close()
            server.stopping = True
            handler.stop_accepting()
            server.emptied = asyncio.Event()
            _log.info("stopping: %d connections open", len(server.connections))
            for connection in list(server.connections):
                connection.shutdown()
            if server.connections:
                try:
                    await asyncio.wait_for(server.emptied.wait(), graceful_timeout_s)
                except asyncio.TimeoutError:
                    cut = sum(connection.answering for connection in server.connections)
                    unsent = sum(connection.sending for connection in server.connections)
                    if cut or unsent:  # (the others drain a body, or linger, for nothing owed)
                        _log.warning(
                            "stopping: %d requests cut short, %d connections with answers "
                            "unsent cut off",
                            cut,
                            unsent,
                        )
            for connection in list(server.connections):
                connection.abort()
            await asyncio.sleep(0)  # let the aborted connections see it
    finally:
        await handler.close()
        _log.info("stopped")
