"""A process pool where every task runs under a hard wall-clock timeout.

Why not `concurrent.futures` or `multiprocessing.Pool`: neither can stop one running task.
A hung sympy call (or a fork bomb in user code) would hold a worker forever. Here a worker
runs its tasks one at a time and, before each, writes the task's sequence number and start
time into memory it shares with the parent. The parent therefore always knows which task a
worker is on and since when, without a message per task. A worker past its task's deadline
is killed (SIGKILL: nothing to catch, no `signal.alarm`, works from any thread) and replaced
by a fork of a preloaded server; the task gets a `timeout` score and every other task it
held goes back to the queue.

Tasks go out in batches and results come back in batches (flushed every `_FLUSH_S`, so a
caller waiting on one sample gets it within milliseconds of its end, not at the end of its
batch), so IPC costs a few messages per batch rather than several per task. Before a
batch's first task, a reward with a `prefetch` method (the model rewards) is shown every sample
of the batch it will score, so one model call can serve them all. A task that
cannot be sent (a sample that does not pickle, or nests too deep for it) is `invalid` on its
own; the rest of its batch goes out.

Workers die with the engine's process, and a process forked from it gets its own fork
server and workers (`_lifetime`). A pool whose size is not given takes its share of the
node's cores (`_capacity`).
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import os
import pickle
import select
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from ..models import Sample, Score, built
from ..registry import RewardFn
from ._capacity import default_workers, worker_count
from ._lifetime import die_with_parent, track_worker

__all__ = ["Task", "TimeoutPool", "default_workers"]

_BATCH = 64
"""Most tasks per pipe message."""
_FLUSH_S = 0.01
"""A worker sends finished results at least this often: callers of the engine's front get
each result soon after it is ready (and a kill loses little work)."""
_START_TIMEOUT_S = 120.0
"""A worker that cannot build its rewards in this time is broken, not slow."""
_MAX_TRACEBACK_CHARS = 2_000
"""Length kept of an exception's traceback in `detail`."""
_EXIT_S = 1.0
"""How long closing the pool waits for its idle workers to exit before killing them."""
_IDLE = -1.0
"""Progress value of a worker between tasks."""
_UNSENDABLE = (pickle.PicklingError, RecursionError, TypeError, AttributeError, ValueError)
"""What pickling a task may raise when its sample cannot be sent to a worker."""


class Task(NamedTuple):
    """Score `sample` with the component named `component`; `key` identifies the result.
    (A tuple: one is made per sample and component, and a frozen dataclass costs a
    `__setattr__` call per field.)"""

    key: Any
    component: str
    sample: Sample
    timeout_s: float


@dataclass
class _Worker:
    process: Any
    conn: Connection
    progress: Any  # shared double[2]: [seq of the running task or _IDLE, its start time]
    outstanding: dict[int, Task] = field(default_factory=dict)
    starting: float | None = None
    """`time.monotonic()` at its start, until it says it is ready (no task goes to it before)."""
    killed: bool = False
    """Killed, its pipe closed and its process let go of."""

    def running(self) -> tuple[int, float] | None:
        """(seq, start) of the task the worker is on, read consistently; None if unknown."""
        seq, started, again = self.progress[0], self.progress[1], self.progress[0]
        if seq != again or seq == _IDLE or int(seq) not in self.outstanding:
            return None
        return int(seq), started


def _worker_main(conn: Connection, progress: Any, plan: dict[str, Any]) -> None:
    """Build the reward functions once, then score batches until the pipe closes."""
    die_with_parent()
    _run_as_batch()
    rewards: dict[str, RewardFn] = {name: component.build() for name, component in plan.items()}
    try:
        conn.send(("ready", os.getpid()))
        while True:
            batch = [(seq, name, built(Sample, *sample)) for seq, name, sample in conn.recv()]
            _prefetch(rewards, batch)
            done: list[tuple[int, tuple[float | None, str, dict[str, Any]]]] = []
            flushed = time.monotonic()
            for seq, component, sample in batch:
                progress[1] = time.monotonic()  # start time first: a reader never sees a
                progress[0] = seq  # new seq paired with an old start time
                score = _run_one(rewards[component], sample)
                done.append((seq, (score.score, score.status, score.detail)))
                if time.monotonic() - flushed > _FLUSH_S:
                    conn.send_bytes(_packed(done))
                    done, flushed = [], time.monotonic()
            progress[0] = _IDLE
            if done:
                conn.send_bytes(_packed(done))
    except (EOFError, OSError):  # the pool closed its end (a send to it: broken pipe)
        return


_Sent = tuple[int, str, tuple[dict[str, Any], set[str]]]
"""A task as the pipe carries it: its sequence number, component and sample (`_fields`)."""


def _fields(sample: Sample) -> tuple[dict[str, Any], set[str]]:
    """A sample as it goes to a worker, which rebuilds it with `built`: its fields, with no
    model around them (pickling a model's state, and reading it back, cost three times as
    much)."""
    return sample.__dict__, sample.__pydantic_fields_set__


def _packed(message: object) -> bytes:
    """A message for a pipe, as `Connection.send` would pickle it (and `recv` reads it), by
    plain `pickle`: tasks and scores hold no pipes or sockets, the one thing its
    `ForkingPickler` adds, which copies its table of reducers for every message (half the
    cost of a batch of one sample)."""
    return pickle.dumps(message, pickle.HIGHEST_PROTOCOL)


def _run_as_batch() -> None:
    """Schedule this worker as a batch job (Linux `SCHED_BATCH`, same share of the CPU): a
    worker woken by new tasks then does not preempt the process that feeds it (a server's
    event loop, which on a busy node would otherwise lose its core at every batch sent)."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or refused: as it was
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


def _prefetch(rewards: dict[str, RewardFn], batch: list[tuple[int, str, Sample]]) -> None:
    """Show each reward that batches (one with a `prefetch` method: the model rewards) every
    sample of this batch it is about to score, so one model call can serve them all.

    `prefetch` only sends work and returns: no task's timeout has started yet. If it raises,
    nothing is lost but the batching: each sample is then sent on its own, and a failure that
    persists is reported on that sample.
    """
    for name, fn in rewards.items():
        prefetch = getattr(fn, "prefetch", None)
        samples = [sample for _, component, sample in batch if component == name]
        if prefetch is not None and samples:
            try:
                prefetch(samples)
            except Exception:
                continue


def _readable(fds: list[int], timeout_s: float) -> list[int]:
    """Those of `fds` with something to read, or closed, within `timeout_s` seconds (as
    `multiprocessing.connection.wait`, without its selector objects: a fifth of its cost, on
    the path of every look at the workers)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(math.ceil(timeout_s * 1000))]


def _run_one(fn: RewardFn, sample: Sample) -> Score:
    try:
        score = fn(sample)
    except Exception as exc:  # a reward bug on one sample must not stop the batch
        tail = traceback.format_exc()[-_MAX_TRACEBACK_CHARS:]
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

    def __init__(
        self, plan: dict[str, Any], workers: int | None = None, preload: Iterable[str] = ()
    ) -> None:
        """Start `workers` processes, each building the components in `plan` once.

        Args:
            plan: component name -> object with a `build() -> RewardFn` method (picklable).
            workers: process count (at least 1); default `REWARDSMITH_WORKERS`, else this
                process's share of the node's cores (`_capacity`).
            preload: modules the fork server imports once, so every worker (and every
                replacement after a kill) starts with them loaded.
        """
        self._plan = plan
        self._size = default_workers() if workers is None else worker_count(workers)
        self._context = mp.get_context("forkserver")
        modules = {type(c).__module__ for c in plan.values()} | {__name__, *preload}
        self._context.set_forkserver_preload(sorted(modules))
        self._pending: deque[Task] = deque()
        self._alone: set[int] = set()
        """Tasks (`id`) back from a killed worker: each goes out alone next, so it cannot be
        lost again behind another hanging task (a worker sends its results at the end of a
        batch: those done before a task that hangs die with the worker)."""
        self._rejected: list[tuple[Any, Score]] = []
        self._workers: list[_Worker] = []
        self._closed = False
        self._seq = 0
        self.replaced = 0
        """Workers killed and replaced so far (timeouts and crashes)."""
        self.closing: Callable[[int], None] | None = None
        """Called with a worker pipe's file descriptor before the pool closes it: an event
        loop that watches it lets go first (a new pipe may get the same number, which the
        loop would then never hear from)."""
        try:
            for _ in range(self._size):
                self._workers.append(self._start())
            for worker in self._workers:
                self._await_ready(worker)
        except BaseException:  # none is left waiting on its pipe, holding what it built
            for worker in self._workers:
                self._kill(worker)
            raise

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        progress = self._context.RawArray("d", [_IDLE, 0.0])
        process = self._context.Process(
            target=_worker_main,
            args=(child, progress, self._plan),
            daemon=True,
            name="rewardsmith-worker",
        )
        process.start()
        track_worker(process)
        child.close()
        return _Worker(process, parent, progress, starting=time.monotonic())

    def _await_ready(self, worker: _Worker) -> None:
        if worker.conn.poll(_START_TIMEOUT_S):
            try:
                worker.conn.recv()
                worker.starting = None
                return
            except EOFError:
                pass
        raise self._failed_to_start(worker)

    def _failed_to_start(self, worker: _Worker) -> RuntimeError:
        code = self._kill(worker)
        return RuntimeError(
            f"a reward worker failed to start (exit code {code}). Workers "
            "are started like those of any Python process pool: a script must run its code "
            "under `if __name__ == '__main__':`, and reward types must be importable."
        )

    @property
    def busy(self) -> int:
        """Tasks submitted and not yet returned by `poll`."""
        return len(self._pending) + sum(len(w.outstanding) for w in self._workers)

    @property
    def saturated(self) -> bool:
        """Every worker has work (or is starting): tasks submitted now would only queue. (A
        closed pool is not: a driver whose pool a callback closed may still read this into
        the front, which must then wake its next driver for new tasks.)"""
        return not self._closed and all(
            w.outstanding or w.starting is not None for w in self._workers
        )

    def submit(self, tasks: Sequence[Task]) -> None:
        """Queue tasks; they start as workers free up (a closed pool raises RuntimeError:
        nothing would ever run them)."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        self._pending.extend(tasks)

    def drop(self, match: Callable[[Any], bool]) -> None:
        """Forget the queued tasks whose key `match`es (tasks already sent run to the end)."""
        self._pending = deque(task for task in self._pending if not match(task.key))
        self._alone &= {id(task) for task in self._pending}

    def poll(self, max_wait_s: float = 0.1, wake: int | None = None) -> list[tuple[Any, Score]]:
        """Dispatch queued tasks and return the results that arrive within `max_wait_s`.

        `wake`: a file descriptor that ends the wait early when it becomes readable (the
        engine's front uses it to hand new tasks over at once).
        """
        self._dispatch()
        done, self._rejected = self._rejected, []
        active = self._watched()
        if not active:
            return done
        wait_s = self._look_in(active, max_wait_s)
        by_fd = {w.conn.fileno(): w for w in active}
        for fd in _readable(
            [*by_fd, wake] if wake is not None else list(by_fd), 0.0 if done else wait_s
        ):
            if fd != wake:
                self._drain(by_fd[fd], done)
        now = time.monotonic()
        for index, worker in enumerate(self._workers):
            if worker.starting is not None and now > worker.starting + _START_TIMEOUT_S:
                raise self._failed_to_start(worker)
            if not worker.outstanding:
                continue
            running = worker.running()  # read once: the kill decision and the verdict use it
            if now > self._deadline(worker, running):
                self._expire(index, running, done)
        self._dispatch()
        done += self._rejected
        self._rejected = []
        return done

    def watched(self) -> list[int]:
        """The pipes of the workers with tasks: one is readable when results come (or its
        worker died). An event loop that drives the pool watches them (`Front.host`)."""
        return [w.conn.fileno() for w in self._watched()]

    def next_look_s(self, max_wait_s: float) -> float:
        """When to poll again at the latest: the next deadline of a running task (or of a
        worker's start), or `max_wait_s` if it is sooner."""
        return self._look_in(self._watched(), max_wait_s)

    def _watched(self) -> list[_Worker]:
        """The workers to hear from: those with tasks, and those starting."""
        return [w for w in self._workers if w.outstanding or w.starting is not None]

    def _look_in(self, active: list[_Worker], max_wait_s: float) -> float:
        now = time.monotonic()
        due = [
            self._deadline(w, w.running()) if w.starting is None else w.starting + _START_TIMEOUT_S
            for w in active
        ]
        return max(0.0, min([max_wait_s] + [d - now for d in due]))

    def _deadline(self, worker: _Worker, running: tuple[int, float] | None) -> float:
        if running is None:  # between two tasks for a moment: look again soon
            return math.inf
        seq, started = running
        return started + worker.outstanding[seq].timeout_s

    def _expire(
        self, index: int, running: tuple[int, float] | None, done: list[tuple[Any, Score]]
    ) -> None:
        """Kill a worker past the deadline of `running`, the task it was seen on.

        The task is `timeout` only if the worker was still on it when it died (its progress
        after the kill is final). If it had finished and the worker moved on meanwhile, no
        task gets `timeout`: both go back to the queue with the worker's other tasks.
        """
        worker = self._workers[index]
        self._kill(worker)
        if running is not None and worker.running() == running:
            task = worker.outstanding.pop(running[0])
            reason = f"exceeded {task.timeout_s:g}s; worker killed"
            done.append((task.key, Score.failed("timeout", reason, timeout_s=task.timeout_s)))
        self._replace(index)

    def _drain(self, worker: _Worker, done: list[tuple[Any, Score]]) -> None:
        if worker.starting is not None:  # what it has to say is that it is ready
            try:
                worker.conn.recv()
            except (EOFError, OSError):
                raise self._failed_to_start(worker) from None
            worker.starting = None
            return
        try:
            fd = worker.conn.fileno()
            while True:  # it was readable
                for seq, (value, status, detail) in worker.conn.recv():
                    task = worker.outstanding.pop(seq)
                    score = Score.received(value, status, detail)
                    done.append((task.key, score))
                if not (worker.outstanding and _readable([fd], 0.0)):
                    break
        except (EOFError, OSError):  # the worker died under a task (os._exit, OOM kill...)
            running = worker.running()
            worker.process.join(timeout=1)
            if running is not None:
                task = worker.outstanding.pop(running[0])
                reason = f"worker died (exit code {worker.process.exitcode})"
                done.append((task.key, Score.failed("error", reason)))
            self._replace(self._workers.index(worker))

    def _replace(self, index: int) -> None:
        """Kill a worker and start another; tasks it held go back to the front of the queue.

        The new one is not waited for (it builds its rewards: a fraction of a second, or
        seconds for a model): the other workers go on meanwhile, and it takes tasks once it
        says it is ready (`poll` hears it)."""
        old = self._workers[index]
        self._alone.update(id(task) for task in old.outstanding.values())
        self._pending.extendleft(reversed(list(old.outstanding.values())))
        old.outstanding.clear()
        self._kill(old)
        self.replaced += 1
        self._workers[index] = self._start()

    def _dispatch(self) -> None:
        """Hand a batch to each idle worker.

        Only idle workers get work: a worker blocked in a hung task would not read its pipe,
        and a large batch written into a full pipe would block the parent past any deadline.
        """
        idle = [i for i, w in enumerate(self._workers) if not w.outstanding and w.starting is None]
        for index in idle:
            if not self._pending:
                return
            if id(self._pending[0]) in self._alone:
                self._alone.discard(id(self._pending[0]))
                batch = [self._pending.popleft()]
            else:
                size = min(_BATCH, max(1, -(-len(self._pending) // len(idle))))
                size = min(size, len(self._pending))
                batch = [self._pending.popleft() for _ in range(size)]
            worker = self._workers[index]
            message: list[_Sent] = []
            for task in batch:
                self._seq += 1
                worker.outstanding[self._seq] = task
                message.append((self._seq, task.component, _fields(task.sample)))
            try:
                payload = _packed(message)
            except _UNSENDABLE:
                payload = self._sendable(worker, message)
            try:
                if payload:
                    worker.conn.send_bytes(payload)
            except OSError:  # died while idle: its batch goes back to the queue
                self._replace(index)

    def _sendable(self, worker: _Worker, message: list[_Sent]) -> bytes:
        """The batch without the tasks that cannot be pickled; those are `invalid`."""
        kept = []
        for item in message:
            try:
                _packed(item)
            except _UNSENDABLE as exc:
                task = worker.outstanding.pop(item[0])
                reason = f"the sample cannot be sent to a worker: {type(exc).__name__}: {exc}"
                self._rejected.append((task.key, Score.failed("invalid", reason[:500])))
            else:
                kept.append(item)
        return _packed(kept) if kept else b""

    def close(self) -> None:
        """Stop every worker now. An idle worker is let exit on its own when its pipe
        closes, so its finalizers run (a library's semaphore it made is released, not
        reported leaked at exit); a busy or slow one is killed."""
        self._closed = True
        for worker in self._workers:
            if not worker.outstanding:
                self._close_pipe(worker)
        deadline = time.monotonic() + _EXIT_S
        for worker in self._workers:
            if not worker.outstanding and not worker.killed:
                worker.process.join(max(0.0, deadline - time.monotonic()))
            self._kill(worker)
        self._workers.clear()
        self._pending.clear()

    def _kill(self, worker: _Worker) -> int | None:
        """Kill the worker (if it runs), close its pipe and let go of its process (its exit
        code, returned, is all that is left of it)."""
        process = worker.process
        if worker.killed:
            return None
        if process.is_alive():  # killed first: a close interrupted here (Ctrl-C) is finished
            process.kill()  # by another (`Front._close_pool`), which must not skip it
        worker.killed = True
        process.join(timeout=5)
        code = process.exitcode
        self._close_pipe(worker)
        with contextlib.suppress(ValueError):  # still running after SIGKILL: kept open
            process.close()  # its sentinel's descriptor
        return code

    def _close_pipe(self, worker: _Worker) -> None:
        if not worker.conn.closed:
            if self.closing is not None:
                self.closing(worker.conn.fileno())
            worker.conn.close()

    def __enter__(self) -> TimeoutPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
