"""verl: a spec as verl's custom reward function.

Point verl at this file (or, in verl versions whose loader takes `pkg://`, at the module):

    REWARDSMITH_SPEC=/abs/path/math_spec.yaml python -m verl.trainer.main_ppo ... \\
        reward.custom_reward_function.path=$(python -c \\
            "import rewardsmith.integrations.verl as m; print(m.__file__)") \\
        reward.custom_reward_function.name=compute_score

(older verl: `custom_reward_function.path=...` at the top level of the config). The spec can
also come from the config: `+reward.custom_reward_function.reward_kwargs.spec=/abs/spec.yaml`
(and `...reward_kwargs.workers=4`); verl merges `reward_kwargs` into every call. The `+` is
needed: verl's config has no `reward_kwargs` key, and Hydra refuses to set a key that is not
there without it.

The contract, as verl calls it (checked against verl-project/verl `verl/trainer/ppo/reward.py`
at 302f740 and `verl/experimental/reward_loop/reward_manager/{naive,batch}.py` at 247f1ac and
a9ba065, and volcengine/verl `verl/workers/reward_manager/{naive,batch}.py`):

- per sample (reward manager `naive`, `dapo`...):
  ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...,
  **reward_kwargs)``; a dict result must hold `score`, and its other keys are gathered per key
  into `reward_extra_info` (so every sample returns the same keys);
- batched (reward manager `batch`): ``compute_score(data_sources=[...], solution_strs=[...],
  ground_truths=[...], extra_infos=[...], **reward_kwargs)`` returning one dict per sample;
- async: the reward loop awaits `compute_score` when it is a coroutine function
  (`inspect.iscoroutinefunction`); name `compute_score_async` in the config for that.

`compute_score` answers both the per-sample and the batched call. Each result is
``{"score": float, "failed": 0.0 | 1.0, "<component>": float, "<component>_failed": 0.0 |
1.0, ...}``, always numbers (verl's validation metrics and GDPO advantages read them): `score`
is the spec's total reward -- or, for a failure the completion caused, its charge as TRL's
adapter computes it (`charged_rewards`, over its group: the batched call's samples sharing
`data_source` and `extra_info[group_key]`, those without the key together, or the sample
alone), else the spec's `on_error` (failures), else 0.0, with `failed` = 1.0 saying so (verl's
GRPO reads `score`: a crash must not beat an honest wrong answer); each component's value is the
total used (after gates and vetoes; 0.0 where it does not count), and for a component that
failed, `on_error` (else 0.0) with `<component>_failed` = 1.0. `ground_truth` is the
reference; `data_source` and `extra_info` travel in the sample's `metadata`. verl hands a
reward function no token ids, so a spec with a `length` in tokens is refused at the first
call.

Calls from many threads (verl runs the per-sample function in an executor) or coroutines
share the engine's worker pool, sample by sample (the coroutine form awaits the engine
without a thread); the pool starts on the first call and stays
for the life of the process (one per spec). Its size is `REWARDSMITH_WORKERS`, else this
process's share of the node's cores among the reward processes on it (each of verl's reward
workers counts itself when it loads this file). A process forked from one that scored (verl's
`prime` reward manager runs the function in a process pool) starts its own pool, and the
functions pickle by reference to this module, also when verl loads the file by path.

Groups. A spec that needs each sample's whole group (`majority_vote`, group-scoped shaping)
works only through the batched call, which receives the whole rollout batch: the samples of a
prompt are those whose `extra_info[group_key]` (default `index`, which verl's data
preprocessing scripts write; set `reward_kwargs.group_key`) and `data_source` are equal. verl
reorders the batch (`balance_batch`), so the samples are regrouped here and the results put
back in verl's order; a sample without that key is an error naming it. The per-sample call
(reward managers `naive`, `dapo` and verl's reward loop, which score one sample at a time)
refuses such a spec with a `ConfigError` instead of scoring each sample alone.

Imports are absolute: verl loads this file by path, outside the `rewardsmith` package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardsmith._exceptions import ConfigError
from rewardsmith.integrations._component_values import charged_rewards
from rewardsmith.integrations._groups import group_scoped, refuse_groups
from rewardsmith.integrations._protocol import component_logs, trainer_reward
from rewardsmith.integrations._shared_engine import (
    SpecSource,
    count_this_process,
    shared_engine,
)
from rewardsmith.integrations._trainer_data import plain
from rewardsmith.models import Result
from rewardsmith.spec import RewardSpec

PER_SAMPLE = (
    "verl's per-sample reward managers (naive, dapo, the reward loop) call compute_score one "
    "sample at a time; use the batched call (reward manager `batch`, compute_score_batch)"
)
"""Why the per-sample call refuses a spec that needs whole groups."""

__all__ = ["compute_score", "compute_score_async", "compute_score_batch", "to_sample"]


def to_sample(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any
) -> dict[str, Any]:
    """One verl sample in the data contract."""
    metadata = plain(extra_info) if extra_info is not None else {}
    if not isinstance(metadata, dict):
        metadata = {"extra_info": metadata}
    metadata = {**metadata, "data_source": plain(data_source)}
    return {
        "completion": "" if solution_str is None else str(solution_str),
        "reference": plain(ground_truth),
        "metadata": metadata,
    }


def _outputs(
    spec: RewardSpec, samples: list[dict[str, Any]], results: list[Result], group_key: str
) -> list[dict[str, float]]:
    """One dict per result, in verl's order. A failure the completion caused scores its
    charge (`charged_rewards`, as TRL's adapter): at most the lowest reward of its group
    (`_group_of`; the call's samples without one are one group), so crashing a verifier never
    beats an honest wrong answer."""
    groups = [_group_of(sample, group_key) for sample in samples]
    charged = charged_rewards(spec, results, groups)
    return [
        {
            "score": trainer_reward(spec, result) if charge is None else charge,
            **component_logs(spec, result),
        }
        for result, charge in zip(results, charged, strict=True)
    ]


def _group_of(sample: dict[str, Any], group_key: str) -> str | None:
    """The sample's prompt: its data source and `extra_info[group_key]` (None without it)."""
    metadata = sample["metadata"]
    if group_key not in metadata:
        return None
    return f"{metadata.get('data_source')}/{metadata[group_key]}"


def _grouped(samples: list[dict[str, Any]], group_key: str) -> list[int]:
    """Give each sample its group (`_group_of`); the order that puts every group together
    (first appearance, stable), to score in and undo after."""
    first: dict[str, int] = {}
    for position, sample in enumerate(samples):
        group = _group_of(sample, group_key)
        if group is None:
            raise ConfigError(
                f"solution {position}: extra_info has no {group_key!r}: the spec needs each "
                "sample's group, and the batched call finds it in extra_info[group_key] "
                "(set reward_kwargs.group_key to the column naming the prompt)"
            )
        sample["group"] = group
        first.setdefault(group, position)
    return sorted(range(len(samples)), key=lambda i: first[samples[i]["group"]])


def _in_order(results: list[Result], order: list[int]) -> list[Result]:
    back: list[Result | None] = [None] * len(order)
    for result, position in zip(results, order, strict=True):
        back[position] = result
    return back  # type: ignore[return-value]


def _batch_call(
    spec: RewardSpec, samples: list[dict[str, Any]], group_key: str
) -> tuple[list[dict[str, Any]], list[int] | None]:
    """The samples to score (regrouped when the spec needs groups) and the order to undo."""
    if group_scoped(spec) is None:
        return samples, None
    order = _grouped(samples, group_key)
    return [samples[i] for i in order], order


def _batch_samples(
    data_sources: Sequence[Any] | None,
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any] | None,
    extra_infos: Sequence[Any] | None,
) -> list[dict[str, Any]]:
    n = len(solution_strs)
    columns = {"data_sources": data_sources, "ground_truths": ground_truths}
    columns["extra_infos"] = extra_infos
    for name, column in columns.items():
        if column is not None and len(column) != n:
            raise ValueError(f"{name} has {len(column)} items for {n} solution_strs")
    return [
        to_sample(
            data_sources[i] if data_sources is not None else None,
            solution_strs[i],
            ground_truths[i] if ground_truths is not None else None,
            extra_infos[i] if extra_infos is not None else None,
        )
        for i in range(n)
    ]


def compute_score(
    data_source: Any = None,
    solution_str: Any = None,
    ground_truth: Any = None,
    extra_info: Any = None,
    *,
    spec: SpecSource | None = None,
    workers: Any = None,
    group_key: str = "index",
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[Any] | None = None,
    ground_truths: Sequence[Any] | None = None,
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> dict[str, float] | list[dict[str, float]]:
    """verl's custom reward function: one sample -> a dict; the batched call -> a list.

    Args:
        data_source, solution_str, ground_truth, extra_info: one sample, as verl's per-sample
            reward managers pass it.
        spec: the spec (path, YAML text or mapping) from `reward_kwargs`; default
            `REWARDSMITH_SPEC`.
        workers: worker processes from `reward_kwargs`; default `REWARDSMITH_WORKERS`.
        group_key: the `extra_info` key naming a sample's prompt, for specs that need whole
            groups (batched call only).
        data_sources, solution_strs, ground_truths, extra_infos: a batch, as verl's `batch`
            reward manager passes it.
        kwargs: other arguments verl may add (e.g. `reward_router_address`); ignored.
    """
    engine = shared_engine(spec, workers)
    if solution_strs is not None:
        samples = _batch_samples(data_sources, solution_strs, ground_truths, extra_infos)
        scored, order = _batch_call(engine.spec, samples, group_key)
        results = engine.score(scored)
        results = _in_order(results, order) if order is not None else results
        return _outputs(engine.spec, samples, results, group_key)
    refuse_groups(engine.spec, PER_SAMPLE)
    sample = to_sample(data_source, solution_str, ground_truth, extra_info)
    (output,) = _outputs(engine.spec, [sample], engine.score([sample]), group_key)
    return output


def compute_score_batch(
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[Any] | None = None,
    ground_truths: Sequence[Any] | None = None,
    extra_infos: Sequence[Any] | None = None,
    *,
    spec: SpecSource | None = None,
    workers: Any = None,
    group_key: str = "index",
    **kwargs: Any,
) -> list[dict[str, float]]:
    """verl's batched custom reward function (reward manager `batch`): one dict per sample."""
    results = compute_score(
        spec=spec,
        workers=workers,
        group_key=group_key,
        data_sources=data_sources,
        solution_strs=solution_strs or [],
        ground_truths=ground_truths,
        extra_infos=extra_infos,
    )
    assert isinstance(results, list)  # the batched form always answers a list
    return results


async def compute_score_async(
    data_source: Any = None,
    solution_str: Any = None,
    ground_truth: Any = None,
    extra_info: Any = None,
    *,
    spec: SpecSource | None = None,
    workers: Any = None,
    group_key: str = "index",
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[Any] | None = None,
    ground_truths: Sequence[Any] | None = None,
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> dict[str, float] | list[dict[str, float]]:
    """`compute_score` as a coroutine, for verl's reward loop: concurrent calls (one per
    sample) are scored together, and the event loop stays free meanwhile."""
    engine = shared_engine(spec, workers)
    if solution_strs is not None:
        samples = _batch_samples(data_sources, solution_strs, ground_truths, extra_infos)
        scored, order = _batch_call(engine.spec, samples, group_key)
        results = await engine.ascore(scored)
        results = _in_order(results, order) if order is not None else results
        return _outputs(engine.spec, samples, results, group_key)
    refuse_groups(engine.spec, PER_SAMPLE)
    sample = to_sample(data_source, solution_str, ground_truth, extra_info)
    (output,) = _outputs(engine.spec, [sample], await engine.ascore([sample]), group_key)
    return output


count_this_process()  # verl loads this file in each reward worker before any scoring

if __name__ != "rewardsmith.integrations.verl":  # pragma: no branch
    # Loaded by file path (verl's loader names the module `custom_module_<hash>`): hand out
    # the package module's functions instead, so that pickle and cloudpickle (verl's process
    # pools, Ray) find them by reference in any process.
    from rewardsmith.integrations.verl import (
        compute_score,
        compute_score_async,
        compute_score_batch,
        to_sample,
    )
