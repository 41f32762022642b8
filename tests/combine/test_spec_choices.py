"""Spec syntax for combine / transform / veto / group_transform: parsing and named errors."""

from __future__ import annotations

import pytest

from rewardsmith import ConfigError, RewardSpec, load_spec
from rewardsmith.combine._advantages import Grpo
from rewardsmith.combine._ensemble import Uncertainty

from .helpers import ECHO, spec

YAML = f"""
rewards:
  correct: {{type: "{ECHO}", key: correct, low: 0, high: 1}}
  rm:
    type: "{ECHO}"
    key: rm
    weight: 0.5
    transform: [{{type: clip, min: -5, max: 5}}, tanh]
  safe: {{type: "{ECHO}", key: safe, low: 0, high: 1, veto: true, weight: 0}}
combine: {{type: uncertainty, lambda: 0.25}}
group_transform: {{type: grpo, std: unbiased, epsilon: 1.0e-4}}
"""


def test_yaml_with_every_new_key() -> None:
    s = load_spec(YAML)
    assert s.combine == "uncertainty"
    assert s.combiner == Uncertainty(lambda_=0.25)
    assert s.group_transform == Grpo(std="unbiased", epsilon=1e-4)
    assert [t.type for t in s.rewards["rm"].transform] == ["clip", "tanh"]
    assert s.rewards["safe"].veto
    assert s.needs_groups
    assert not load_spec(YAML.replace("group_transform", "#")).needs_groups


def test_plain_names_and_defaults() -> None:
    s = spec({"a": {}}, combine="min")
    assert (s.combine, s.combiner.type, s.group_transform) == ("min", "min", None)
    assert (
        RewardSpec.model_validate({"rewards": s.rewards, "combine": "average"}).combiner.type
        == "average"
    )
    with pytest.raises(ValueError, match="product needs non-negative members"):  # as a file
        RewardSpec.model_validate({"rewards": s.rewards, "combine": "product"})


def test_group_scoped_shaping_needs_groups_but_fixed_shaping_does_not() -> None:
    assert spec({"a": {"transform": "mean_std"}}).needs_groups
    assert not spec({"a": {"transform": {"type": "mean_std", "mean": 0, "std": 1}}}).needs_groups
    assert not spec({"a": {"transform": ["tanh", "par"]}}).needs_groups


def test_with_group_transform_for_the_command_line() -> None:
    base = spec({"a": {}})
    assert base.with_group_transform("rloo").group_transform.type == "rloo"
    assert (
        base.with_group_transform("{type: grpo, std: unbiased}").group_transform.std == "unbiased"
    )
    assert base.with_group_transform("rloo").with_group_transform(None).group_transform is None
    with pytest.raises(ConfigError, match=r"unknown type .grpoo.\. Did you mean: grpo"):
        base.with_group_transform("grpoo")


@pytest.mark.parametrize(
    ("top", "component", "message"),
    [
        ({"combine": "mean"}, {}, "combine: unknown type 'mean'"),
        (
            {"combine": {"type": "uncertainty", "lamda": 1}},
            {},
            "unknown key 'lamda'. Did you mean: lambda?",
        ),
        (
            {"combine": {"type": "uncertainty", "lambda": -1}},
            {},
            "combine (type uncertainty).lambda",
        ),
        ({"combine": {"type": "lexicographic", "tie_scale": 1}}, {}, "tie_scale"),
        ({"combine": {"lambda": 1}}, {}, "combine: a name, or a mapping with a 'type'"),
        (
            {"group_transform": "ppo"},
            {},
            "allowed: grpo, dr_grpo, rloo, whiten, rank, gdpo, tournament",
        ),
        (
            {"group_transform": {"type": "grpo", "std": "biased"}},
            {},
            "group_transform (type grpo).std",
        ),
        ({"group_transform": {"type": "whiten", "batch_size": 0}}, {}, "batch_size"),
        ({}, {"transform": "softmax"}, "rewards.a.transform: unknown type 'softmax'"),
        (
            {},
            {"transform": [{"type": "clip"}]},
            "rewards.a.transform[0] (type clip): Value error, clip needs min",
        ),
        ({}, {"transform": {"type": "clip", "min": 2, "max": 1}}, "min (2.0) is above max"),
        ({}, {"transform": {"type": "min_max", "min": 0}}, "both min and max"),
        ({}, {"transform": {"type": "kimi"}}, "correct"),
        (
            {},
            {"transform": {"type": "kimi", "correct": "nope"}},
            "transform[0].correct: 'nope' is not another",
        ),
        (
            {},
            {"transform": {"type": "cosine", "correct": "a", "max_length": 5}},
            "'a' is not another",
        ),
        ({}, {"veto": "sometimes"}, "rewards.a.veto"),
    ],
)
def test_mistakes_name_the_key_and_the_allowed_values(top, component, message) -> None:
    with pytest.raises(ConfigError) as info:
        spec({"a": component}, **top)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("components", "combine", "message"),
    [
        ({"p": {}, "o": {}}, {"type": "renorm", "process": "p"}, "outcome"),
        (
            {"p": {}, "o": {}},
            {"type": "renorm", "process": "x", "outcome": "o"},
            "combine.process: 'x'",
        ),
        ({"p": {}, "o": {}}, {"type": "renorm", "process": "p", "outcome": "p"}, "two different"),
        (
            {"p": {}, "o": {}, "f": {}},
            {"type": "renorm", "process": "p", "outcome": "o"},
            "remove f",
        ),
        (
            {"p": {"veto": True}, "o": {}},
            {"type": "renorm", "process": "p", "outcome": "o"},
            "rewards.p: veto",
        ),
    ],
)
def test_renorm_references(components, combine, message) -> None:
    with pytest.raises(ConfigError) as info:
        spec(components, combine=combine)
    assert message in str(info.value)


def test_spec_pickles_for_worker_processes_and_ray() -> None:
    import pickle

    s = load_spec(YAML)
    assert pickle.loads(pickle.dumps(s)) == s
