"""What every model reward shares: inputs sent ahead for a worker's whole batch, a bounded wait
for each sample's outputs, and failures turned into statuses.

A model reward is a callable object (the engine calls it once per sample, in a worker) with a
`prefetch` method (the engine calls it once per batch, before the batch's first sample, with
every sample of the batch this reward will score). `prefetch` builds each sample's model
inputs and sends them all; the call then only waits for its own outputs. Outside the engine,
the call alone works the same way, one sample at a time.

Statuses: a model or transport failure is `error` (with the reason), a wait past `deadline_s`
is `timeout`; neither is ever a 0, and both are the infrastructure's doing (`cause:
infrastructure`: the sample is left out of its group, as with the judges), since every input is
bounded by `max_length`. A sample whose preparation raises (a text the tokenizer rejects) does
not stop its batch's prefetch: it raises again when it is scored, on its own account.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import Sample, Score
from ._ahead import Ahead, ModelError

__all__ = ["ModelReward", "Prepared"]


@dataclass(frozen=True)
class Prepared:
    """A sample's model inputs, and what `finish` needs besides the outputs."""

    inputs: tuple[Hashable, ...]
    context: dict[str, Any] = field(default_factory=dict)


class ModelReward:
    """Base of the model rewards: subclasses define `prepare` and `finish`."""

    def __init__(self, client: Callable[[], Ahead], deadline_s: float) -> None:
        """`client`: this process's client of the model (a host or a server)."""
        self.client = client
        self.deadline_s = deadline_s
        self._prepared: dict[int, tuple[Sample, Prepared | Score]] = {}

    def prepare(self, sample: Sample) -> Prepared | Score:
        """The sample's model inputs, or its score when no model call is needed (nothing to
        score, an answer that earns 0 before any model sees it)."""
        raise NotImplementedError

    def finish(self, sample: Sample, prepared: Prepared, outputs: list[Any]) -> Score:
        """The score, from the outputs of the prepared inputs (in order)."""
        raise NotImplementedError

    def prefetch(self, samples: Sequence[Sample]) -> None:
        """Prepare every sample of a batch and send all their inputs at once."""
        self._prepared = {}
        for sample in samples:
            try:
                self._prepared[id(sample)] = (sample, self.prepare(sample))
            except Exception:  # prepared (and raised) again when it is scored
                continue
        inputs = [
            i for _, p in self._prepared.values() if isinstance(p, Prepared) for i in p.inputs
        ]
        if inputs:
            self.client().submit(inputs)

    def __call__(self, sample: Sample) -> Score:
        started = time.monotonic()
        entry = self._prepared.pop(id(sample), None)
        prepared = entry[1] if entry is not None and entry[0] is sample else self.prepare(sample)
        if isinstance(prepared, Score):
            return prepared
        client = self.client()
        try:
            outputs = [
                client.get(item, max(0.0, self.deadline_s - (time.monotonic() - started)))
                for item in prepared.inputs
            ]
        except TimeoutError as exc:
            return Score.failed(
                "timeout", str(exc), cause="infrastructure", deadline_s=self.deadline_s
            )
        except (ModelError, OSError) as exc:
            return Score.failed("error", str(exc), cause="infrastructure")
        return self.finish(sample, prepared, outputs)
