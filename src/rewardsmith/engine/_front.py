"""The engine's front: samples go in from any thread or coroutine at any time, results come
back as each is finished.

A worker pool is driven by one thread, so the front gives it one: the driver. Callers hand
it *runs*. A run is one call's samples (a list, or a stream added to as it is read),
finished by its own `ResultBuilder`, so group-level work (group transforms, group-scoped
shaping, batch whitening) sees exactly one call's samples, as a trainer batch, and completes
per group. Runs of many callers share the pool with no batch boundaries: a run's samples
join the pool's queue the moment they are added, idle workers take them, and a run gets its
results, in its input order, as soon as its next sample is finished.

The driver sleeps on a wake-up pipe while nothing is in flight, and waits on that pipe
together with the workers while something is, so a new sample never waits for a poll
interval. A server hosts the driver on its event loop instead (`host`): the loop watches the
pipes of the workers it waits for and drives the pool from its own thread, because a loop
and a driver thread in one process would take turns on the interpreter lock for every
request. A run that is cancelled (a caller that stopped reading) loses its queued tasks,
and the results of its tasks already running are dropped: nothing leaks into another run.

Admission control is an option (`limit`): a run that would take the samples accepted and
not yet answered past it is refused with `QueueFull` (the server's 503). Trainers use the
front without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import select
import threading
from collections.abc import Callable
from typing import Any, Protocol

from ..combine import ResultBuilder, Scored
from ..models import Result, Sample, Score
from ..spec import RewardSpec
from ._pool import Task

__all__ = ["EngineClosed", "Finishing", "Front", "Pool", "QueueFull", "Run", "Sink"]


class QueueFull(Exception):
    """The engine holds as many samples as its admission limit allows (retry later)."""


class EngineClosed(RuntimeError):
    """The engine was closed while a run was in flight."""


class Pool(Protocol):
    """What the front needs of a worker pool (`TimeoutPool`, `RayPool`)."""

    @property
    def busy(self) -> int: ...
    @property
    def saturated(self) -> bool: ...
    def submit(self, tasks: list[Task]) -> None: ...
    def poll(self, max_wait_s: float = 0.1, wake: int | None = None) -> list[tuple[Any, Score]]: ...
    def drop(self, match: Callable[[Any], bool]) -> None: ...
    def close(self) -> None: ...


class WatchedPool(Pool, Protocol):
    """A pool an event loop can drive (`TimeoutPool`): it says what to watch and when to look."""

    closing: Callable[[int], None] | None

    def watched(self) -> list[int]: ...
    def next_look_s(self, max_wait_s: float) -> float: ...


class Sink(Protocol):
    """Where a run's results go; called on the driver thread, so it must not block."""

    def scored(self, count: int) -> None:
        """`count` more samples have all their scores (they may wait for their group)."""

    def result(self, index: int, result: Result) -> None:
        """The result of the run's `index`-th sample (in order)."""

    def done(self, error: BaseException | None) -> None:
        """The run is over: every result was given, or it failed with `error`."""


_POLL_S = 0.1
"""Longest wait on the workers between two looks at the deadlines."""


def _to_score(payload: tuple[int, list[Sample | Result]]) -> bool:
    """An add's inputs are all samples to score: none is ready as it is."""
    return not any(isinstance(item, Result) for item in payload[1])


class Finishing:
    """The spec a run's results are finished with (its scores come from the front's)."""

    def __init__(self, spec: RewardSpec) -> None:
        self.spec = spec
        self.grouped = spec.needs_groups
        """Whether results need their whole group (the spec's `needs_groups`, looked up once)."""
        self._shared = None if self.grouped else ResultBuilder(spec, grouped=False)
        """Without group-level work a builder keeps nothing between samples, so every run
        shares this one rather than making its own (one per call of a single sample)."""

    def builder(self) -> ResultBuilder:
        """A run's builder."""
        return self._shared or ResultBuilder(self.spec, grouped=True)


class Run:
    """One call's samples, scored in the order they are added. Made by `Front.open`."""

    def __init__(self, front: Front, sink: Sink, whole: bool, finishing: Finishing) -> None:
        self._front = front
        self.sink = sink
        self.whole = whole
        """Answered as a whole: its samples count as admitted until the run is over."""
        self.added = 0
        """Samples added so far."""
        self.over = False
        """Failed, cancelled or finished: the driver ignores whatever still comes for it."""
        # Driver side
        self.builder = finishing.builder()
        self.partial: dict[int, tuple[Sample, dict[str, Score]]] = {}
        self.ready: dict[int, Scored | Result] = {}
        self.received = 0
        self.pushed = 0
        self.emitted = 0
        self.ended = False

    def add(self, items: list[Sample | Result]) -> None:
        """Queue samples (a `Result` stands for an input that is not a sample: it is ready).

        Raises:
            QueueFull: the front's admission limit would be passed (nothing was added).
        """
        self._front.command(self, "add", items)

    def end(self) -> None:
        """No more samples: the last group closes and the run finishes."""
        self._front.command(self, "end", None)

    def cancel(self) -> None:
        """Stop: queued tasks are dropped and no more results are given."""
        self._front.command(self, "cancel", None)


class Front:
    """The continuous front of one engine: one driver thread, one pool, many runs."""

    def __init__(
        self, spec: RewardSpec, make_pool: Callable[[], Pool], limit: int | None = None
    ) -> None:
        """Nothing starts until the first run is added to.

        Args:
            spec: the spec every run is scored and finished with.
            make_pool: starts the worker pool (called on the driver thread).
            limit: most samples accepted and not yet answered (None: no limit).
        """
        self.spec = spec
        self.finishing = Finishing(spec)
        """How runs are finished: with the spec."""
        self.untransformed = (
            self.finishing
            if spec.group_transform is None
            else Finishing(spec.with_group_transform(None))
        )
        """How runs are finished without the spec's `group_transform:` (a reward server's
        trainer clients: advantages are the trainer's job)."""
        self.limit = limit
        self._make_pool = make_pool
        self._names = list(spec.rewards)
        self._pool: Pool | None = None
        self._pool_lock = threading.Lock()
        self._lock = threading.Lock()
        self._close_lock = threading.Lock()
        """Held by the one `close` under way: two at once would close the pool of a driver
        that the first to end had let start."""
        self._inbox: list[tuple[Run, str, Any]] = []
        self._runs: set[Run] = set()
        self._admitted = 0
        self._thread: threading.Thread | None = None
        self._closing = False
        self._woken = False
        self._saturated = False
        """Every worker had work at the driver's last look: new samples would only queue, so
        adding them does not wake the driver (it takes them when a worker next answers);
        an input that is ready as it is (an invalid one's result) still wakes it."""
        self._wake_w = -1
        """Write end of the running driver's wake-up pipe (the driver closes it as it ends)."""
        self._host: _Hosted | None = None
        """The event loop that drives the pool instead of a thread (see `host`)."""
        self._ids = itertools.count()

    @property
    def admitted(self) -> int:
        """Samples accepted and not yet answered."""
        return self._admitted

    @property
    def pool(self) -> Pool:
        """The worker pool, started on first use."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = self._make_pool()
            return self._pool

    def open(self, sink: Sink, *, whole: bool = False) -> Run:
        """A new run whose results go to `sink`.

        Its samples count against the admission limit until they are answered: each as its
        result goes to the sink, or, with `whole` (a call answered all at once, as a server
        request), all of them when the run is over.
        """
        run = Run(self, sink, whole, self.finishing)
        with self._lock:
            self._runs.add(run)
        return run

    def submit(
        self,
        sink: Sink,
        items: list[Sample | Result],
        *,
        whole: bool = False,
        finishing: Finishing | None = None,
    ) -> Run:
        """A new run of `items` and no more: `open`, `Run.add` and `Run.end` in one hand-over
        (a call per sample makes one run each), finished by `finishing` (default: the
        front's).

        Raises:
            QueueFull: the admission limit would be passed (no run was opened).
        """
        run = Run(self, sink, whole, finishing or self.finishing)
        with self._lock:
            self._hand_over(run, "add", items, last=True)
            self._runs.add(run)
        return run

    def command(self, run: Run, op: str, payload: Any) -> None:
        """Hand the driver an operation on `run`; start the driver if it is not running."""
        with self._lock:
            self._hand_over(run, op, payload, last=False)

    def _hand_over(self, run: Run, op: str, payload: Any, last: bool) -> None:
        """`command` (an add that is `last` ends its run too), with `_lock` held.

        What is in flight gets a driver first, whatever becomes of this command (refused by
        the queue's limit, or failing): a closed hosting loop's runs are taken over, and a
        driver that could not start is tried again, so a failed call queues nothing."""
        idle = self._see_to_a_driver()
        if op == "add":
            count = len(payload)
            if self.limit is not None and self._admitted and self._admitted + count > self.limit:
                raise QueueFull(
                    f"the engine holds {self._admitted} samples; {count} more would pass "
                    f"its limit of {self.limit}. Retry later."
                )
            self._admitted += count
            payload = (run.added, payload, last)
            run.added += count
        self._inbox.append((run, op, payload))
        if idle:  # the driver started above takes the inbox once it has `_lock`
            return
        if not self._woken and not (op == "add" and self._saturated and _to_score(payload)):
            try:
                self._wake_driver()
            except BaseException as exc:
                self._woken = False
                if op != "add":
                    # an end or a cancel stays: nobody sends it again (`iter_score`'s
                    # `finally`). A failed take-over (no descriptor left) is tried again by
                    # the next look or call; an interrupt, by a thread, at once.
                    if isinstance(exc, Exception):
                        return
                    threading.Thread(
                        target=self._wake_from_thread, name="rewardsmith-wake", daemon=True
                    ).start()
                    raise
                # an add: as if this call never came (its caller sees why)
                self._inbox.pop()
                self._admitted -= len(payload[1])
                run.added -= len(payload[1])
                raise

    def _wake_driver(self) -> None:
        """Wake the driver (with `_lock` held): a look on the hosting loop, or a byte on the
        thread's pipe. A hosting loop closed just now is taken over by a thread."""
        self._woken = True
        if self._host is not None:
            try:
                self._host.wake()
            except RuntimeError:
                self._take_over()
        else:
            os.write(self._wake_w, b"\0")

    def _wake_from_thread(self) -> None:
        """Wake the driver for a command whose wake-up was interrupted (Ctrl-C)."""
        with self._lock:
            driven = self._host is not None or self._thread is not None
            if driven and not (self._woken or self._closing):
                self._wake_driver()

    def host(self, loop: asyncio.AbstractEventLoop, pool_watched: bool) -> None:
        """Drive the pool from `loop`, whose thread this call must run on, rather than from a
        thread of the front's own, until `close`. `pool_watched`: the pool `make_pool` starts
        is a `WatchedPool` (else nothing changes: the driver stays a thread).

        A server's event loop and a driver thread in one process take turns on the
        interpreter lock, and with one sample per request they would do so for every
        request; on the loop, a new run costs a callback, and a finished one sets its
        future there and then. Callers on other threads still work (they wake the loop).
        """
        if not pool_watched:
            return
        if loop.is_running() and asyncio._get_running_loop() is not loop:
            raise RuntimeError("host the front from the thread its loop runs on")
        with self._lock:
            if self._thread is not None or self._host is not None:
                raise RuntimeError("host the front before its first use")
            self._host = _Hosted(self, loop)
            self._woken = self._saturated = False

    def refuse_waiting_on_driver(self, call: str, *, awaits: bool = False) -> None:
        """Raise instead of waiting for results where they are made, which would wait for
        itself, forever: on the event loop that drives the pool (`host`), or on the thread
        that hosts it while it does not run, or on the driver thread (where a `submit`
        future's callbacks run). `awaits`: the call awaits its results on the running
        event loop, which may be the hosting loop itself (it goes on meanwhile), but no
        other loop of those threads."""
        host = self._host
        if host is not None and host.waits_on_itself() and not (awaits and host.on_loop()):
            raise RuntimeError(
                f"{call} waits for its results, on the thread of the event loop that drives "
                "the engine (Engine.host): the loop would wait for itself. Await "
                "`engine.ascore(...)` on that loop while it runs, or call from another "
                "thread."
            )
        if self._thread is threading.current_thread():
            raise RuntimeError(
                f"{call} waits for its results, on the engine's driver thread (a callback "
                "of a `submit` future runs there): the driver would wait for itself. Call "
                "from another thread."
            )

    def take_over_if_orphaned(self) -> bool:
        """Drive the pool from a thread if the event loop that hosted it was closed with
        runs in flight, or if no driver runs for what waits (its start failed, as a `close`
        ended): a caller that waits looks now and then, and nothing else would ever finish
        them.

        Returns:
            Whether anything still waits (the caller looks again).
        """
        with self._lock:
            waiting = self._waiting()
            if waiting or (self._host is not None and self._host.gone):
                self._see_to_a_driver()
            return waiting

    def _see_to_a_driver(self) -> bool:
        """Take over a closed hosting loop's runs, and start a driver if none drives (its
        start failed before), but while a close is under way: `close` starts one, for what
        it did not fail (with `_lock` held). Whether none drove (the one started now takes
        the inbox once it has `_lock`)."""
        if self._host is not None and self._host.gone:
            self._take_over()
        missing = self._host is None and self._thread is None
        if missing and not self._closing:
            self._start_driver()
        return missing

    def _waiting(self) -> bool:
        """Commands are queued, or runs have samples in flight (with `_lock` held): they
        need a driver (a run opened with nothing added yet does not)."""
        return bool(self._inbox) or any(run.added for run in self._runs)

    def _take_over(self) -> None:
        """A thread takes over the pool and what is in flight from a closed hosting loop
        (with `_lock` held)."""
        assert self._host is not None
        if self._thread is None and not self._closing:  # first: should it fail (no file
            self._start_driver()  # descriptor left), the next look or call tries again
        self._host.abandon()
        self._host = None

    def _start_driver(self) -> None:
        """Start a driver thread and its wake-up pipe (with `_lock` held)."""
        wake_r, self._wake_w = os.pipe()
        try:
            os.set_blocking(wake_r, False)
            os.set_blocking(self._wake_w, False)
            self._woken = False
            self._thread = threading.Thread(
                target=self._drive,
                args=(wake_r, self._wake_w),
                name="rewardsmith-front",
                daemon=True,
            )
            self._thread.start()
        except BaseException as exc:
            if isinstance(exc, Exception):  # no thread (can't start new thread): no pipe
                os.close(wake_r)
                os.close(self._wake_w)
            # else an interrupt, maybe once the thread runs: let go of it, and it closes
            # its pipe as it sees that (`_let_go`); one that never ran leaves two behind
            self._thread, self._wake_w = None, -1
            raise

    def close(self) -> None:
        """Stop the driver, fail the runs in flight (`EngineClosed`), stop the workers.

        The front can be used again afterwards: a new driver and pool start on demand (a
        thread's: `close` ends hosting). A second `close` waits for the first, unless it is
        called by the driver (a callback of a result) while another thread closes the
        engine: it returns at once, as that close waits for the driver.
        """
        host = self._host
        on_driver = self._thread is threading.current_thread() or (
            host is not None and host.on_loop()
        )
        # made before the lock: nothing may come between taking it and the `try` that lets
        # go of it (an interrupt there would keep it for good)
        error = EngineClosed("the engine was closed")
        failed: list[Run] = []
        if not self._close_lock.acquire(blocking=not on_driver):
            return
        try:
            restart = self._close(error, failed)
        finally:  # also when interrupted (Ctrl-C in a join): the engine takes calls again
            self._close_lock.release()
            # told once it is released: a callback that scores anew (a retry) is not stuck
            # in the closing; and every run is told, whatever one of them raises
            raised: BaseException | None = None
            for run in failed:
                try:
                    run.sink.done(error)
                except BaseException as exc:
                    raised = raised or exc
            if raised is not None:
                raise raised
        if restart is not None:  # no driver for the runs opened meanwhile: the next call
            raise restart  # starts one

    def _close(self, error: BaseException, failed: list[Run]) -> Exception | None:
        """`close` with `_close_lock` held: the runs failed with `error` go to `failed`, to
        be told; why no driver could start for the runs opened meanwhile."""
        try:
            with self._lock:
                thread, host = self._thread, self._host
                self._closing = True
                if thread is threading.current_thread():  # a callback of its own results
                    self._thread = None
                elif thread is not None and not self._woken:
                    self._wake_driver()
            if host is not None:
                host.stop()
            if thread is not None and thread is not threading.current_thread():
                thread.join()
            failed += self._fail_all(error, notify=False)
            self._close_pool()
        finally:
            restart = self._reopen()
        return restart

    def _reopen(self) -> Exception | None:
        """The end of a `close`: calls are taken again, and the runs opened while it closed
        get a driver; why none could start."""
        with self._lock:
            self._closing = False
            self._saturated = False
            self._woken = False  # a wake-up written for the driver that ended is no more
            if self._host is not None and not self._host.stopped:  # its stop was called off
                with contextlib.suppress(RuntimeError):  # (an interrupt): the loop drives on,
                    self._host.wake()  # alone; its looks while closing did nothing
                return None
            self._host = None
            # runs opened while it closed, or in flight if it was interrupted (a driver that
            # was still running, its join interrupted, goes on: it is not doubled)
            if self._waiting() and self._thread is None:
                try:
                    self._start_driver()
                except Exception as exc:
                    return exc
        return None

    def _close_pool(self, only: Pool | None = None, *, in_thread: bool = False) -> None:
        """Close the front's pool.

        Args:
            only: close it only if it is still that one (a callback of the driver that made
                it may have closed the engine and scored anew: the pool is another
                driver's now, and the close closed this one).
            in_thread: close it in a thread (a hosting loop must not wait for its workers
                to exit), as a close interrupted here (Ctrl-C) is finished.
        """
        with self._pool_lock:
            pool = self._pool
            if pool is None or (only is not None and pool is not only):
                return
            self._pool = None
        if in_thread:
            _close_in_thread(pool)
            return
        try:
            pool.close()
        except BaseException:  # interrupted: no one else holds the pool to close it
            _close_in_thread(pool)
            raise

    # -- the driver thread ----------------------------------------------------------------

    def _drive(self, wake_r: int, wake_w: int) -> None:
        pool: Pool | None = None
        try:
            pool = self.pool
            while True:
                commands = self._take(wake_r)
                if commands is None:
                    return
                for run, op, payload in commands:
                    self._apply(pool, run, op, payload)
                if pool.busy:
                    done = pool.poll(_POLL_S, wake=wake_r)
                    self._saturated = pool.saturated
                    self._collect(done)
                else:
                    self._saturated = False
                    self._sleep(wake_r)
        except BaseException as exc:  # the pool broke: every run in flight fails with it
            if self._let_go():  # the runs and the pool are no longer this driver's
                return
            self._fail_all(exc)
            if pool is not None:
                self._close_pool(only=pool)
            with self._lock:
                if self._let_go():  # let go meanwhile (a close): another may drive now
                    return
                self._thread = None
                if self._inbox and not self._closing:  # runs opened meanwhile
                    self._start_driver()
        finally:  # nobody writes to the pipe once `_thread` is no longer this thread
            os.close(wake_r)
            os.close(wake_w)

    def _let_go(self) -> bool:
        """This driver thread was let go by a `close` from one of its callbacks (it ends;
        the next call starts another)."""
        return self._thread is not threading.current_thread()

    def _take(self, wake_r: int) -> list[tuple[Run, str, Any]] | None:
        with self._lock:
            if self._let_go():
                return None
            if self._closing:
                self._thread = None
                return None
            commands, self._inbox = self._inbox, []
            # drained whatever `_woken` says: a byte whose writer was interrupted (its call
            # undone, `_woken` cleared) must not wake the driver for good
            self._woken = False
            try:
                while os.read(wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
            return commands

    def _sleep(self, wake_r: int) -> None:
        with self._lock:
            if self._inbox or self._woken or self._closing or self._let_go():
                return
        select.select([wake_r], [], [])

    # -- the driver hosted on an event loop --------------------------------------------------

    def _step(self, host: _Hosted) -> None:
        """One look, on the loop: new commands, finished tasks, deadlines (the thread
        driver's loop body, without the wait: the loop waits)."""
        with self._lock:
            if host.stopped or self._closing:
                return
            self._woken = False
            pool: WatchedPool | None = self._pool  # type: ignore[assignment]  (see `host`)
            if pool is None:  # started in a thread: the loop goes on meanwhile, and a run
                host.start_pool()  # cancelled before it is up leaves at once
                cancelled = self._drop_cancelled()
            else:
                commands, self._inbox = self._inbox, []
        if pool is None:
            for run in cancelled:
                self._finish(run, None, notify=False)
            return
        pool.closing = host.forget
        try:
            for run, op, payload in commands:
                self._apply(pool, run, op, payload)
            if host.stopped:  # a callback closed the engine: the pool is not ours
                return
            done = pool.poll(0.0)  # also when idle: a new worker's "ready" must be read
            self._saturated = pool.saturated
            self._collect(done)
            watched = pool.watched()
            host.watch(watched, pool.next_look_s(_POLL_S) if watched else None)
        except BaseException as exc:  # the pool broke: as with a thread, the next run
            host.watch([], None)  # starts a new one (and wakes the loop: no worker is busy)
            self._saturated = False
            self._fail_all(exc)
            self._close_pool(only=pool, in_thread=True)
            if not isinstance(exc, Exception):
                raise

    def _drop_cancelled(self) -> list[Run]:
        """Take the cancelled runs' commands out of the inbox, their samples no longer
        admitted (with `_lock` held); the runs, to finish."""
        cancelled = {run for run, op, _ in self._inbox if op == "cancel"}
        if cancelled:
            for run, op, payload in self._inbox:
                if op == "add" and run in cancelled:
                    self._admitted -= len(payload[1])
            self._inbox = [c for c in self._inbox if c[0] not in cancelled]
        return list(cancelled)

    def _adopt(self, pool: Pool, host: _Hosted) -> bool:
        """Take the pool a host started in its thread, unless the host was stopped
        meanwhile (then the pool is the caller's to close)."""
        with self._pool_lock:
            if host.stopped or self._pool is not None:
                return False
            self._pool = pool
            return True

    def _pool_started(self, host: _Hosted, error: BaseException | None) -> None:
        """The hosted pool's start (in a thread) ended: look again, or fail the runs that
        waited for it (as with a driver thread; the next run tries again)."""
        if host.stopped:  # the front was closed meanwhile: these runs are not its own
            return
        if error is None:
            self._step(host)
            return
        with self._lock:
            self._woken = self._saturated = False
        self._fail_all(error)

    def _apply(self, pool: Pool, run: Run, op: str, payload: Any) -> None:
        if run.over:
            if op == "add":
                self._release(len(payload[1]))
            return
        if op == "cancel":
            self._finish(run, None, notify=False)
            pool.drop(lambda key: key[0] is run)
            return
        if op == "end":
            run.ended = True
        else:
            start, items, last = payload
            run.received += len(items)
            timeout = self.spec.timeout_s
            tasks = []
            for index, item in enumerate(items, start):
                if isinstance(item, Result):
                    run.ready[index] = item
                    continue
                run.partial[index] = (item, {})
                tasks += [Task((run, index, name), name, item, timeout) for name in self._names]
            if tasks:
                pool.submit(tasks)
            if last:
                run.ended = True
        self._advance(run)

    def _collect(self, done: list[tuple[Any, Score]]) -> None:
        touched: dict[int, Run] = {}
        names = self._names
        for (run, index, name), score in done:
            if run.over:
                continue
            sample, scores = run.partial[index]
            scores[name] = score
            if len(scores) == len(names):
                del run.partial[index]
                run.ready[index] = Scored(sample, {n: scores[n] for n in names})
                touched[id(run)] = run
        for run in touched.values():
            self._advance(run)

    def _advance(self, run: Run) -> None:
        """Finish what is ready in order; give results; close the run when it is over."""
        if run.over:  # closed by a callback of an earlier run's result
            return
        if run.pushed not in run.ready and not (run.ended and run.pushed == run.received):
            return  # its next sample is still being scored
        out: list[Result] = []
        pushed = run.pushed
        try:
            while run.pushed in run.ready:
                out += run.builder.push(run.ready.pop(run.pushed))
                run.pushed += 1
            over = run.ended and run.pushed == run.received
            if over:
                out += run.builder.close()
        except Exception as exc:  # the run's own input (a group out of order...) fails it alone
            self._finish(run, exc)
            return
        if run.pushed > pushed:
            run.sink.scored(run.pushed - pushed)
        given = 0
        for result in out:
            if run.over:  # a callback of its results closed the engine: no more are given
                break  # (and those not given were released with the run)
            run.emitted += 1  # first: a close in the callback counts this one as given
            given += 1
            run.sink.result(run.emitted - 1, result)
        if not run.whole:
            self._release(given)
        if over:
            self._finish(run, None)

    def _finish(self, run: Run, error: BaseException | None, *, notify: bool = True) -> bool:
        """End `run` (and tell its sink, if `notify`); False if it was over already."""
        with self._lock:
            if run.over:
                return False
            run.over = True
            self._runs.discard(run)
            self._admitted -= run.received - (0 if run.whole else run.emitted)
        if notify:
            run.sink.done(error)
        return True

    def _fail_all(self, error: BaseException, *, notify: bool = True) -> list[Run]:
        """Fail every run (the driver is gone); adds it never applied are released. The
        runs failed (their sinks not told, unless `notify`)."""
        with self._lock:
            runs = list(self._runs)
            stale, self._inbox = self._inbox, []
            self._admitted -= sum(len(p[1]) for _, op, p in stale if op == "add")
        return [run for run in runs if self._finish(run, error, notify=notify)]

    def _release(self, count: int) -> None:
        if count:
            with self._lock:
                self._admitted -= count


def _close_in_thread(pool: Pool) -> None:
    """Close `pool` in a thread of its own (its idle workers get a second to exit). It tells
    no event loop of the pipes it closes (`WatchedPool.closing`): only the loop's thread may
    stop watching them, and a pool closed here is watched no more."""
    if getattr(pool, "closing", None) is not None:
        pool.closing = None  # type: ignore[attr-defined]
    threading.Thread(target=pool.close, name="rewardsmith-pool-close").start()


class _Hosted:
    """The front's driver as callbacks of an event loop: a look (`Front._step`) when a run
    comes, when a busy worker's pipe has something, and when a deadline is due."""

    def __init__(self, front: Front, loop: asyncio.AbstractEventLoop) -> None:
        self._front = front
        self._loop = loop
        self._hosting = threading.get_ident()
        self._runner: int | None = None
        """The thread that last ran the loop, as far as a look (or the callback below) saw.
        While the loop does not run, it or the hosting thread is the likeliest to run it
        again: neither may wait."""
        self._watched: set[int] = set()
        self._timer: asyncio.Handle | None = None
        self._timer_due = 0.0
        """When `_timer` fires (uvloop's handle of a timer due at once has no `when()`)."""
        self._starting: threading.Thread | None = None
        """Starts the pool: its workers build their rewards (seconds, for a model) off the
        loop."""
        self.stopped = False
        with contextlib.suppress(RuntimeError):  # closed: a thread takes over at once
            loop.call_soon(self._seen)  # the thread that runs it first, engine used or not

    def _seen(self) -> None:
        self._runner = threading.get_ident()

    def on_loop(self) -> bool:
        """The caller runs inside the loop (what a loop hosted before it ran, on another
        thread than the one it runs on, tells that the hosting thread does not)."""
        return asyncio._get_running_loop() is self._loop

    def waits_on_itself(self) -> bool:
        """A call that waited for results here would wait forever: it runs inside the loop,
        or on the hosting thread while the loop does not run (nothing drives the pool)."""
        if self._loop.is_closed():  # a thread takes over
            return False
        if self._loop.is_running():
            return self.on_loop()
        return threading.get_ident() in (self._hosting, self._runner)

    @property
    def gone(self) -> bool:
        """Its loop is closed: it looks no more."""
        return self._loop.is_closed()

    def wake(self) -> None:
        """A look soon (from any thread; the front's lock is held)."""
        if self.on_loop():
            self._loop.call_soon(self._look)
        else:
            self._loop.call_soon_threadsafe(self._look)

    def _look(self) -> None:
        self._seen()
        self._front._step(self)

    def start_pool(self) -> None:
        """Start the pool in a thread, then look again (a pool that cannot start fails the
        runs waiting for it, as with a driver thread; the next run tries again)."""
        if self._starting is None:
            self._starting = threading.Thread(
                target=self._start_pool, name="rewardsmith-pool-start", daemon=True
            )
            self._starting.start()

    def _start_pool(self) -> None:
        error: BaseException | None = None
        try:
            pool = self._front._make_pool()
        except BaseException as exc:
            error = exc
        else:
            if not self._front._adopt(pool, self):  # stopped meanwhile: nobody waits
                pool.close()
                return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: a thread
            self._loop.call_soon_threadsafe(self._started, error)  # takes over later

    def _started(self, error: BaseException | None) -> None:
        self._starting = None
        self._front._pool_started(self, error)

    def forget(self, fd: int) -> None:
        """The pool closes `fd`: stop watching it first."""
        if fd in self._watched:
            self._loop.remove_reader(fd)
            self._watched.discard(fd)

    def watch(self, fds: list[int], look_in_s: float | None) -> None:
        """Look when one of `fds` is readable (only busy workers': an idle one's pipe that
        ends would be readable for good), and after `look_in_s` (None: no need)."""
        wanted = set(fds)
        if wanted != self._watched:
            for fd in self._watched - wanted:
                self._loop.remove_reader(fd)
            for fd in wanted - self._watched:
                self._loop.add_reader(fd, self._look)
                # uvloop (libuv) makes a watched fd non-blocking; the pool reads and writes
                # whole messages on its pipes, and a large one would fail half-sent
                os.set_blocking(fd, True)
            self._watched = wanted
        if look_in_s is None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return
        due = self._loop.time() + look_in_s
        if self._timer is None or self._timer_due > due:
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._timer_due = self._loop.call_at(due, self._tick), due

    def _tick(self) -> None:
        self._timer = None
        self._look()

    def abandon(self) -> None:
        """No more looks, from a loop that is closed (nothing to unregister there)."""
        self.stopped = True
        self._watched.clear()
        self._timer = None

    def stop(self) -> None:
        """No more looks: the loop lets go of the pool (from another thread, this waits for
        the loop to do it, unless the loop no longer runs). Interrupted (Ctrl-C) or failing
        before the loop has let go, the stop is called off: the loop drives on, and
        `stopped` stays False (no other driver may start beside it)."""
        if self.on_loop() or not self._loop.is_running():
            self._stop()
            return
        stopped = threading.Event()
        called_off = threading.Event()
        lock = threading.Lock()

        def stop_there() -> None:
            with lock:
                if not called_off.is_set():
                    self._stop()
                    stopped.set()

        try:
            try:
                self._loop.call_soon_threadsafe(stop_there)
            except RuntimeError:  # closed meanwhile
                self._stop()
                return
            while not stopped.wait(0.1):
                if not self._loop.is_running():  # it stopped before it ran the call
                    self._stop()
                    return
        except BaseException:
            with lock:
                if not stopped.is_set():
                    called_off.set()
            raise

    def _stop(self) -> None:
        if self._loop.is_closed():
            self.abandon()
        else:
            self.stopped = True  # a pool still starting is closed by its thread, not adopted
            self.watch([], None)
