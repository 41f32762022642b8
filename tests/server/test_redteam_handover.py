"""Red team of the cheaper request path: the engine's future awaited directly, the disconnect
noticed by the connection, the depth walk skipped on a bracket count, the per-bucket latency
histogram. Real `rewardsmith serve` processes on loopback.

Every row is an attack the server withstands (regression guards). The disconnect row was a
README untruth when found (a watch started only after 0.1 s missed a client gone sooner);
the connection now notices every disconnect.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import TOKEN, Server

HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
DEPTH_LIMIT = 100 + 2
"""The body's limit: a sample's 100 levels plus the body's object and list."""


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def sample_nested(depth: int) -> str:
    return f'{{"samples": [{{"completion": "x", "metadata": {{"a": {nested(depth)}}}}}]}}'


ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be"]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(
    ("text", "deep"),
    [
        (nested(DEPTH_LIMIT + 1), True),
        (sample_nested(120), True),
        (
            '{"samples": [{"completion": "\\u005b\\u007b", "metadata": {"a": ' + nested(5) + "}}]}",
            False,
        ),
    ],
    ids=["bare-list-103", "metadata-120", "escaped-brackets"],
)
def test_nesting_is_refused_in_every_encoding_json_accepts(
    server: Server, encoding: str, text: str, deep: bool
) -> None:
    """The bracket count runs on the raw bytes: in UTF-16 and UTF-32 every `[` and `{` still
    holds its byte, so a deep body never slips past the walk; an escaped bracket is text."""
    body = text.encode(encoding)
    response = httpx.post(f"{server.url}/v1/score", content=body, headers=HEADERS, timeout=60)
    if deep:
        assert response.status_code == 422, response.text
        assert "nested more than 100 levels deep" in response.text
    else:
        assert response.status_code == 200, response.text
        assert response.json()["results"][0]["reward"] == 2.0


def test_the_histogram_stays_cumulative_and_no_server_header_is_sent(server: Server) -> None:
    with httpx.Client(base_url=server.url, headers=HEADERS, timeout=30) as http:
        for text in ["a", "sleep 0.3", "bb", "sleep 0.06"]:
            assert http.post("/v1/score", json={"samples": [{"completion": text}]}).is_success
        assert http.get("/nowhere").status_code == 404
        answer = http.get("/metrics")
    assert "server" not in answer.headers
    rows = re.findall(
        r'rewardsmith_request_duration_seconds_bucket\{route="([^"]+)",le="([^"]+)"\} (\d+)',
        answer.text,
    )
    routes = {route for route, _, _ in rows}
    assert {"/v1/score", "other"} <= routes
    for route in routes:
        counts = [int(n) for r, _, n in rows if r == route]
        total = re.search(
            rf'rewardsmith_request_duration_seconds_count\{{route="{re.escape(route)}"\}} (\d+)',
            answer.text,
        )
        assert total is not None
        assert counts == sorted(counts) and counts[-1] == int(total.group(1))
    score = [int(n) for r, le, n in rows if r == "/v1/score" and le in {"0.25", "+Inf"}]
    assert score[0] < score[1]  # the 0.3 s request sits above 0.25 s, below +Inf


# -- a client gone at once ------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_worker_server(spec_path: Path) -> Iterator[Server]:
    running = Server(spec_path, "--workers", "2")
    yield running
    running.stop()


def metric(server: Server, name: str) -> float:
    text = httpx.get(f"{server.url}/metrics", headers=HEADERS, timeout=30).text
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_client_gone_right_after_its_request_is_noticed_and_counted(
    two_worker_server: Server,
) -> None:
    """A trainer killed 0.1 s after sending: its request is cancelled and counted as
    `disconnected`, never answered nor counted as scored."""
    server = two_worker_server
    before = metric(server, 'rewardsmith_rejected_total{reason="disconnected"}')
    scored_before = metric(server, 'rewardsmith_samples_total{route="/v1/score"}')
    body = b'{"samples": [{"completion": "sleep 0.5"}, {"completion": "sleep 0.5"}]}'
    head = (
        f"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head + body)
        time.sleep(0.1)  # the request is in; the trainer that sent it is killed
    time.sleep(2.0)
    scored = metric(server, 'rewardsmith_samples_total{route="/v1/score"}') - scored_before
    gone = metric(server, 'rewardsmith_rejected_total{reason="disconnected"}') - before
    assert (gone, scored) == (1, 0), f"disconnected +{gone:g}, scored: {scored:g}"
