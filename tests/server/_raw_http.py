"""Raw HTTP for the server's red-team tables: requests as bytes no well-behaved client sends,
exchanges read until the server closes, answers parsed, and the servers they run against."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import SPEC, TOKEN, Server

TIMEOUTS_S = 3
"""The attacked servers' header and body timeouts."""
READ_S = 30.0
"""A connection not closed by then is held open (a bound, not a speed target)."""
OK_BODY = json.dumps([{"completion": "abc"}]).encode()
SLOW_BODY = json.dumps([{"completion": "sleep 0.5"}]).encode()
"""One sample the worker takes half a second over: its request is still being scored when
what is pipelined behind it arrives."""
CHUNKED = "Transfer-Encoding: chunked"
NINE = b'[{"completion":"abcdefghi"}]'
"""0x1c bytes, scored 9.0."""


# -- the world the attacks run in --------------------------------------------------------


@dataclass
class World:
    """Lazily started servers shared by the rows of this module."""

    tmp: Path
    started: dict[str, Server] = field(default_factory=dict)

    def server(self, name: str = "token") -> Server:
        """`token`: bearer token, 1 worker, a 100 kB body limit, a queue of 8 samples, 3 s
        header and body timeouts, 1 s keep-alive. `open`: the same without a token, with
        the access log on. `patient`: `token` with 60 s header and body timeouts (a flood
        that must not be cut short by a deadline on a slow machine)."""
        if name not in self.started:
            spec = self.tmp / "spec.yaml"
            spec.write_text(SPEC)
            timeout = str(60 if name == "patient" else TIMEOUTS_S)
            args = ["--workers", "1", "--max-queue", "8", "--max-body-bytes", "100000"]
            args += ["--header-timeout", timeout, "--body-timeout", timeout]
            args += ["--keep-alive", "1"]
            if name == "open":
                args += ["--access-log", "--log-level", "info"]
            token = None if name == "open" else TOKEN
            self.started[name] = Server(spec, *args, token=token)
        return self.started[name]

    def close(self) -> None:
        for running in self.started.values():
            running.stop()


# -- raw HTTP: what no well-behaved client sends -------------------------------------------


def request(
    method: str,
    target: str,
    body: bytes | None = b"",
    *headers: str,
    auth: bool = True,
    version: str = "HTTP/1.1",
) -> bytes:
    """A raw request; `body=None` sends no Content-Length (and no body)."""
    lines = [f"{method} {target} {version}", "Host: 127.0.0.1"]
    if auth:
        lines.append(f"Authorization: Bearer {TOKEN}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    lines += headers
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def chunked(target: str, *chunks: bytes, tail: bytes = b"0\r\n\r\n", auth: bool = True) -> bytes:
    """A chunked POST: each chunk framed with its size, then `tail` (the last chunk and
    its trailers)."""
    framed = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
    return request("POST", target, None, CHUNKED, auth=auth) + framed + tail


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Exchange:
    answers: list[Answer]
    closed: bool
    """The server closed (or reset) the connection before the read deadline."""
    raw: bytes


def parse(raw: bytes) -> list[Answer]:
    """The HTTP/1.1 answers in `raw`, in order (each with a Content-Length; a 100 Continue
    is skipped)."""
    answers = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        match = re.match(rb"HTTP/1\.[01] (\d{3})", head)
        if not sep or match is None:
            break
        headers = {}
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            headers[name.decode("latin-1").lower()] = value.decode("latin-1").strip()
        length = int(headers.get("content-length", "0"))
        if match.group(1) != b"100":
            answers.append(Answer(int(match.group(1)), headers, rest[:length]))
        raw = rest[length:]
    return answers


def exchange(port: int, parts: list[bytes | float], read_s: float = READ_S) -> Exchange:
    """Send `parts` (bytes, or seconds to pause), then read until the server closes."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for part in parts:
            if isinstance(part, float):
                time.sleep(part)
            else:
                try:
                    sock.sendall(part)
                except OSError:  # the server already closed: what it sent is still read
                    break
        return read_all(sock, read_s)


def read_all(sock: socket.socket, read_s: float = READ_S) -> Exchange:
    raw, closed = b"", False
    deadline = time.monotonic() + read_s
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        raw += chunk
    return Exchange(parse(raw), closed, raw)


def statuses(done: Exchange) -> list[int]:
    return [answer.status for answer in done.answers]


@dataclass
class Row:
    """One attack: what is sent, what happened when this file was written, and the check
    of what should happen."""

    attack: str
    parts: list[bytes | float]
    today: str
    should: Callable[[Exchange], bool]
    server: str = "token"


def row(*args: Any, hole: str | None = None, **kwargs: Any) -> Any:
    made = Row(*args, **kwargs)
    marks = [pytest.mark.xfail(strict=True, reason=f"redteam: {hole}")] if hole else []
    return pytest.param(made, id=made.attack, marks=marks)


def answered(*codes: int) -> Callable[[Exchange], bool]:
    """Exactly these answers, in order."""
    return lambda done: statuses(done) == list(codes)


def answered_then_closed(*codes: int) -> Callable[[Exchange], bool]:
    return lambda done: statuses(done) == list(codes) and done.closed


def said_close_then_closed(code: int) -> Callable[[Exchange], bool]:
    """One answer, `code`, saying `Connection: close`, and the connection closed."""
    return lambda done: (
        statuses(done) == [code]
        and done.answers[0].headers.get("connection") == "close"
        and done.closed
    )


def refused_400(done: Exchange) -> bool:
    """The parser's 400, alone, and the connection closed: nothing after it is read."""
    return statuses(done) == [400] and done.closed


def rewards(done: Exchange) -> list[float]:
    """The first reward of each answer (None for an answer without one)."""
    found = [re.search(rb'"reward":([0-9.]+)', a.body) for a in done.answers]
    return [float(m.group(1)) if m else None for m in found]  # type: ignore[misc]


def health(server: Server) -> dict[str, Any]:
    return httpx.get(f"{server.url}/health", timeout=READ_S).json()  # type: ignore[no-any-return]


def rejected(server: Server, reason: str) -> float:
    text = httpx.get(
        f"{server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=READ_S
    ).text
    match = re.search(rf'rewardsmith_rejected_total{{reason="{reason}"}} (\S+)', text)
    return float(match.group(1)) if match else 0.0


def wait_until(condition: Callable[[], bool], within_s: float = 60) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def rss_mib(server: Server) -> float:
    with open(f"/proc/{server.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def server_holds(server_port: int, client_ports: set[int]) -> set[int]:
    """The client ports the server still has an established connection with (Linux)."""
    held = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if state != "01" or int(local.rsplit(":", 1)[1], 16) != server_port:
                continue
            port = int(remote.rsplit(":", 1)[1], 16)
            if port in client_ports:
                held.add(port)
    return held


needs_proc = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="Linux /proc")
