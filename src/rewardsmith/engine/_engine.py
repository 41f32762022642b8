"""The engine: samples in, ordered results out, CPU rewards in a hard-timeout process pool.

`Engine.iter_score` is the one core: it streams its input, keeps at most `window` samples in
flight (so memory stays bounded on any input size) and yields results in input order.
`score`, `ascore` and the CLI are thin layers over it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from .._exceptions import InputError
from ..combine import GroupOrder, ResultBuilder, Scored
from ..models import Result, Sample, Score
from ..registry import registry
from ..spec import RewardSpec, load_spec
from ._capacity import register_process, worker_count
from ._pool import Task, TimeoutPool

__all__ = ["Backend", "Engine", "Pool", "ascore", "invalid_result", "score"]

_WINDOW = 4_096
"""Most samples read ahead of the oldest unfinished one."""

SampleLike = Sample | dict[str, Any] | InputError
"""What the engine accepts: a sample, its dict form, or a line that failed to parse."""

_END = object()
"""End of the input (None is an input item: an invalid one)."""

Backend = Literal["local", "ray"]
"""Where CPU rewards run."""


class Pool(Protocol):
    """What the engine needs of a worker pool (`TimeoutPool`, `RayPool`)."""

    def submit(self, tasks: list[Task]) -> None: ...
    def poll(self, max_wait_s: float = 0.1) -> list[tuple[Any, Score]]: ...
    def close(self) -> None: ...


def invalid_result(spec: RewardSpec, sample_id: str, reason: str) -> Result:
    """The result of an input that is not a valid sample: every component `invalid`."""
    failed = Score.failed("invalid", reason)
    return Result(
        id=sample_id,
        reward=spec.on_error,
        status="invalid",
        components=dict.fromkeys(spec.rewards, failed),
    )


class Engine:
    """Scores samples against one spec. Reuse it: the worker pool starts once.

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
    ) -> None:
        """Validate the spec; workers start on first use.

        Args:
            spec: a `RewardSpec`, its dict form, a YAML string or a path to a YAML file.
            workers: worker processes, or Ray actors (at least 1). Default: local, the
                `REWARDSMITH_WORKERS` environment variable, else this process's share of
                the node's cores; Ray, one actor per CPU of the cluster.
            window: most samples in flight at once (bounds memory on large inputs).
            backend: `local` (a process pool on this machine) or `ray` (actors on a cluster).
            ray_address: the Ray cluster to join (backend `ray`; default: start a local one).
        """
        self.spec = load_spec(spec)
        self._workers = None if workers is None else worker_count(workers)
        self._window = window
        self._backend = backend
        self._ray_address = ray_address
        self._pool: Pool | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()
        register_process()  # before any pool starts, so that pools on the node share cores

    def _forget_parent_pool(self) -> None:
        """In a process forked after this engine was built: the pool is the parent's.

        Its workers, pipes and lock belong to the parent (the lock may even have been held
        by one of its threads at the fork), so they are dropped, never closed or killed;
        this process starts its own pool on first use.
        """
        if os.getpid() != self._pid:
            self._pid = os.getpid()
            self._pool = None
            self._lock = threading.Lock()

    @property
    def pool(self) -> Pool:
        """The worker pool, started on first use."""
        self._forget_parent_pool()
        if self._pool is None:
            preload = {m for c in self.spec.rewards.values() for m in registry.get(c.type).preload}
            if self._backend == "ray":
                from ._ray import RayPool

                self._pool = RayPool(self.spec.rewards, self._workers, preload, self._ray_address)
            else:
                self._pool = TimeoutPool(self.spec.rewards, self._workers, preload)
        return self._pool

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
        self._forget_parent_pool()
        with self._lock:
            finished = False
            try:
                yield from self._run(iter(samples), on_result)
                finished = True
            finally:
                if not finished:  # abandoned or raised mid-run: its tasks must not leak into
                    self.close()  # the next run, so the workers go (restarted on next use)

    def _run(
        self, samples: Iterator[SampleLike], on_result: Callable[[Result], None] | None
    ) -> Iterator[Result]:
        names = list(self.spec.rewards)
        timeout = self.spec.timeout_s
        pool = self.pool
        builder = ResultBuilder(self.spec)
        order = GroupOrder() if self.spec.needs_groups else None
        stop: InputError | None = None
        ready: dict[int, Scored | Result] = {}
        partial: dict[int, tuple[Sample, dict[str, Score]]] = {}
        next_out = 0
        counter = itertools.count()
        exhausted = False
        while True:
            while not exhausted and len(ready) + len(partial) < self._window:
                item = next(samples, _END)
                if item is _END:
                    exhausted = True
                    break
                index = next(counter)
                sample = self._as_sample(item, index)
                if isinstance(sample, Result):
                    ready[index] = sample
                    continue
                if order is not None and (stop := order.check(sample)) is not None:
                    exhausted = True  # finish what came before, then raise
                    break
                partial[index] = (sample, {})
                pool.submit([Task((index, name), name, sample, timeout) for name in names])
            finished: list[Result] = []
            while next_out in ready:
                finished += builder.push(ready.pop(next_out))
                next_out += 1
            done = exhausted and not partial and not ready
            if done:
                finished += builder.close()
            for result in finished:
                if on_result is not None:
                    on_result(result)
                yield result
            if done:
                if stop is not None:
                    raise stop
                return
            if partial:
                for (index, name), score in pool.poll():
                    sample, scores = partial[index]
                    scores[name] = score
                    if len(scores) == len(names):
                        del partial[index]
                        ready[index] = Scored(sample, {n: scores[n] for n in names})

    def _as_sample(self, item: SampleLike, index: int) -> Sample | Result:
        if isinstance(item, Sample):
            return item
        if isinstance(item, InputError):
            line = str(item.line) if item.line is not None else str(index + 1)
            return invalid_result(self.spec, line, str(item))
        if not isinstance(item, dict):
            return invalid_result(self.spec, str(index + 1), f"not a JSON object: {item!r:.80}")
        data = item if "id" in item else {**item, "id": str(index + 1)}
        try:
            return Sample.model_validate(data)
        except ValidationError as exc:
            sample_id = str(data.get("id"))
            return invalid_result(self.spec, sample_id, _first_error(exc))

    def score(self, samples: Iterable[SampleLike]) -> list[Result]:
        """Score samples; one result per input, in input order."""
        return list(self.iter_score(samples))

    async def ascore(self, samples: Iterable[SampleLike]) -> list[Result]:
        """`score` for async callers: the event loop stays free while workers run."""
        return await asyncio.to_thread(self.score, list(samples))

    def close(self) -> None:
        """Stop the workers."""
        self._forget_parent_pool()
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    with Engine(spec, **engine_options) as engine:
        return await engine.ascore(samples)
