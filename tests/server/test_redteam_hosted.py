"""Red team of the server's event loop driving the worker pool (commits ad8b350..351918b):
`Engine.host` / `Front.host` / `_Hosted` (`engine/_front.py`), the replacement worker that is
no longer waited for (`engine/_pool.py`), the hand-over that runs at once on the loop
(`engine/_engine.py`), and one timer per connection (`server/_http.py`).

One row per attack (helper-54, rt-hosted). The `hole` rows were holes, each fixed and now a
guard: a stale "every worker busy" flag after a pool break left the next request unwoken
(reset with the pool), a new pool built on the loop stalled it (46c329c: built in a
thread), and a look due at once got a uvloop handle without `when()`, which failed every
run in flight (the due time is kept beside the handle); the connection timer had the same
latent fault. The other rows are attacks repelled the first time, kept as guards.
Real `rewardsmith serve` processes on loopback (`conftest.Server`), except where a row needs
to reach into the engine. Deadlines are asserted with about 1 s of slack.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from ._raw_http import OK_BODY, TIMEOUTS_S, World, parse, request
from .conftest import SPEC, TOKEN, Server

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")

AUTH = {"Authorization": f"Bearer {TOKEN}"}
SCRIPTED = "tests.engine.rewards_for_tests:scripted"
FRAGILE = "tests.server.redteam_hosted_rewards:fragile"
SLACK_S = 1.0
"""How much later than stated a deadline may hit."""


# -- helpers ----------------------------------------------------------------------------------


@contextmanager
def serving(tmp_path: Path, spec: str, *args: str) -> Iterator[Server]:
    path = tmp_path / "spec.yaml"
    path.write_text(spec)
    running = Server(path, *args)
    try:
        yield running
    finally:
        running.stop()


def fragile_spec(flag: Path, build_s: float = 0.0, timeout_s: float = 1.0) -> str:
    return (
        f'rewards:\n  s: {{type: "{FRAGILE}", flag: "{flag}", build_s: {build_s}}}\n'
        f"timeout_s: {timeout_s}\n"
    )


def score(server: Server, completions: list[str], timeout: float = 30) -> httpx.Response:
    samples = [{"id": f"s{i}", "completion": c} for i, c in enumerate(completions)]
    return httpx.post(f"{server.url}/v1/score", json=samples, headers=AUTH, timeout=timeout)


def results(answer: httpx.Response) -> list[dict[str, Any]]:
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]  # type: ignore[no-any-return]


def queued(server: Server) -> int:
    return httpx.get(f"{server.url}/health", timeout=30).json()["queued_samples"]  # type: ignore[no-any-return]


class HealthProbe:
    """Asks /health every 50 ms in a thread; the longest wait for an answer."""

    def __init__(self, server: Server) -> None:
        self._url = f"{server.url}/health"
        self._stop = threading.Event()
        self.waits: list[float] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                with suppress(httpx.TransportError):
                    client.get(self._url)
                self.waits.append(time.perf_counter() - started)
                self._stop.wait(0.05)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    @property
    def longest(self) -> float:
        return max(self.waits, default=0.0)


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- a. b. e. h. the loop drives the pool ---------------------------------------------------------


def test_hole_after_a_replacement_crashes_the_next_request_is_answered(tmp_path: Path) -> None:
    """Attack (h, e, d): a worker dies (`die`), and its replacement dies while it builds (a
    model reward OOM-killed while loading). The pool breaks; the README promises that the
    next request gets a new pool.

    today: with one worker, the replacement counted as busy (`saturated`), and that stale
    flag survives the break: the next request's add does not wake the loop, nothing else
    does, and it hangs until its client leaves (its samples stay in `queued_samples`)."""
    flag = tmp_path / "replacement-dies"
    with serving(tmp_path, fragile_spec(flag), "--workers", "1", "--max-queue", "8") as server:
        assert [r["reward"] for r in results(score(server, ["abc"]))] == [3.0]
        flag.write_text("")
        (died,) = results(score(server, ["die"]))
        assert died["status"] == "error"
        time.sleep(1.5)  # the replacement starts, dies while building, the pool breaks
        flag.unlink()
        try:
            answer = score(server, ["abcd"], timeout=8)
        except httpx.ReadTimeout:
            pytest.fail("the request after a broken pool was never answered (8 s)")
        assert [r["reward"] for r in results(answer)] == [4.0]
        assert queued(server) == 0


def test_hole_a_new_pool_does_not_stall_the_event_loop(tmp_path: Path) -> None:
    """Attack (a): the same broken pool, with rewards that take 2 s to build (a model). The
    next request starts the new pool.

    today: `Front._step` builds it on the event loop (`TimeoutPool()` waits for every worker
    to be ready, up to `_START_TIMEOUT_S` = 120 s each): /health and every connection's
    deadlines wait the whole build (2.3 s here; minutes with a large model)."""
    flag = tmp_path / "replacement-dies"
    spec = fragile_spec(flag, build_s=2.0)
    with serving(tmp_path, spec, "--workers", "2", "--max-queue", "8") as server:
        flag.write_text("")
        assert results(score(server, ["die"]))[0]["status"] == "error"
        time.sleep(1.5)
        flag.unlink()
        with HealthProbe(server) as probe:
            time.sleep(0.3)
            answer = score(server, ["abc"], timeout=30)
            time.sleep(0.3)
        assert [r["reward"] for r in results(answer)] == [3.0]
        assert probe.longest < 1.0, f"/health waited {probe.longest:.2f} s"


def test_hole_a_deadline_due_now_does_not_fail_every_request_in_flight() -> None:
    """Attack (b, c, e): the server's loop (uvloop) hosting the engine; 4 callers score short
    samples while 2 others keep sending hanging ones (timeout_s 0.3, 2 workers), for up to
    6 s.

    today: when a task's deadline is less than 0.5 ms away, `_Hosted.watch` arms
    `loop.call_at(due)`, and uvloop returns a plain `Handle` (no `when()`) for a delay that
    rounds to 0 ms; the next look before it runs calls `self._timer.when()` and raises
    AttributeError, which `_step` takes for a broken pool: every request in flight fails
    (the server answers 500), the workers are killed, and requests made meanwhile can hang
    (the stale `saturated`, as in the first row). Within a few seconds here."""
    from rewardsmith import Engine
    from rewardsmith.server._http import new_loop

    spec = {"rewards": {"s": {"type": SCRIPTED}}, "timeout_s": 0.3}
    failures: collections.Counter[str] = collections.Counter()
    timeouts = 0

    async def main(engine: Engine) -> None:
        nonlocal timeouts
        engine.host(asyncio.get_running_loop())
        await asyncio.to_thread(engine.start)
        stop = time.monotonic() + 6.0  # or the first failure

        async def one(completion: str) -> str:
            try:
                (result,) = await asyncio.wait_for(engine.ascore([{"completion": completion}]), 5)
            except Exception as exc:  # what a request in flight would get: 500, or no answer
                return f"{type(exc).__name__}: {exc}"[:100]
            return str(result.status)

        async def caller(completion: str, expected: str) -> None:
            nonlocal timeouts
            while time.monotonic() < stop and not failures:
                got = await one(completion)
                if got == expected:
                    timeouts += completion == "hang"
                else:
                    failures[got] += 1

        callers = [caller("ab", "ok") for _ in range(4)]
        callers += [caller("hang", "timeout") for _ in range(2)]
        await asyncio.gather(*callers)
        await asyncio.to_thread(engine.close)

    engine = Engine(spec, workers=2)
    loop = new_loop()
    try:
        loop.run_until_complete(main(engine))
    finally:
        loop.close()
    assert not failures, dict(failures)
    assert timeouts >= 3


def test_hole_a_look_due_now_then_another_look(request: pytest.FixtureRequest) -> None:
    """The previous row, deterministic: `_Hosted.watch` with a look due now (a deadline that
    has just passed), then another look before the loop ran it (a worker's pipe, a new run).

    today: AttributeError: 'uvloop.loop.Handle' object has no attribute 'when'."""
    from rewardsmith.engine._front import _Hosted
    from rewardsmith.server._http import new_loop

    loop = new_loop()
    request.addfinalizer(loop.close)

    async def main() -> None:
        class Front:
            def _step(self, host: object) -> None:
                pass

        hosted = _Hosted(Front(), asyncio.get_running_loop())  # type: ignore[arg-type]
        hosted.watch([], 0.0)
        hosted.watch([], 0.05)
        hosted.watch([], None)

    loop.run_until_complete(main())


def test_latent_a_connection_timer_due_now_then_set_again(
    request: pytest.FixtureRequest,
) -> None:
    """The same uvloop `Handle` in the connection's one timer (`_Connection._set_timer`): a
    delay of 0 (`max(0.0, exchange.due - now)`, used for the body deadline and for closing
    after an early answer), then another `_set_timer` before the loop ran it.

    today: AttributeError. Latent: no client path found that sets the timer twice in that
    window (after an early answer the connection only drains, then closes)."""
    from rewardsmith.server._http import Limits, _Connection, _Server, new_loop

    loop = new_loop()
    request.addfinalizer(loop.close)

    class App:
        pass

    async def main() -> None:
        connection = _Connection(_Server(App(), Limits(3, 3, 1, 1000), False))  # type: ignore[arg-type]
        connection._set_timer(0.0, lambda: None)
        connection._set_timer(1.0, lambda: None)
        connection._cancel_timer()
        if connection._timer is not None:
            connection._timer.cancel()

    loop.run_until_complete(main())


@pytest.fixture
def storm(tmp_path: Path) -> Iterator[Server]:
    """2 workers, timeout_s 1 (the scripted reward), a queue of 64."""
    with serving(tmp_path, SPEC, "--workers", "2", "--max-queue", "64") as server:
        yield server


def test_guard_a_hang_storm_is_timed_out_on_time_and_health_answers(storm: Server) -> None:
    """Attack (a, b, h): one request of 4 hanging samples and 2 short ones on 2 workers:
    4 kills and replacements, run on the loop. Each hang is `timeout`, the whole request in
    about 2 x 1 s, /health always answered, the server scores afterwards."""
    with HealthProbe(storm) as probe:
        started = time.monotonic()
        got = results(score(storm, ["hang", "hang", "abc", "hang", "hang", "ab"]))
        took = time.monotonic() - started
    assert [r["components"]["s"]["status"] for r in got] == ["timeout"] * 2 + ["ok"] + [
        "timeout"
    ] * 2 + ["ok"]
    assert [r["id"] for r in got] == [f"s{i}" for i in range(6)]
    assert took < 2 * 1.0 + 2 * SLACK_S, took
    assert probe.longest < 0.5, f"/health waited {probe.longest:.2f} s"
    assert [r["reward"] for r in results(score(storm, ["abcd"]))] == [4.0]
    assert queued(storm) == 0


def test_guard_a_die_storm_then_idle_costs_no_cpu(storm: Server) -> None:
    """Attack (e, h): workers that `os._exit` under 6 samples of one request, then an idle
    server: every death is `error`, the others are scored, nothing spins afterwards (no
    pipe left readable and undrained, no timer re-arming itself)."""
    got = results(score(storm, ["die", "abc", "die", "die", "ab", "die", "die", "die"]))
    assert [r["components"]["s"]["status"] for r in got] == [
        "error", "ok", "error", "error", "ok", "error", "error", "error",
    ]  # fmt: skip
    assert [r["reward"] for r in results(score(storm, ["abcd"]))] == [4.0]
    with socket.create_connection(("127.0.0.1", storm.port)):  # an idle connection too
        time.sleep(0.5)
        before = cpu_s(storm.process.pid)
        time.sleep(2.0)
        spent = cpu_s(storm.process.pid) - before
    assert spent < 0.1, f"{spent:.2f} s of CPU in 2 s idle"
    assert queued(storm) == 0


def test_guard_concurrent_requests_get_their_own_results_in_order(storm: Server) -> None:
    """Attack (c): 6 clients, 8 requests each of 3 samples (some slow, some killing their
    worker), at once: every answer holds its own ids and scores, in order."""
    bad: list[str] = []

    def client(n: int) -> None:
        with httpx.Client(base_url=storm.url, headers=AUTH, timeout=30) as http:
            for i in range(8):
                texts = ["x" * (n + i + k + 1) for k in range(3)]
                if (n + i) % 5 == 0:
                    texts[1] = "sleep 0.05"
                if n == 2 and i == 3:
                    texts[2] = "die"
                samples = [{"id": f"{n}-{i}-{k}", "completion": t} for k, t in enumerate(texts)]
                answer = http.post("/v1/score", json=samples)
                if answer.status_code != 200:
                    bad.append(f"{n}-{i}: {answer.status_code}")
                    continue
                got = answer.json()["results"]
                expected = [None if t == "die" else float(len(t)) for t in texts]
                if [r["id"] for r in got] != [s["id"] for s in samples] or [
                    r["reward"] for r in got
                ] != expected:
                    bad.append(f"{n}-{i}: {got}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not bad, bad[:3]
    assert queued(storm) == 0


def test_guard_many_cancels_leave_no_count_behind(storm: Server) -> None:
    """Attack (d, a): 30 clients post 2 slow samples each and leave at once (each leaves a
    cancel for the loop): `queued_samples` returns to 0, the server scores right after."""
    body = json.dumps([{"completion": "sleep 0.3"}, {"completion": "sleep 0.3"}]).encode()
    for _ in range(30):
        with socket.create_connection(("127.0.0.1", storm.port)) as sock:
            sock.sendall(request("POST", "/v1/score", body))
            time.sleep(0.01)
    deadline = time.monotonic() + 10
    while queued(storm) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert queued(storm) == 0
    assert [r["reward"] for r in results(score(storm, ["abc", "ab"]))] == [3.0, 2.0]


def test_guard_huge_samples_do_not_stall_health(tmp_path: Path) -> None:
    """Attack (a): 16 samples of 4 MB in one request (64 MB, the default body limit):
    parsed in a thread, pickled to the workers on the loop. /health waits under 1 s."""
    with serving(
        tmp_path, SPEC, "--workers", "2", "--max-queue", "64", "--max-body-bytes", "70000000"
    ) as server:
        body = json.dumps([{"completion": "x" * 4_000_000} for _ in range(16)])
        with HealthProbe(server) as probe:
            answer = httpx.post(
                f"{server.url}/v1/score",
                content=body,
                headers={**AUTH, "content-type": "application/json"},
                timeout=60,
            )
        assert [r["reward"] for r in results(answer)] == [4_000_000.0] * 16
        assert probe.longest < 1.0, f"/health waited {probe.longest:.2f} s"


# -- f. graceful shutdown ---------------------------------------------------------------------


def _terminate_while(server: Server, completions: list[str], after_s: float) -> httpx.Response:
    answers: list[Any] = []

    def post() -> None:
        try:
            answers.append(score(server, completions))
        except Exception as exc:
            answers.append(exc)

    thread = threading.Thread(target=post)
    thread.start()
    time.sleep(after_s)
    server.terminate()
    thread.join(timeout=60)
    assert server.process.wait(timeout=30) == -signal.SIGTERM
    output = server.output()
    assert "Traceback" not in output, output[-2000:]
    (answer,) = answers
    assert isinstance(answer, httpx.Response), answer
    return answer


def test_guard_sigterm_with_a_hanging_sample_in_flight(tmp_path: Path) -> None:
    """Attack (f, b): SIGTERM while a sample hangs: the loop still drives the pool while it
    stops, the hang is killed at its deadline and answered, the process ends by the signal,
    no traceback."""
    with serving(tmp_path, SPEC, "--workers", "1") as server:
        answer = _terminate_while(server, ["hang", "abc"], 0.3)
        assert [r["components"]["s"]["status"] for r in results(answer)] == ["timeout", "ok"]


def test_guard_sigterm_while_a_replacement_builds(tmp_path: Path) -> None:
    """Attack (f, h): SIGTERM while the only worker's replacement builds (2 s) and a request
    waits for it: the request is answered once it is ready, then the process ends by the
    signal, no traceback (the worker closed mid-build exits quietly)."""
    flag = tmp_path / "never"
    with serving(tmp_path, fragile_spec(flag, build_s=2.0), "--workers", "1") as server:
        assert results(score(server, ["die"]))[0]["status"] == "error"
        answer = _terminate_while(server, ["abc"], 0.3)
        assert [r["reward"] for r in results(answer)] == [3.0]


# -- g. connection deadlines with one timer per connection --------------------------------------

HEADER_START = b"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\n"
HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _dribble(data: bytes, every_s: float = 0.25) -> list[bytes | float]:
    parts: list[bytes | float] = []
    for byte in data:
        parts += [bytes([byte]), every_s]
    return parts


def _timed(
    port: int, parts: list[bytes | float], read_s: float = 12.0
) -> tuple[list[int], float, float]:
    """Send `parts` (bytes, or a pause; `b""` marks the moment deadlines are measured from)
    in a thread while reading; the answers' statuses, and the seconds from the mark to the
    server closing the connection (inf if it did not within `read_s`) and to the first
    answer."""
    mark = [0.0]
    first = [float("inf")]
    with socket.create_connection(("127.0.0.1", port)) as sock:
        mark[0] = time.monotonic()
        gone = threading.Event()

        def send() -> None:
            for part in parts:
                if gone.is_set():
                    return
                if isinstance(part, float):
                    time.sleep(part)
                elif part == b"":
                    mark[0] = time.monotonic()
                else:
                    try:
                        sock.sendall(part)
                    except OSError:
                        return

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        raw, closed_at = b"", float("inf")
        deadline = time.monotonic() + read_s
        while time.monotonic() < deadline:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                closed_at = time.monotonic()
                break
            if not raw:
                first[0] = time.monotonic()
            raw += chunk
        gone.set()
        sender.join(timeout=30)
    return statuses_of(raw), closed_at - mark[0], first[0] - mark[0]


def statuses_of(raw: bytes) -> list[int]:
    return [answer.status for answer in parse(raw)]


T = float(TIMEOUTS_S)  # header and body timeouts of `World`'s `token` server
KEEP = 1.0  # its keep-alive
WORDS = b"X-Pad: " + b"a" * 40


DEADLINES = [
    # (attack, parts, statuses, closed no sooner than, no later than: seconds from the mark)
    ("no bytes at all: header deadline from the connection", [], [], T - 0.5, T + SLACK_S),
    (
        "slowloris: headers one byte every 0.25 s",
        _dribble(HEADER_START + WORDS, 0.25),
        [408],
        T - 0.5,
        T + SLACK_S,
    ),
    (
        "slowloris: a complete header line every 0.5 s",
        [HEADER_START] + [WORDS + b"\r\n", 0.5] * 20,
        [408],
        T - 0.5,
        T + SLACK_S,
    ),
    ("idle keep-alive after one answer", [HEALTH, b""], [200], KEEP - 0.5, KEEP + SLACK_S),
    (
        "idle keep-alive after 50 answers (each moves the due time, the timer stays armed)",
        [HEALTH, 0.01] * 50 + [b""],
        [200] * 50,
        KEEP - 0.5,
        KEEP + SLACK_S,
    ),
    (
        "a request begun 0.8 s into keep-alive, dribbled: the keep-alive timer does not cut "
        "it, the header deadline does",
        [HEALTH, 0.8, b"", *_dribble(HEADER_START + WORDS, 0.25)],
        [200, 408],
        T - 0.5,
        T + SLACK_S,
    ),
    (
        "slow body: 10 of 100 bytes, then one byte every 0.25 s",
        [request("POST", "/v1/score", b"x" * 100)[:-90], b"", *_dribble(b"y" * 90, 0.25)],
        [408],
        T - 0.5,
        T + SLACK_S,
    ),
    (
        "slow body of the second request on a kept-alive connection",
        [
            HEALTH,
            0.2,
            request("POST", "/v1/score", b"x" * 100)[:-90],
            b"",
            *_dribble(b"y" * 90, 0.25),
        ],
        [200, 408],
        T - 0.5,
        T + SLACK_S,
    ),
    (
        "early 401 (no token), the body dribbled on: closed at the body deadline",
        [
            request("POST", "/v1/score", b"x" * 100, auth=False)[:-90],
            b"",
            *_dribble(b"y" * 90, 0.25),
        ],
        [401],
        0.0,
        T + SLACK_S,
    ),
    (
        "scored request, then idle: keep-alive counts from the answer, not the request",
        [
            request("POST", "/v1/score", json.dumps([{"completion": "sleep 1.5"}]).encode()),
            1.6,
            b"",
        ],
        [200],
        0.0,
        KEEP + SLACK_S - 0.1,
    ),
]


@pytest.mark.parametrize(
    ("attack", "parts", "expected", "earliest", "latest"),
    DEADLINES,
    ids=[row[0] for row in DEADLINES],
)
def test_guard_connection_deadlines(
    world: World,
    attack: str,
    parts: list[bytes | float],
    expected: list[int],
    earliest: float,
    latest: float,
) -> None:
    server = world.server()
    got, closed_after, _ = _timed(server.port, parts)
    assert got == expected, attack
    assert earliest <= closed_after <= latest, f"closed after {closed_after:.2f} s"


def test_guard_keep_alive_does_not_close_a_scored_request_in_flight(world: World) -> None:
    """Attack (g): keep-alive (1 s) armed after a first answer, then a request scored for
    1.5 s on the same connection: the stale armed timer fires meanwhile and must not close
    it."""
    server = world.server()
    slow = request("POST", "/v1/score", json.dumps([{"completion": "sleep 1.5"}]).encode())
    got, closed_after, _ = _timed(server.port, [HEALTH, 0.5, slow, b""])
    assert got == [200, 200]
    assert 1.5 <= closed_after <= 1.5 + KEEP + SLACK_S, closed_after


def test_guard_ok_body_still_scored(world: World) -> None:
    """Sanity of the server these rows attack."""
    server = world.server()
    got, _, _ = _timed(server.port, [request("POST", "/v1/score", OK_BODY)])
    assert got == [200]
