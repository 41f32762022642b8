"""From scored samples to finished results, in input order: group-scoped rewards, shaping,
combination, advantages.

The engine hands over each sample's scores in input order; `ResultBuilder` returns results in
the same order. Without group-level work (no group-scoped reward type or `transform:`, no
`group_transform:`) every sample is finished at once. With it, the samples of a group are
held until the group is complete, which is when a sample of another group (or of none)
arrives, or the input ends: memory stays bounded by the largest group (or batch).

A group-scoped reward type (`majority_vote`) read each sample in a worker; its `group` step
runs here first, over the whole group, so that shaping, gates and group transforms see its
final scores. Samples whose component is behind a closed `only_if` gate are left out of its
group step. A group step that raises makes that component `error` for the group's samples in it.

So a group's samples must be contiguous, as trainers emit them (a prompt's completions
together). A group id that reappears after its group was closed is an `InputError` naming
the group (`GroupOrder`): its first part is normalised without the rest, and normalising the
second part on its own would silently give wrong advantages. The engine checks this as it
reads, so it stops before scoring the offending sample, finishes and yields everything before
it, then raises. Sort the input by group. Group ids are tracked per call, so the next
training step may reuse them.

Inputs that are not valid samples (`invalid` results made by the engine) belong to no group:
they do not close the current group and keep their place in the output. With a
`group_transform:`, every result carries `advantage`: a number for scored samples and for
failures the completion caused (charged, see `_failures`), null for the rest.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from .._exceptions import InputError
from ..models import Result, Sample, Score, built
from ._advantages import Entry
from ._base import Scored
from ._combine import Combined, checked, combine_shaped, gate_open
from ._failures import cap_charged, charged_counted, charged_value
from ._shaping import recorded, shape

if TYPE_CHECKING:
    from ..spec import RewardSpec

__all__ = ["GroupOrder", "ResultBuilder"]

Pending = Scored | Result
"""A scored sample waiting for its group, or an input that failed before scoring."""

_WRITTEN = ("id", "reward", "status", "components")
"""A result's fields written as it is made (`advantage` and `steps` when set later)."""

Finished = tuple[Result, float | None, bool]
"""A result, its group-step value, and whether that value is the lowest of its batch (a
charged failure whose group gave nothing to compare with, known only at the batch step)."""


class GroupOrder:
    """Checks, sample by sample in input order, that every group is contiguous."""

    def __init__(self) -> None:
        self._current: str | None = None
        self._closed: set[str] = set()

    def check(self, sample: Sample) -> InputError | None:
        """The error for a sample whose group was closed earlier, else None."""
        key = sample.group
        if key == self._current:
            return None
        if self._current is not None:
            self._closed.add(self._current)
        self._current = key
        if key is not None and key in self._closed:
            return InputError(
                f"group {key!r} reappears at sample {sample.id!r} after other groups; "
                "group transforms need each group's samples together (sort the input by group)"
            )
        return None


class ResultBuilder:
    """Finishes scored samples into results, buffering what group-level work needs."""

    def __init__(self, spec: RewardSpec, *, grouped: bool) -> None:
        """`grouped`: `spec.needs_groups`, computed once by the caller (it looks up every
        reward type, and a builder is made per call)."""
        self._spec = spec
        self._transform = spec.group_transform
        self._batch_step = self._transform.batch if self._transform is not None else None
        self._grouped = grouped
        self._pending: list[Pending] = []
        self._group: str | None = None
        self._order = GroupOrder()
        self._batch: list[Finished] = []
        self._group_rewards = (  # a group-scoped reward makes `grouped` True
            {n: c.build_group() for n, c in spec.rewards.items() if c.group_scoped}
            if grouped
            else {}
        )

    def push(self, item: Pending) -> list[Result]:
        """Take the next item in input order; return the results now finished, in order."""
        if not self._grouped:  # no group to wait for, no transform to give an advantage
            if isinstance(item, Result):
                return [item]
            return [self._result(item.sample, shape(self._spec, [item])[0])[0]]
        if isinstance(item, Result):
            if self._pending:
                self._pending.append(item)
                return []
            return self._emit(self._finish([item]))
        error = self._order.check(item.sample)
        if error is not None:
            raise error
        key = item.sample.group
        if key is not None and key == self._group:
            self._pending.append(item)
            return []
        out = self._close_group()
        if key is None:
            return out + self._emit(self._finish([item]))
        self._group = key
        self._pending = [item]
        return out

    def close(self) -> list[Result]:
        """The end of the input: finish what is held."""
        return self._close_group() + self._flush_batch()

    def _close_group(self) -> list[Result]:
        if not self._pending:
            return []
        items, self._pending = self._pending, []
        self._group = None
        return self._emit(self._finish(items))

    def _finish(self, items: Sequence[Pending]) -> list[Finished]:
        """Shape, combine and (group step of the transform) one group."""
        scored = self._group_step([item for item in items if isinstance(item, Scored)])
        shaped = iter(shape(self._spec, scored))
        results: list[Result] = []
        entries: list[tuple[int, Entry]] = []
        vetoed: list[tuple[int, Entry]] = []
        charged: list[tuple[int, Scored, Result]] = []
        for item in items:
            if isinstance(item, Result):
                results.append(item)
                continue
            result, combined = self._result(item.sample, next(shaped))
            if self._transform is None:  # no group statistics to take part in
                pass
            elif combined.status == "ok" and combined.reward is not None:
                entry = Entry(item.sample, result, combined.counted, combined.reward)
                (vetoed if combined.vetoed else entries).append((len(results), entry))
            elif result.cause == "completion":
                charged.append((len(results), item, result))
            results.append(result)
        finished: list[Finished] = [(r, None, False) for r in results]
        if self._transform is None or not (entries or vetoed or charged):
            return finished
        worst = charged_counted(self._spec, [e for _, e in entries])
        entries += [(position, replace(e, counted=worst)) for position, e in vetoed]
        value = charged_value(self._spec, [e.reward for _, e in entries])
        for position, item, result in charged:
            entry = Entry(item.sample, result, worst, 0.0 if value is None else value, True)
            entries.append((position, entry))
        entries.sort(key=lambda pair: pair[0])
        group = [e for _, e in entries]
        values = cap_charged(group, self._transform.advantages(group))
        deferred = value is None and self._batch_step is not None and not self._batch_step.centred
        for (position, entry), v in zip(entries, values, strict=True):
            to_batch = deferred and entry.charged
            finished[position] = (results[position], None if to_batch else v, to_batch)
        return finished

    def _result(self, sample: Sample, scores: dict[str, Score]) -> tuple[Result, Combined]:
        """One sample's result from its shaped scores (no advantage yet), and its
        combination."""
        combined = combine_shaped(self._spec, scores)
        fields = {  # every field is already validated
            "id": sample.id,
            "reward": combined.reward,
            "status": combined.status,
            "components": combined.components,
            "advantage": None,  # the defaults: given here, not looked up, and not written
            "steps": None,
        }
        result = built(Result, fields, _WRITTEN)
        if combined.steps is not None:
            result.steps = list(combined.steps)
        return result, combined

    def _group_step(self, scored: list[Scored]) -> list[Scored]:
        """Group-scoped reward types turn the group's per-sample scores into final ones. A
        sample whose component is behind a closed `only_if` gate (`gate_open`, on the scores
        as received) is left out of that component's group step and keeps its own score: it
        counts at its lowest value anyway, and must not move the others' (as `Row.counts`
        for group transforms). Components go gates first, so a gate read is final."""
        if not self._group_rewards or not scored:
            return scored
        rows = [dict(item.scores) for item in scored]
        for name in sorted(self._group_rewards, key=self._gate_depth):
            reward = self._group_rewards[name]
            spec = self._spec
            open_ = [
                i
                for i, row in enumerate(rows)
                if gate_open(spec, name, checked(spec, recorded(spec, row)))
            ]
            if not open_:
                continue
            given = [rows[i][name] for i in open_]
            try:
                column = reward.group([scored[i].sample for i in open_], given)
                if len(column) != len(given):
                    raise ValueError(f"group step returned {len(column)} scores for {len(given)}")
            except Exception as exc:  # a bug in one group step must not stop the run
                tail = traceback.format_exc()[-2_000:]
                failed = Score.failed(
                    "error", f"group step: {type(exc).__name__}: {exc}", traceback=tail
                )
                column = [s if s.status != "ok" else failed for s in given]
            for i, score in zip(open_, column, strict=True):
                rows[i][name] = score
        return [Scored(item.sample, row) for item, row in zip(scored, rows, strict=True)]

    def _gate_depth(self, name: str) -> int:
        """How many gates component `name` sits behind (its `only_if` chain's length)."""
        gate = self._spec.rewards[name].only_if
        return 0 if gate is None else 1 + self._gate_depth(gate)

    def _emit(self, finished: list[Finished]) -> list[Result]:
        if self._batch_step is None:
            return [self._with_advantage(result, value) for result, value, _ in finished]
        self._batch.extend(finished)
        size = self._batch_step.size
        return self._flush_batch() if size is not None and len(self._batch) >= size else []

    def _flush_batch(self) -> list[Result]:
        if self._batch_step is None or not self._batch:
            return []
        batch, self._batch = self._batch, []
        scored = [(i, v) for i, (_, v, _) in enumerate(batch) if v is not None]
        whitened = dict(
            zip(
                (i for i, _ in scored),
                self._batch_step.apply([v for _, v in scored]),
                strict=True,
            )
        )
        lowest = min(whitened.values(), default=0.0)
        return [
            self._with_advantage(result, lowest if to_batch else whitened.get(i))
            for i, (result, _, to_batch) in enumerate(batch)
        ]

    def _with_advantage(self, result: Result, value: float | None) -> Result:
        if self._transform is not None:
            result.advantage = value
        return result
