"""TRL: a spec as `reward_funcs` for `GRPOTrainer` and `RLOOTrainer`.

    from rewardsmith.integrations.trl import reward_funcs

    funcs, weights = reward_funcs("math_spec.yaml")      # one function per component
    trainer = GRPOTrainer(
        model=model, reward_funcs=funcs, train_dataset=dataset,
        args=GRPOConfig(..., reward_weights=weights),
    )

The contract, as TRL's `_calculate_rewards` uses it (checked against trl 1.16):

- TRL calls every reward function with the same batch, one after another (async ones
  together): ``func(prompts=..., completions=..., completion_ids=..., **columns)``, where the
  columns are the dataset's other columns (one value per completion), plus `trainer_state`,
  and since trl 1.0 `log_extra` and `log_metric`. Each function returns one float or None per
  completion; TRL turns None into NaN and sums the weighted columns with `nansum`, so None
  means "this component does not count here".
- Prompts and completions are strings, or chat messages for conversational datasets.
- Functions are named by their `__name__` (metrics `rewards/<name>/mean` and `/std`) and must
  be picklable (module-level functions or callable instances).

Here the first function called on a batch scores every component of every sample once, in the
engine's worker pool, and the other functions read their column from that; the batch is
dropped as soon as every function has read it (or when the next batch arrives), so nothing
accumulates across steps. One engine, so one worker pool, serves the trainer's whole life.

How values map (see `component_values`): a component that counted gives its score, or its
lowest value when its `only_if` gate is closed (gates read gated values); a component that
does not apply gives None; a fired veto's total is carried by the veto component. A sample
whose failure its completion caused (a verifier timed out or crashed on it) is charged: its
weighted sum is ``min(on_error, the lowest reward among its prompt's completions, the
lowest total the spec can produce)`` (whichever exist; strictly below the prompt's lowest when
a component declares no range), so failing never earns a better advantage than the worst
answer. A sample failed
by its dataset row or the infrastructure gives None everywhere when the spec's `on_error` is
null -- TRL >= 1.10 then leaves it out of the group baseline and gives it a zero advantage,
where older TRL sums it to 0 with a warning -- or, with `on_error` set, exactly `on_error`.
With the spec's weights as `reward_weights`, TRL's total is the spec's total; a spec whose
combination is not a weighted sum is refused (use `total_reward_func`). Under TRL's
`multi_objective_aggregation="normalize_then_sum"` (read from the trainer behind
`log_metric`), which normalises each function over the group and counts None at the
column's mean, the values follow `group_low_values` and need `num_generations`.

Groups: TRL passes each process the completions it generated, a prompt's `num_generations`
completions next to each other, so consecutive completions of the same prompt form a group
(for `majority_vote` and group-scoped shaping). With several processes, TRL keeps a group in
one process only when the per-process generation batch (`per_device_train_batch_size x
steps_per_generation`) is a multiple of `num_generations`; otherwise a group is cut across
processes and each part would be scored as if it were the whole. Give `num_generations` to
`TRLRewards` (`reward_funcs`, `total_reward_func`) and every batch is checked: groups are
consecutive runs of exactly `num_generations` completions of one prompt, or the call fails.
A spec that needs groups, run on several processes without `num_generations`, fails too.

Async: `reward_funcs(spec, asynchronous=True)` gives `async` callables (TRL >= 0.27 awaits
async reward functions; callable instances like these are recognised as async from trl 1.14,
or on Python >= 3.12 from trl 0.27). Scoring runs in a thread, so TRL's event loop stays free.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith._exceptions import ConfigError
from rewardsmith.engine import Engine
from rewardsmith.integrations._component_values import (
    charged_rewards,
    check_split,
    component_values,
    failure_counts,
    group_low_values,
    splits_into_components,
)
from rewardsmith.integrations._groups import group_scoped, without_group_transform
from rewardsmith.integrations._remote import RemoteEngine
from rewardsmith.integrations._shared_engine import open_engine
from rewardsmith.integrations._trainer_data import normalise_chat
from rewardsmith.models import Result
from rewardsmith.spec import RewardSpec, load_spec

__all__ = [
    "AsyncComponentReward",
    "AsyncTotalReward",
    "ComponentReward",
    "TRLRewards",
    "TotalReward",
    "reward_funcs",
    "total_reward_func",
]

TRAINER_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
"""Keyword arguments TRL adds that are not dataset columns (never copied into samples)."""

SpecLike = RewardSpec | dict[str, Any] | str


@dataclass
class _Batch:
    """One TRL batch, scored once, until every function has read its column."""

    prompts: Any
    completions: Any
    results: list[Result]
    values: dict[str, list[float | None]]
    unread: set[str] = field(default_factory=set)


class TRLRewards:
    """One spec, one engine, TRL reward functions over it.

    >>> rewards = TRLRewards("spec.yaml")               # doctest: +SKIP
    >>> GRPOConfig(reward_weights=rewards.weights)      # doctest: +SKIP
    >>> GRPOTrainer(..., reward_funcs=rewards.funcs)    # doctest: +SKIP
    """

    def __init__(
        self,
        spec: SpecLike,
        *,
        workers: int | None = None,
        engine: Engine | None = None,
        asynchronous: bool = False,
        total_name: str = "rewardsmith",
        num_generations: int | None = None,
    ) -> None:
        """Validate the spec; the worker pool starts on the first batch.

        Args:
            spec: a `RewardSpec`, its dict form, a YAML string or a path to a YAML file.
            workers: worker processes (default: this process's share of the node's cores).
            engine: an engine to use (not closed by `close`) instead of starting one; by
                default, with `REWARDSMITH_URL` set, the reward server there scores.
            asynchronous: make the reward functions `async` (for TRL's async path).
            total_name: the name (and TRL metric name) of the `total` function.
            num_generations: `GRPOConfig.num_generations`; with a spec that needs groups,
                every batch is checked to hold whole groups of that size.
        """
        if num_generations is not None and num_generations < 1:
            raise ConfigError(f"num_generations must be at least 1, got {num_generations}")
        self.spec = engine.spec if engine is not None else without_group_transform(load_spec(spec))
        self._num_generations = num_generations
        self._workers = workers
        self._owns_engine = engine is None
        self._engine = engine if engine is not None else open_engine(self.spec, workers)
        self._asynchronous = asynchronous
        self._total_name = total_name
        self._lock = threading.Lock()
        self._batch: _Batch | None = None
        component_cls = AsyncComponentReward if asynchronous else ComponentReward
        total_cls = AsyncTotalReward if asynchronous else TotalReward
        self._funcs = [component_cls(self, name) for name in self.spec.rewards]
        self.total = total_cls(self, total_name)
        """One function for the spec's total reward (any combination), components logged."""

    @property
    def funcs(self) -> list[ComponentReward]:
        """One reward function per component, in spec order, named after the component.

        Raises:
            ConfigError: the spec's combination is not a weighted sum (use `total`).
        """
        why_not = splits_into_components(self.spec)
        if why_not is not None:
            raise ConfigError(
                f"{why_not}: the spec cannot be split into per-component TRL rewards (TRL sums "
                "them with weights); use the total reward function instead "
                "(TRLRewards.total or total_reward_func)"
            )
        return list(self._funcs)

    @property
    def weights(self) -> list[float]:
        """The components' weights, in spec order: `GRPOConfig.reward_weights` for `funcs`."""
        return [component.weight for component in self.spec.rewards.values()]

    @property
    def engine(self) -> Engine | RemoteEngine:
        """The engine scoring every batch."""
        return self._engine

    def close(self) -> None:
        """Stop the worker pool (it restarts if a function is called again)."""
        self._batch = None
        if self._owns_engine:
            self._engine.close()

    def __enter__(self) -> TRLRewards:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its spec and options: the copy starts its own engine on first use.
        options = (self._workers, self._asynchronous, self._total_name, self._num_generations)
        return (_restore, (self.spec, *options))

    # -- scoring -------------------------------------------------------------------------

    def column(
        self,
        reader: str,
        prompts: Sequence[Any] | None,
        completions: Sequence[Any],
        completion_ids: Sequence[Sequence[int]] | None,
        kwargs: dict[str, Any],
    ) -> list[float | None]:
        """The values of component `reader` for this batch, scored once for all components."""
        with self._lock:
            batch = self._batch
            if (
                batch is None
                or batch.completions is not completions
                or batch.prompts is not prompts
                or reader not in batch.unread
            ):
                batch = self._score(prompts, completions, completion_ids, kwargs)
                self._batch = batch
            batch.unread.discard(reader)
            if not batch.unread:
                self._batch = None  # every function has its column: drop the batch
            return batch.values[reader]

    def _score(
        self,
        prompts: Sequence[Any] | None,
        completions: Sequence[Any],
        completion_ids: Sequence[Sequence[int]] | None,
        kwargs: dict[str, Any],
    ) -> _Batch:
        normalised = _aggregation(kwargs) == "normalize_then_sum" and len(self.spec.rewards) > 1
        if normalised and self._num_generations is None:
            raise ConfigError(
                "TRL's multi_objective_aggregation='normalize_then_sum' normalises each reward "
                "function over a prompt's generations, so a failure must enter each at its "
                "group's lowest value: pass num_generations to "
                "TRLRewards (reward_funcs), or use one function for the total "
                "(total_reward_func)"
            )
        samples = self._samples(
            prompts, completions, completion_ids, kwargs, NORMALISED if normalised else None
        )
        results = self._engine.score(samples)
        names = list(self.spec.rewards)
        charged = charged_rewards(self.spec, results, [s.get("group") for s in samples])
        per_sample = [
            component_values(self.spec, result, charge)
            for result, charge in zip(results, charged, strict=True)
        ]
        if normalised:  # no weighted sum to check (`check_split`): TRL sums z-scores
            size = self._num_generations
            assert size is not None
            groups = [i // size for i in range(len(results))]
            per_sample = group_low_values(self.spec, results, per_sample, groups)
        else:
            for result, row, charge in zip(results, per_sample, charged, strict=True):
                check_split(self.spec, result, row, charge)
        values = {name: [row[i] for row in per_sample] for i, name in enumerate(names)}
        _log(self.spec, results, kwargs, total_mode=False)
        return _Batch(prompts, completions, results, values, unread=set(names))

    def total_column(
        self,
        prompts: Sequence[Any] | None,
        completions: Sequence[Any],
        completion_ids: Sequence[Sequence[int]] | None,
        kwargs: dict[str, Any],
    ) -> list[float | None]:
        """The spec's total reward for each completion (any combination), nothing cached."""
        samples = self._samples(prompts, completions, completion_ids, kwargs)
        results = self._engine.score(samples)
        _log(self.spec, results, kwargs, total_mode=True)
        charged = charged_rewards(self.spec, results, [s.get("group") for s in samples])
        return [
            result.reward if charge is None else charge
            for result, charge in zip(results, charged, strict=True)
        ]

    def _samples(
        self,
        prompts: Sequence[Any] | None,
        completions: Sequence[Any],
        completion_ids: Sequence[Sequence[int]] | None,
        kwargs: dict[str, Any],
        needs_groups: str | None = None,
    ) -> list[dict[str, Any]]:
        """The batch as samples, its groups checked when the spec (or `needs_groups`, why
        the caller does) needs them."""
        samples = samples_from_trl(prompts, completions, completion_ids, kwargs)
        why = group_scoped(self.spec) or needs_groups
        if why is None:
            return samples
        size = self._num_generations
        if size is None:
            processes = _processes()
            if processes > 1:
                raise ConfigError(
                    f"the spec needs whole groups ({why}) and TRL runs on {processes} "
                    "processes, where a prompt's generations may be split between them: pass "
                    "num_generations to TRLRewards so that every batch is checked"
                )
            return samples
        if len(samples) % size:
            raise ConfigError(
                f"the spec needs whole groups ({why}), but this process got {len(samples)} "
                f"completions, not whole groups of num_generations={size}: TRL split a group "
                "across processes; make per_device_train_batch_size x steps_per_generation a "
                "multiple of num_generations"
            )
        for start in range(0, len(samples), size):
            chunk = samples[start : start + size]
            if any(row.get("prompt") != chunk[0].get("prompt") for row in chunk):
                raise ConfigError(
                    f"completions {start}-{start + size - 1} should be one prompt's "
                    f"num_generations={size} generations but come from different prompts: "
                    "TRL split a group across processes, or num_generations is not the "
                    "trainer's"
                )
            if "group" not in kwargs:
                for row in chunk:
                    row["group"] = str(start // size)
        return samples


NORMALISED = "TRL's normalize_then_sum normalises each function over a prompt's generations"
"""Why the per-component values need whole groups in that mode."""


def _aggregation(kwargs: dict[str, Any]) -> str | None:
    """TRL's `multi_objective_aggregation`: `log_metric` (trl >= 1.0) is a bound method of
    the trainer (`GRPOTrainer._log_metric` in trl 1.16), which holds the mode."""
    trainer = getattr(kwargs.get("log_metric"), "__self__", None)
    mode = getattr(trainer, "multi_objective_aggregation", None)
    return mode if isinstance(mode, str) else None


def _processes() -> int:
    """Processes of the training run (torch.distributed when started, else WORLD_SIZE)."""
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        return int(distributed.get_world_size())
    return int(os.environ.get("WORLD_SIZE") or 1)


def _restore(
    spec: RewardSpec,
    workers: int | None,
    asynchronous: bool,
    name: str,
    num_generations: int | None,
) -> TRLRewards:
    return TRLRewards(
        spec,
        workers=workers,
        asynchronous=asynchronous,
        total_name=name,
        num_generations=num_generations,
    )


def samples_from_trl(
    prompts: Sequence[Any] | None,
    completions: Sequence[Any],
    completion_ids: Sequence[Sequence[int]] | None,
    kwargs: dict[str, Any],
) -> list[dict[str, Any]]:
    """TRL's batch as sample dicts: dataset columns mapped by the data contract.

    The gold column (`reference`, `ground_truth`, `answer`, `solution` or `label`) becomes the
    reference and other columns go to `metadata`; the token ids of each completion go to
    `metadata.completion_ids` (so `length` with `unit: tokens` counts tokens), and the
    trainer's global step to `metadata.step` (for rewards with a schedule). Consecutive
    completions of the same prompt share a `group` (unless the dataset has a `group` column),
    for group-scoped shaping.
    """
    n = len(completions)
    columns = {k: v for k, v in kwargs.items() if k not in TRAINER_KWARGS}
    for key, column in columns.items():
        if not isinstance(column, (list, tuple)) or len(column) != n:
            raise ValueError(
                f"reward function argument {key!r}: expected one value per completion "
                f"({n}), got {type(column).__name__}"
                + (f" of length {len(column)}" if isinstance(column, (list, tuple)) else "")
            )
    if prompts is not None and len(prompts) != n:
        raise ValueError(f"got {len(prompts)} prompts for {n} completions")
    if completion_ids is not None and len(completion_ids) != n:
        raise ValueError(f"got {len(completion_ids)} completion_ids for {n} completions")
    samples = []
    step = getattr(kwargs.get("trainer_state"), "global_step", None)  # for scheduled rewards
    group, previous = -1, object()
    for i in range(n):
        row: dict[str, Any] = {key: column[i] for key, column in columns.items()}
        row["completion"] = normalise_chat(completions[i])
        if prompts is not None:
            row["prompt"] = normalise_chat(prompts[i])
            if "group" not in columns:  # TRL puts a prompt's generations next to each other
                if prompts[i] != previous:
                    group, previous = group + 1, prompts[i]
                row["group"] = str(group)
        if completion_ids is not None and completion_ids[i] is not None:
            _set_metadata(row, "completion_ids", [int(t) for t in completion_ids[i]])
        if isinstance(step, int):
            _set_metadata(row, "step", step, overwrite=False)
        samples.append(row)
    return samples


def _set_metadata(row: dict[str, Any], key: str, value: Any, overwrite: bool = True) -> None:
    """Put `key` in the row's metadata (left alone when the row's metadata is malformed,
    so that validation reports it)."""
    metadata = row.get("metadata")
    if "metadata" in row and not isinstance(metadata, dict):
        return
    metadata = dict(metadata or {})
    if overwrite or key not in metadata:
        metadata[key] = value
    row["metadata"] = metadata


def _log(
    spec: RewardSpec, results: list[Result], kwargs: dict[str, Any], *, total_mode: bool
) -> None:
    """Per-component metrics and a status column, through TRL's `log_metric`/`log_extra`."""
    if not results:
        return
    n = len(results)
    log_metric: Callable[[str, float], None] | None = kwargs.get("log_metric")
    log_extra: Callable[[str, list[Any]], None] | None = kwargs.get("log_extra")
    if log_metric is not None:
        for name, counts in failure_counts(spec, results).items():
            log_metric(f"rewardsmith/{name}/failed", counts["failed"] / n)
            log_metric(f"rewardsmith/{name}/not_applicable", counts["not_applicable"] / n)
            if total_mode:
                scores = [
                    s.score
                    for r in results
                    if (s := r.components[name]).status == "ok" and s.score is not None
                ]
                if scores:
                    log_metric(f"rewardsmith/{name}/mean", sum(scores) / len(scores))
    if log_extra is not None:
        log_extra("rewardsmith/status", [result.status for result in results])


def _call_args(
    args: tuple[Any, ...], prompts: Any, completions: Any, completion_ids: Any
) -> tuple[Any, Any, Any]:
    positional = [*args, None, None, None]
    prompts = prompts if prompts is not None else positional[0]
    completions = completions if completions is not None else positional[1]
    completion_ids = completion_ids if completion_ids is not None else positional[2]
    if completions is None:
        raise TypeError("a reward function needs `completions`")
    return prompts, completions, completion_ids


class ComponentReward:
    """TRL reward function for one component: `(prompts, completions, completion_ids=None,
    **columns) -> list[float | None]`. Picklable; `__name__` is the component's name."""

    def __init__(self, rewards: TRLRewards, name: str) -> None:
        self.rewards = rewards
        self.name = name
        self.__name__ = name

    def __call__(
        self,
        *args: Any,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        prompts, completions, completion_ids = _call_args(
            args, prompts, completions, completion_ids
        )
        return self._column(prompts, completions, completion_ids, kwargs)

    def _column(
        self, prompts: Any, completions: Any, completion_ids: Any, kwargs: dict[str, Any]
    ) -> list[float | None]:
        return self.rewards.column(self.name, prompts, completions, completion_ids, kwargs)

    def __repr__(self) -> str:
        return f"<rewardsmith TRL reward {self.name!r}>"


class TotalReward(ComponentReward):
    """TRL reward function for the spec's total reward: works for any `combine`."""

    def _column(
        self, prompts: Any, completions: Any, completion_ids: Any, kwargs: dict[str, Any]
    ) -> list[float | None]:
        return self.rewards.total_column(prompts, completions, completion_ids, kwargs)


class _Coroutine(ComponentReward):
    """Marked for `inspect.iscoroutinefunction` where Python allows it (>= 3.12).

    TRL >= 1.14 sees an `async def __call__` by itself; TRL 0.27 to 1.13 asks
    `inspect.iscoroutinefunction(func)`, which is True for an instance only once it is marked
    with `inspect.markcoroutinefunction`. The mark is not pickled but set again on load.
    """

    def __init__(self, rewards: TRLRewards, name: str) -> None:
        super().__init__(rewards, name)
        _mark(self)

    def __getstate__(self) -> dict[str, Any]:
        return {"rewards": self.rewards, "name": self.name, "__name__": self.__name__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        _mark(self)

    async def __call__(  # type: ignore[override]
        self,
        *args: Any,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        prompts, completions, completion_ids = _call_args(
            args, prompts, completions, completion_ids
        )
        return await asyncio.to_thread(self._column, prompts, completions, completion_ids, kwargs)


def _mark(func: object) -> None:
    mark = getattr(inspect, "markcoroutinefunction", None)  # Python >= 3.12
    if mark is not None:
        mark(func)


class AsyncComponentReward(_Coroutine):
    """`ComponentReward` as a coroutine function; scoring runs in a worker thread."""


class AsyncTotalReward(_Coroutine, TotalReward):
    """`TotalReward` as a coroutine function; scoring runs in a worker thread."""


def reward_funcs(
    spec: SpecLike,
    *,
    workers: int | None = None,
    engine: Engine | None = None,
    asynchronous: bool = False,
    num_generations: int | None = None,
) -> tuple[list[ComponentReward], list[float]]:
    """`(reward_funcs, reward_weights)` for `GRPOTrainer`/`RLOOTrainer` and their config.

    One function per component of a `combine: weighted_sum` spec, sharing one engine; pass
    the weights as `GRPOConfig(reward_weights=...)` so TRL's total is the spec's total.
    `num_generations` (the trainer's) checks that every batch holds whole groups.
    """
    rewards = TRLRewards(
        spec,
        workers=workers,
        engine=engine,
        asynchronous=asynchronous,
        num_generations=num_generations,
    )
    return rewards.funcs, rewards.weights


def total_reward_func(
    spec: SpecLike,
    *,
    workers: int | None = None,
    engine: Engine | None = None,
    asynchronous: bool = False,
    name: str = "rewardsmith",
    num_generations: int | None = None,
) -> ComponentReward:
    """One TRL reward function returning the spec's total reward, for any `combine`.

    TRL logs it as `rewards/<name>/mean`; the components are logged as
    `rewardsmith/<component>/mean` (and `/failed`, `/not_applicable` fractions) through
    `log_metric` when TRL provides it.
    """
    rewards = TRLRewards(
        spec,
        workers=workers,
        engine=engine,
        asynchronous=asynchronous,
        total_name=name,
        num_generations=num_generations,
    )
    return rewards.total
