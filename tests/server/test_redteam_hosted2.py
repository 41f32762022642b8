"""Second red team of the server's event loop driving the worker pool, after 46c329c and
06fa0cd: the hosted pool started in a thread (`_Hosted.start_pool`, `_start_pool`,
`_started`, `Front._pool_started`), `TimeoutPool.closing` / `_Hosted.forget`, and the stale
"every worker busy" flag reset after a break.

One row per attack (helper-56, rt-front2). The `test_hole_*` rows failed on 993494d and are
guards now: a pool that failed to start left its workers alive and their pipes and
sentinels open (killed, pipes closed, processes let go of); a client that left while the
pool started stayed counted (cancels are taken at once); SIGTERM, and a second SIGTERM,
waited for a pool being built (the start thread closes what nobody waits for); a start
that failed after `close()` failed the next calls and left a driver spinning (a stopped
host's start is ignored); a pool break stalled the loop for a second (the broken pool is
closed in a thread). The `test_guard_*` rows are attacks repelled the first time. Real
`rewardsmith serve` processes on loopback (`conftest.Server`), except where a row needs to
reach into the engine. Reward builds are steered through files
(`redteam_hosted2_rewards.rigged`): a `die-*` token kills exactly one building worker,
`build_s` slows every build, `exit_s` slows
every exit. Deadlines are asserted with about 1 s of slack.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from ._raw_http import request
from .conftest import TOKEN, Server
from .test_redteam_hosted import SLACK_S, HealthProbe, cpu_s, fragile_spec, queued, serving

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")

AUTH = {"Authorization": f"Bearer {TOKEN}"}
RIGGED = "tests.server.redteam_hosted2_rewards:rigged"


# -- helpers ----------------------------------------------------------------------------------


def rigged_spec(folder: Path, timeout_s: float = 1.0) -> str:
    return f'rewards:\n  s: {{type: "{RIGGED}", folder: "{folder}"}}\ntimeout_s: {timeout_s}\n'


@contextmanager
def rigged(tmp_path: Path, *args: str) -> Iterator[tuple[Server, Path]]:
    """A server whose reward builds are steered by files in the folder it yields (none yet:
    the server starts as usual)."""
    folder = tmp_path / "rig"
    folder.mkdir()
    with serving(tmp_path, rigged_spec(folder), *args) as server:
        yield server, folder


def score(server: Server, completions: list[str], timeout: float = 30) -> httpx.Response:
    samples = [{"id": f"s{i}", "completion": c} for i, c in enumerate(completions)]
    return httpx.post(f"{server.url}/v1/score", json=samples, headers=AUTH, timeout=timeout)


def rewards(answer: httpx.Response) -> list[Any]:
    assert answer.status_code == 200, answer.text
    return [r["reward"] for r in answer.json()["results"]]


def statuses(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [r["components"]["s"]["status"] for r in answer.json()["results"]]


def wait_until(condition: Any, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


def break_pool(server: Server, folder: Path) -> None:
    """A worker dies under a sample and its replacement dies while it builds: the pool
    breaks; the next request starts a new one (in a thread)."""
    token = folder / "die-break"
    token.write_text("")
    assert statuses(score(server, ["die"])) == ["error"]
    assert wait_until(lambda: not token.exists(), 10), "the replacement never built"
    time.sleep(0.5)  # it died: the loop hears it and closes the pool


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def workers(server: Server) -> list[int]:
    """The reward workers' pids (children of the server's fork server)."""
    found = []
    for child in children(server.process.pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"forkserver" in command:
            found += [pid for pid in children(child) if _alive(pid)]
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def fds(server: Server) -> int:
    return len(os.listdir(f"/proc/{server.process.pid}/fd"))


def threads(server: Server) -> int:
    return len(os.listdir(f"/proc/{server.process.pid}/task"))


def post_and_leave(server: Server, completions: list[str], after_s: float = 0.3) -> None:
    """A client that posts and disconnects before its answer (a cancel for the loop)."""
    body = json.dumps([{"completion": c} for c in completions]).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(request("POST", "/v1/score", body))
        time.sleep(after_s)


def idle_cpu(server: Server, seconds: float = 2.0) -> float:
    before = cpu_s(server.process.pid)
    time.sleep(seconds)
    return cpu_s(server.process.pid) - before


# -- 1. a pool that cannot start ------------------------------------------------------------


def test_hole_a_failed_pool_start_leaves_no_worker_alive(tmp_path: Path) -> None:
    """Attack: a new pool (after a break) whose start fails because one of its 2 workers dies
    while it builds (a model load OOM-killed); 4 requests, 4 failed starts.

    today: `TimeoutPool.__init__` raises from `_await_ready` for the dead worker and never
    closes the other, which is up (its reward built: a model's memory) and waits on its
    pipe; the half-built pool stays referenced by the error's traceback (a cycle through
    `_Hosted._start_pool`'s frame), so the worker lives on: one more per failed start."""
    with rigged(tmp_path, "--workers", "2", "--max-queue", "8") as (server, folder):
        break_pool(server, folder)
        codes = []
        for attempt in range(4):
            (folder / f"die-{attempt}").write_text("")
            codes.append(score(server, ["abc"]).status_code)
        assert codes.count(500) >= 2, codes  # the starts did fail (the attack happened)
        time.sleep(1.0)
        left = workers(server)
        assert left == [], f"{len(left)} workers alive with no pool, after starts {codes}"


def test_hole_failed_pool_starts_leak_no_file_descriptors(tmp_path: Path) -> None:
    """Attack: every new pool fails to start (`fragile`: every worker dies while it builds),
    10 requests in a row, each answered 500.

    today: each failed start leaves about 5 descriptors open in the server (the pipe of the
    worker not yet awaited, sentinels): the half-built `TimeoutPool` is never closed (same
    cause as the previous row); 20 -> 70 after 10 starts here."""
    flag = tmp_path / "workers-die"
    with serving(tmp_path, fragile_spec(flag), "--workers", "2", "--max-queue", "8") as server:
        flag.write_text("")
        assert statuses(score(server, ["die"])) == ["error"]
        time.sleep(1.5)
        assert score(server, ["abc"]).status_code == 500  # the first failed start
        time.sleep(0.3)
        before = fds(server)
        for _ in range(10):
            assert score(server, ["abc"]).status_code == 500
        time.sleep(1.0)
        grown = fds(server) - before
        assert grown <= 3, f"{grown} more descriptors after 10 failed pool starts"


def test_guard_a_pool_that_never_starts_answers_every_request_and_idles(tmp_path: Path) -> None:
    """Attack: every new pool fails to start; 6 clients at once, then 6 more one by one.
    Every request is answered (500: the start's error) within seconds, `queued_samples`
    returns to 0, no pool-start thread is left, nothing spins afterwards."""
    flag = tmp_path / "workers-die"
    with serving(tmp_path, fragile_spec(flag), "--workers", "2", "--max-queue", "64") as server:
        baseline_threads = threads(server)
        flag.write_text("")
        assert statuses(score(server, ["die"])) == ["error"]
        time.sleep(1.5)
        codes: list[Any] = []

        def client() -> None:
            try:
                codes.append(score(server, ["abc", "ab"], timeout=15).status_code)
            except httpx.TimeoutException:
                codes.append("no answer in 15 s")

        clients = [threading.Thread(target=client) for _ in range(6)]
        for each in clients:
            each.start()
        for each in clients:
            each.join(timeout=60)
        for _ in range(6):
            client()
        assert codes == [500] * 12, codes
        assert wait_until(lambda: queued(server) == 0, 3), queued(server)
        assert wait_until(lambda: threads(server) <= baseline_threads, 3), threads(server)
        spent = idle_cpu(server)
        assert spent < 0.2, f"{spent:.2f} s of CPU in 2 s idle"


def test_guard_a_pool_that_fails_to_start_once_starts_on_the_next_request(
    tmp_path: Path,
) -> None:
    """Attack: a new pool that fails to start once (one worker dies while it builds), then
    can: the failed request gets 500, the next one its scores, the count returns to 0."""
    with rigged(tmp_path, "--workers", "2", "--max-queue", "8") as (server, folder):
        break_pool(server, folder)
        (folder / "die-once").write_text("")
        assert score(server, ["abc"]).status_code == 500
        assert rewards(score(server, ["abcd", "ab"])) == [4.0, 2.0]
        assert queued(server) == 0


# -- 2. while the pool starts in its thread ---------------------------------------------------


def test_guard_many_requests_and_cancels_while_the_pool_starts(tmp_path: Path) -> None:
    """Attack: a new pool that takes 2 s to build; meanwhile 10 clients post and wait and 6
    post and leave. Each waiting client gets its own results, in order; the count returns
    to 0; one start thread only (the thread count is back afterwards)."""
    with rigged(tmp_path, "--workers", "2", "--max-queue", "64") as (server, folder):
        baseline_threads = threads(server)
        break_pool(server, folder)
        (folder / "build_s").write_text("2")
        bad: list[str] = []

        def stays(n: int) -> None:
            texts = ["x" * (n + 1), "y" * (n + 2)]
            try:
                got = rewards(score(server, texts, timeout=30))
            except Exception as exc:
                bad.append(f"{n}: {exc!r}"[:200])
                return
            if got != [float(n + 1), float(n + 2)]:
                bad.append(f"{n}: {got}")

        def leaves() -> None:
            post_and_leave(server, ["sleep 0.2", "abc"], after_s=0.3)

        started = time.monotonic()
        team = [threading.Thread(target=stays, args=(n,)) for n in range(10)]
        team += [threading.Thread(target=leaves) for _ in range(6)]
        for each in team:
            each.start()
        for each in team:
            each.join(timeout=60)
        assert not bad, bad
        assert time.monotonic() - started < 2 + 3 * SLACK_S + 2
        assert wait_until(lambda: queued(server) == 0, 5), queued(server)
        assert wait_until(lambda: threads(server) <= baseline_threads, 3), threads(server)


def test_hole_a_client_that_leaves_while_the_pool_starts_frees_its_samples(
    tmp_path: Path,
) -> None:
    """Attack: while a new pool builds (8 s: a model loading), a client posts 2 samples and
    leaves (a trainer's request timeout). A queue of 2.

    today: its cancel waits in the front's inbox until the pool is up (`Front._step`
    returns at `self._pool is None` without looking at the commands): `queued_samples`
    stays 2 for the whole build, and every other request is refused 503 `queue_full` though
    nothing waits; with a model that takes minutes to load, minutes of 503s."""
    with rigged(tmp_path, "--workers", "1", "--max-queue", "2") as (server, folder):
        break_pool(server, folder)
        (folder / "build_s").write_text("8")
        post_and_leave(server, ["abc", "ab"], after_s=0.3)
        freed = wait_until(lambda: queued(server) == 0, 2.0)
        answer = score(server, ["abcd"], timeout=30)
        assert freed, f"queued_samples {queued(server)} 2 s after the only client left"
        assert answer.status_code == 200, answer.text


def test_hole_sigterm_while_a_new_pool_builds_ends_promptly(tmp_path: Path) -> None:
    """Attack: SIGTERM while a new pool builds (10 s) and nothing waits for it (its client
    left).

    today: `Engine.close` -> `_Hosted.stop` runs `_stop` on the loop, which joins the
    start thread: the process ends only when the build is over (about 10 s after the
    signal; up to `_START_TIMEOUT_S` = 120 s for a worker that hangs while it builds), and
    the loop is blocked all that time."""
    with rigged(tmp_path, "--workers", "1", "--max-queue", "8") as (server, folder):
        break_pool(server, folder)
        (folder / "build_s").write_text("10")
        post_and_leave(server, ["abc"])
        time.sleep(0.5)
        started = time.monotonic()
        server.terminate()
        try:
            code = server.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        took = time.monotonic() - started
        assert code == -signal.SIGTERM, code
        assert took < 2 + 2 * SLACK_S, f"ended {took:.1f} s after SIGTERM"


def test_hole_a_second_sigterm_while_a_new_pool_builds_ends_at_once(tmp_path: Path) -> None:
    """Attack: the same, then a second SIGTERM (the server says a second one ends the
    process at once: `_until_signalled`).

    today: the loop that would run that handler is blocked in `_Hosted._stop`'s join of
    the start thread: the second signal waits for the build as well."""
    with rigged(tmp_path, "--workers", "1", "--max-queue", "8") as (server, folder):
        break_pool(server, folder)
        (folder / "build_s").write_text("10")
        post_and_leave(server, ["abc"])
        time.sleep(0.5)
        server.terminate()
        time.sleep(0.5)
        started = time.monotonic()
        server.terminate()
        with suppress(subprocess.TimeoutExpired):
            server.process.wait(timeout=30)
        took = time.monotonic() - started
        assert took < 1 + SLACK_S, f"ended {took:.1f} s after the second SIGTERM"


def _stale_start_after_close(tmp_path: Path) -> tuple[list[str], float]:
    """An engine hosted on a uvloop in a thread; a call starts the pool (2 workers, 1 s to
    build, one of them dies at the end of it: the start fails after 1 s); `close()` from another
    thread while it starts; the loop busy with something else for a moment (a callback
    queued before the start's end); then 2 calls (a thread driver takes over after close).
    Their outcomes, and the engine's CPU seconds over 2 s idle afterwards."""
    from rewardsmith import Engine
    from rewardsmith.server._http import new_loop

    folder = tmp_path / "rig"
    folder.mkdir()
    spec = {"rewards": {"s": {"type": RIGGED, "folder": str(folder)}}, "timeout_s": 5}
    engine = Engine(spec, workers=2)  # builds the reward once here: no token yet
    (folder / "build_s").write_text("1")
    (folder / "late-0").write_text("")
    loop = new_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    gate = threading.Event()
    try:

        async def host() -> None:
            engine.host(asyncio.get_running_loop())

        asyncio.run_coroutine_threadsafe(host(), loop).result(10)

        async def first() -> Any:
            return await engine.ascore([{"completion": "abc"}])

        pending = asyncio.run_coroutine_threadsafe(first(), loop)
        time.sleep(0.3)  # the pool starts in its thread
        closer = threading.Thread(target=engine.close)
        closer.start()
        time.sleep(0.2)  # `_stop` joins the start thread on the loop
        loop.call_soon_threadsafe(gate.wait, 30)  # queued before the start's `_started`
        closer.join(30)
        assert not closer.is_alive()
        deadline = time.monotonic() + 30  # the old start took its token: it fails, and no
        while (folder / "late-0").exists() and time.monotonic() < deadline:  # new pool
            time.sleep(0.05)  # can take it (close no longer waits for that start)
        (folder / "build_s").write_text("0")
        futures = engine.submit([{"completion": "abcd"}]) + engine.submit([{"completion": "ab"}])
        gate.set()
        with pytest.raises(Exception):  # noqa: B017  (EngineClosed, or the start's error)
            pending.result(10)
        outcomes = []
        for future in futures:
            try:
                outcomes.append(str(future.result(30).reward))
            except Exception as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}"[:80])
        time.sleep(0.5)
        before = time.process_time()
        time.sleep(2.0)
        spent = time.process_time() - before
        return outcomes, spent
    finally:
        gate.set()
        engine.close()
        loop.call_soon_threadsafe(loop.stop)
        runner.join(10)
        loop.close()


def test_hole_a_start_that_fails_after_close_does_not_fail_the_next_calls(
    tmp_path: Path,
) -> None:
    """Attack: `engine.close()` while the hosted pool starts (and will fail), then the
    engine used again (its docstring: the workers restart on the next call; after close a
    thread drives them).

    today: `_stop` joins the start thread, whose `_started(error)` is queued on the loop
    and runs after `close()` returned: `Front._pool_started` -> `_fail_all(error)` fails the
    calls made since, on the new driver's fresh pool, with the old start's error
    ("a reward worker failed to start")."""
    outcomes, _ = _stale_start_after_close(tmp_path)
    assert outcomes == ["4.0", "2.0"], outcomes


def test_hole_a_start_that_fails_after_close_does_not_spin_the_driver(tmp_path: Path) -> None:
    """The same attack: the stale `_pool_started(error)` also sets `_woken = False` while the
    new driver thread's wake-up pipe holds a byte: `_take` no longer drains it, `select`
    returns at once, and the idle driver spins (about 1.3 s of CPU in 2 s here) until the
    next call."""
    _, spent = _stale_start_after_close(tmp_path)
    assert spent < 0.2, f"{spent:.2f} s of CPU in 2 s idle"


# -- 3. breaks, kills and replacements --------------------------------------------------------


def test_hole_a_pool_break_does_not_stall_the_loop(tmp_path: Path) -> None:
    """Attack: workers whose process takes 5 s to exit (a library's exit handlers: CUDA, a
    tokenizer's threads); a pool break (a replacement dies while it builds).

    today: `Front._step` closes the broken pool on the loop (`_close_pool` ->
    `TimeoutPool.close`), which waits up to `_EXIT_S` = 1 s for the idle workers to exit:
    /health and every connection wait about 1 s, at every break."""
    with rigged(tmp_path, "--workers", "2", "--max-queue", "8") as (server, folder):
        (folder / "exit_s").write_text("5")
        break_pool(server, folder)  # the startup pool had no exit_s: a new one has
        assert rewards(score(server, ["abc", "abcd"])) == [3.0, 4.0]
        token = folder / "die-1"
        token.write_text("")
        with HealthProbe(server) as probe:
            time.sleep(0.3)
            assert statuses(score(server, ["die"])) == ["error"]
            assert wait_until(lambda: not token.exists(), 10)
            time.sleep(2.0)
        assert probe.longest < 0.5, f"/health waited {probe.longest:.2f} s"


def test_guard_30_kills_keep_descriptors_flat_and_calls_fast(tmp_path: Path) -> None:
    """Attack: 30 worker kills (`die`) then 10 timeouts (`hang`), one worker: the server's
    descriptors do not grow, and calls afterwards take milliseconds (a stale registration
    for a reused pipe number would leave them to the 0.1 s deadline looks)."""
    with rigged(tmp_path, "--workers", "1", "--max-queue", "8") as (server, _):
        with httpx.Client(base_url=server.url, headers=AUTH, timeout=30) as client:

            def call(text: str) -> str:
                answer = client.post("/v1/score", json=[{"completion": text}])
                assert answer.status_code == 200, answer.text
                return str(answer.json()["results"][0]["components"]["s"]["status"])

            call("abc")
            before = fds(server)
            for _ in range(30):
                assert call("die") == "error"
            for _ in range(10):
                assert call("hang") == "timeout"
            call("abc")  # the last replacement is up
            time.sleep(0.5)
            grown = fds(server) - before
            took = []
            for _ in range(20):
                started = time.perf_counter()
                assert call("ab") == "ok"
                took.append(time.perf_counter() - started)
        assert grown <= 2, f"{grown} more descriptors after 40 kills"
        took.sort()
        assert took[10] < 0.03, f"median call {took[10] * 1000:.0f} ms after 40 kills"
        assert idle_cpu(server) < 0.2


def test_guard_timeouts_are_enforced_after_replacements_and_a_new_pool(tmp_path: Path) -> None:
    """Attack: 15 kills (`die`), then a pool break and a new pool: a hanging sample is still
    `timeout` at its deadline (1 s), and the others are scored."""
    with rigged(tmp_path, "--workers", "2", "--max-queue", "8") as (server, folder):
        for _ in range(15):
            assert statuses(score(server, ["die"])) == ["error"]
        started = time.monotonic()
        assert statuses(score(server, ["hang", "abc", "hang"])) == ["timeout", "ok", "timeout"]
        assert time.monotonic() - started < 1 + 2 * SLACK_S
        break_pool(server, folder)
        assert rewards(score(server, ["ab"])) == [2.0]  # the new pool
        started = time.monotonic()
        assert statuses(score(server, ["hang", "abc"])) == ["timeout", "ok"]
        assert time.monotonic() - started < 1 + 2 * SLACK_S
        assert queued(server) == 0


def test_guard_sigterm_while_a_replacement_builds_with_nothing_waiting(tmp_path: Path) -> None:
    """Attack: SIGTERM while the only worker's replacement builds (10 s) and no request
    waits: the process ends within a few seconds (the building worker is killed), no
    worker is left."""
    with rigged(tmp_path, "--workers", "1", "--max-queue", "8") as (server, folder):
        (folder / "build_s").write_text("10")
        assert statuses(score(server, ["die"])) == ["error"]
        time.sleep(0.5)
        alive = workers(server)
        assert alive, "no replacement building"
        started = time.monotonic()
        server.terminate()
        assert server.process.wait(timeout=30) == -signal.SIGTERM
        assert time.monotonic() - started < 2 + 2 * SLACK_S
        assert wait_until(lambda: not any(_alive(pid) for pid in alive), 5), alive
        assert "Traceback" not in server.output()


def test_guard_no_worker_left_after_sigterm_after_repeated_breaks(tmp_path: Path) -> None:
    """Attack: 3 pool breaks, each followed by a new pool, then SIGTERM: the process ends
    by the signal, no traceback, and every worker it ever had is gone."""
    with rigged(tmp_path, "--workers", "2", "--max-queue", "8") as (server, folder):
        seen: set[int] = set(workers(server))
        for _ in range(3):
            break_pool(server, folder)
            assert rewards(score(server, ["abc"])) == [3.0]
            seen |= set(workers(server))
        assert len(seen) >= 6
        server.terminate()
        assert server.process.wait(timeout=30) == -signal.SIGTERM
        assert wait_until(lambda: not any(_alive(pid) for pid in seen), 5)
        assert "Traceback" not in server.output()
