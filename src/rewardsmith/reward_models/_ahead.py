"""Inputs sent ahead, outputs read back by input: what the model host's client and the remote
servers' client share.

A model reward sees the samples of a worker's batch before it scores them (the engine's
`prefetch` hook): it sends them all at once, then waits for each sample's output as it scores
that sample. Outputs are keyed by the input itself, so an input already done or on its way is
never sent twice (a group's shared reference, a repeated completion), and model outputs, being
deterministic, are kept in a bounded LRU. Failures are not kept: the next ask tries again.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Hashable, Sequence
from typing import Any

__all__ = ["Ahead", "ModelError"]

_KEEP = 4_096
"""Outputs kept per process and model."""


class ModelError(RuntimeError):
    """The model could not produce an output (load failure, host or server gone, model error)."""


class Ahead:
    """Send inputs ahead (`submit`), then read each output (`get`). Subclasses say how:
    `_send` starts the work for new inputs and returns at once; `_wait` blocks until at least
    one more output has been `_put` (or raises)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._waiting: set[Hashable] = set()
        self._done: collections.OrderedDict[Hashable, tuple[bool, Any]] = collections.OrderedDict()

    def submit(self, items: Sequence[Hashable]) -> None:
        """Start the work for the inputs not done and not on their way; returns at once."""
        with self._lock:
            new = [i for i in dict.fromkeys(items) if i not in self._done]
            new = [i for i in new if i not in self._waiting]
            if new:
                self._send(new)
                self._waiting.update(new)

    def get(self, item: Hashable, timeout_s: float) -> Any:
        """The output for `item` (sent now if nobody sent it); raises `ModelError` or
        `TimeoutError` after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            self.submit([item])
            while item not in self._done:
                if item not in self._waiting:  # its request was lost (a reset): send again
                    self.submit([item])
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no model output within {timeout_s:g} s")
                self._wait(item, left)
            ok, value = self._done[item]
            if ok:
                self._done.move_to_end(item)
            else:
                del self._done[item]
        if not ok:
            raise ModelError(value)
        return value

    def _put(self, item: Hashable, ok: bool, value: Any) -> None:
        """Record an output (or a failure's message when not `ok`)."""
        self._waiting.discard(item)
        self._done[item] = (ok, value)
        while len(self._done) > _KEEP:
            self._done.popitem(last=False)

    def _forget_waiting(self) -> None:
        """Every input on its way is lost (the connection went): they will be sent again."""
        self._waiting.clear()

    def _send(self, items: list[Hashable]) -> None:  # pragma: no cover - subclasses
        raise NotImplementedError

    def _wait(self, item: Hashable, timeout_s: float) -> None:  # pragma: no cover - subclasses
        raise NotImplementedError
