"""A process pool where every task runs under a hard wall-clock timeout.

Why not `concurrent.futures` or `multiprocessing.Pool`: neither can stop one running task.
A hung sympy call (or a fork bomb in user code) would hold a worker forever. Here each worker
runs its tasks one at a time and reports each result as soon as it has it, so the parent
always knows which task a worker is on and since when. A worker past its task's deadline is
killed (SIGKILL: nothing to catch, no `signal.alarm`, works from any thread) and replaced;
the task gets a `timeout` score and the tasks queued behind it go to other workers.

Tasks are sent in small batches (one pipe message per batch) to keep IPC cheap; results come
back one message per task, which is what makes the per-task deadline exact: a task's clock
starts when the result before it arrives.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import time
import traceback
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from ..models import Sample, Score
from ..registry import RewardFn

__all__ = ["Task", "TimeoutPool", "default_workers"]

_BATCH = 32
"""Most tasks per pipe message. Tasks behind a hung one wait until it is killed."""
_START_TIMEOUT_S = 60.0
"""A worker that cannot build its rewards in this time is broken, not slow."""
_MAX_DETAIL_CHARS = 2_000
"""Length kept of an exception's traceback in `detail`."""


def default_workers() -> int:
    """One worker per usable core."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Task:
    """Score `sample` with the component named `component`; `key` identifies the result."""

    key: Any
    component: str
    sample: Sample
    timeout_s: float


@dataclass
class _Worker:
    process: Any
    conn: Connection
    outstanding: deque[Task] = field(default_factory=deque)
    head_started: float = 0.0


def _worker_main(conn: Connection, plan: dict[str, Any]) -> None:
    """Build the reward functions once, then score tasks until the pipe closes."""
    rewards: dict[str, RewardFn] = {name: component.build() for name, component in plan.items()}
    conn.send(("ready", None))
    while True:
        try:
            batch: list[tuple[Any, str, Sample]] = conn.recv()
        except (EOFError, OSError):
            return
        for key, component, sample in batch:
            conn.send((key, _run_one(rewards[component], sample)))


def _run_one(fn: RewardFn, sample: Sample) -> Score:
    try:
        score = fn(sample)
    except Exception as exc:  # a reward bug on one sample must not stop the batch
        tail = traceback.format_exc()[-_MAX_DETAIL_CHARS:]
        return Score.failed("error", f"{type(exc).__name__}: {exc}", traceback=tail)
    if not isinstance(score, Score):
        return Score.failed("error", f"reward returned {type(score).__name__}, not a Score")
    if score.status == "ok" and (score.score is None or not math.isfinite(score.score)):
        return Score.failed("error", f"reward returned a non-finite score {score.score!r}")
    return score


class TimeoutPool:
    """Workers that score `Task`s, each under its own hard timeout.

    Use `submit` to queue tasks and `poll` to collect finished ones (in completion order).
    Not thread-safe: one thread drives a pool.
    """

    def __init__(self, plan: dict[str, Any], workers: int | None = None) -> None:
        """Start `workers` processes, each building the components in `plan` once.

        Args:
            plan: component name -> object with a `build() -> RewardFn` method (picklable).
            workers: process count; default one per core.
        """
        self._plan = plan
        self._size = workers or default_workers()
        self._context = mp.get_context("forkserver")
        modules = sorted({type(c).__module__ for c in plan.values()} | {__name__})
        self._context.set_forkserver_preload(modules)
        self._pending: deque[Task] = deque()
        self._workers: list[_Worker] = []
        self.replaced = 0
        """Workers killed and replaced so far (timeouts and crashes)."""
        for _ in range(self._size):
            self._workers.append(self._start())
        for worker in self._workers:
            self._await_ready(worker)

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_worker_main, args=(child, self._plan), daemon=True, name="rewardsmith-worker"
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def _await_ready(self, worker: _Worker) -> None:
        if not worker.conn.poll(_START_TIMEOUT_S):
            raise RuntimeError("a reward worker did not start in time")
        try:
            worker.conn.recv()
        except EOFError:
            raise RuntimeError(
                f"a reward worker failed to start (exit code {worker.process.exitcode})"
            ) from None

    @property
    def busy(self) -> int:
        """Tasks submitted and not yet returned by `poll`."""
        return len(self._pending) + sum(len(w.outstanding) for w in self._workers)

    def submit(self, tasks: Sequence[Task]) -> None:
        """Queue tasks; they start as workers free up."""
        self._pending.extend(tasks)

    def poll(self, max_wait_s: float = 0.1) -> list[tuple[Any, Score]]:
        """Dispatch queued tasks and return the results that arrive within `max_wait_s`."""
        self._dispatch()
        done: list[tuple[Any, Score]] = []
        active = [w for w in self._workers if w.outstanding]
        if not active:
            return done
        now = time.monotonic()
        next_deadline = min(w.head_started + w.outstanding[0].timeout_s for w in active)
        ready = wait(
            [w.conn for w in active], timeout=max(0.0, min(max_wait_s, next_deadline - now))
        )
        by_conn = {id(w.conn): w for w in active}
        for conn in ready:
            worker = by_conn[id(conn)]
            self._drain(worker, done)
        now = time.monotonic()
        for index, worker in enumerate(self._workers):
            if worker.outstanding and now > worker.head_started + worker.outstanding[0].timeout_s:
                task = worker.outstanding.popleft()
                score = Score.failed(
                    "timeout",
                    f"exceeded {task.timeout_s:g}s; worker killed",
                    timeout_s=task.timeout_s,
                )
                done.append((task.key, score))
                self._replace(index)
        self._dispatch()
        return done

    def _drain(self, worker: _Worker, done: list[tuple[Any, Score]]) -> None:
        try:
            while worker.outstanding and worker.conn.poll():
                key, score = worker.conn.recv()
                task = worker.outstanding.popleft()
                assert key == task.key, "worker results out of order"
                done.append((key, score))
                worker.head_started = time.monotonic()
        except (EOFError, OSError):  # the worker died under a task (os._exit, OOM kill...)
            task = worker.outstanding.popleft()
            worker.process.join(timeout=1)
            code = worker.process.exitcode
            done.append((task.key, Score.failed("error", f"worker died (exit code {code})")))
            self._replace(self._workers.index(worker))

    def _replace(self, index: int) -> None:
        old = self._workers[index]
        self._pending.extendleft(reversed(old.outstanding))
        old.outstanding.clear()
        _kill(old)
        self.replaced += 1
        fresh = self._start()
        self._await_ready(fresh)
        self._workers[index] = fresh

    def _dispatch(self) -> None:
        """Hand a batch to each idle worker.

        Only idle workers get work: a worker blocked in a hung task would not read its pipe,
        and a large batch written into a full pipe would block the parent past any deadline.
        """
        idle = [i for i, w in enumerate(self._workers) if not w.outstanding]
        for index in idle:
            if not self._pending:
                return
            size = min(_BATCH, max(1, -(-len(self._pending) // len(idle))))
            batch = [self._pending.popleft() for _ in range(min(size, len(self._pending)))]
            worker = self._workers[index]
            worker.outstanding.extend(batch)
            worker.head_started = time.monotonic()
            try:
                worker.conn.send([(t.key, t.component, t.sample) for t in batch])
            except OSError:  # died while idle: its batch goes back to the queue
                self._replace(index)

    def close(self) -> None:
        """Stop every worker now."""
        for worker in self._workers:
            _kill(worker)
        self._workers.clear()
        self._pending.clear()

    def __enter__(self) -> TimeoutPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kill(worker: _Worker) -> None:
    try:
        worker.conn.close()
    finally:
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=5)
