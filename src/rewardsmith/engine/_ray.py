"""Ray backend: the same hard-timeout scoring, on actors spread over a cluster.

Each actor (CPU-only, `num_cpus=1`, one per cluster core by default) hosts a local
`TimeoutPool` of one worker process. So a reward runs exactly as with the local backend:
in a forked worker that built the components once, under a per-task deadline enforced by
SIGKILL and replacement, with every failure labelled the same way. Results are therefore
identical, byte for byte, whichever backend scored them.

Why a pool inside each actor rather than `ray.kill` of a hung actor: a timeout then costs a
fork from a preloaded fork server (milliseconds), not a new actor (a new process, imports,
scheduling: seconds); the actor itself never runs reward code, so it stays responsive, and
the deadline is measured next to the task, not across the network. `ray.kill` remains the
last resort: an actor that dies (node lost, OOM) or stops answering is replaced, the tasks
it held go back to the queue once, and a task that loses a second actor gets `error`.

The driver keeps at most two calls in flight per actor (one running, one queued behind it),
each a chunk of up to `_CHUNK` tasks, so actors never wait for the driver and a chunk's IPC
and scheduling cost is shared by its tasks.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..models import Sample, Score
from ._pool import Task, TimeoutPool

__all__ = ["RayPool"]

_CHUNK = 256
"""Most tasks per actor call."""
_IN_FLIGHT = 2
"""Calls queued per actor: one running, one ready behind it."""
_GRACE_S = 60.0
"""Beyond the sum of its tasks' timeouts, how long a call may take before its actor is
considered hung and killed (the inner pool makes this a last resort)."""
_MAX_ATTEMPTS = 2
"""Actors a task may lose before it is given up as `error`."""
_WAKE_S = 0.01
"""Longest wait on the actors when the caller has other work that may arrive."""
_START_TIMEOUT_S = 300.0
"""How long actors may take to start (scheduling, imports, building rewards)."""

log = logging.getLogger(__name__)


class _ScoringActor:
    """A Ray actor that scores chunks of tasks on a local one-worker `TimeoutPool`."""

    def __init__(self, plan: dict[str, Any], preload: list[str]) -> None:
        self._pool = TimeoutPool(plan, 1, preload)

    def ready(self) -> bool:
        return True

    def score(
        self, chunk: list[tuple[int, str, Sample, float]]
    ) -> list[tuple[int, float | None, str, dict[str, Any]]]:
        """Score every task of the chunk; (seq, score, status, detail) in completion order."""
        self._pool.submit(
            [Task(seq, name, sample, timeout) for seq, name, sample, timeout in chunk]
        )
        done: list[tuple[int, float | None, str, dict[str, Any]]] = []
        while len(done) < len(chunk):
            for seq, score in self._pool.poll(0.5):
                done.append((seq, score.score, score.status, score.detail))
        return done

    def replaced(self) -> int:
        return self._pool.replaced

    def close(self) -> None:
        self._pool.close()


@dataclass
class _Call:
    actor: int
    tasks: dict[int, Task]
    deadline: float


@dataclass
class _Slot:
    handle: Any
    calls: list[Any] = field(default_factory=list)  # object refs, oldest first
    busy_until: float = 0.0


class RayPool:
    """The `Pool` of the engine's `ray` backend: `submit`, `poll`, `close`.

    Not thread-safe: one thread drives a pool (as with `TimeoutPool`).
    """

    def __init__(
        self,
        plan: dict[str, Any],
        workers: int | None = None,
        preload: Iterable[str] = (),
        ray_address: str | None = None,
    ) -> None:
        """Connect to Ray (or start a local cluster) and start the actors.

        Args:
            plan: component name -> object with `build() -> RewardFn` (picklable).
            workers: actors to start; default one per CPU of the cluster.
            preload: modules each actor's fork server imports once.
            ray_address: cluster to join (`auto`, `host:6379`, `ray://host:10001`); None
                joins `$RAY_ADDRESS` when set, else starts a local cluster (unless this
                process is already connected to Ray, whose connection is then used).
        """
        try:
            import ray
        except ImportError as exc:
            raise ImportError('the ray backend needs Ray: pip install "rewardsmith[ray]"') from exc
        self._ray = ray
        self._owns_ray = False
        if not ray.is_initialized():
            address = ray_address or os.environ.get("RAY_ADDRESS") or "local"
            ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
            self._owns_ray = True
        elif ray_address is not None:
            log.warning("Ray is already initialised; ignoring ray_address=%r", ray_address)
        self._plan = plan
        self._preload = sorted(preload)
        self._actor_class = ray.remote(num_cpus=1, max_restarts=0)(_ScoringActor)
        size = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._slots: list[_Slot] = []
        self._calls: dict[Any, _Call] = {}
        self._pending: deque[tuple[int, Task]] = deque()  # (attempts so far, task)
        self._attempts: dict[int, int] = {}
        self._seq = 0
        self.replaced = 0
        """Actors killed or lost and replaced so far."""
        try:
            self._slots = [_Slot(self._start()) for _ in range(size)]
            ray.get([s.handle.ready.remote() for s in self._slots], timeout=_START_TIMEOUT_S)
        except BaseException:
            self.close()
            raise

    def _start(self) -> Any:
        return self._actor_class.remote(self._plan, self._preload)

    @property
    def size(self) -> int:
        """Actors in the pool."""
        return len(self._slots)

    @property
    def busy(self) -> int:
        """Tasks submitted and not yet returned by `poll`."""
        return len(self._pending) + sum(len(c.tasks) for c in self._calls.values())

    @property
    def saturated(self) -> bool:
        """Every actor's every slot holds a call: tasks submitted now would only queue."""
        return all(len(s.calls) >= _IN_FLIGHT for s in self._slots)

    def submit(self, tasks: list[Task]) -> None:
        """Queue tasks; they go out as actors have room."""
        self._pending.extend((0, task) for task in tasks)

    def drop(self, match: Callable[[Any], bool]) -> None:
        """Forget the queued tasks whose key `match`es (tasks sent to actors run to the end)."""
        self._pending = deque(item for item in self._pending if not match(item[1].key))

    def poll(self, max_wait_s: float = 0.1, wake: int | None = None) -> list[tuple[Any, Score]]:
        """Dispatch queued tasks and return the results that arrive within `max_wait_s`.

        Ray cannot wait on a file descriptor: with `wake` given, the wait is at most
        `_WAKE_S`, so that new tasks still go out soon.
        """
        ray = self._ray
        self._dispatch()
        done: list[tuple[Any, Score]] = []
        if not self._calls:
            return done
        refs = list(self._calls)
        now = time.monotonic()
        if wake is not None:
            max_wait_s = min(max_wait_s, _WAKE_S)
        wait_s = max(0.0, min(max_wait_s, min(c.deadline for c in self._calls.values()) - now))
        ready, _ = ray.wait(refs, num_returns=1, timeout=wait_s)
        if ready:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in ready:
            if ref in self._calls:  # not dropped with an actor replaced meanwhile
                self._collect(ref, done)
        now = time.monotonic()
        for ref, call in list(self._calls.items()):
            if ref in self._calls and now > call.deadline:
                self._hung(call.actor, done)
        self._dispatch()
        return done

    def _collect(self, ref: Any, done: list[tuple[Any, Score]]) -> None:
        ray = self._ray
        call = self._calls.pop(ref)
        slot = self._slots[call.actor]
        slot.calls.remove(ref)
        try:
            rows = ray.get(ref)
        except ray.exceptions.RayActorError as exc:  # the actor died: retry its tasks elsewhere
            self._lost(call, f"ray actor died: {type(exc).__name__}", done)
            return
        except ray.exceptions.RayError as exc:  # the call itself failed: no retry
            reason = f"ray call failed: {type(exc).__name__}: {str(exc)[:500]}"
            for task in call.tasks.values():
                done.append((task.key, Score.failed("error", reason)))
            self._replace(call.actor, requeue=True)
            return
        for seq, value, status, detail in rows:
            task = call.tasks.pop(seq)
            self._attempts.pop(seq, None)
            done.append((task.key, Score.received(value, status, detail)))

    def _lost(self, call: _Call, reason: str, done: list[tuple[Any, Score]]) -> None:
        """Requeue the tasks of a call whose actor is gone, up to `_MAX_ATTEMPTS` actors."""
        for seq, task in call.tasks.items():
            attempts = self._attempts.pop(seq, 0) + 1
            if attempts >= _MAX_ATTEMPTS:
                done.append((task.key, Score.failed("error", reason)))
            else:
                self._pending.appendleft((attempts, task))
        self._replace(call.actor, requeue=True)

    def _hung(self, index: int, done: list[tuple[Any, Score]]) -> None:
        """An actor past a call's deadline: kill it; its running call's tasks fail."""
        slot = self._slots[index]
        running = self._calls.get(slot.calls[0]) if slot.calls else None
        if running is not None:
            del self._calls[slot.calls.pop(0)]
            self._lost(running, "ray actor stopped answering; killed", done)

    def _replace(self, index: int, *, requeue: bool) -> None:
        """Kill an actor and start another; calls still queued on it go back to the queue."""
        slot = self._slots[index]
        for ref in slot.calls:
            call = self._calls.pop(ref, None)
            if call is not None and requeue:
                for seq, task in call.tasks.items():
                    self._pending.appendleft((self._attempts.pop(seq, 0), task))
        with contextlib.suppress(Exception):  # already gone
            self._ray.kill(slot.handle, no_restart=True)
        self.replaced += 1
        handle = self._start()
        self._ray.get(handle.ready.remote(), timeout=_START_TIMEOUT_S)
        self._slots[index] = _Slot(handle)

    def _dispatch(self) -> None:
        if not self._pending:
            return
        room = sum(_IN_FLIGHT - len(s.calls) for s in self._slots)
        if room <= 0:
            return
        size = min(_CHUNK, max(1, math.ceil(len(self._pending) / room)))
        for _ in range(_IN_FLIGHT):  # fill every actor's first slot before any second one
            for index, slot in enumerate(self._slots):
                if not self._pending:
                    return
                if len(slot.calls) >= _IN_FLIGHT:
                    continue
                chunk: dict[int, Task] = {}
                rows = []
                while self._pending and len(chunk) < size:
                    attempts, task = self._pending.popleft()
                    self._seq += 1
                    chunk[self._seq] = task
                    if attempts:
                        self._attempts[self._seq] = attempts
                    rows.append((self._seq, task.component, task.sample, task.timeout_s))
                ref = slot.handle.score.remote(rows)
                now = time.monotonic()
                slot.busy_until = max(now, slot.busy_until) + sum(
                    t.timeout_s for t in chunk.values()
                )
                self._calls[ref] = _Call(index, chunk, slot.busy_until + _GRACE_S)
                slot.calls.append(ref)

    def close(self) -> None:
        """Stop every actor (and the local Ray cluster, if this pool started it)."""
        ray = self._ray
        handles = [s.handle for s in self._slots]
        self._slots.clear()
        self._calls.clear()
        self._pending.clear()
        if handles:
            with contextlib.suppress(Exception):  # let actors stop their workers first
                ray.get([h.close.remote() for h in handles], timeout=10)
            for handle in handles:
                with contextlib.suppress(Exception):
                    ray.kill(handle, no_restart=True)
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
