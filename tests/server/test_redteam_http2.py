"""Second red team of the server's own HTTP/1.1 layer (`server/_http.py`), against the fixes of
commit b1a4e2e: the loop over pipelined requests, the paused writer and its stall timer, the
per-message header count and the chunk framing allowance, HEAD, 100 Continue and trailers.
Real `rewardsmith serve` processes on loopback, raw sockets, in the style of
`test_redteam_http.py` (its helpers from `_raw_http.py`; its rows are not repeated).

Rows marked `xfail(strict=True)` are open holes: they assert what should happen and flip
loudly when fixed. The others are guards. No timing assertion: deadlines only tell a hang
from an answer.
"""

from __future__ import annotations

import json
import re
import select
import socket
import time
from collections.abc import Iterator

import pytest

from ._raw_http import (
    CHUNKED,
    OK_BODY,
    READ_S,
    SLOW_BODY,
    Row,
    World,
    answered,
    exchange,
    health,
    read_all,
    request,
    row,
    rss_mib,
    statuses,
)
from .conftest import SPEC, Server

pytest.importorskip("httptools")

HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
SCORED_SLOWLY = request("POST", "/v1/score", SLOW_BODY)
"""Still being scored when what is pipelined behind it arrives."""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`token` of `World` with a 20 MB body limit: a sample's id, echoed in its result,
    makes an answer as large as the client likes (larger than the kernel's socket buffers,
    so that the server's own write buffer fills)."""
    spec = tmp_path_factory.mktemp("redteam-http2-big") / "spec.yaml"
    spec.write_text(SPEC)
    args = ["--workers", "1", "--max-queue", "8", "--max-body-bytes", "20000000"]
    args += ["--header-timeout", "3", "--body-timeout", "3", "--keep-alive", "1"]
    running = Server(spec, *args)
    yield running
    running.stop()


def _big_answer(size: int, *headers: str) -> bytes:
    """A scoring request whose answer is `size` bytes and more (its sample's id)."""
    body = json.dumps([{"id": "i" * size, "completion": "abc"}]).encode()
    return request("POST", "/v1/score", body, *headers)


def _answer_length(sock: socket.socket, got: bytearray) -> int:
    """Reads until the first answer's head is in `got`; the answer's whole length."""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError(bytes(got[:300]))
        got += chunk
    head = bytes(got[: got.index(b"\r\n\r\n") + 4])
    found = re.search(rb"content-length: (\d+)", head)
    assert found is not None, head
    return len(head) + int(found.group(1))


def _read_after_a_pause(sock: socket.socket) -> tuple[bytearray, int]:
    """Let the first answer begin and pile up a moment (the server's writer pauses), then
    read all of it: what was read (it may run into the next answer) and its length."""
    select.select([sock], [], [], READ_S * 4)
    time.sleep(0.3)
    sock.settimeout(READ_S)
    got = bytearray()
    length = _answer_length(sock, got)
    while len(got) < length:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise EOFError(len(got))
        got += chunk
    assert got.startswith(b"HTTP/1.1 200 "), bytes(got[:80])
    return got, length


def _chunked_json(framing: int, chunks: int) -> bytes:
    """`POST /v1/score`, chunked: a JSON body of `chunks` bytes (spaces, then one sample)
    sent one byte a chunk, each chunk's framing (size line with an extension, line ends)
    `framing` bytes long."""
    body = b" " * (chunks - len(OK_BODY)) + OK_BODY
    size_line = b"1;" + b"x" * (framing - 6) + b"\r\n"
    framed = b"".join(size_line + body[i : i + 1] + b"\r\n" for i in range(len(body)))
    return request("POST", "/v1/score", None, CHUNKED) + framed + b"0\r\n\r\n"


# -- raw rows -----------------------------------------------------------------------------

ROWS = [
    row(
        "chunk-extension-on-each-of-100000-chunks",
        [_chunked_json(32, 100000) + HEALTH],
        "200, then 200: chunk lines are parsed and dropped as they come (3.2 MB of them), "
        "none is buffered",
        answered(200, 200),
    ),
    row(
        "long-chunk-extensions-on-20000-chunks",
        [_chunked_json(64, 20000) + HEALTH],
        "200, then 200. Was: 400 under a framing allowance of 32 bytes a chunk, which "
        "small chunks could also turn into credit for one huge trailer (below)",
        answered(200, 200),
    ),
    row(
        "a-chunk-line-that-never-ends",
        [request("POST", "/v1/score", None, CHUNKED) + b"1;" + b"x" * 200_000],
        "400 and closed: 64 KiB of a chunked body in which the parser finds neither data "
        "nor a chunk",
        lambda done: statuses(done) in ([], [400]) and done.closed,
    ),
    row(
        "trailer-flood-on-a-request-answered-early",
        [
            request("POST", "/v1/score", None, CHUNKED, auth=False) + b"2\r\n[]\r\n",
            0.3,
            b"0\r\n" + (b"X-T: " + b"a" * 1000 + b"\r\n") * 80,
        ],
        "401 (answered before its body, Connection: close) alone, then closed: the 431 of its "
        "trailers would meet no request and is not sent",
        lambda done: statuses(done) == [401] and done.closed,
    ),
    row(
        "head-with-a-body",
        [request("HEAD", "/health", b"abcde", auth=False) + HEALTH],
        "405 with its content-length and no body; its own body read as a body, then 200",
        lambda done: (
            done.raw.startswith(b"HTTP/1.1 405 ")
            and done.raw.partition(b"\r\n\r\n")[2].startswith(b"HTTP/1.1 200 ")
        ),
    ),
    row(
        "expect-100-continue-waiting-in-line",
        [
            SCORED_SLOWLY
            + request("POST", "/v1/score", None, "Content-Length: 2", "Expect: 100-continue"),
            1.5,
            b"[]",
        ],
        "200, then 100 Continue when its turn came, then 200",
        lambda done: (
            statuses(done) == [200, 200]
            and b"}HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 " in done.raw
        ),
    ),
    row(
        "connection-close-then-more-pipelined",
        [request("POST", "/v1/score", OK_BODY, "Connection: close") + HEALTH * 50],
        "one 200 saying Connection: close, closed; nothing after it answered",
        lambda done: (
            statuses(done) == [200]
            and done.answers[0].headers.get("connection") == "close"
            and done.closed
        ),
    ),
    row(
        "http-1.0-expect-100-continue-waiting-in-line",
        [
            SCORED_SLOWLY
            + request(
                "POST",
                "/v1/score",
                None,
                "Content-Length: 2",
                "Expect: 100-continue",
                "Connection: keep-alive",
                version="HTTP/1.0",
            ),
            1.5,
            b"[]",
        ],
        "200 then 200, and no 100 Continue (an HTTP/1.0 client)",
        lambda done: statuses(done) == [200, 200] and b" 100 " not in done.raw,
    ),
]


@pytest.mark.parametrize("attack", ROWS)
def test_raw_attack(world: World, attack: Row) -> None:
    done = exchange(world.server(attack.server).port, attack.parts)
    assert attack.should(done), f"today: {attack.today}\ngot: {done.raw[:600]!r}"


# -- the paused writer ----------------------------------------------------------------------


def test_a_request_waiting_behind_a_paused_answer_keeps_its_deadline(big: Server) -> None:
    """Attack (with the token, or any local process without one): a scoring request whose
    answer is 8 MB, and pipelined behind it `POST /nowhere` with `Content-Length: 10` and no
    body. The client lets the answer pile up a moment (the server's writer pauses while
    writing it), then reads all of it at once. Now (fixed): 404 (answered before its body) and
    closed at the body deadline (3 s), as when the answer is small. Was: nothing, and the
    connection is held for good: no deadline runs. (When the writer paused in `_send`,
    `_next` stopped before taking the second request and `_settle` marked it `waited`
    though it was not yet taken; once taken after `resume_writing`, `_settle` skips it: no
    early answer, no body timer, no 100 Continue.)"""
    with socket.create_connection(("127.0.0.1", big.port)) as sock:
        sock.sendall(
            _big_answer(8_000_000) + request("POST", "/nowhere", None, "Content-Length: 10")
        )
        got, length = _read_after_a_pause(sock)
        done = read_all(sock, READ_S)
        assert health(big)["status"] == "ok"  # the others are served meanwhile
    rest = bytes(got[length:]) + done.raw
    assert rest.startswith(b"HTTP/1.1 404 ") and done.closed, rest[:300]


def test_a_client_reading_its_answer_steadily_gets_all_of_it(big: Server) -> None:
    """Attack (or a trainer on a slow link): a scoring request whose answer is 12 MB, read
    steadily at about 1.3 MB/s (128 KiB every 0.1 s). Now (fixed): the whole answer: the client
    never stops reading (README: "one that reads nothing for --body-timeout is cut off").
    Was: cut off mid-answer. The stall timer is armed by `pause_writing` and disarmed only
    by `resume_writing`, which comes once the write buffer is below its low-water mark: a
    client that cannot drain the whole buffer (here ~8 MB past the kernel's buffers) within
    `body_timeout_s` loses the answer, however steadily it reads."""
    got = bytearray()
    length = 0
    with socket.create_connection(("127.0.0.1", big.port)) as sock:
        sock.sendall(_big_answer(12_000_000))
        sock.settimeout(READ_S * 4)
        length = _answer_length(sock, got)
        deadline = time.monotonic() + READ_S * 4
        try:
            while len(got) < length and time.monotonic() < deadline:
                chunk = sock.recv(128 * 2**10)
                if not chunk:
                    break
                got += chunk
                time.sleep(0.1)
        except OSError:  # reset
            pass
    assert len(got) >= length, f"{len(got)} of {length} bytes"


def test_health_and_pipelining_after_a_paused_writer(big: Server) -> None:
    """Guard: an 8 MB answer left unread for a moment, then read, then two pipelined health
    checks on the same connection: both answered (the writer resumed, reading resumed)."""
    with socket.create_connection(("127.0.0.1", big.port)) as sock:
        sock.sendall(_big_answer(8_000_000))
        _read_after_a_pause(sock)
        sock.sendall(HEALTH * 2)
        done = read_all(sock, READ_S)
    assert statuses(done) == [200, 200] and done.closed  # closed at the keep-alive deadline


def test_no_traceback_after_the_rows(world: World, big: Server) -> None:
    """Whatever the rows above sent, neither server logged a traceback."""
    for text in (world.server().output(), big.output()):
        assert "Traceback" not in text, text[-3000:]


def test_one_huge_trailer_after_many_small_chunks_is_bounded(world: World) -> None:
    """Attack (no token): `POST /nowhere` chunked (answered 404 at once, its body drained),
    4 MB of one-byte chunks (`1\\r\\nA\\r\\n`: 5 bytes of framing each), then one trailer
    whose value never ends: 16 MB of `a` (so far). Now (fixed): cut off 64 KiB into the
    trailer (400: bytes in which the parser finds neither data nor a chunk), the server's
    memory bounded. Was: httptools keeps a header's value until it ends, and the only bound
    was a framing allowance of 32 bytes a chunk: each 6-byte chunk earned 27 bytes of
    credit, so 4 MB of chunks let ~18 MB of trailer be buffered (cut off after 21 MB)."""
    server = world.server("patient")
    before = rss_mib(server)
    grew = 0.0
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        try:
            sock.sendall(request("POST", "/nowhere", None, CHUNKED, auth=False))
            sock.sendall(b"1\r\nA\r\n" * (4 * 2**20 // 6))
            sock.sendall(b"0\r\nX-T: ")
            for _ in range(16):
                sock.sendall(b"a" * 2**20)
        except OSError:  # refused and closed: what should happen
            pass
        time.sleep(2)
        grew = rss_mib(server) - before
    assert grew < 8, f"the server grew by {grew:.0f} MiB"
