"""What one read of many pipelined requests costs the event loop: the parser calls back into
Python for every request and header line, so what was read is given to it a slice per pass
of the loop, and not past a second request in line (helper-65: a client pipelining
thousands of small requests held the loop for seconds; 13,000 empty header lines per
request, 100 ms a read)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from rewardsmith.server import _http
from rewardsmith.server._http import (
    _FEED_BYTES,
    MAX_HEADERS,
    Answer,
    Limits,
    Request,
    Respond,
    _Connection,
    _Server,
)

pytest.importorskip("httptools")

HEALTH = b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n"
SLOW = b"POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n[]"
LIMITS = Limits(30, 30, 30, 2**20)


class _Transport(asyncio.Transport):
    """Takes what the connection writes; says whether it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.reading = True
        self.closed = False
        """The connection closed, or began its close (`write_eof`: it ended its side)."""
        self.eof = False
        self._shut = False

    def write(self, data: Any) -> None:
        assert not self.eof, "written after write_eof"
        self.written += data

    def write_eof(self) -> None:
        self.eof = self.closed = True

    def is_closing(self) -> bool:
        return self._shut

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.closed = self._shut = True

    def abort(self) -> None:
        self.closed = self._shut = True


class _Handler:
    """`/health` is answered at once; `/slow` when the test sets `release`."""

    def __init__(self) -> None:
        self.answered_paths: list[str] = []
        self.release: asyncio.Future[None] | None = None

    def open(self, request: Request) -> Answer | Respond:
        if request.path == "/slow":
            return self._slow
        return Answer(200, b"{}")

    async def _slow(self, body: bytes) -> Answer:
        assert self.release is not None
        await self.release
        return Answer(200, b"[]")

    def answered(self, request: Request, answer: Answer | None) -> None:
        self.answered_paths.append(request.path)


async def _connected(
    handler: _Handler,
    limits: Limits = LIMITS,
    transport: _Transport | None = None,
) -> tuple[_Connection, _Transport]:
    """A connection of a server with these limits, on `transport` (a new `_Transport`)."""
    server = _Server(handler, limits, access_log=False)  # type: ignore[arg-type]
    connection = _Connection(server)
    transport = transport or _Transport()
    connection.connection_made(transport)
    return connection, transport


def _statuses(transport: _Transport) -> list[int]:
    """The statuses of the answers written, in order."""
    return [int(s) for s in re.findall(rb"HTTP/1\.1 (\d{3})", bytes(transport.written))]


async def _passes_until(condition: Any, most: int = 10_000) -> int:
    for passes in range(most):
        if condition():
            return passes
        await asyncio.sleep(0)
    raise AssertionError("not within the passes")


def _behind_slow(data: bytes, answers: int, max_body_bytes: int) -> tuple[bytes, int, bool]:
    """`data` read in one read after a request that waits for its answer (`SLOW`), which is
    then answered: what was written, how many requests were answered, and whether the
    connection was closed, once `answers` requests are answered or it is closed."""

    async def main() -> tuple[bytes, int, bool]:
        handler = _Handler()
        handler.release = asyncio.get_running_loop().create_future()
        connection, transport = await _connected(handler, Limits(30, 30, 30, max_body_bytes))
        connection.data_received(SLOW + data)
        await asyncio.sleep(0)
        handler.release.set_result(None)
        await _passes_until(lambda: transport.closed or len(handler.answered_paths) == answers)
        await asyncio.sleep(0)
        return bytes(transport.written), len(handler.answered_paths), transport.closed

    return asyncio.run(main())


def test_thousands_of_pipelined_requests_in_one_read_are_parsed_a_slice_per_pass() -> None:
    async def main() -> None:
        handler = _Handler()
        connection, transport = await _connected(handler)
        connection.data_received(HEALTH * 3000)
        at_once = len(handler.answered_paths)
        assert 0 < at_once <= _FEED_BYTES // len(HEALTH) + 1  # was: all 3,000
        assert not transport.reading  # what is held is enough to go on with
        passes = await _passes_until(lambda: len(handler.answered_paths) == 3000)
        assert passes >= 3000 * len(HEALTH) // _FEED_BYTES - 1
        await asyncio.sleep(0)
        assert transport.written.count(b"HTTP/1.1 200 OK\r\n") == 3000 and transport.reading

    asyncio.run(main())


def test_what_is_read_past_a_request_in_line_waits_for_its_turn() -> None:
    """A request being answered, then 500 more in the same read: the parser stops at the
    end of the slice the second is in, and the rest are parsed, in order, once the first is
    answered."""

    async def main() -> None:
        handler = _Handler()
        handler.release = asyncio.get_running_loop().create_future()
        connection, transport = await _connected(handler)
        connection.data_received(SLOW + HEALTH * 500)
        parsed = len(connection._queue)  # those of the first slice
        assert 2 <= parsed <= _FEED_BYTES // len(HEALTH) + 2
        for _ in range(20):  # however long the first waits, nothing more is parsed
            await asyncio.sleep(0)
        assert handler.answered_paths == [] and len(connection._queue) == parsed
        assert not transport.reading
        handler.release.set_result(None)
        await _passes_until(lambda: len(handler.answered_paths) == 501)
        assert handler.answered_paths == ["/slow"] + ["/health"] * 500

    asyncio.run(main())


@pytest.mark.parametrize(("fields", "status"), [(MAX_HEADERS, 200), (MAX_HEADERS + 1, 431)])
def test_a_request_has_at_most_max_headers_header_fields(fields: int, status: int) -> None:
    """helper-65: 13,000 empty header lines (52 KB, under the 64 KiB cap) a request."""

    async def main() -> bytes:
        handler = _Handler()
        connection, transport = await _connected(handler)
        connection.data_received(b"GET /health HTTP/1.1\r\n" + b"a:\r\n" * fields + b"\r\n")
        await asyncio.sleep(0)
        return bytes(transport.written)

    assert asyncio.run(main()).startswith(b"HTTP/1.1 %d " % status)


def test_a_large_body_in_few_chunks_is_parsed_in_the_pass_it_is_read() -> None:
    """Slices that cost the parser few calls back go on in the same pass: a chunked body of
    256 KiB in two chunks waits for no pass of the loop (only many small ones do)."""
    half = b"x" * (128 * 2**10)
    chunk = b"%x\r\n%s\r\n" % (len(half), half)
    request = b"POST /slow HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"

    async def main() -> None:
        handler = _Handler()
        connection, _ = await _connected(handler)
        connection.data_received(request + chunk * 2 + b"0\r\n\r\n")
        assert connection._queue[0].complete and connection._held is None

    asyncio.run(main())


def test_a_read_of_requests_with_long_header_lines_is_not_answered_in_one_pass() -> None:
    """helper-66: slices of few calls back went on in the same pass, and ten requests of one
    long header line each make 30: a 240 KB read of them was answered in one pass."""
    request = b"GET /health HTTP/1.1\r\nHost: a\r\nx-pad: " + b"p" * 360 + b"\r\n\r\n"

    async def main() -> int:
        handler = _Handler()
        connection, _ = await _connected(handler)
        connection.data_received(request * 600)
        return len(handler.answered_paths)

    assert asyncio.run(main()) <= _FEED_BYTES // len(request) + 1


@pytest.mark.parametrize("into_body", [False, True], ids=["before-it", "into-its-body"])
def test_where_a_slice_ends_changes_no_answer(into_body: bool) -> None:
    """helper-66: a slice that ended inside the body of a request answered before its body
    (`/health` here; 401, 404 the same) made it look unfinished: the answer went early with
    `Connection: close`, and the requests behind it in the same read were dropped."""
    target = b"GET /health HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
    offset = len(target) - 3 if into_body else 0  # where in `target` the first slice ends
    count, pad = divmod(_FEED_BYTES - offset, len(HEALTH))
    assert pad % 2 == 0
    filler = HEALTH * count + b"\r\n" * (pad // 2)  # blank lines between requests: ignored

    async def main() -> tuple[int, bool]:
        handler = _Handler()
        connection, transport = await _connected(handler)
        connection.data_received(filler + target + HEALTH * 10)
        await _passes_until(lambda: len(handler.answered_paths) == count + 11)
        await asyncio.sleep(0)
        return transport.written.count(b"HTTP/1.1 200 OK\r\n"), transport.closed

    assert asyncio.run(main()) == (count + 11, False)


@pytest.mark.parametrize("waits_for", ["an-answer", "the-client"])
def test_a_request_whose_body_is_held_is_not_answered_early_when_its_turn_comes(
    waits_for: str,
) -> None:
    """helper-67: a request answered before its body (`/health` with a body) whose first
    slice ended inside that body, waiting in line behind a request being answered (or for
    a client that read no answers): when its turn came, the rest of its body still held, it
    was answered early with `Connection: close`, and the ten requests behind it dropped."""
    target = b"GET /health HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
    base = (b"POST /slow" if waits_for == "an-answer" else b"GET /health") + (
        b" HTTP/1.1\r\nContent-Length: 2\r\nx-pad: \r\n\r\n[]"
    )
    pad = b"p" * (_FEED_BYTES - len(target) + 3 - len(base))  # the slice ends in its body
    first = base.replace(b"x-pad: ", b"x-pad: " + pad)

    async def main() -> tuple[int, bool]:
        handler = _Handler()
        handler.release = asyncio.get_running_loop().create_future()
        connection, transport = await _connected(handler)
        if waits_for == "the-client":
            connection.pause_writing()
        connection.data_received(first + target + HEALTH * 10)
        await asyncio.sleep(0)
        if waits_for == "the-client":
            connection.resume_writing()
        handler.release.set_result(None)
        await _passes_until(lambda: transport.closed or len(handler.answered_paths) == 12)
        await asyncio.sleep(0)
        return transport.written.count(b"HTTP/1.1 200 OK\r\n"), transport.closed

    assert asyncio.run(main()) == (12, False)


@pytest.mark.parametrize("feed", ["sliced", "whole"])
def test_a_too_large_body_held_in_line_is_refused_as_if_read_whole(
    feed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """helper-68: a request over the body limit, waiting in line with its whole body read
    but held, got its 413 early (`Connection: close`) when its turn came, and the request
    behind it went unanswered; read whole, the 413 keeps the connection."""
    if feed == "whole":
        monkeypatch.setattr(_http, "_FEED_BYTES", 10**9)
    big = b"POST /slow HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000
    written, answered, closed = _behind_slow(big + HEALTH, 3, max_body_bytes=1000)
    assert (written.count(b" 413 "), written.count(b" 200 OK"), answered, closed) == (
        1,
        2,
        3,
        False,
    )


@pytest.mark.parametrize("feed", ["sliced", "whole"])
@pytest.mark.parametrize("chunks", [1, 10])
def test_a_too_large_chunked_body_held_in_line_is_refused_as_if_read_whole(
    feed: str, chunks: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """helper-69: as `test_a_too_large_body_held_in_line_is_refused_as_if_read_whole`, with a
    chunked body: sliced, its 413 went as its held body was parsed, early, with
    `Connection: close`, and the request behind it went unanswered; read whole, the 413
    keeps the connection and the request behind it is answered."""
    if feed == "whole":
        monkeypatch.setattr(_http, "_FEED_BYTES", 10**9)
    part = b"x" * (5000 // chunks)
    big = b"POST /slow HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    big += b"%x\r\n%s\r\n" % (len(part), part) * chunks + b"0\r\n\r\n"
    written, answered, closed = _behind_slow(big + HEALTH, 3, max_body_bytes=1000)
    assert (written.count(b" 413 "), written.count(b" 200 OK"), answered, closed) == (
        1,
        2,
        3,
        False,
    )


def test_the_first_refusal_of_a_request_in_line_is_the_one_sent() -> None:
    """helper-69: 101 header fields (431) in a request waiting in line, then a NUL in a
    header of the same request (400): the 400 was sent, `_refuse` keeping the last."""
    fields = b"".join(b"x-f%d: v\r\n" % i for i in range(101))
    broken = b"GET /health HTTP/1.1\r\nHost: a\r\n" + fields + b"x-bad: a\x00b\r\n\r\n"
    written, _, closed = _behind_slow(broken, 3, max_body_bytes=2**20)
    assert closed
    assert written.startswith(b"HTTP/1.1 200 OK") and b"HTTP/1.1 431 " in written, written


@pytest.mark.parametrize("feed", ["sliced", "whole"])
@pytest.mark.parametrize("before", ["another-413", "130-health"])
def test_a_too_large_body_whose_headers_are_parsed_after_its_turn_came_is_refused_as_if_read_whole(
    feed: str, before: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """helper-69: the deferral of 4bc5915/c62376f looks at whether a request waited in line;
    one whose headers were still held when the requests before it were answered (at once:
    another 413, `/health`) counts as first in line, and its 413 went early with
    `Connection: close`, the request behind it unanswered. Read whole, it waited in line."""
    if feed == "whole":
        monkeypatch.setattr(_http, "_FEED_BYTES", 10**9)
    big = b"POST /slow HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000
    ahead = big if before == "another-413" else HEALTH * 130
    total = 4 if before == "another-413" else 133
    written, answered, closed = _behind_slow(ahead + big + HEALTH, total, max_body_bytes=1000)
    assert (answered, b"connection: close" in written, closed) == (total, False, False)


def test_a_pipelined_request_waiting_for_a_slow_reader_is_not_dropped_at_the_header_timeout() -> (
    None
):
    """helper-71 (older than its round): a client whose answers are unread (`pause_writing`)
    sends a whole request: its `on_message_begin`, the queue empty, arms the header timer,
    and nothing replaces it (not taken: not writable), so at `header_timeout_s` the
    connection is closed without a word (`_headers_too_slow`: `_begun` is False). README:
    "one that reads nothing of what is left to send for --body-timeout is cut off (one
    that reads, however slowly, is not)" - here --header-timeout (10 s), however it reads."""

    async def main() -> tuple[bool, list[int]]:
        handler = _Handler()
        connection, transport = await _connected(handler, Limits(0.1, 30, 30, 1000))
        connection.data_received(HEALTH)
        await asyncio.sleep(0.01)
        connection.pause_writing()  # its answers pile up unread
        connection.data_received(HEALTH)
        await asyncio.sleep(0.3)  # 3 header timeouts, 1% of the body timeout
        closed = transport.closed
        connection.resume_writing()
        await asyncio.sleep(0.05)
        return closed, _statuses(transport)

    assert asyncio.run(main()) == (False, [200, 200])  # main: (True, [200])


@pytest.mark.parametrize("feed", ["whole", "sliced"])
def test_a_whole_body_read_in_one_read_as_the_deadline_passes_gets_one_answer_sliced_as_whole(
    feed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """helper-72: e0c8647 gives `_body_too_slow` a pass only to held bytes read before the
    deadline. A read with the whole rest of a chunked body (busy chunks: sliced over passes),
    read after the deadline but before the timer ran (a busy loop on a 2-core node), gets 408
    while the rest of that very read, the end of the body included, waits in `_held`; parsed
    whole (a read under 4 KiB, or `_FEED_BYTES` past it), the same read completes the body in
    the same pass and the request is answered 200. What was read is the same."""
    if feed == "whole":
        monkeypatch.setattr(_http, "_FEED_BYTES", 10**9)
    body = (b"1;e=" + b"a" * 200 + b"\r\nx\r\n") * 40 + b"0\r\n\r\n"

    async def main() -> list[int]:
        handler = _Handler()
        handler.release = asyncio.get_running_loop().create_future()
        handler.release.set_result(None)
        connection, transport = await _connected(handler, Limits(30, 0.05, 30, 2**30))
        connection.data_received(b"POST /slow HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        await asyncio.sleep(0)
        time.sleep(0.08)  # the loop is busy past the body's deadline; the body is in the socket
        connection.data_received(body)  # read before the timer's turn comes
        await asyncio.sleep(0.1)
        return _statuses(transport)

    assert asyncio.run(main()) == [200]  # main: sliced [408], whole [200]


def test_a_request_half_read_when_reading_pauses_is_not_cut_off_at_the_header_timeout() -> None:
    """helper-72: e0c8647 stops the header timer for a request whose headers are in while the
    client does not read its answers; one whose headers were half read when reading paused
    (`pause_writing` -> `_pace`) stays under it: the server reads none of the rest (it is
    in the socket), and at `header_timeout_s` writes 408 "request headers not received in
    time" and closes. README: "one that reads nothing of what is left to send for
    --body-timeout is cut off (one that reads, however slowly, is not)" - here cut off at
    --header-timeout (10 s) for headers the client sent in time, however it reads."""
    rest = HEALTH[20:]

    async def main() -> tuple[bool, list[int]]:
        handler = _Handler()
        connection, transport = await _connected(handler, Limits(0.1, 30, 30, 1000))
        connection.data_received(HEALTH + HEALTH[:20])  # one read: a request and a half
        await asyncio.sleep(0)
        connection.pause_writing()  # its answers pile up unread
        assert not transport.reading  # the rest of the headers waits in the socket
        await asyncio.sleep(0.3)  # 3 header timeouts, 1% of the body timeout
        closed = transport.closed
        connection.resume_writing()
        if transport.reading and not closed:
            connection.data_received(rest)
        await asyncio.sleep(0.05)
        return closed, _statuses(transport)

    assert asyncio.run(main()) == (False, [200, 200])  # main: (True, [200, 408])


class _SlowReader(_Transport):
    """A socket whose client reads a byte now and then: writes pile up in its buffer, and
    `pause_writing` comes past 1,000 bytes, as a transport's high-water mark."""

    def __init__(self) -> None:
        super().__init__()
        self.buffer = 0
        self.protocol: _Connection | None = None

    def write(self, data: object) -> None:
        super().write(data)
        self.buffer += len(data)  # type: ignore[arg-type]
        if self.buffer > 1000 and self.protocol is not None and self.protocol._writable:
            self.protocol.pause_writing()

    def get_write_buffer_size(self) -> int:
        return self.buffer


@pytest.mark.parametrize("reads", [True, False], ids=["reads-a-byte-now-and-then", "reads-nothing"])
def test_a_request_waiting_for_a_slow_reader_is_timed_by_its_reading(reads: bool) -> None:
    """helper-72: a client pipelines /health requests whose answers it does not read, then
    the headers of a POST whose body never comes, in one read: the answers fill the buffer
    mid-read (`pause_writing`), so the POST is not taken and no body deadline runs for it.
    One that reads a byte per body timeout is not cut off (README: "one that keeps reading
    its answers, however slowly, can", as under nginx's `send_timeout`; the README had said
    slow clients cannot hold sockets); one that reads nothing is, by `_stall`; neither is
    closed by a keep-alive or header timer with its request unanswered."""

    async def main() -> tuple[bool, list[int]]:
        handler = _Handler()
        transport = _SlowReader()
        # timers 5x the reader's pace, so a loaded machine's late wake-ups cannot fake a stall
        connection, _ = await _connected(handler, Limits(0.4, 0.4, 0.4, 1000), transport)
        transport.protocol = connection
        post = b"POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"
        connection.data_received(HEALTH * 40 + post)  # its body never comes
        start = time.monotonic()
        while time.monotonic() - start < 2.0 and not transport.closed:
            await asyncio.sleep(0.08)
            if reads:
                transport.buffer -= 1  # the client reads one byte
        found = _statuses(transport)
        return transport.closed, found

    closed, found = asyncio.run(main())
    assert closed != reads and set(found) == {200}


def _read_slowly(
    limits: Limits, first: bytes, later: bytes, answered_then: bool
) -> tuple[bool, list[int]]:
    """`first` is read; then the client's answers fill its buffer (reading pauses) and it
    reads a byte every 0.08 s for 0.4 s (`answered_then`: the request the app holds is
    answered as that begins); then it reads all, and `later`, sent long before, is read.
    Whether the connection was closed meanwhile, and the statuses written."""

    async def main() -> tuple[bool, list[int]]:
        handler = _Handler()
        handler.release = asyncio.get_running_loop().create_future()
        if not answered_then:
            handler.release.set_result(None)
        transport = _SlowReader()
        connection, _ = await _connected(handler, limits, transport)
        transport.protocol = connection
        connection.data_received(first)
        await asyncio.sleep(0)
        transport.buffer = 5000  # an answer fills the client's buffer
        connection.pause_writing()
        assert not transport.reading  # what it sends next waits in the socket
        if answered_then:
            handler.release.set_result(None)
        for _ in range(5):
            await asyncio.sleep(0.08)
            transport.buffer -= 1
        closed = transport.closed
        if not closed:
            transport.buffer = 0
            connection.resume_writing()
            connection.data_received(later)
        await asyncio.sleep(0.05)
        return closed, _statuses(transport)

    return asyncio.run(main())


POST_BEGUN = b"POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n[1,"


@pytest.mark.parametrize(
    ("limits", "first", "later", "answered_then", "statuses"),
    [
        # a body whose timer ran when reading paused (4 body timeouts meanwhile)
        (Limits(30, 0.1, 30, 1000), HEALTH + POST_BEGUN, b"2,3,4]    "[:7], False, [200, 200]),
        # headers begun, the request before answered meanwhile: `_next` armed the header
        # timer again (4 header timeouts meanwhile)
        (Limits(0.1, 30, 30, 1000), HEALTH + SLOW + HEALTH[:20], HEALTH[20:], True, [200] * 3),
        # the request before answered meanwhile: `_next` armed the keep-alive close, and
        # the request the client sent meanwhile went unanswered (4 keep-alives meanwhile)
        (Limits(30, 30, 0.1, 1000), HEALTH + SLOW, HEALTH, True, [200] * 3),
    ],
    ids=["body", "headers", "keep-alive"],
)
def test_no_request_timer_runs_while_the_client_reads_its_answers_slowly(
    limits: Limits, first: bytes, later: bytes, answered_then: bool, statuses: list[int]
) -> None:
    """helper-73: while the client does not read its answers, reading pauses, so neither
    headers nor a body can come in: the header, body and keep-alive timers stop and go on
    once it reads again (README: "a request it sent meanwhile waits"); `_stall` cuts off a
    client that reads nothing. 7988c81 stopped the header timer of a request begun then,
    but the body timer ran on, and `_next` armed the header or keep-alive timer again."""
    assert _read_slowly(limits, first, later, answered_then) == (False, statuses)


def test_headers_byte_by_byte_from_a_client_that_reads_get_408_at_the_header_timeout() -> None:
    """helper-73 (held): a client that reads its answers gains nothing from the timers'
    stop: headers sent a byte at a time get 408 at the header timeout."""

    async def main() -> tuple[bool, list[int]]:
        handler = _Handler()
        connection, transport = await _connected(handler, Limits(0.2, 30, 30, 1000))
        connection.data_received(HEALTH)
        await asyncio.sleep(0)
        start = time.monotonic()
        for byte in HEALTH[:-2] * 3:
            if transport.closed:
                break
            connection.data_received(bytes([byte]))
            await asyncio.sleep(0.02)
        return transport.closed and time.monotonic() - start < 0.4, _statuses(transport)

    assert asyncio.run(main()) == (True, [200, 408])


def test_a_request_taken_on_resume_is_not_cut_off_by_the_header_timer_kept_while_paused() -> None:
    """helper-74: c52aa64 no longer cancelled the header timer when headers completed while
    the client did not read: kept in `_stopped`, re-armed by `resume_writing`, not cancelled
    by `_next`, it cut off the POST taken then, its chunked body still parsed from held bytes
    (no body timer meanwhile), at --header-timeout, unanswered, though its headers were in."""

    async def main() -> tuple[bool, list[str]]:
        handler = _Handler()
        handler.release = asyncio.get_running_loop().create_future()
        handler.release.set_result(None)
        transport = _SlowReader()
        connection, _ = await _connected(handler, Limits(0.02, 30, 30, 2**30), transport)
        transport.protocol = connection
        post = b"POST /slow HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        body = b"1\r\nx\r\n" * 100_000 + b"0\r\n\r\n"  # parsed for longer than 0.02 s
        connection.data_received(HEALTH * 21 + post + body)  # the answers fill the buffer
        await asyncio.sleep(0)
        assert not connection._writable
        transport.buffer = 0  # the client reads all
        connection.resume_writing()
        start = time.monotonic()
        while not transport.closed and time.monotonic() - start < 5:
            if "/slow" in handler.answered_paths:
                break
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        return transport.closed, handler.answered_paths[-1:]

    assert asyncio.run(main()) == (False, ["/slow"])


def test_a_half_closed_client_with_answers_unsent_is_gone_at_once() -> None:
    """helper-75: a client sends a request whose answer it leaves unread (past what the
    transport holds), then one still being scored, then half-closes (`eof_received`). The
    transport closes once what is written is sent, so `connection_lost` waited, and with it
    the cancellation: the second request was scored and answered. README: a client that
    closes its side "counts as gone ...: it gets no answer". Now it is cancelled at the
    half-close, and the app told so (counted `disconnected`)."""

    async def main() -> tuple[list[str], bool, list[int], bool]:
        handler = _Handler()
        handler.release = asyncio.get_running_loop().create_future()
        transport = _SlowReader()
        connection, _ = await _connected(handler, Limits(30, 0.2, 30, 1000), transport)
        transport.buffer = 10**6  # a large answer before, unread
        connection.data_received(SLOW)
        await asyncio.sleep(0)
        connection.eof_received()
        await asyncio.sleep(0.05)  # its coroutine hears of it on the loop's next pass
        told, cancelled = list(handler.answered_paths), handler.release.cancelled()
        await asyncio.sleep(0.5)  # the client still reads nothing: cut off (`_stall`)
        return told, cancelled, _statuses(transport), transport.closed

    assert asyncio.run(main()) == (["/slow"], True, [], True)  # main: ([], False, [], False)


def test_a_body_deadline_stopped_while_answers_were_unread_also_moves_the_drain_after_413() -> None:
    """helper-75: while a client does not read its answers, its body timer stops (c52aa64),
    but an early 413 drained the rest of the body only until the deadline as set when the
    request was taken: sent after the pause, inside the moved deadline, the 413 closed the
    connection at once, and the client, still sending its body, got a reset. Now the
    deadline moves by the pause: the rest is drained until then."""
    head = b"POST /slow HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"

    async def main() -> tuple[list[int], bool, bool]:
        handler = _Handler()
        connection, transport = await _connected(handler, Limits(30, 0.4, 30, 1000))
        connection.data_received(head + b"5\r\nabcde\r\n")  # taken: the body's deadline runs
        await asyncio.sleep(0.1)
        connection.pause_writing()  # an answer before it, unread for 0.3 s
        await asyncio.sleep(0.3)
        connection.resume_writing()
        await asyncio.sleep(0.1)  # 0.5 s after it was taken, 0.2 s of the deadline left
        connection.data_received(b"800\r\n" + b"a" * 2048 + b"\r\n")  # past the limit
        await asyncio.sleep(0.02)
        answered, closed_at_once = _statuses(transport), transport.closed
        await asyncio.sleep(0.3)
        return answered, closed_at_once, transport.closed

    assert asyncio.run(main()) == ([413], False, True)  # main: ([413], True, True)
