"""Worker processes: they die with the engine, a forked child gets its own, and a kill is
decided on one reading of a worker's progress."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewardsmith import Engine, Sample
from rewardsmith.engine import Task, TimeoutPool

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = "tests.engine.rewards_for_tests:scripted"
SPEC = {"rewards": {"s": {"type": SCRIPTED}}, "timeout_s": 5}


def _score_in_child(queue: mp.Queue) -> None:  # type: ignore[type-arg]
    with Engine(SPEC, workers=1) as engine:
        queue.put([r.reward for r in engine.score([{"completion": "abc"}])])


def test_a_forked_child_of_a_process_that_scored_gets_a_working_engine() -> None:
    with Engine(SPEC, workers=1) as engine:
        assert engine.score([{"completion": "ab"}])[0].reward == 2.0
        # a new engine in a child forked by multiprocessing (a data loader, a process pool)
        context = mp.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_score_in_child, args=(queue,))
        child.start()
        assert queue.get(timeout=60) == [3.0]
        child.join(timeout=30)
        assert child.exitcode == 0
        # the parent's own engine, used in a plain os.fork() child, then that child exits
        # normally (running exit handlers): the parent's workers must survive it
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            code = 1
            try:
                rewards = [r.reward for r in engine.score([{"completion": "abcd"}])]
                engine.close()
                os.write(write, repr(rewards).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read) as pipe:
            assert pipe.read() == "[4.0]"
        assert os.waitstatus_to_exitcode(status) == 0
        assert engine.score([{"completion": "abcde"}])[0].reward == 5.0


HANGING_ENGINE = f"""
import sys
from rewardsmith import Engine
engine = Engine({{"rewards": {{"s": {{"type": "{SCRIPTED}"}}}}, "timeout_s": 600}}, workers=1)
worker = engine.pool._workers[0].process.pid
print(worker, flush=True)
engine.score([{{"completion": "hang"}}])
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_a_hung_worker_and_its_fork_server_die_with_a_killed_engine() -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    command = [sys.executable, "-c", HANGING_ENGINE]
    survivors: list[int] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True) as engine:
        try:
            assert engine.stdout is not None
            worker = int(engine.stdout.readline())
            stat = Path(f"/proc/{worker}/stat").read_text()
            fork_server = int(stat.split(")")[-1].split()[1])
            survivors = [worker, fork_server]
            time.sleep(0.5)  # the worker is now spinning in the hung task
            assert _alive(worker) and _alive(fork_server)
            engine.send_signal(signal.SIGKILL)
            engine.wait()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and any(map(_alive, survivors)):
                time.sleep(0.1)
            assert not _alive(worker), "the hung worker outlived the killed engine"
            assert not _alive(fork_server), "the fork server outlived the killed engine"
        finally:
            engine.kill()
            for pid in survivors:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)


def test_a_kill_decided_for_one_task_never_times_out_the_next() -> None:
    """The worker finishes task A and starts task B just after the pool found A overdue:
    B has just started, so it must not be reported as `timeout` (it is run again)."""
    with TimeoutPool({"s": Engine(SPEC).spec.rewards["s"]}, workers=1) as pool:
        pool.submit(
            [
                Task("a", "s", Sample(id="a", completion="sleep 0.2"), 30.0),
                Task("b", "s", Sample(id="b", completion="bb"), 30.0),
            ]
        )
        pool._dispatch()
        worker = pool._workers[0]
        seq_a, seq_b = sorted(worker.outstanding)
        reads = 0
        a_started, b_started = time.monotonic() - 100.0, time.monotonic()

        def running() -> tuple[int, float]:
            nonlocal reads
            reads += 1
            if reads <= 2:  # the readings that decide the kill: A, overdue by far
                return seq_a, a_started
            return seq_b, b_started  # from then on the worker is on B, just started

        worker.running = running  # type: ignore[method-assign]
        results: dict[str, object] = {}
        deadline = time.monotonic() + 60
        while len(results) < 2 and time.monotonic() < deadline:
            for key, score in pool.poll(0.1):
                results[key] = (score.status, score.score)
        assert results == {"a": ("ok", 9.0), "b": ("ok", 2.0)}
        assert pool.replaced == 1


def test_a_sample_that_cannot_be_sent_to_a_worker_is_invalid_alone() -> None:
    unpicklable = Sample(id="bad", completion="x", metadata={"callback": lambda: None})
    with Engine(SPEC, workers=1) as engine:
        results = engine.score([{"id": "a", "completion": "aa"}, unpicklable, {"completion": "c"}])
    assert [(r.id, r.status, r.reward) for r in results] == [
        ("a", "ok", 2.0),
        ("bad", "invalid", None),
        ("3", "ok", 1.0),
    ]
    assert "cannot be sent to a worker" in results[1].components["s"].detail["reason"]


@pytest.mark.parametrize("workers", [0, -1, "two", 1.5, True])
def test_a_worker_count_below_one_or_not_whole_is_refused(workers: object) -> None:
    with pytest.raises(ValueError, match="workers must"):
        Engine(SPEC, workers=workers)  # type: ignore[arg-type]
