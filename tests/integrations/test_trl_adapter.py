"""The TRL adapter, called the way TRL's `_calculate_rewards` calls reward functions.

TRL (checked against trl 1.16, `trl/trainer/grpo_trainer.py`, `_calculate_rewards`) calls each
reward function with keyword arguments only:
``func(prompts=prompts, completions=completions, completion_ids=completion_ids_list,
**reward_kwargs)``, where `reward_kwargs` holds every dataset column but prompt/completion/
completion_ids (one value per completion), `trainer_state`, `log_extra` and `log_metric`.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import pickle
from typing import Any

import pytest

from rewardsmith import ConfigError, Sample
from rewardsmith.integrations.trl import (
    TRLRewards,
    reward_funcs,
    samples_from_trl,
    total_reward_func,
)
from tests.combine.hack_table import GATE_CHAIN_SPEC

from .conftest import MATH_SPEC, CountingEngine, require, scripted_spec, trl_normalize_then_sum

COMPLETIONS = [
    "<think>2 and 2</think> The answer is \\boxed{4}",  # right, formatted, 3 tokens
    "\\boxed{5}",  # wrong: the gated format bonus does not count
    "<think>x</think>\\boxed{4}",  # right, formatted, 10 tokens: overlong
]
TOKEN_IDS = [[7] * 3, [7] * 6, [7] * 10]


class Recorder:
    """Stands in for TRL's `log_metric` / `log_extra` (trl >= 1.0)."""

    def __init__(self) -> None:
        self.metrics: list[tuple[str, float]] = []
        self.extra: list[tuple[str, list[Any]]] = []

    def log_metric(self, name: str, value: float) -> None:
        self.metrics.append((name, value))

    def log_extra(self, column: str, values: list[Any]) -> None:
        self.extra.append((column, values))


def trl_kwargs(
    completions: list[Any], prompts: list[Any] | None = None, **columns: Any
) -> dict[str, Any]:
    n = len(completions)
    return {
        "prompts": prompts if prompts is not None else ["What is 2+2?"] * n,
        "completions": completions,
        "completion_ids": columns.pop("completion_ids", [[1]] * n),
        **columns,
        "trainer_state": object(),
    }


def trl_total(funcs: list[Any], weights: list[float], kwargs: dict[str, Any]) -> list[float]:
    """TRL's total: None -> NaN, then nansum over weight * value (grpo_trainer.py)."""
    columns = [[math.nan if v is None else v for v in f(**kwargs)] for f in funcs]
    return [
        math.fsum(w * c[i] for w, c in zip(weights, columns, strict=True) if not math.isnan(c[i]))
        for i in range(len(columns[0]))
    ]


def test_one_function_per_component_named_and_weighted(math_engine: CountingEngine) -> None:
    funcs, weights = reward_funcs(MATH_SPEC, engine=math_engine)
    assert [f.__name__ for f in funcs] == ["correct", "format", "overlong"]
    assert weights == [1.0, 0.2, 1.0]
    # TRL names reward functions like this (trl.trainer.utils.get_callable_name).
    assert [getattr(f, "__name__", type(f).__name__) for f in funcs] == list(MATH_SPEC["rewards"])


def test_values_match_the_spec_and_trl_total_is_the_spec_total(
    math_engine: CountingEngine,
) -> None:
    funcs, weights = reward_funcs(MATH_SPEC, engine=math_engine)
    kwargs = trl_kwargs(COMPLETIONS, answer=["4"] * 3, completion_ids=TOKEN_IDS)
    assert funcs[0](**kwargs) == [1.0, 0.0, 1.0]
    assert funcs[1](**kwargs) == [1.0, 0.0, 1.0]  # at its lowest when not correct (gated off)
    assert funcs[2](**kwargs) == [0.0, -0.5, -1.0]  # token counts from completion_ids
    expected = [r.reward for r in math_engine.score(_samples(kwargs))]
    assert trl_total(funcs, weights, kwargs) == pytest.approx(expected)
    assert expected == pytest.approx([1.2, -0.5, 0.2])


def _samples(kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    extra = {
        k: v for k, v in kwargs.items() if k not in {"prompts", "completions", "completion_ids"}
    }
    return samples_from_trl(
        kwargs["prompts"], kwargs["completions"], kwargs["completion_ids"], extra
    )


def test_a_batch_is_scored_once_and_then_dropped(math_engine: CountingEngine) -> None:
    rewards = TRLRewards(MATH_SPEC, engine=math_engine)
    kwargs = trl_kwargs(COMPLETIONS, answer=["4"] * 3, completion_ids=TOKEN_IDS)
    before = math_engine.calls
    for func in rewards.funcs:
        func(**kwargs)
    assert math_engine.calls == before + 1
    assert rewards._batch is None  # every component read it: nothing kept across steps
    rewards.funcs[0](**kwargs)  # a second call on the same batch scores again
    assert math_engine.calls == before + 2
    next_batch = trl_kwargs(COMPLETIONS[:1], answer=["4"])
    assert rewards.funcs[0](**next_batch) == [1.0]  # a new batch replaces the old one
    assert math_engine.calls == before + 3
    assert len(rewards._batch.results) == 1


def test_conversational_prompts_and_completions(math_engine: CountingEngine) -> None:
    funcs, _ = reward_funcs(MATH_SPEC, engine=math_engine)
    prompts = [[{"role": "system", "content": "Think."}, {"role": "user", "content": "2+2?"}]] * 2
    completions = [
        [{"role": "assistant", "content": "<think>sum</think> \\boxed{4}"}],
        # multimodal content blocks, as vision trainers send them
        [{"role": "assistant", "content": [{"type": "text", "text": "\\boxed{3}"}]}],
    ]
    kwargs = trl_kwargs(completions, prompts, solution=["4", "4"])
    assert funcs[0](**kwargs) == [1.0, 0.0]
    assert funcs[1](**kwargs) == [1.0, 0.0]


def test_image_parts_are_kept_and_placeholders_dropped() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    prompt = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Q?"}, image]}
    ]
    (row,) = samples_from_trl([prompt], ["A."], None, {})
    sample = Sample.model_validate({"id": "0", **row})
    assert sample.prompt[0].text == "Q?"  # type: ignore[index]
    assert [p.as_sent() for p in sample.prompt[0].images] == [image]  # type: ignore[index]


def test_the_trainer_step_reaches_metadata() -> None:
    class State:
        global_step = 42

    rows = samples_from_trl(
        None, ["a", "b"], None, {"trainer_state": State(), "metadata": [{"step": 7}, {}]}
    )
    assert [r["metadata"]["step"] for r in rows] == [7, 42]  # a dataset's own step wins


def test_dataset_columns_become_reference_and_metadata() -> None:
    rows = samples_from_trl(
        ["p1", "p2"],
        ["c1", "c2"],
        [[1, 2], [3]],
        {
            "answer": ["4", "5"],
            "solution": ["... 4", "... 5"],
            "level": [1, 2],
            "trainer_state": object(),
            "log_metric": print,
        },
    )
    samples = [Sample.model_validate({"id": str(i), **row}) for i, row in enumerate(rows)]
    assert samples[0].reference == "4"  # answer wins over solution (data contract order)
    assert samples[0].metadata == {"solution": "... 4", "level": 1, "completion_ids": [1, 2]}
    assert samples[1].prompt == "p2"
    assert samples[1].metadata["completion_ids"] == [3]
    ground = samples_from_trl(None, ["c"], None, {"ground_truth": ["x"], "label": ["y"]})
    sample = Sample.model_validate({"id": "0", **ground[0]})
    assert (sample.reference, sample.metadata) == ("x", {"label": "y"})


def test_a_column_of_the_wrong_length_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'answer': expected one value per completion"):
        samples_from_trl(["p"], ["c"], None, {"answer": ["4", "5"]})


def test_not_applicable_is_none_and_failures_follow_their_cause() -> None:
    completions = ["one two", "n/a", "raise", "one two three", "invalid"]
    with TRLRewards(scripted_spec(on_error=None), workers=1) as rewards:
        a, b = rewards.funcs
        kwargs = trl_kwargs(completions)
        # `raise` is the completion's doing: charged below the prompt's lowest total (the
        # scripted rewards declare no range: 0.0 minus the group's spread 5.75, carried by the
        # failed component, weight 2); `invalid` (a bad reference) gets no reward at all
        assert a(**kwargs) == [2.0, None, -2.875, 3.0, None]
        assert b(**kwargs) == [0.0, 0.0, None, -0.5, None]
        assert trl_total(rewards.funcs, rewards.weights, kwargs) == [4.0, 0.0, -5.75, 5.75, 0.0]
        expected = [r.reward for r in rewards.engine.score(_samples(kwargs))]
        assert expected == [4.0, 0.0, None, 5.75, None]
    with TRLRewards(scripted_spec(on_error=-1.0), workers=1) as rewards:
        kwargs = trl_kwargs(completions)
        a_values, b_values = (f(**kwargs) for f in rewards.funcs)
        assert a_values[2] == -0.5 and b_values[2] is None  # -1 / weight 2, on the failed one
        total = trl_total(rewards.funcs, rewards.weights, kwargs)
        assert total == [4.0, 0.0, -1.0, 5.75, -1.0]  # min(on_error, lowest); on_error
    with TRLRewards(scripted_spec(on_error=9.0), workers=1) as rewards:
        kwargs = trl_kwargs(completions)
        total = trl_total(rewards.funcs, rewards.weights, kwargs)
        assert total == [4.0, 0.0, -5.75, 5.75, 9.0]  # a charge is below the worst


def test_logs_components_once_per_batch() -> None:
    recorder = Recorder()
    with TRLRewards(scripted_spec(), workers=1) as rewards:
        kwargs = trl_kwargs(
            ["a b", "n/a", "raise", "c"],
            log_metric=recorder.log_metric,
            log_extra=recorder.log_extra,
        )
        for func in rewards.funcs:
            func(**kwargs)
    metrics = dict(recorder.metrics)
    assert len(recorder.metrics) == len(metrics) == 4  # once per batch, not once per function
    assert metrics["rewardsmith/a/failed"] == 0.25
    assert metrics["rewardsmith/a/not_applicable"] == 0.25
    assert metrics["rewardsmith/b/failed"] == 0.0
    assert recorder.extra == [("rewardsmith/status", ["ok", "ok", "error", "ok"])]


def test_a_spec_that_is_not_a_weighted_sum_needs_the_total_function() -> None:
    spec = scripted_spec(combine="min")
    with pytest.raises(ConfigError, match="combine: min is not a weighted sum"):
        reward_funcs(spec, workers=1)
    recorder = Recorder()
    total = total_reward_func(spec, workers=1, name="math_reward")
    try:
        assert total.__name__ == "math_reward"
        values = total(**trl_kwargs(["a b c", "raise", "invalid"], log_metric=recorder.log_metric))
        # min(2 * 3, 0.5 * -0.5); `raise` charged below the group's lowest (by at least 1:
        # the ranges are unknown); a bad reference: None
        assert values == [-0.25, -1.25, None]
        metrics = dict(recorder.metrics)
        assert metrics["rewardsmith/a/mean"] == 3.0
        assert metrics["rewardsmith/b/mean"] == pytest.approx(-0.5 / 3)  # -0.5, 0.0, 0.0
    finally:
        total.rewards.close()


def test_a_split_that_loses_the_total_fails_loudly(math_engine: CountingEngine) -> None:
    rewards = TRLRewards(MATH_SPEC, engine=math_engine)
    kwargs = trl_kwargs(COMPLETIONS[:1], answer=["4"])
    original = rewards.spec

    # a spec whose weights do not produce the engine's totals
    rewards.spec = original.model_copy(
        update={
            "rewards": {
                n: c.model_copy(update={"weight": 3.0}) for n, c in original.rewards.items()
            }
        }
    )
    with pytest.raises(ConfigError, match="not the spec's total reward"):
        rewards.funcs[0](**kwargs)


def test_functions_pickle_and_work_after_loading(math_engine: CountingEngine) -> None:
    funcs, _ = reward_funcs(MATH_SPEC, workers=1)
    try:
        loaded = pickle.loads(pickle.dumps(funcs))
        assert [f.__name__ for f in loaded] == ["correct", "format", "overlong"]
        assert loaded[0].rewards is loaded[1].rewards  # still one engine for the spec
        kwargs = trl_kwargs(COMPLETIONS, answer=["4"] * 3, completion_ids=TOKEN_IDS)
        try:
            assert [f(**kwargs) for f in loaded] == [f(**kwargs) for f in funcs]
        finally:
            loaded[0].rewards.close()
    finally:
        funcs[0].rewards.close()


def test_async_functions_share_one_scoring(math_engine: CountingEngine) -> None:
    rewards = TRLRewards(MATH_SPEC, engine=math_engine, asynchronous=True)
    funcs = rewards.funcs
    trl_utils = require("trl.trainer.utils")
    assert all(trl_utils.is_async_callable(f) for f in funcs)  # how trl >= 1.14 detects them
    kwargs = trl_kwargs(COMPLETIONS, answer=["4"] * 3, completion_ids=TOKEN_IDS)
    before = math_engine.calls

    async def gather() -> list[list[float | None]]:  # what TRL does with async reward funcs
        return await asyncio.gather(*(f(**kwargs) for f in funcs))

    assert asyncio.run(gather()) == [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, -0.5, -1.0]]
    assert math_engine.calls == before + 1
    loaded = pickle.loads(pickle.dumps(funcs[0]))
    assert inspect.iscoroutinefunction(loaded.__call__)
    loaded.rewards.close()


def _needs(feature: str) -> None:
    """Skip when the spec language here lacks a feature (veto, group-scoped transforms)."""
    from rewardsmith import ComponentSpec
    from rewardsmith import combine as combine_module

    if feature == "veto" and "veto" not in ComponentSpec.model_fields:
        pytest.skip("this spec has no veto")
    if feature == "kimi" and "kimi" not in getattr(combine_module, "TRANSFORM_TYPES", {}):
        pytest.skip("this spec has no group-scoped transforms")


def test_a_fired_veto_gives_its_total_in_trl() -> None:
    _needs("veto")
    spec = {
        "rewards": {
            "a": {"type": "tests.integrations.rewards_for_tests:scripted", "weight": 2.0},
            "rule": {"type": "regex", "pattern": "ok", "veto": True, "weight": 0.5},
        },
        "veto_value": -1.0,  # the scripted reward declares no range
    }
    with TRLRewards(spec, workers=1) as rewards:
        kwargs = trl_kwargs(["ok two", "no three"])
        assert [f(**kwargs) for f in rewards.funcs] == [[2.0, None], [1.0, -2.0]]
        assert trl_total(rewards.funcs, rewards.weights, kwargs) == [4.5, -1.0]


def test_generations_of_a_prompt_form_a_group_for_group_scoped_shaping() -> None:
    _needs("kimi")
    spec = {
        "rewards": {
            "correct": {"type": "math"},
            "brevity": {
                "type": "length",
                "unit": "tokens",
                "max_length": 100,
                "cache_length": 50,
                "transform": {"type": "kimi", "correct": "correct"},
            },
        },
        "group_transform": "grpo",  # advantages are TRL's job: left out
    }
    with TRLRewards(spec, workers=1) as rewards:
        assert getattr(rewards.spec, "group_transform", None) is None
        kwargs = trl_kwargs(
            ["\\boxed{4}"] * 3 + ["\\boxed{5}"],
            prompts=["p1", "p1", "p2", "p2"],
            completion_ids=[[1] * 2, [1] * 6, [1] * 3, [1] * 9],
            answer=["4"] * 4,
        )
        correct, brevity = (f(**kwargs) for f in rewards.funcs)
        assert correct == [1.0, 1.0, 1.0, 0.0]
        # Kimi: lambda = 0.5 - (len - min) / (max - min) within each prompt's group
        assert brevity == [0.5, -0.5, 0.5, -0.5]


def test_groups_follow_runs_of_the_same_prompt() -> None:
    rows = samples_from_trl(["p", "p", "q", "q", "p"], ["a", "b", "c", "d", "e"], None, {})
    assert [row["group"] for row in rows] == ["0", "0", "1", "1", "2"]
    rows = samples_from_trl(["p", "p"], ["a", "b"], None, {"group": ["x", "y"]})
    assert [row["group"] for row in rows] == ["x", "y"]  # the dataset's own groups win


def test_a_gate_chain_closes_in_the_trl_split_too() -> None:
    """Issue 17 item 5 in TRL: a gate reads the gated value, as the engine's total does."""
    with TRLRewards(GATE_CHAIN_SPEC, workers=1) as rewards:
        kwargs = trl_kwargs(["42 bonus", "safe 42 bonus"])
        assert [f(**kwargs) for f in rewards.funcs] == [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]
        assert trl_total(rewards.funcs, rewards.weights, kwargs) == [0.0, 2.5]


class NormalizeThenSumTrainer:
    """Stands in for the `GRPOTrainer` behind `log_metric` (trl 1.16 passes its bound
    `_log_metric`): only the attribute the adapter reads. The real trainer's path is in
    test_trl_grpo.py."""

    multi_objective_aggregation = "normalize_then_sum"

    def _log_metric(self, name: str, value: float) -> None:
        pass


GDPO_SPEC = {
    "rewards": {
        name: {"type": "tests.combine.rewards_for_tests:echo", "key": name, **body}
        for name, body in {
            "correct": {"low": 0.0, "high": 1.0},
            "format": {"low": 0.0, "high": 1.0, "only_if": "correct", "weight": 0.5},
            "safe": {"low": 0.0, "high": 1.0, "veto": True, "weight": 0.0},
            "pen": {"low": -1.0, "high": 0.0},
        }.items()
    }
}


def test_normalize_then_sum_gives_failures_vetoes_and_closed_gates_the_group_low() -> None:
    """TRL's normalize_then_sum counts a None at its column's mean: a failure carried on one
    component or a vetoed sample would sit at the mean of the others. Each takes the column's
    group low instead, and a gated-off cell its lowest value, as in the total (a component
    that does not apply stays None), so none beats the honest wrong answer."""
    columns = {  # one prompt, five generations
        "correct": [1.0, 0.0, "error", 1.0, 1.0],  # 2: crashes the check (charged)
        "format": [1.0, 1.0, 1.0, 0.0, 1.0],  # 1: gated off (wrong answer)
        "safe": [1.0, 1.0, 1.0, 1.0, 0.0],  # 4: breaks the hard rule (vetoed)
        "pen": [0.0, -0.5, -0.5, None, 0.0],  # 3: does not apply
    }
    with TRLRewards(GDPO_SPEC, workers=1, num_generations=5) as rewards:
        kwargs = trl_kwargs(["x"] * 5, log_metric=NormalizeThenSumTrainer()._log_metric)
        kwargs.update(columns)
        values = [f(**kwargs) for f in rewards.funcs]
    honest_wrong = [0.0, 0.0, 1.0, -0.5]  # format gated off: its lowest (and its group low)
    assert [list(row) for row in zip(*values, strict=True)] == [
        [1.0, 1.0, 1.0, 0.0],
        honest_wrong,
        honest_wrong,  # the crash: every column's group low
        [1.0, 0.0, 1.0, None],
        honest_wrong,  # the veto: every column's group low
    ]
    advantages = trl_normalize_then_sum(values, rewards.weights, 5)
    assert max(advantages[2], advantages[4]) <= advantages[1] + 1e-9


def test_normalize_then_sum_without_groups_points_to_the_total() -> None:
    with TRLRewards(GDPO_SPEC, workers=1) as rewards:
        kwargs = trl_kwargs(["x"] * 2, log_metric=NormalizeThenSumTrainer()._log_metric)
        with pytest.raises(ConfigError, match="total_reward_func"):
            rewards.funcs[0](**kwargs)
