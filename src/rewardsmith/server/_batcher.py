"""Micro-batching: requests from many clients become batches of one engine.

The engine is not thread-safe and its worker pool is driven by one thread, so the server
gives it one: the driver thread. Request handlers (on the event loop) put their samples in a
bounded queue and await a future. The driver takes every queued request (up to
`max_batch_samples` samples), scores them in one `Engine.iter_score` call, so the worker
pool sees one large batch instead of many small ones, and answers each request as soon as
its last result is out, while later requests of the same batch are still being scored.
Requests arriving meanwhile queue up and form the next batch.

With group-level work in the spec (`group_transform:`, group-scoped `transform:`), one
engine call is one trainer batch (groups, batch whitening), so each request then gets its
own call: still one driver and one warm pool, but no mixing of requests.

The queue is bounded in samples (queued plus being scored): a request that does not fit is
refused at once (`QueueFull`, HTTP 503) instead of letting the backlog, and the latency of
every client, grow without bound. `close` stops taking requests, finishes those accepted,
then stops the engine.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .._exceptions import InputError
from ..engine import Engine
from ..models import Result, Sample
from ._metrics import Metrics

__all__ = ["Batcher", "QueueFull", "ShuttingDown"]

log = logging.getLogger("rewardsmith.server")


class QueueFull(Exception):
    """The queue cannot take the request now (HTTP 503)."""


class ShuttingDown(Exception):
    """The server is stopping and takes no new requests (HTTP 503)."""


@dataclass
class _Job:
    samples: list[Sample | InputError]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[list[Result]]
    results: list[Result] = field(default_factory=list)


def _resolve(future: asyncio.Future[list[Result]], results: list[Result]) -> None:
    if not future.done():  # the client may have gone away
        future.set_result(results)


def _fail(future: asyncio.Future[list[Result]], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class Batcher:
    """Owns engines on dedicated driver threads and scores requests in batches."""

    def __init__(
        self,
        make_engine: Callable[[], Engine],
        *,
        max_queue_samples: int = 65_536,
        max_batch_samples: int = 4_096,
        drivers: int = 1,
        metrics: Metrics | None = None,
    ) -> None:
        """Nothing starts until `start`.

        Args:
            make_engine: builds an engine (called on each driver thread).
            max_queue_samples: most samples accepted and not yet answered.
            max_batch_samples: most samples per engine call (a larger request is one batch).
            drivers: engines, each with its own thread and workers, taking batches in turn:
                with two, one scores a batch while the other waits for the slowest samples
                of the previous one.
            metrics: where batch and status counts go.
        """
        self._make_engine = make_engine
        self.max_queue_samples = max_queue_samples
        self._max_batch = max_batch_samples
        self._drivers = max(1, drivers)
        self._metrics = metrics
        self._cond = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._admitted = 0
        self._closing = False
        self._threads: list[threading.Thread] = []
        self._started = threading.Semaphore(0)
        self._startup_error: BaseException | None = None
        self.engines: list[Engine] = []

    @property
    def admitted(self) -> int:
        """Samples accepted and not yet answered."""
        return self._admitted

    @property
    def accepting(self) -> bool:
        """False once `close` has begun (or before `start`)."""
        return bool(self._threads) and not self._closing

    def start(self) -> None:
        """Start the driver threads and wait until their engines' workers are up."""
        for number in range(self._drivers):
            thread = threading.Thread(
                target=self._drive, name=f"rewardsmith-driver-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
            self._started.acquire()  # one at a time: engines may share global setup (Ray)
            if self._startup_error is not None:
                self.close()
                raise self._startup_error

    async def score(self, samples: list[Sample | InputError]) -> list[Result]:
        """Results for `samples`, in order, once their batch has scored them (an
        `InputError` in place of a sample is scored `invalid`)."""
        loop = asyncio.get_running_loop()
        job = _Job(samples, loop, loop.create_future())
        with self._cond:
            if self._closing or not self._threads:
                raise ShuttingDown("the server is shutting down")
            if self._admitted and self._admitted + len(samples) > self.max_queue_samples:
                raise QueueFull(
                    f"the queue holds {self._admitted} samples; {len(samples)} more would pass "
                    f"its limit of {self.max_queue_samples}. Retry later."
                )
            self._admitted += len(samples)
            self._queue.append(job)
            self._cond.notify()
        return await job.future

    def close(self) -> None:
        """Refuse new requests, finish the accepted ones, stop the engines."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()

    def _drive(self) -> None:
        try:
            engine = self._make_engine()
            engine.pool  # start the workers now, not on the first request  # noqa: B018
        except BaseException as exc:
            self._startup_error = exc
            self._started.release()
            return
        self.engines.append(engine)
        self._started.release()
        try:
            while True:
                jobs = self._next_batch(engine.spec.needs_groups)
                if not jobs:
                    return
                engine = self._run(engine, jobs)
        finally:
            engine.close()

    def _next_batch(self, alone: bool) -> list[_Job]:
        # Group-level work (group transforms, group-scoped shaping, batch whitening) treats
        # one engine call as the trainer's batch: requests then must not share a call.
        with self._cond:
            while not self._queue and not self._closing:
                self._cond.wait()
            jobs: list[_Job] = []
            size = 0
            while self._queue and (
                not jobs or (not alone and size + len(self._queue[0].samples) <= self._max_batch)
            ):
                job = self._queue.popleft()
                jobs.append(job)
                size += len(job.samples)
            return jobs

    def _run(self, engine: Engine, jobs: list[_Job]) -> Engine:
        """Score one batch; the engine to go on with (a fresh one after an engine failure).

        Requests are validated before they are queued, but should a batch of several
        requests still fail, each request it left unanswered is scored again on its own: a
        failure belongs to the request that causes it, never to the others of its batch.
        """
        for job in jobs:
            if not job.samples:
                job.loop.call_soon_threadsafe(_resolve, job.future, [])
        jobs = [job for job in jobs if job.samples]
        engine, unanswered, failure = self._score(engine, jobs)
        failed = [(job, failure) for job in unanswered]
        if failure is not None and len(jobs) > 1:
            failed = []
            for job in unanswered:
                job.results.clear()
                engine, left, why = self._score(engine, [job])
                failed += [(job, why) for job in left]
        for job, why in failed:
            job.loop.call_soon_threadsafe(_fail, job.future, why)
            self._release(len(job.samples))
        return engine

    def _score(
        self, engine: Engine, jobs: list[_Job]
    ) -> tuple[Engine, list[_Job], BaseException | None]:
        """One engine call for `jobs`, answering each as soon as its last result is out.

        Returns the engine to go on with, the jobs left unanswered and why (None: all done).
        """
        samples = [s for job in jobs for s in job.samples]
        rewards: Counter[str] = Counter()
        components: Counter[tuple[str, str]] = Counter()
        pending = deque(jobs)
        failure: BaseException | None = None
        try:
            for result in engine.iter_score(samples):
                rewards[result.status] += 1
                for name, score in result.components.items():
                    components[(name, score.status)] += 1
                job = pending[0]
                job.results.append(result)
                if len(job.results) == len(job.samples):
                    pending.popleft()
                    job.loop.call_soon_threadsafe(_resolve, job.future, job.results)
                    self._release(len(job.samples))
        except InputError as exc:  # the request's input (e.g. a group not contiguous)
            failure = exc
        except Exception as exc:  # an engine failure fails requests, not the server
            log.exception("scoring a batch of %d samples failed", len(samples))
            failure = exc
            # The pool may still hold tasks of the failed batch: start from a fresh one.
            engine.close()
            engine = self._make_engine()
        finally:
            if self._metrics is not None:
                self._metrics.observe_batch(len(samples), rewards, components)
        return engine, list(pending), failure

    def _release(self, count: int) -> None:
        with self._cond:
            self._admitted -= count
