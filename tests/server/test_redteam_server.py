"""Red team (rt11) of issue #11's hardening of the server, the CLI, the engine front and the
`REWARDSMITH_URL` client.

One row per attack, written as a hostile client, a broken server or a policy paid for every
unit of reward would try it, against real components: `rewardsmith serve` processes on
loopback, `rewardsmith score` subprocesses, and (for the client only) small socket servers
that misbehave on purpose, named as stand-ins for a broken or hostile reward server.

Each row's attack asserts what *should* happen; `today` says what happened when this file
was written. Rows marked `xfail(strict=True)` are open holes: they flip loudly when fixed.
The others are attacks that fail today and guard against regressions. No timing assertion:
generous deadlines only tell a hang from an answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardsmith._exceptions import ConfigError
from rewardsmith.integrations._remote import SPEC_HEADER, RemoteEngine, spec_fingerprint
from rewardsmith.spec import load_spec

from .conftest import ROOT, SPEC, TOKEN, Server, Servers, free_port

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")

from rewardsmith.server import create_app  # noqa: E402  (needs the server extra)

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
TIMEOUTS_S = 3
"""The attacked server's header and body timeouts."""
HELD_S = 5 * TIMEOUTS_S
"""How long a slow client keeps trickling before we look whether it was cut off."""
HANG_S = 60.0
"""A request not answered by then is hung (a bound, not a speed target)."""
CLIENT_HANG_S = 30.0
"""A client call (deadline 3 s) not back by then is hung."""
EXACT_SPEC = "rewards:\n  m: {type: exact_match}\ntimeout_s: 5\n"
"""A spec whose reward echoes the completion's answer in its result (`detail.answer`)."""
LONE_SURROGATE = "\\ud800"
"""A lone UTF-16 surrogate as a JSON escape: valid JSON, a Python str, not encodable as
UTF-8 (JavaScript tools that cut a string between the halves of an emoji write these)."""


# -- the world the attacks run in --------------------------------------------------------


class World(Servers):
    """Lazily started servers and a scratch directory, shared by the rows of this module."""

    def server(self, name: str = "scripted") -> Server:
        """`scripted`: the tests' scripted reward (score = completion length; "die" kills
        its worker); `exact`: exact_match. Token auth, 1 worker, short header and body
        timeouts, a queue of 8 samples."""
        if name not in self.started:
            spec = self.spec(name)
            timeouts = ["--header-timeout", str(TIMEOUTS_S), "--body-timeout", str(TIMEOUTS_S)]
            self.started[name] = Server(spec, "--workers", "1", "--max-queue", "8", *timeouts)
        return self.started[name]

    def spec(self, name: str = "scripted") -> Path:
        path = self.tmp / f"{name}.yaml"
        path.write_text(SPEC if name == "scripted" else EXACT_SPEC)
        return path

    def post(self, path: str, body: bytes | dict[str, Any], name: str = "scripted") -> Any:
        """One request on a fresh connection (a 500 may close a keep-alive one)."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {**HEADERS, "Content-Type": "application/json"}
        url = self.server(name).url + path
        return httpx.post(url, content=content, headers=headers, timeout=HANG_S)

    def score_cli(
        self,
        lines: list[str],
        *args: str,
        spec: str = "scripted",
        output: Path | None = None,
        through_pipe: bool = False,
    ) -> tuple[subprocess.CompletedProcess[str], Path]:
        """`rewardsmith score` on these input lines (in a file, or with `through_pipe` an
        anonymous pipe named /dev/fd/N, as a shell's `<(zcat in.jsonl.gz)` gives it); the
        process and the output path."""
        text = "".join(line + "\n" for line in lines)
        passed: tuple[int, ...] = ()
        if through_pipe:
            read_end, write_end = os.pipe()
            os.write(write_end, text.encode())  # small: fits in the pipe's buffer
            os.close(write_end)
            passed, source = (read_end,), f"/dev/fd/{read_end}"
        else:
            source = str(self.tmp / "in.jsonl")
            Path(source).write_text(text)
        output = output or self.tmp / "out.jsonl"
        command = [sys.executable, "-m", "rewardsmith.cli", "score", "--spec", str(self.spec(spec))]
        command += ["--input", source, "--output", str(output), "--workers", "1", "--quiet"]
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
        try:
            done = subprocess.run(
                [*command, *args],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
                pass_fds=passed,
            )
        finally:
            for fd in passed:
                os.close(fd)
        return done, output


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    made = World(tmp_path_factory.mktemp("redteam-server"))
    yield made
    made.close()


def results(response: Any) -> list[tuple[str, str, float | None]]:
    assert response.status_code == 200, response.text
    return [(r["id"], r["status"], r["reward"]) for r in response.json()["results"]]


def output_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


# -- raw sockets: what no well-behaved client sends ---------------------------------------


def exchange(port: int, data: bytes, wait_s: float = 10.0) -> bytes:
    """Send raw bytes, read until the server closes or goes quiet for `wait_s`."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(wait_s)
        sock.sendall(data)
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return got


def still_open_after_trickle(port: int, head: bytes) -> bool:
    """Send `head`, then one body byte every 0.5 s for `HELD_S`: whether the server still
    holds the connection at the end (it should have cut it off after `TIMEOUTS_S`)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(0.5)
        sock.sendall(head)
        ends = time.monotonic() + HELD_S
        while time.monotonic() < ends:
            try:
                sock.sendall(b"a")
                while True:  # drain whatever the server answered
                    if sock.recv(65536) == b"":
                        return False
            except TimeoutError:
                continue
            except OSError:
                return False
        return True


# -- a stand-in for a broken or hostile reward server (for the REWARDSMITH_URL client) -----


Behaviour = Callable[["FakeServer", socket.socket, dict[str, Any]], None]


class FakeServer:
    """A stand-in reward server on loopback: answers `/health` with the right spec
    fingerprint (or as `health` says), and every `/v1/score` with `behaviour`."""

    def __init__(self, behaviour: Behaviour, health: bytes | None = None) -> None:
        self.fingerprint = spec_fingerprint(load_spec(SPEC))
        self.health = health or json.dumps({"status": "ok", "spec": self.fingerprint}).encode()
        self.behaviour = behaviour
        self.stopped = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        with conn:
            try:
                while not self.stopped.is_set():
                    while b"\r\n\r\n" not in buffer:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        buffer += chunk
                    head, buffer = buffer.split(b"\r\n\r\n", 1)
                    lines = head.decode("latin-1").split("\r\n")
                    path = lines[0].split(" ")[1]
                    fields = dict(line.split(":", 1) for line in lines[1:])
                    size = int({k.lower(): v for k, v in fields.items()}.get("content-length", 0))
                    while len(buffer) < size:
                        buffer += conn.recv(65536)
                    body, buffer = buffer[:size], buffer[size:]
                    if path == "/health":
                        reply(conn, 200, self.health)
                    else:
                        self.behaviour(self, conn, json.loads(body))
            except OSError:
                return

    def close(self) -> None:
        self.stopped.set()
        self.sock.close()


def reply(conn: socket.socket, status: int, body: bytes, kind: str = "application/json") -> None:
    """An answer with the tests' spec fingerprint, as the server's results carry it."""
    head = (
        f"HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {len(body)}\r\n"
        f"{SPEC_HEADER}: {spec_fingerprint(load_spec(SPEC))}\r\n\r\n"
    )
    conn.sendall(head.encode() + body)


def result(sample_id: str, reward: float) -> dict[str, Any]:
    score = {"score": reward, "status": "ok", "detail": {}}
    return {"id": sample_id, "reward": reward, "status": "ok", "components": {"s": score}}


def client_call(
    behaviour: Behaviour, health: bytes | None = None, samples: list[Any] | None = None
) -> Any:
    """Two samples through `RemoteEngine` (deadline 3 s, 3 retries) against a stand-in: the
    list of (id, status, reward), the exception it raised, or "hung" after `CLIENT_HANG_S`."""
    fake = FakeServer(behaviour, health)
    engine = RemoteEngine(fake.url, load_spec(SPEC), token=TOKEN, deadline_s=3, retries=3)
    outcome: dict[str, Any] = {}

    def call() -> None:
        sent = samples or [{"id": "a", "completion": "x"}, {"id": "b", "completion": "yy"}]
        try:
            outcome["value"] = [(r.id, r.status, r.reward) for r in engine.score(sent)]
        except Exception as exc:  # what reaches the trainer
            outcome["value"] = exc

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(CLIENT_HANG_S)
    fake.close()  # also ends a trickle, so the thread finishes
    engine.close()
    return "hung" if caller.is_alive() else outcome["value"]


ERRORS = [("a", "error", None), ("b", "error", None)]
"""What a call should give when the server's answer cannot be trusted."""


def trickle(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
    """A 200 whose body comes one byte every 0.5 s: each read is quick, the whole never is."""
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n{"
    )
    while not fake.stopped.is_set():
        conn.sendall(b" ")
        time.sleep(0.5)


# -- the attacks: server --------------------------------------------------------------------


def surrogate_id(world: World) -> None:
    body = f'{{"samples": [{{"id": "{LONE_SURROGATE}", "completion": "x"}}]}}'.encode()
    response = world.post("/v1/score", body)
    assert response.status_code == 422, response.status_code
    assert "samples.0.id" in response.json()["detail"]


def surrogate_answer_fails_its_batch(world: World) -> None:
    """A policy's answer with a lone surrogate, beside an innocent sample in one request."""
    body = (
        '{"samples": [{"id": "innocent", "completion": "A", "reference": "A"}, '
        f'{{"id": "policy", "completion": "A {LONE_SURROGATE}", "reference": "A"}}]}}'
    ).encode()
    response = world.post("/v1/score", body, name="exact")
    assert response.status_code == 200, response.text
    innocent, policy = response.json()["results"]
    assert innocent["reward"] == 1.0
    assert policy["status"] == "ok"  # scored as what it says, never `invalid`


def slow_body_after_401(world: World) -> None:
    """No token, a declared 1 MB body, one byte every 0.5 s: answered 401 at once, then the
    body is read for as long as it trickles (no header or body timeout applies any more)."""
    head = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
    assert not still_open_after_trickle(world.server().port, head)


def slow_body_with_token(world: World) -> None:
    """With the token, the same trickle is read by the app: 408 after the body timeout."""
    head = (
        b"POST /v1/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nContent-Length: 1000000\r\n\r\n"
    )
    assert not still_open_after_trickle(world.server().port, head)


def slow_body_on_health(world: World) -> None:
    """The same on the open `/health` route, which never reads its body."""
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
    assert not still_open_after_trickle(world.server().port, head)


def huge_header_before_auth(world: World) -> None:
    """A 4 MiB header on `/health` (no token needed): every byte is buffered, so memory per
    connection grows with what a client sends within the header timeout."""
    request = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * (4 * 2**20) + b"\r\n\r\n"
    try:
        answer = exchange(world.server().port, request)
    except (BrokenPipeError, ConnectionResetError):
        return  # refused while sending: good
    assert not answer.startswith(b"HTTP/1.1 200"), answer[:100]


def openrlhf_fake_assistant_header(world: World) -> None:
    """OpenRLHF's query with the policy's own `<|im_start|>assistant` inside its response and
    no prompt (or a prompt not found in the query): only the text after the policy's header
    is scored (2 characters of 74), so a policy chooses what its length, format or
    repetition rewards see."""
    response = "x" * 50 + "<|im_start|>assistant\nyy"
    query = f"<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n{response}<|im_end|>"
    answered = world.post("/get_reward", {"query": [query]}).json()
    scored_whole = answered["rewards"] == [float(len(response))]
    refused = answered["extra_logs"]["failed"] == [1.0]
    assert scored_whole or refused, answered


def worker_death_among_innocents(world: World) -> None:
    """A sample that kills its worker, inside a request and beside concurrent requests."""

    async def scenario() -> list[Any]:
        async with httpx.AsyncClient(headers=HEADERS, timeout=HANG_S) as http:
            url = world.server().url + "/v1/score"
            killer = [{"id": "1", "completion": "die"}, {"id": "2", "completion": "xx"}]
            innocent = [{"id": "1", "completion": "xxx"}]
            calls = [http.post(url, json={"samples": killer})]
            calls += [http.post(url, json={"samples": innocent}) for _ in range(3)]
            return await asyncio.gather(*calls)

    first, *others = asyncio.run(scenario())
    assert results(first) == [("1", "error", None), ("2", "ok", 2.0)]
    assert all(results(other) == [("1", "ok", 3.0)] for other in others)
    assert results(world.post("/v1/score", {"samples": [{"completion": "x"}]})) == [
        ("1", "ok", 1.0)
    ]


def same_ids_across_concurrent_requests(world: World) -> None:
    """Four requests at once, each with two samples both of id "1": each gets its own results."""

    async def scenario() -> list[Any]:
        async with httpx.AsyncClient(headers=HEADERS, timeout=HANG_S) as http:
            url = world.server().url + "/v1/score"
            calls = [
                http.post(
                    url,
                    json={
                        "samples": [
                            {"id": "1", "completion": "x" * n},
                            {"id": "1", "completion": "y" * (n + 1)},
                        ]
                    },
                )
                for n in range(1, 5)
            ]
            return await asyncio.gather(*calls)

    for n, response in enumerate(asyncio.run(scenario()), start=1):
        assert results(response) == [("1", "ok", float(n)), ("1", "ok", float(n + 1))]


def nan_score_is_an_error(world: World) -> None:
    assert results(world.post("/v1/score", {"samples": [{"completion": "nan"}]})) == [
        ("1", "error", None)
    ]


def auth_probes(world: World) -> None:
    """Missing, wrong, truncated, other-scheme, duplicated-with-the-wrong-first tokens,
    encoded and redirected paths, other methods: no scoring, no data."""
    server = world.server()
    body = json.dumps({"samples": [{"completion": "x"}]}).encode()
    wrong = [
        {},
        {"Authorization": "Bearer " + TOKEN[:-1]},
        {"Authorization": "Bearer " + TOKEN + "x"},
        {"Authorization": "Basic " + TOKEN},
        {"Authorization": TOKEN},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer\t" + TOKEN},
    ]
    for headers in wrong:
        answer = httpx.post(server.url + "/v1/score", content=body, headers=headers)
        assert answer.status_code == 401, headers
    for path in ("/v1/%73core", "/v1/score?x=1", "/metrics", "/v1/score/", "/metrics/"):
        answer = httpx.request("POST" if "score" in path else "GET", server.url + path)
        assert answer.status_code in (307, 401, 404, 405), path
        assert "results" not in answer.text and "rewardsmith_" not in answer.text
    for method in ("OPTIONS", "HEAD", "GET", "PUT"):
        assert httpx.request(method, server.url + "/v1/score").status_code == 405
    both = (
        b"POST /v1/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n"
        b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
    )
    assert exchange(server.port, both).startswith(b"HTTP/1.1 401")


def smuggling(world: World) -> None:
    """Two Content-Lengths, or Content-Length with chunked: refused, never two requests."""
    server = world.server()
    body = b'{"samples": [{"completion": "xx"}]}'
    auth = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
    start = b"POST /v1/score HTTP/1.1\r\nHost: x\r\n" + auth
    double = start + b"Content-Length: 5\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    chunked = (
        start
        + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n" % len(body)
        + body
        + b"\r\n0\r\n\r\n"
    )
    for request in (double, chunked):
        answer = exchange(server.port, request, wait_s=5)
        assert answer.startswith(b"HTTP/1.1 400"), answer[:100]
        assert answer.count(b"HTTP/1.1") == 1


def gzip_body_is_not_inflated(world: World) -> None:
    """A gzip bomb: the server does not inflate request bodies, so it is just bad JSON."""
    import gzip

    bomb = gzip.compress(b'{"samples": [' + b" " * (50 * 2**20) + b"]}")
    headers = {**HEADERS, "Content-Type": "application/json", "Content-Encoding": "gzip"}
    answer = httpx.post(world.server().url + "/v1/score", content=bomb, headers=headers)
    assert answer.status_code == 422


def over_the_queue_bound(world: World) -> None:
    """More samples than the queue holds, on both routes: 413, nothing scored."""
    many = {"samples": [{"completion": "x"}] * 9}
    assert world.post("/v1/score", many).status_code == 413
    assert world.post("/get_reward", {"query": ["x"] * 9}).status_code == 413
    health = httpx.get(world.server().url + "/health").json()
    assert health["queued_samples"] == 0


def metric(world: World, series: str) -> float:
    """The value of one series of the server's metrics (0 when it has none yet)."""
    text = httpx.get(world.server().url + "/metrics", headers=HEADERS).text
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def scored_on_score_route(world: World) -> float:
    """`rewardsmith_samples_total` of `/v1/score`, from the metrics."""
    return metric(world, 'rewardsmith_samples_total{route="/v1/score"}')


def abandoned_request_keeps_the_queue(world: World) -> None:
    """A client that gives up (its own timeout, a killed trainer) after sending 8 samples of
    0.8 s each: the server never noticed the disconnect, scored all 8 for nobody and held
    the whole queue meanwhile (every other request got 503 for ~7 s). Now the run is
    cancelled at the disconnect (counted as a `disconnected` refusal)."""
    before = scored_on_score_route(world)
    left_before = disconnected(world)
    samples = {"samples": [{"id": str(i), "completion": "sleep 0.8"} for i in range(8)]}
    url = world.server().url + "/v1/score"
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url, json=samples, headers=HEADERS, timeout=1.0)
    ends = time.monotonic() + HANG_S
    while httpx.get(world.server().url + "/health").json()["queued_samples"] and (
        time.monotonic() < ends
    ):
        time.sleep(0.2)
    assert scored_on_score_route(world) - before < 8
    assert disconnected(world) == left_before + 1


def disconnected(world: World) -> float:
    """Requests whose client the server saw leave, from the metrics."""
    return metric(world, 'rewardsmith_rejected_total{reason="disconnected"}')


def serve_nan_header_timeout(world: World) -> None:
    """`rewardsmith serve --header-timeout nan` (also negative or infinite timeouts, and
    `--max-queue -1`, `--max-body-bytes -5`, `--keep-alive -1`, `--graceful-timeout -1`) was
    accepted; with a NaN header timeout the server started and never answered a request (not
    even `/health`).
    Each is now refused at once: exit 2, naming the option."""
    refused = [
        ("--header-timeout", "nan"),
        ("--body-timeout", "inf"),
        ("--keep-alive", "-1"),
        ("--header-timeout", "0"),
        ("--max-queue", "-1"),
        ("--max-body-bytes", "-5"),
        ("--graceful-timeout", "-1"),
    ]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    for option, value in refused:
        command = [sys.executable, "-m", "rewardsmith.cli", "serve", "--spec", str(world.spec())]
        command += ["--port", str(free_port()), "--workers", "1", option, value]
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            code = process.wait(timeout=HANG_S / 2)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert code == 2, (option, value, code)
        assert f"argument {option}" in process.stderr.read().decode(), option
        process.stderr.close()
    with pytest.raises(ConfigError, match="max_queue_samples must be at least 1"):
        create_app(SPEC, max_queue_samples=0)


# -- the attacks: the command line ---------------------------------------------------------


def cli_surrogate_id(world: World) -> None:
    """Line 2's id is a lone surrogate: the run dies writing it (exit 1, a traceback), line
    3 is never scored, and `--resume` dies at the same line every time."""
    lines = [
        '{"id": "1", "completion": "x"}',
        f'{{"id": "{LONE_SURROGATE}", "completion": "xx"}}',
        '{"id": "3", "completion": "xxx"}',
    ]
    done, output = world.score_cli(lines)
    assert done.returncode == 0, done.stderr[-500:]
    written = [json.loads(line) for line in output.read_text().splitlines()]
    assert [(r["id"], r["status"]) for r in written] == [
        ("1", "ok"),
        ("\ud800", "invalid"),  # the id as given (a JSON escape in the file)
        ("3", "ok"),
    ]
    resumed, _ = world.score_cli(lines, "--resume", output=output)
    assert resumed.returncode == 0, resumed.stderr[-500:]
    assert len(output.read_text().splitlines()) == 3


def cli_surrogate_answer(world: World) -> None:
    """A completion (the policy's text) with a lone surrogate, echoed in `detail.answer`."""
    lines = [
        '{"id": "1", "completion": "A", "reference": "A"}',
        f'{{"id": "2", "completion": "A {LONE_SURROGATE}", "reference": "A"}}',
        '{"id": "3", "completion": "A", "reference": "A"}',
    ]
    done, output = world.score_cli(lines, spec="exact")
    assert done.returncode == 0, done.stderr[-500:]
    assert output_ids(output) == ["1", "2", "3"]


INPUT = [
    '{"id": "1", "completion": "x"}',
    '{"id": "2", "completion": "xx"}',
    '{"id": "3", "completion": "xxx"}',
]
FIRST = '{"id":"1","reward":1.0,"status":"ok","components":{}}\n'


def cli_input_through_a_pipe(world: World) -> None:
    """`--input <(zcat in.jsonl.gz)` (or a FIFO): the progress bar's line count reads the
    pipe to its end first, so the run scores nothing and exits 0 with an empty output."""
    done, output = world.score_cli(INPUT, through_pipe=True)
    assert done.returncode == 0, done.stderr[-500:]
    assert output_ids(output) == ["1", "2", "3"]


def resume_after(world: World, written: bytes, name: str) -> tuple[Any, Path]:
    output = world.tmp / name
    output.write_bytes(written)
    return world.score_cli(INPUT, "--resume", output=output)


def resume_non_utf8_output(world: World) -> None:
    """An output whose second line has a byte that is not UTF-8 (a disk or a copy gone
    wrong): `--resume` dies with UnicodeDecodeError instead of cutting the file there."""
    done, output = resume_after(world, FIRST.encode() + b'{"id": "2\xff"}\n', "bytes.jsonl")
    assert done.returncode == 0, done.stderr[-500:]
    assert output_ids(output) == ["1", "2", "3"]


def resume_deep_output(world: World) -> None:
    """The same with a line of 100,000 nested brackets: RecursionError."""
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    done, output = resume_after(world, FIRST.encode() + deep, "deep.jsonl")
    assert done.returncode == 0, done.stderr[-500:]
    assert output_ids(output) == ["1", "2", "3"]


def resume_partial_line(world: World) -> None:
    """A last line cut in the middle (kill -9): cut off, the run goes on."""
    done, output = resume_after(world, FIRST.encode() + b'{"id":"2","rew', "partial.jsonl")
    assert done.returncode == 0, done.stderr[-500:]
    assert output_ids(output) == ["1", "2", "3"]


def resume_reordered_input(world: World) -> None:
    """Output [1, 2] from input [1, 2, 3]; the input is now [3, 2, 1]: only the last finished
    id is compared, so sample 3 is skipped (never scored) and 1 is written twice, exit 0."""
    output = world.tmp / "reordered.jsonl"
    first, _ = world.score_cli(INPUT[:2], output=output)
    assert first.returncode == 0
    reordered = [INPUT[2], INPUT[1], INPUT[0]]
    done, _ = world.score_cli(reordered, "--resume", output=output)
    assert done.returncode == 2 or sorted(output_ids(output)) == ["1", "2", "3"], output_ids(output)


def resume_other_input(world: World) -> None:
    """An output from another input (its last id is not the input's): refused, exit 2."""
    output = world.tmp / "other.jsonl"
    output.write_text(FIRST.replace('"1"', '"zz"'))
    done, _ = world.score_cli(INPUT, "--resume", output=output)
    assert done.returncode == 2
    assert output_ids(output) == ["zz"]


# -- the attacks: the REWARDSMITH_URL client ------------------------------------------------


def client_html_200(world: World) -> None:
    """A proxy's HTML page with 200: JSONDecodeError reaches the trainer."""
    got = client_call(lambda f, c, b: reply(c, 200, b"<html>hi</html>", "text/html"))
    assert got == ERRORS, got


def client_json_without_results(world: World) -> None:
    """200 with another JSON shape: KeyError ('results') reaches the trainer."""
    got = client_call(lambda f, c, b: reply(c, 200, b'{"detail": "x"}'))
    assert got == ERRORS, got


def client_health_html(world: World) -> None:
    """`/health` answers 200 with HTML (a captive proxy): JSONDecodeError reaches the
    trainer on its first call."""
    got = client_call(lambda f, c, b: reply(c, 503, b""), health=b"<html>login</html>")
    assert got == ERRORS, got


def client_swapped_ids(world: World) -> None:
    """200 with the right number of results for other samples (ids reversed, or foreign):
    taken in order, so sample a gets b's reward."""

    def swapped(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        answer = [result(s["id"], 9.0) for s in reversed(body["samples"])]
        reply(conn, 200, json.dumps({"results": answer}).encode())

    got = client_call(swapped)
    assert got == ERRORS, got


def client_trickle(world: World) -> None:
    """A 200 whose body trickles one byte every 0.5 s: httpx's timeout is per read, so the
    3 s deadline never fires and the trainer hangs for as long as the server likes."""
    got = client_call(trickle)
    assert got == ERRORS, got


def client_surrogate_sample(world: World) -> None:
    """A sample whose text has a lone surrogate (in-process: scored, 3.0): httpx encodes the
    body as UTF-8 and UnicodeEncodeError reaches the trainer before anything is sent."""

    def echo(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        answer = [result(s["id"], 3.0) for s in body["samples"]]
        reply(conn, 200, json.dumps({"results": answer}).encode())

    got = client_call(echo, samples=[{"id": "a", "completion": "A \ud800"}])
    assert isinstance(got, list) and len(got) == 1, got


def client_422(world: World) -> None:
    """The server refuses the request (a sample it will not take, e.g. a lone surrogate in
    an id): the call's samples are errors, nothing is raised into the trainer."""
    got = client_call(lambda f, c, b: reply(c, 422, b'{"detail": "samples.0.id: surrogate"}'))
    assert got == ERRORS, got


def client_header_trickle(world: World) -> None:
    """The status line, then one header byte every 0.5 s: the call still ends at its
    deadline (its attempts run in a thread the call stops waiting for)."""

    def headers_trickle(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nx-pad: ")
        while not fake.stopped.is_set():
            conn.sendall(b"a")
            time.sleep(0.5)

    got = client_call(headers_trickle)
    assert got == ERRORS, got


def client_bad_gzip(world: World) -> None:
    """A 200 that says gzip and is not: httpx's DecodingError is not a transport error."""

    def bad_gzip(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 5\r\n\r\n"
        conn.sendall(head + b"nope!")

    got = client_call(bad_gzip)
    assert got == ERRORS, got


def client_wrong_count(world: World) -> None:
    got = client_call(
        lambda f, c, b: reply(c, 200, json.dumps({"results": [result("a", 1)]}).encode())
    )
    assert got == ERRORS, got


def client_503_forever(world: World) -> None:
    got = client_call(lambda f, c, b: reply(c, 503, b'{"detail": "full"}'))
    assert got == ERRORS, got


def client_silent_server(world: World) -> None:
    got = client_call(lambda f, c, b: f.stopped.wait(HANG_S) and None)
    assert got == ERRORS, got


def client_500(world: World) -> None:
    got = client_call(lambda f, c, b: reply(c, 500, b"Internal Server Error", "text/plain"))
    assert got == ERRORS, got


# -- the table -----------------------------------------------------------------------------


def guard(name: str, attack: Callable[[World], None], today: str) -> Any:
    return pytest.param(attack, today, id=name)


ROWS = [
    # server
    # closed (was a hole: 500 Internal Server Error, PydanticSerializationError)
    guard("surrogate_id_500", surrogate_id, "422 naming samples.0.id"),
    # closed (was a hole: 500 for the whole request, the innocent sample's 1.0 lost)
    guard(
        "surrogate_answer_fails_batch",
        surrogate_answer_fails_its_batch,
        "200: the innocent 1.0; the policy's lone surrogate read as U+FFFD and scored",
    ),
    # closed (was a hole: the connection held 15 s, timeouts 3 s)
    guard(
        "slow_body_after_401",
        slow_body_after_401,
        "401 with Connection: close, the rest dropped, closed at the body timeout",
    ),
    # closed (was a hole: the connection held 15 s, timeouts 3 s)
    guard(
        "slow_body_on_health",
        slow_body_on_health,
        "200 with Connection: close, the rest dropped, closed at the body timeout",
    ),
    # closed (was a hole: 200 to a 4 MiB header)
    guard("huge_header_before_auth", huge_header_before_auth, "431 and closed past 64 KiB"),
    # closed (was a hole: reward 2.0, the 2 characters after the policy's header, not 74.0)
    guard(
        "openrlhf_fake_assistant_header",
        openrlhf_fake_assistant_header,
        "no prompt and two assistant headers: invalid (failed 1.0)",
    ),
    # closed (was a hole: all 8 samples scored for a client that left, the queue full meanwhile)
    guard(
        "abandoned_request_keeps_the_queue",
        abandoned_request_keeps_the_queue,
        "the run cancelled at the disconnect: the samples not yet scored leave the queue",
    ),
    # closed (was a hole: the server started and never answered, /health included)
    guard("serve_nan_header_timeout", serve_nan_header_timeout, "exit 2 naming the option"),
    guard(
        "worker_death_among_innocents",
        worker_death_among_innocents,
        "killer error, its neighbour and concurrent requests right, next request fine",
    ),
    guard("slow_body_with_token", slow_body_with_token, "408 and closed after 3 s"),
    guard("same_ids_concurrent", same_ids_across_concurrent_requests, "each its own results"),
    guard("nan_score", nan_score_is_an_error, "error, never ok"),
    guard("auth_probes", auth_probes, "401/404/405/307, no results or metrics"),
    guard("smuggling", smuggling, "400 and closed"),
    guard("gzip_bomb", gzip_body_is_not_inflated, "422, not inflated"),
    guard("over_the_queue_bound", over_the_queue_bound, "413 on both routes, queue empty"),
    # command line
    # closed (was a hole: a traceback, line 3 never scored; --resume the same)
    guard("cli_surrogate_id", cli_surrogate_id, "line 2 invalid (id refused), 3 lines, exit 0"),
    # closed (was a hole: a traceback after line 1)
    guard("cli_surrogate_answer", cli_surrogate_answer, "3 results, the surrogate read as U+FFFD"),
    # before the fix: exit 0, 0 results (the line count drained the pipe)
    guard(
        "cli_input_through_a_pipe",
        cli_input_through_a_pipe,
        "all 3 scored: a pipe gets no line count",
    ),
    # before the fix: UnicodeDecodeError traceback
    guard(
        "resume_non_utf8_output",
        resume_non_utf8_output,
        "the bad line cut off, then resumed",
    ),
    # before the fix: RecursionError traceback
    guard(
        "resume_deep_output",
        resume_deep_output,
        "the deep line cut off, then resumed",
    ),
    # before the fix: exit 0, ids [1, 2, 1]: 3 lost
    guard(
        "resume_reordered_input",
        resume_reordered_input,
        "exit 2: every finished id is compared",
    ),
    guard("resume_partial_line", resume_partial_line, "cut and continued"),
    guard("resume_other_input", resume_other_input, "exit 2, output untouched"),
    # REWARDSMITH_URL client
    # before the fix: JSONDecodeError raised into the trainer
    guard(
        "client_html_200",
        client_html_200,
        "error for both",
    ),
    # before the fix: KeyError raised
    guard(
        "client_json_without_results",
        client_json_without_results,
        "error for both",
    ),
    # before the fix: JSONDecodeError raised
    guard(
        "client_health_html",
        client_health_html,
        "error for both",
    ),
    # before the fix: a gets b's result and b a's
    guard(
        "client_swapped_ids",
        client_swapped_ids,
        "error for both: ids checked",
    ),
    # before the fix: hung past the 3 s deadline (30 s, until cut)
    guard(
        "client_trickle",
        client_trickle,
        "error for both at the deadline",
    ),
    # before the fix: UnicodeEncodeError raised into the trainer (in-process: ok, 3.0)
    guard(
        "client_surrogate_sample",
        client_surrogate_sample,
        "sent as a JSON escape, scored",
    ),
    guard("client_422", client_422, "error for both"),
    guard("client_header_trickle", client_header_trickle, "error for both at the deadline"),
    guard("client_bad_gzip", client_bad_gzip, "error for both"),
    guard("client_wrong_count", client_wrong_count, "error for both"),
    guard("client_503_forever", client_503_forever, "error for both after the retries"),
    guard("client_silent_server", client_silent_server, "error for both at the deadline"),
    guard("client_500", client_500, "error for both"),
]


@pytest.mark.parametrize(("attack", "today"), ROWS)
def test_redteam_server(world: World, attack: Callable[[World], None], today: str) -> None:
    attack(world)
