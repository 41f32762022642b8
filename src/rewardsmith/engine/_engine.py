"""The engine: samples in, ordered results out, CPU rewards in a hard-timeout process pool.

Every way in sits on the engine's one continuous front (`_front`): `submit` (futures, from
any thread), `ascore` (a coroutine), `iter_score` (a stream: it reads its input lazily, keeps
at most `window` samples unscored, so memory stays bounded on any input size, and yields
results in input order), `score`, and through them the CLI, the server and the trainer
adapters. Calls from many threads or coroutines share the worker pool sample by sample.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, Literal

from pydantic import ValidationError

from .._exceptions import InputError
from ..combine import GroupOrder
from ..models import Result, Sample, Score
from ..registry import registry
from ..spec import RewardSpec, load_spec
from ._capacity import register_process, worker_count
from ._front import Finishing, Front, Pool, QueueFull, Run
from ._pool import TimeoutPool

__all__ = [
    "Backend",
    "Engine",
    "Pool",
    "QueueFull",
    "as_sample",
    "ascore",
    "invalid_result",
    "score",
]

_WINDOW = 4_096
"""Most samples of one stream read and not yet scored."""
_LOOK_S = 0.1
"""How often a thread that waits for results checks that something still drives the pool
(an event loop that hosted it may have been closed with the run in flight)."""

SampleLike = Sample | dict[str, Any] | InputError
"""What the engine accepts: a sample, its dict form, or a line that failed to parse."""

_END = object()
"""End of the input (None is an input item: an invalid one)."""

Backend = Literal["local", "ray"]
"""Where CPU rewards run."""

_pid = os.getpid()
"""This process's id, kept by a fork hook: `os.getpid()` is a system call, and an engine
asks on every call whether it runs in the process that built it."""


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def invalid_result(spec: RewardSpec, sample_id: str, reason: str) -> Result:
    """The result of an input that is not a valid sample: every component `invalid`."""
    failed = Score.failed("invalid", reason)
    return Result(
        id=sample_id,
        reward=spec.on_error,
        status="invalid",
        components=dict.fromkeys(spec.rewards, failed),
    )


def as_sample(spec: RewardSpec, item: SampleLike, index: int) -> Sample | Result:
    """An input as a sample, or, when it is not a valid one, its `invalid` result.

    `index` is the input's 0-based position: a dict without an id gets ``index + 1``.
    """
    if isinstance(item, Sample):
        return item
    if isinstance(item, InputError):
        line = str(item.line) if item.line is not None else str(index + 1)
        return invalid_result(spec, item.sample_id or line, str(item))
    if not isinstance(item, dict):
        return invalid_result(spec, str(index + 1), f"not a JSON object: {item!r:.80}")
    data = item if "id" in item else {**item, "id": str(index + 1)}
    try:
        return Sample.model_validate(data)
    except ValidationError as exc:
        sample_id = str(data.get("id"))
        return invalid_result(spec, sample_id, _first_error(exc))


class Engine:
    """Scores samples against one spec. Reuse it: the worker pool starts once, and calls
    from any number of threads or coroutines share it.

    >>> with Engine("spec.yaml") as engine:          # doctest: +SKIP
    ...     results = engine.score([{"completion": "\\\\boxed{4}", "reference": "4"}])
    """

    def __init__(
        self,
        spec: RewardSpec | dict[str, Any] | str,
        *,
        workers: int | None = None,
        window: int = _WINDOW,
        backend: Backend = "local",
        ray_address: str | None = None,
        max_queue_samples: int | None = None,
    ) -> None:
        """Validate the spec; workers start on first use.

        Args:
            spec: a `RewardSpec`, its dict form, a YAML string or a path to a YAML file.
            workers: worker processes, or Ray actors (at least 1). Default: local, the
                `REWARDSMITH_WORKERS` environment variable, else this process's share of
                the node's cores; Ray, one actor per CPU of the cluster.
            window: most samples of one `iter_score` stream read and not yet scored (bounds
                memory on large inputs).
            backend: `local` (a process pool on this machine) or `ray` (actors on a cluster).
            ray_address: the Ray cluster to join (backend `ray`; default: start a local one).
            max_queue_samples: admission control: most samples accepted and not yet
                answered (a `submit`, `score` or `iter_score` sample until its own result is
                out, an `ascore` call's until the call returns), over all callers; a call
                that would pass it raises `QueueFull` (None: no limit).
        """
        self.spec = load_spec(spec)
        self._workers = None if workers is None else worker_count(workers)
        self._window = window
        self._backend = backend
        self._ray_address = ray_address
        self._limit = max_queue_samples
        self._front = Front(self.spec, self._start_pool, max_queue_samples)
        self._pid = _pid
        self._handovers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Handover] = (
            weakref.WeakKeyDictionary()
        )
        register_process()  # before any pool starts, so that pools on the node share cores

    def _start_pool(self) -> Pool:
        preload = {m for c in self.spec.rewards.values() for m in registry.get(c.type).preload}
        if self._backend == "ray":
            from ._ray import RayPool

            return RayPool(self.spec.rewards, self._workers, preload, self._ray_address)
        return TimeoutPool(self.spec.rewards, self._workers, preload)

    @property
    def front(self) -> Front:
        """The engine's front (in a process forked after this engine was built: a new one).

        The parent's driver thread, workers, pipes and locks are not the child's (a lock may
        even have been held by one of the parent's threads at the fork), so they are
        dropped, never closed or killed; this process starts its own on first use.
        """
        if _pid != self._pid:
            self._pid = _pid
            self._front = Front(self.spec, self._start_pool, self._limit)
        return self._front

    @property
    def pool(self) -> Pool:
        """The worker pool, started on first use."""
        return self.front.pool

    @property
    def admitted(self) -> int:
        """Samples accepted and not yet answered, over all callers."""
        return self.front.admitted

    @property
    def max_queue_samples(self) -> int | None:
        """The admission limit (None: none)."""
        return self._limit

    def host(self, loop: asyncio.AbstractEventLoop) -> None:
        """Drive the workers from `loop` (call it on the loop's thread, before the engine's
        first use) rather than from a thread of the engine's own, until `close`: what a
        server does, whose loop would otherwise take turns with that thread on the
        interpreter lock for every request (`Front.host`). A local pool only: with Ray,
        nothing changes.

        While hosted, make no blocking call on the loop's thread: the loop would wait for
        itself. `score`, `iter_score` and `start` raise `RuntimeError` there, and so does
        `ascore` in another event loop of that thread while this one does not run; a
        `submit` future's `result()` cannot tell, and hangs. Close the engine before the
        loop stops (once it is closed, a thread takes over what is in flight: at the next
        call, or within a tenth of a second for a thread waiting in `score`, `iter_score`
        or `start`, or awaiting `ascore`; a `submit` future alone waits for the next
        call)."""
        self.front.host(loop, pool_watched=self._backend == "local")

    def start(self) -> None:
        """Start the workers now rather than on the first call (raises what stops them)."""
        self.front.refuse_waiting_on_driver("Engine.start")
        stream = _Stream()  # a run of no samples: its one event is its end
        self._queue([], stream)
        for _, error in stream.wait(self.front.take_over_if_orphaned):
            if error is not None:
                raise error

    def submit(self, samples: Iterable[SampleLike]) -> list[Future[Result]]:
        """Queue samples now; one future result each, set as soon as it is finished.

        Inputs that are dicts are validated here (an invalid one gets an `invalid` result).
        A future's callbacks run on the thread that drives the workers: `score`, `iter_score`,
        `start` and `ascore` raise `RuntimeError` there (they would wait for that thread),
        and a future's `result()` there hangs.

        Raises:
            QueueFull: the engine's admission limit would be passed.
            InputError: with group-level work in the spec, a group that is not contiguous.
        """
        items = self._prepare(samples)
        futures: list[Future[Result]] = [Future() for _ in items]
        self._queue(items, _Futures(futures))
        return futures

    async def ascore(self, samples: Iterable[SampleLike]) -> list[Result]:
        """`score` for coroutines: nothing blocks the event loop while workers run.

        Raises as `submit` does; cancelling the call cancels the samples not yet scored.
        """
        return await self.asubmit(samples)

    def asubmit(
        self, samples: Iterable[SampleLike], *, group_transform: bool = True
    ) -> asyncio.Future[list[Result]]:
        """Queue samples now (from a coroutine); their results, in input order, come as one
        future of the running event loop. `ascore` without the coroutine: cancelling the
        future cancels the samples not yet scored.

        `group_transform=False` finishes the results as an engine of the spec without its
        `group_transform:` would (a reward server's trainer clients: no advantages, and no
        group order to keep unless the spec needs groups otherwise).

        Raises as `submit` does, at once.
        """
        loop = asyncio.get_running_loop()
        self.front.refuse_waiting_on_driver("Engine.ascore", awaits=True)
        handover = self._handovers.get(loop)
        if handover is None or handover.pid != _pid:  # after a fork: the child's own
            for closed in [old for old in self._handovers if old.is_closed()]:
                del self._handovers[closed]  # its undelivered answers hold it
            handover = self._handovers[loop] = _Handover(loop)
        sink = _Awaited(loop, handover)
        front = self.front
        finishing = front.finishing if group_transform else front.untransformed
        self._queue(self._prepare(samples, finishing), sink, finishing)
        # also on the loop that hosts the engine: a close may end its hosting, and the
        # driver thread that should take over may fail to start (as a thread's wait does)
        handover.look_while_waiting(self.front.take_over_if_orphaned)
        return sink.future  # type: ignore[return-value]

    def score(self, samples: Iterable[SampleLike]) -> list[Result]:
        """Score samples; one result per input, in input order."""
        return list(self.iter_score(samples))

    def _prepare(
        self, samples: Iterable[SampleLike], finishing: Finishing | None = None
    ) -> list[Sample | Result]:
        items = [as_sample(self.spec, item, index) for index, item in enumerate(samples)]
        if (finishing or self.front.finishing).grouped:
            order = GroupOrder()
            for item in items:
                if isinstance(item, Sample) and (error := order.check(item)) is not None:
                    raise error
        return items

    def _queue(
        self,
        items: list[Sample | Result],
        sink: _Whole | _Futures | _Stream,
        finishing: Finishing | None = None,
    ) -> None:
        run = self.front.submit(sink, items, whole=isinstance(sink, _Whole), finishing=finishing)
        if isinstance(sink, _Whole):
            sink.bind(run)

    def iter_score(
        self,
        samples: Iterable[SampleLike],
        on_result: Callable[[Result], None] | None = None,
    ) -> Iterator[Result]:
        """Score a stream of samples, yielding one result per input, in input order.

        Inputs that are dicts are validated here; an invalid one (or an `InputError` from a
        reader) yields an `invalid` result in its place and the run goes on.

        When the spec has group-level work (`group_transform:`, group-scoped `transform:`),
        a group's results come once the group is complete, and a group must be contiguous in
        the input: a group id seen again after other groups raises `InputError`.
        """
        stream = _Stream()
        run = self.front.open(stream)
        try:
            yield from self._stream(iter(samples), run, stream, on_result)
        finally:
            if not run.over:  # abandoned or raised mid-run: its queued tasks are dropped
                run.cancel()  # and its results never reach another run

    def _stream(
        self,
        samples: Iterator[SampleLike],
        run: Run,
        stream: _Stream,
        on_result: Callable[[Result], None] | None,
    ) -> Iterator[Result]:
        order = GroupOrder() if self._front.finishing.grouped else None
        stop: InputError | None = None
        counter = itertools.count()
        unscored = 0
        exhausted = False
        while True:
            batch: list[Sample | Result] = []
            while not exhausted and unscored + len(batch) < self._window:
                item = next(samples, _END)
                if item is _END:
                    exhausted = True
                    break
                sample = as_sample(self.spec, item, next(counter))
                if isinstance(sample, Sample) and order is not None:
                    stop = order.check(sample)
                    if stop is not None:
                        exhausted = True  # finish what came before, then raise
                        break
                if isinstance(sample, Sample):
                    unscored += 1
                batch.append(sample)
            if batch:
                run.add(batch)
            if exhausted and not stream.ended:
                stream.ended = True
                run.end()
            self.front.refuse_waiting_on_driver("Engine.score (iter_score)")  # at every wait:
            events = stream.wait(self.front.take_over_if_orphaned)  # a stream begun in a
            # thread may be read on from the loop
            for kind, value in events:
                if kind == "scored":
                    unscored -= value
                elif kind == "result":
                    if on_result is not None:
                        on_result(value)
                    yield value
                elif value is not None:
                    raise value
                else:
                    if stop is not None:
                        raise stop
                    return

    def close(self) -> None:
        """Stop the workers (calls in flight fail with `EngineClosed`); they restart on the
        next call. Interrupted (Ctrl-C) while it waits for the loop that hosts the engine
        to let go, the close is called off: the engine goes on as it was, and a second
        `close` closes it."""
        self.front.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Futures:
    """A run's sink for `submit`: one future per sample."""

    def __init__(self, futures: Sequence[Future[Result]]) -> None:
        self._futures = futures

    def scored(self, count: int) -> None:
        pass

    def result(self, index: int, result: Result) -> None:
        if self._futures[index].set_running_or_notify_cancel():
            self._futures[index].set_result(result)

    def done(self, error: BaseException | None) -> None:
        if error is None:
            return
        for future in self._futures:
            if not future.done() and future.set_running_or_notify_cancel():
                future.set_exception(error)


class _Whole:
    """A run's sink for a call answered all at once: the results, in order, go to one future
    when the run is over; cancelling that future cancels the run."""

    future: asyncio.Future[list[Result]]

    def __init__(self) -> None:
        self._results: list[Result] = []

    def bind(self, run: Run) -> None:
        # the run is held by the future's callback, which goes once the future is done: a
        # sink holding it would make a cycle with `run.sink` (the collector's work)
        unbound = self._unbound
        self.future.add_done_callback(lambda future: unbound(future, run))

    def _unbound(self, future: asyncio.Future[list[Result]], run: Run) -> None:
        if future.cancelled():
            run.cancel()

    def scored(self, count: int) -> None:
        pass

    def result(self, index: int, result: Result) -> None:
        self._results.append(result)

    def _settle(self, error: BaseException | None) -> None:
        if error is None:
            self.future.set_result(self._results)
        else:
            self.future.set_exception(error)


class _Handover:
    """Calls from the driver thread to one event loop, run there in batches: the calls the
    driver makes in one pass (the calls it finished) cost the loop one wake-up, not one each.

    It holds its loop weakly: the engine keeps one per loop it has seen, and a finished
    `asyncio.run` must leave nothing behind."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.pid = _pid
        """The process it hands over in (a forked child may inherit one mid-batch)."""
        self._loop = weakref.ref(loop)
        self._calls: deque[tuple[Callable[[Any], None], Any]] = deque()
        self._scheduled = False
        self._look: Callable[[], bool] | None = None
        """What it calls every `_LOOK_S` while this loop awaits calls and that says calls
        still wait (None: no timer runs)."""
        self.awaited = 0
        """Calls of this loop whose future is pending (`_Awaited`)."""

    def call(self, fn: Callable[[Any], None], arg: Any) -> None:
        """Run `fn(arg)` on the loop soon (from any thread; nothing if the loop is closed);
        from the loop itself (a driver it hosts), at once."""
        if asyncio._get_running_loop() is self._loop() and not self._calls:
            self._call(fn, arg)
            return
        self._calls.append((fn, arg))
        if not self._scheduled:  # else a batch is due, and runs this call (it is queued)
            self._scheduled = True
            try:
                self._schedule()
            except BaseException:
                # interrupted (Ctrl-C): there may be no next call, so a thread queues the
                # batch (should `_run` be queued already, a second finds nothing to do)
                try:
                    threading.Thread(
                        target=self._schedule, name="rewardsmith-handover", daemon=True
                    ).start()
                except BaseException:
                    self._scheduled = False  # the next call schedules it
                    raise
                raise

    def _schedule(self) -> None:
        """Queue the batch on the loop; if the loop is gone or closed, nobody waits: keep
        nothing."""
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the event loop is gone")
            loop.call_soon_threadsafe(self._run)
        except RuntimeError:
            self._calls.clear()

    def look_while_waiting(self, look: Callable[[], bool]) -> None:
        """`look()` on the loop every `_LOOK_S` while the loop awaits calls and `look()`
        returns True (calls of the front still wait): one timer for the loop, however many
        calls await, as `_Stream.wait` does for a thread. Call it on the loop."""
        if self._look is None:
            self._look = look
            asyncio.get_running_loop().call_later(_LOOK_S, self._look_again)

    def _look_again(self) -> None:
        loop, look = self._loop(), self._look
        if look is None or loop is None or not self.awaited:
            self._look = None
            return
        waiting = True
        try:
            waiting = look()
        finally:
            # one that raised (reported by the loop) must not end the looks for good
            if waiting:
                loop.call_later(_LOOK_S, self._look_again)
            else:
                self._look = None

    def _run(self) -> None:
        self._scheduled = False  # before taking: a call queued from now on schedules a batch
        calls = self._calls
        while calls:
            self._call(*calls.popleft())

    def _call(self, fn: Callable[[Any], None], arg: Any) -> None:
        try:
            fn(arg)
        except Exception as exc:  # reported; the other calls still run
            loop = self._loop()
            if loop is not None:
                loop.call_exception_handler(
                    {"message": "rewardsmith: handing a result over failed", "exception": exc}
                )


class _Awaited(_Whole):
    """For `ascore`: an asyncio future, set on its event loop (a hand-over, not a thread-safe
    future chained to it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, handover: _Handover) -> None:
        super().__init__()
        self.future = loop.create_future()
        self._handover = handover

    def bind(self, run: Run) -> None:
        super().bind(run)
        self._handover.awaited += 1  # its loop looks for a missing driver while any is

    def _unbound(self, future: asyncio.Future[list[Result]], run: Run) -> None:
        self._handover.awaited -= 1
        super()._unbound(future, run)

    def done(self, error: BaseException | None) -> None:
        self._handover.call(self._settle_unless_cancelled, error)

    def _settle_unless_cancelled(self, error: BaseException | None) -> None:
        if isinstance(error, StopIteration):  # an asyncio future refuses it (a coroutine's end)
            wrapped = RuntimeError(f"the call failed with StopIteration: {error}")
            wrapped.__cause__ = error
            error = wrapped
        if not self.future.done():
            self._settle(error)


class _Stream:
    """A run's sink for `iter_score`: events for the reading thread, in order."""

    def __init__(self) -> None:
        self._events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.ended = False

    def scored(self, count: int) -> None:
        self._events.put(("scored", count))

    def result(self, index: int, result: Result) -> None:
        self._events.put(("result", result))

    def done(self, error: BaseException | None) -> None:
        self._events.put(("done", error))

    def wait(self, idle: Callable[[], object]) -> list[tuple[str, Any]]:
        """The next event, and every other one already there; `idle()` every `_LOOK_S`
        meanwhile."""
        while True:
            try:
                events = [self._events.get(timeout=_LOOK_S)]
                break
            except queue.Empty:
                idle()
        while True:
            try:
                events.append(self._events.get_nowait())
            except queue.Empty:
                return events


_UNION_TAGS = frozenset({"str", "int", "float", "bool", "none", "dict"})


def _first_error(exc: ValidationError) -> str:
    """The most specific error: a field of a union (text or messages) fails once per member,
    and the deepest failure is the one that says what is wrong."""
    errors = exc.errors()
    error = max(errors, key=lambda e: len(e["loc"])) if len(errors) > 1 else errors[0]
    parts = [
        str(p) for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p in _UNION_TAGS))
    ]
    field = ".".join(parts) or "sample"
    return f"invalid sample: {field}: {error['msg']}"


def score(
    samples: Iterable[SampleLike],
    spec: RewardSpec | dict[str, Any] | str,
    **engine_options: Any,
) -> list[Result]:
    """Score samples against a spec in one call (starts and stops a worker pool).

    `engine_options` are those of `Engine` (`workers`, `backend`, `ray_address`...).
    """
    with Engine(spec, **engine_options) as engine:
        return engine.score(samples)


async def ascore(
    samples: Iterable[SampleLike],
    spec: RewardSpec | dict[str, Any] | str,
    **engine_options: Any,
) -> list[Result]:
    """Async `score`."""
    engine = Engine(spec, **engine_options)
    try:
        return await engine.ascore(samples)
    finally:
        await asyncio.to_thread(engine.close)
