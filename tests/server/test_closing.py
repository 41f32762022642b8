"""How the server ends a connection, seen by real clients of a real `rewardsmith serve`:
its answers owed arrive whole (a lingering close: closing with bytes of the client unread
would make the kernel reset the connection, and the reset throws away answers not yet
sent), and its own refusals to HEAD have no body. Rows from helper-83; each failed on
e225450.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import pytest

from ._raw_http import World, parse, read_all, request, statuses
from .conftest import Server

pytest.importorskip("httptools")

BIG_ID = "i" * 60_000
"""An id echoed in the answer: a 60 kB answer, more than the client's small socket buffer."""


def _small_buffer_client(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    return sock


def test_answers_owed_before_a_refused_request_arrive_whole(world: World) -> None:
    """README: a request the parser refuses "gets 400 and the connection is closed (after
    the answers owed to the requests before it)". A client pipelines a scored request, then
    bytes no request has, then 10 more bytes (unread by the server: reading paused at the
    refusal). The server writes the 200 and the 400, closes with those 10 bytes unread, and
    Linux answers that close with a reset that drops what the client's socket had not yet
    taken: before, the client got 4,096 bytes of the 200 (of 60 kB) and no 400."""
    server = world.server()
    body = json.dumps([{"id": BIG_ID, "completion": "abc"}]).encode()
    with _small_buffer_client(server.port) as sock:
        sock.sendall(request("POST", "/v1/score", body) + b"NOT HTTP\r\n\r\n")
        time.sleep(0.3)
        sock.sendall(b"z" * 10)
        time.sleep(1.0)  # the client reads a moment later, as a busy one does
        done = read_all(sock, 10)
    answers = parse(done.raw)
    assert statuses(done) == [200, 400]  # before: [200], cut short
    assert len(answers[0].body) == int(answers[0].headers["content-length"])


def test_sigterm_finishes_the_answer_of_a_request_in_flight_to_a_pipelining_client(
    spec_path: Path,
) -> None:
    """README: "SIGTERM finishes in-flight requests first". A client pipelines two requests
    (the second waits in line, so the server stops reading), then a third; SIGTERM comes
    while the first is scored. Its answer says `Connection: close` and the server closes
    with the third request unread: the reset cuts the answer to what the client's socket
    had room for (before: 4,003 of 60,109 bytes of body)."""
    server = Server(spec_path, "--workers", "1", "--max-body-bytes", "100000", token=None)
    try:
        first = json.dumps([{"id": BIG_ID, "completion": "sleep 0.5"}]).encode()
        other = request("POST", "/v1/score", b'[{"completion":"abc"}]', auth=False)
        with _small_buffer_client(server.port) as sock:
            sock.sendall(request("POST", "/v1/score", first, auth=False) + other)
            time.sleep(0.1)
            sock.sendall(other)  # pipelined on: never read by the server
            time.sleep(0.1)
            server.terminate()
            time.sleep(1.0)
            done = read_all(sock, 10)
    finally:
        server.stop()
    answers = parse(done.raw)
    assert statuses(done) == [200]
    assert len(answers[0].body) == int(answers[0].headers["content-length"])  # 4003 != 60109


def test_an_answer_to_head_has_no_body_when_the_connection_refuses_it(world: World) -> None:
    """README: "An answer to HEAD (405: no route serves it) has no body." A HEAD with 101
    header fields gets the connection's 431 with its text body (`_refuse` wrote the canned
    `_TOO_MANY_HEADERS`; `_send`'s HEAD rule is not on that path)."""
    server = world.server()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"a: b\r\n" * 101 + b"\r\n")
        done = read_all(sock, 10)
    assert done.raw.startswith(b"HTTP/1.1 431 ")
    assert done.raw.endswith(b"\r\n\r\n")  # before: ... "more than 100 header fields"


def _stopped(server: Server) -> tuple[float, str]:
    """SIGTERM `server`: the seconds until it exits, and its log."""
    started = time.monotonic()
    server.terminate()
    server.process.wait(30)
    return time.monotonic() - started, server.output()


@pytest.mark.parametrize(
    "after_head",
    [b"NOT HTTP\r\n\r\n", b"G"],  # 400 for bytes no request has; 408 for a request begun
    ids=["400-after-head", "408-after-head"],
)
def test_a_refusal_of_what_follows_a_head_keeps_its_body(world: World, after_head: bytes) -> None:
    """helper-86: 42e649f's `_write_refusal` asked the parser for the refused request's
    method, but llhttp keeps the last method it parsed until the next one is whole: bytes
    with no method (or only its first letter) after a HEAD got a refusal with
    `content-length: 22` and no body."""
    server = world.server()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(request("HEAD", "/health", None) + after_head)
        done = read_all(sock, 10)
    head_answer, _, rest = done.raw.partition(b"\r\n\r\n")  # the 405 to HEAD: no body
    assert head_answer.startswith(b"HTTP/1.1 405 ")
    [refusal] = parse(rest)
    assert refusal.status in (400, 408)
    assert len(refusal.body) == int(refusal.headers["content-length"]) > 0  # before: 0 of 22


def test_answers_owed_before_a_413_drained_to_its_end_arrive_whole(world: World) -> None:
    """helper-86: a pipelining client: a scored request (60 kB answer), then a POST over
    the body limit sent whole (413 before its body, drained to its end), then 10 bytes
    more. The body's end closed the connection in `on_message_complete` (`exchange.sent`),
    where 42e649f's `_more_may_come()` was False (nothing parsing, reading on): no
    lingering close, the 10 bytes met a closed socket, and the reset cut the 200 to 4 kB
    and dropped the 413."""
    server = world.server()
    body = json.dumps([{"id": BIG_ID, "completion": "abc"}]).encode()
    with _small_buffer_client(server.port) as sock:
        sock.sendall(
            request("POST", "/v1/score", body) + request("POST", "/v1/score", b"x" * 150_000)
        )
        time.sleep(0.5)
        sock.sendall(b"z" * 10)
        time.sleep(1.0)
        done = read_all(sock, 10)
    answers = parse(done.raw)
    assert statuses(done) == [200, 413]  # before: [200], 4,022 of 60,109 bytes
    assert len(answers[0].body) == int(answers[0].headers["content-length"])


def test_sigterm_does_not_wait_for_a_client_that_owes_half_a_request(spec_path: Path) -> None:
    """helper-86: README: SIGTERM "finishes in-flight requests first". A client that sent
    half a request line is in no request's flight, but 42e649f's `shutdown` -> `_close`
    lingered on it (`_begun`), and `serve_http` waited for the lingering connection: the
    server exited after 5 s (or at `--graceful-timeout`, logging "1 requests cut short");
    before 42e649f, at once."""
    server = Server(spec_path, "--workers", "1", "--graceful-timeout", "2", token=None)
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"GET /hea")
            time.sleep(0.3)
            took, log = _stopped(server)
    finally:
        server.stop()
    assert "cut short" not in log, log
    assert took < 1.0  # before: 2.0 s (5 s with the default --graceful-timeout)


ASYNCIO_LAUNCHER = """\
import sys
if __name__ == "__main__":
    sys.modules["uvloop"] = None
    from rewardsmith.cli import main
    sys.exit(main())
"""


def _launcher(loop: str, tmp_path: Path) -> list[str] | None:
    """How to start `serve` on `loop` ("uvloop", the default, or "asyncio")."""
    if loop == "uvloop":
        return None
    launcher = tmp_path / "asyncio_serve.py"
    launcher.write_text(ASYNCIO_LAUNCHER)
    return [sys.executable, str(launcher)]


def test_a_client_gone_before_a_lingering_close_is_let_go_on_asyncio(
    spec_path: Path, tmp_path: Path
) -> None:
    """helper-86: asyncio's loop: a client pipelines a slow request and bytes no request
    has (reading pauses), then closes. At 0.5 s the server writes the 200 and the 400 (the
    send succeeds; the client's kernel answers it with a reset), then `_linger` calls
    `write_eof()`, whose `shutdown(SHUT_WR)` raised ENOTCONN out of `_close` in 42e649f: a
    traceback per connection, and the connection was never closed (`_closed` set, no
    linger timer, reading paused): its socket was held until the server stopped, which
    then waited all of `--graceful-timeout`. (uvloop reports the failed shutdown to its
    callback.)"""
    server = Server(
        spec_path,
        "--workers",
        "1",
        "--graceful-timeout",
        "5",
        token=None,
        launcher=_launcher("asyncio", tmp_path),
    )
    try:
        slow = json.dumps([{"completion": "sleep 0.5"}]).encode()
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", server.port)) as sock:
                sock.sendall(request("POST", "/v1/score", slow, auth=False) + b"NOT HTTP\r\n\r\n")
                time.sleep(0.1)
        time.sleep(1.5)
        took, log = _stopped(server)
    finally:
        server.stop()
    assert "Traceback" not in log, log  # before: OSError: [Errno 107] ... (x3)
    assert took < 2.0  # before: 5 s, "stopping: 3 requests cut short"


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_sigterm_lets_an_idle_connection_with_answers_unread_take_them(
    spec_path: Path, tmp_path: Path, loop: str
) -> None:
    """README: a reset "throws away answers the client has not read yet (... a request's at
    SIGTERM)", and the lingering close is there to keep them. A client with a small socket
    buffer gets a 6 MB answer: the kernel's buffers fill, the transport holds the rest past
    its high-water mark, reading pauses, and the request it pipelines next stays unread in
    the kernel. Its queue is empty, so SIGTERM's `shutdown` calls `_close()` without
    linger: once the transport has handed the answer to the kernel, the socket is closed
    with that request unread, Linux resets it, and what the client had not read yet of the
    answer is lost (54912c9: about 3.8 of 6 MB, then ECONNRESET). helper-87."""
    server = Server(
        spec_path,
        "--workers",
        "1",
        "--max-body-bytes",
        "20000000",
        "--body-timeout",
        "20",
        "--graceful-timeout",
        "20",
        token=None,
        launcher=_launcher(loop, tmp_path),
    )
    try:
        body = json.dumps([{"id": "i" * 6_000_000, "completion": "abc"}]).encode()
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", server.port))
            sock.sendall(request("POST", "/v1/score", body, auth=False))
            time.sleep(3.0)  # answered; the client has read 4 kB of it
            sock.sendall(request("GET", "/health", None, auth=False))  # never read
            time.sleep(0.3)
            server.terminate()
            time.sleep(0.5)
            done = read_all(sock, 20)
    finally:
        server.stop()
    [answer] = parse(done.raw)  # the server's side ends; /health is not read: no answer
    assert len(answer.body) == int(answer.headers["content-length"])  # 3833780 != 6000109


def test_a_refusal_of_bare_line_feeds_after_a_head_keeps_its_body(world: World) -> None:
    """helper-87: a HEAD, then 70,000 bare LFs (llhttp skips them between requests: no
    `on_message_begin`, so `_url` still holds the HEAD's). `_feed` counts them as header
    bytes and refuses with 431 before the parser sees a request; `_as_head_has_it` reads
    the HEAD's `_url` and the parser's last method (HEAD) and drops the 431's body: the
    client is told `content-length: 41` and gets no body. What is refused is no HEAD."""
    server = world.server()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(request("HEAD", "/health", None) + b"\n" * 70_000)
        done = read_all(sock, 10)
    head_answer, _, rest = done.raw.partition(b"\r\n\r\n")  # the 405 to HEAD: no body
    assert head_answer.startswith(b"HTTP/1.1 405 ")
    [refusal] = parse(rest)
    assert refusal.status == 431
    assert len(refusal.body) == int(refusal.headers["content-length"])  # 0 != 41


def test_sigterm_waits_out_a_lingering_close_and_says_no_request_was_cut_short(
    spec_path: Path,
) -> None:
    """helper-87: a client gets its 400 (bytes no request has), reads it, and keeps its
    socket open. The connection lingers (5 s once the answer is in the kernel) and SIGTERM
    waits it out, as nginx does, for at most `--graceful-timeout` (README). 54912c9 then
    warned "1 connections cut off (a request in flight, or answers the client has yet to
    take)", neither of which was true: only requests in flight count now."""
    server = Server(spec_path, "--workers", "1", "--graceful-timeout", "2", token=None)
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"NOT HTTP\r\n\r\n")
            time.sleep(0.3)
            assert sock.recv(1000).startswith(b"HTTP/1.1 400 ")
            took, log = _stopped(server)
    finally:
        server.stop()
    assert "cut" not in log, log
    assert 1.5 < took < 4.0, took  # the graceful timeout, not the whole linger


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_sigterm_does_not_call_an_answered_request_whose_body_is_drained_cut_short(
    spec_path: Path, tmp_path: Path, loop: str
) -> None:
    """helper-88: README: SIGTERM "finishes in-flight requests first, and waits out the lingering
    closes"; the stop's warning counts "requests cut short" (`_Connection.answering`). A
    POST over the body limit gets its 413 before its body (an early answer, `Connection:
    close`), and its body is drained until it ends or `--body-timeout`. The client reads the
    413 and sends no more. At SIGTERM `shutdown` leaves the connection alone (its queue
    holds the answered request), and `serve_http` waits out the drain for at most
    `--graceful-timeout`. e088b73 then warned "stopping: 1 requests cut short": the request
    had its whole answer; only the drain of its body was cut."""
    server = Server(
        spec_path,
        "--workers",
        "1",
        "--max-body-bytes",
        "100000",
        "--body-timeout",
        "30",
        "--graceful-timeout",
        "2",
        token=None,
        launcher=_launcher(loop, tmp_path),
    )
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            head = b"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n"
            sock.sendall(head + b"x" * 1000)
            time.sleep(0.3)
            assert sock.recv(10_000).startswith(b"HTTP/1.1 413 ")
            took, log = _stopped(server)
    finally:
        server.stop()
    assert "cut short" not in log, log  # before: "stopping: 1 requests cut short"
    assert took < 4.0, took  # the graceful timeout (2 s), not the body's (30 s)
