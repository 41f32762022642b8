"""Hostile and broken clients against a real `rewardsmith serve`: a poisoned request among
innocent ones, JSON nested too deep, connections that send slowly or not at all, large bodies,
and RFC 7235's case-insensitive auth scheme."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith.server import _app

from .conftest import TOKEN, Server, served_in_thread

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
DEEP = 600


def deep_json(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


@pytest.fixture(scope="module")
def strict_server(spec_path: Path) -> Iterator[Server]:
    """Short header and body deadlines, so that slow clients are cut off quickly."""
    running = Server(spec_path, "--workers", "1", "--header-timeout", "2", "--body-timeout", "2")
    yield running
    running.stop()


def test_a_poisoned_request_among_five_innocent_ones_fails_alone(strict_server: Server) -> None:
    innocent = [
        [{"id": f"{j}-{i}", "completion": "x" * (i + j)} for i in range(4)] for j in range(5)
    ]
    reference = f'{{"id": "p", "completion": "x", "reference": {deep_json(DEEP)}}}'
    poisoned = f'{{"samples": [{reference}]}}'

    async def scenario() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            base_url=strict_server.url, headers=HEADERS, timeout=60
        ) as http:
            requests = [http.post("/v1/score", json={"samples": s}) for s in innocent[:3]]
            requests.append(
                http.post(
                    "/v1/score", content=poisoned, headers={"Content-Type": "application/json"}
                )
            )
            requests += [http.post("/v1/score", json={"samples": s}) for s in innocent[3:]]
            return await asyncio.gather(*requests)

    responses = asyncio.run(scenario())
    bad = responses.pop(3)
    assert bad.status_code == 422, bad.text
    assert "nested more than 100 levels deep" in bad.text
    for j, response in enumerate(responses):
        assert response.status_code == 200, response.text
        assert [r["reward"] for r in response.json()["results"]] == [float(i + j) for i in range(4)]


@pytest.mark.parametrize(
    ("route", "body"),
    [
        (
            "/v1/score",
            f'{{"samples": [{{"completion": "x", "metadata": {{"a": {deep_json(DEEP)}}}}}]}}',
        ),
        ("/v1/score", deep_json(100_000)),  # beyond what the JSON parser itself can nest
        ("/get_reward", f'{{"query": ["q"], "labels": [{deep_json(DEEP)}]}}'),
    ],
    ids=["sample", "body", "openrlhf-label"],
)
def test_deep_nesting_is_422_never_500(strict_server: Server, route: str, body: str) -> None:
    headers = {**HEADERS, "Content-Type": "application/json"}
    response = httpx.post(f"{strict_server.url}{route}", content=body, headers=headers, timeout=60)
    assert response.status_code == 422, response.text
    assert "nested more than 100 levels deep" in response.text


def _read_until_closed(sock: socket.socket, deadline: float) -> bytes | None:
    """Everything the server sends until it closes the connection; None if it never does."""
    received = b""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, min(0.5, deadline - time.monotonic())))
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk
    return None


def test_slow_and_silent_connections_are_cut_off(strict_server: Server) -> None:
    host, port = "127.0.0.1", strict_server.port
    header = f"POST /v1/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
    body_header = header + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    silent = [socket.create_connection((host, port)) for _ in range(10)]
    slow_headers = [socket.create_connection((host, port)) for _ in range(10)]
    slow_bodies = [socket.create_connection((host, port)) for _ in range(10)]
    try:
        for sock in slow_bodies:
            sock.sendall(body_header.encode() + b'{"samples": [')
        # headers a byte at a time (slowloris): every byte arrives well within any idle limit
        started = time.monotonic()
        for position in range(12):
            for sock in slow_headers:
                with contextlib.suppress(OSError):  # already cut off
                    sock.sendall(header[position].encode())
            time.sleep(0.4)
        deadline = started + 60  # a bound for a loaded machine; the deadlines are 2 s
        for sock in silent:  # nothing was asked: closed without an answer
            assert _read_until_closed(sock, deadline) == b"", "connection left open"
        for sock in slow_headers + slow_bodies:
            answer = _read_until_closed(sock, deadline)
            assert answer is not None, "connection left open"
            assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
    finally:
        for sock in silent + slow_headers + slow_bodies:
            sock.close()
    # the server still answers everybody else
    ok = httpx.post(f"{strict_server.url}/v1/score", json=[{"completion": "abc"}], headers=HEADERS)
    assert ok.status_code == 200 and ok.json()["results"][0]["reward"] == 3.0


@pytest.mark.parametrize("value", [f"bearer {TOKEN}", f"BEARER {TOKEN}", f"Bearer   {TOKEN}"])
def test_the_auth_scheme_is_case_insensitive(strict_server: Server, value: str) -> None:
    response = httpx.post(
        f"{strict_server.url}/v1/score",
        json=[{"completion": "ab"}],
        headers={"Authorization": value},
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "value", [f"Basic {TOKEN}", f"Bearer{TOKEN}", f"Bearer {TOKEN}x", "Bearer"]
)
def test_other_credentials_are_refused(strict_server: Server, value: str) -> None:
    response = httpx.post(
        f"{strict_server.url}/v1/score",
        json=[{"completion": "ab"}],
        headers={"Authorization": value},
    )
    assert response.status_code == 401


def test_large_bodies_are_parsed_off_the_event_loop(
    spec_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the JSON of a request is parsed and checked: on the event loop for a small body,
    in a worker thread for a large one (so /health and the others are not held up)."""
    on_loop: list[bool] = []
    parse = _app._parse_json

    def recording(body: bytes) -> object:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        return parse(body)

    monkeypatch.setattr(_app, "_parse_json", recording)
    app = _app.create_app(spec_path, workers=1)
    small = [{"completion": "ab"}]
    large = [{"completion": "x" * 1000, "metadata": {"pad": "y" * 10_000}} for _ in range(100)]
    with served_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        assert client.post("/v1/score", json=small).status_code == 200
        response = client.post("/v1/score", json=large)
        assert response.status_code == 200
        assert [r["reward"] for r in response.json()["results"]] == [1000.0] * 100
        label = {"query": ["q" * 2000] * 200, "labels": ["z" * 2000] * 200}
        assert client.post("/get_reward", json=label).status_code == 200
    assert on_loop == [True, False, False]


def test_an_answer_before_the_body_closes_the_connection_after_it(
    strict_server: Server, spec_path: Path
) -> None:
    """401 (no token) and 404 to a 2 MB body: the answer arrives whole and says
    `Connection: close`; the connection closes once the body is in, not at the deadline."""
    body = b"[" + b" " * (2 * 2**20) + b"]"
    for path, status in (("/v1/score", 401), ("/nowhere", 404)):
        answer = httpx.post(f"{strict_server.url}{path}", content=body, timeout=60)
        assert answer.status_code == status
        assert answer.headers["connection"] == "close"
    patient = Server(spec_path, "--workers", "1", "--body-timeout", "600")
    try:
        head = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
        with socket.create_connection(("127.0.0.1", patient.port)) as sock:
            sock.sendall(head)
            time.sleep(0.5)  # answered before the body comes
            sock.sendall(b"0123456789")
            answer = _read_until_closed(sock, time.monotonic() + 120)  # well before 600 s
        assert answer is not None, "left open until the body deadline"
        assert answer.startswith(b"HTTP/1.1 401"), answer[:80]
    finally:
        patient.stop()


@pytest.mark.parametrize(("size", "status"), [(32 * 2**10, 200), (100 * 2**10, 431)])
def test_request_headers_are_capped_at_64_kib(
    strict_server: Server, size: int, status: int
) -> None:
    request = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * size + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", strict_server.port)) as sock:
        sock.sendall(request)
        answer = _read_until_closed(sock, time.monotonic() + 60) if status == 431 else None
        if answer is None:
            answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 %d" % status), answer[:80]


def test_headers_whose_blank_line_spans_two_reads_are_not_charged_the_body(
    strict_server: Server,
) -> None:
    """The blank line that ends the headers split between two reads (`\\r\\n` | `\\r\\n`,
    then a 100 KiB body in the same read): the body is not counted as headers (no 431)."""
    samples = b'{"samples": [{"id": "a", "completion": "' + b"x" * (100 * 2**10) + b'"}]}'
    head = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n" % TOKEN.encode()
    head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(samples)
    with socket.create_connection(("127.0.0.1", strict_server.port)) as sock:
        sock.sendall(head)
        time.sleep(0.5)  # the server reads the headers without their blank line
        sock.sendall(b"\r\n" + samples)
        sock.settimeout(60)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
