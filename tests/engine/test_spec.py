"""Spec validation: every mistake names the key and what is allowed."""

from __future__ import annotations

import pytest

from rewardsmith import ConfigError, RewardSpec, UnknownRewardError, load_spec

CONSTANT = "tests.engine.rewards_for_tests:constant"


def test_yaml_spec_with_inline_parameters(tmp_path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        f"rewards:\n  a: {{type: '{CONSTANT}', value: 0.5, weight: 2}}\n"
        f"  b: {{type: '{CONSTANT}', only_if: a, transform: {{type: clip, min: 0, max: 1}}}}\n"
        "combine: min\ntimeout_s: 2\non_error: 0\n"
    )
    spec = load_spec(path)
    assert list(spec.rewards) == ["a", "b"]
    assert spec.rewards["a"].params == {"value": 0.5}
    assert spec.rewards["a"].weight == 2.0
    assert spec.rewards["b"].only_if == "a"
    assert (spec.combine, spec.timeout_s, spec.on_error) == ("min", 2.0, 0.0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"rewards": {"a": {"type": "mathh"}}}, "unknown reward type 'mathh'. Did you mean: math?"),
        (
            {"rewards": {"a": {"type": CONSTANT, "valu": 1}}},
            "unknown key 'valu'. Did you mean: value?",
        ),
        ({"rewards": {"a": {"type": CONSTANT, "value": "high"}}}, "rewards.a"),
        ({"rewards": {"a": {"type": CONSTANT}}, "combin": "min"}, "unknown key 'combin'"),
        ({"rewards": {"a": {"type": CONSTANT}}, "combine": "mean"}, "allowed: weighted_sum, min"),
        ({"rewards": {"a": {"type": CONSTANT}}, "timeout_s": 0}, "timeout_s"),
        ({"rewards": {"a": {"type": CONSTANT, "only_if": "b"}}}, "only_if: 'b' is not another"),
        ({"rewards": {"a": {"type": CONSTANT, "only_if": "a"}}}, "only_if: 'a' is not another"),
        (
            {
                "rewards": {
                    "a": {"type": CONSTANT, "only_if": "b"},
                    "b": {"type": CONSTANT, "only_if": "a"},
                }
            },
            "cycle",
        ),
        ({"rewards": {"a": {"type": CONSTANT, "weight": float("nan")}}}, "finite"),
        ({"rewards": {}}, "non-empty"),
        ({"rewards": {"a": "math"}}, "a component is a mapping"),
        ({"rewards": {"a": {"type": "no.such.module:thing"}}}, "cannot import"),
        ({"rewards": {"a": {"type": CONSTANT}}, "timeout_s": float("inf")}, "timeout_s: Input"),
        ({"rewards": {"a": {"type": CONSTANT}}, "on_error": float("nan")}, "on_error: Input"),
        ({"rewards": {"a": {"type": "os:system"}}}, "'os:system' is not a reward factory"),
        (
            {"rewards": {"a": {"type": "subprocess:getoutput", "cmd": "true"}}},
            "is not a reward factory",
        ),
        ([1, 2], "a spec is a mapping"),
    ],
)
def test_mistakes_are_named(data: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        RewardSpec.from_dict(data)
    assert message in str(info.value)


def test_unknown_type_lists_allowed_types() -> None:
    with pytest.raises(UnknownRewardError) as info:
        RewardSpec.from_dict({"rewards": {"a": {"type": "nope"}}})
    assert "Allowed: " in str(info.value) and "exact_match" in str(info.value)


def test_missing_file_and_bad_yaml() -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_spec("does-not-exist.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_spec("rewards: [unclosed\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rewards:\n  a: {type: math}\n  a: {type: f1}\n", "found duplicate key 'a'"),
        ("rewards:\n  a: {type: math, weight: 1, weight: 5}\n", "found duplicate key 'weight'"),
        ("rewards:\n  a: {type: math}\ntimeout_s: .inf\n", "spec.timeout_s"),
        ("rewards:\n  a: {type: math}\non_error: .nan\n", "spec.on_error"),
        ("rewards:\n  a: {type: 'os:system', command: 'touch /tmp/pwned'}\n", "not a reward"),
    ],
)
def test_yaml_mistakes_are_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_spec(text)


def test_a_registered_factory_is_reachable_by_its_import_path() -> None:
    spec = load_spec({"rewards": {"a": {"type": CONSTANT, "value": 2}}})
    assert spec.rewards["a"].build()(None).score == 2.0  # type: ignore[arg-type]


def test_a_spec_file_that_is_not_utf8_is_named(tmp_path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"rewards:\n  a: {type: math}  # caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_spec(path)
