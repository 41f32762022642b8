"""How the server ends a connection, seen by real clients of a real `rewardsmith serve`:
its answers owed arrive whole (a lingering close: closing with bytes of the client unread
would make the kernel reset the connection, and the reset throws away answers not yet
sent), and its own refusals to HEAD have no body. Rows from helper-83; each failed on
e225450.
"""

from __future__ import annotations

import json
import socket
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
