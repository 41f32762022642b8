"""A body over the limit, or a request of too many header fields, pipelined in one read behind
another request, against a real `rewardsmith serve` on loopback with a 5,000-byte body limit
(so that the request fits one socket read): answered as if the read were parsed whole
(helper-69: the deferred 413 of 4bc5915 and c62376f; `_refuse` kept the last refusal)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._raw_http import (
    SLOW_BODY,
    TIMEOUTS_S,
    Exchange,
    exchange,
    request,
    statuses,
)
from .conftest import SPEC, TOKEN, Server

pytest.importorskip("httptools")

LIMIT = 5000
OVER = b"[" + b" " * (LIMIT + 1000) + b"]"
"""A body over the limit (as JSON, it would be an empty list)."""


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    spec = tmp_path_factory.mktemp("redteam69") / "spec.yaml"
    spec.write_text(SPEC)
    args = ["--workers", "1", "--max-queue", "8", "--max-body-bytes", str(LIMIT)]
    args += ["--header-timeout", str(TIMEOUTS_S), "--body-timeout", str(TIMEOUTS_S)]
    args += ["--keep-alive", "1"]
    running = Server(spec, *args, token=TOKEN)
    yield running
    running.stop()


def _chunked(body: bytes, pieces: int) -> bytes:
    size = -(-len(body) // pieces)
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)
    return request("POST", "/v1/score", None, "Transfer-Encoding: chunked") + framed + b"0\r\n\r\n"


def _kept_after_413(done: Exchange) -> bool:
    return (
        statuses(done) == [200, 413, 200]
        and "connection" not in done.answers[1].headers
        and b'"reward":3.0' in done.answers[2].body
    )


@pytest.mark.parametrize("framing", ["content-length", "chunked-1", "chunked-12"], ids=lambda f: f)
def test_a_body_over_the_limit_in_line_in_one_read_keeps_the_connection(
    small: Server, framing: str
) -> None:
    """A slow request, then one whose whole body, over the limit, is in the same read, then
    a third: read whole, the 413 keeps the connection and the third is answered (as with
    Content-Length). Chunked, the 413 went at once with `Connection: close`, and the third
    request was never answered (the deferral of 4bc5915 covers Content-Length only)."""
    if framing == "content-length":
        over = request("POST", "/v1/score", OVER)
    else:
        over = _chunked(OVER, int(framing.split("-")[1]))
    one_read = (
        request("POST", "/v1/score", SLOW_BODY)
        + over
        + request("POST", "/v1/score", b'[{"completion":"abc"}]')
    )
    assert len(one_read) < 16_000  # one loopback segment, one read of the server
    done = exchange(small.port, [one_read], read_s=10)
    assert _kept_after_413(done), done.raw[:800]


@pytest.mark.parametrize("then", ["nul-header", "upgrade"])
def test_too_many_header_fields_in_line_stay_431_whatever_follows(small: Server, then: str) -> None:
    """A request with 101 header fields waiting in line behind a slow one gets 431; bytes
    the parser refuses later in the same read (a NUL in a header, an upgrade) made it a
    400: `_refuse` kept the last refusal, not the first."""
    fields = "".join(f"x-f{i}: v\r\n" for i in range(101))
    upgrade = "Connection: Upgrade\r\nUpgrade: h2c\r\n"
    tail = "x-bad: a\x00b\r\n" if then == "nul-header" else upgrade
    second = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n{fields}{tail}\r\n".encode("latin-1")
    done = exchange(small.port, [request("POST", "/v1/score", SLOW_BODY) + second], read_s=10)
    assert statuses(done) == [200, 431] and done.closed, done.raw[:800]


@pytest.mark.parametrize("before", ["another-413", "130-health"])
def test_a_body_over_the_limit_parsed_after_its_turn_came_keeps_the_connection(
    small: Server, before: str
) -> None:
    """A slow request, then (in the same read) requests answered at once, then one over the
    limit with its whole body, then a last one. Read whole, every one of them waited in line
    behind the slow one: the 413 keeps the connection, the last is answered. Sliced, the
    over-limit request's headers were parsed only once those before it were answered, so it
    counted as first in line: 413 at once with `Connection: close`, the last never answered."""
    if before == "another-413":
        ahead = request("POST", "/v1/score", OVER)
        expected = [200, 413, 413, 200]
    else:
        ahead = b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n" * 130  # past the first 4 KiB slice
        expected = [200] + [200] * 130 + [413, 200]
    one_read = (
        request("POST", "/v1/score", SLOW_BODY)
        + ahead
        + request("POST", "/v1/score", OVER)
        + request("POST", "/v1/score", b'[{"completion":"abc"}]')
    )
    assert len(one_read) < 16_000
    done = exchange(small.port, [one_read], read_s=10)
    assert statuses(done) == expected, done.raw[-600:]
    assert "connection" not in done.answers[-2].headers
