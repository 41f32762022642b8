"""Combination: hand-computed values and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardsmith import RewardSpec, Score
from rewardsmith.combine import combine

CONSTANT = "tests.engine.rewards_for_tests:constant"


def make_spec(
    combine_mode: str = "weighted_sum", on_error: float | None = None, **weights_and_gates
):
    rewards = {}
    # `product` takes non-negative members only, and a closed gate counts its component at its
    # lowest value: clipping makes the custom type's range known
    clip = {"transform": {"type": "clip", "min": 0, "max": 1}}
    for name, value in weights_and_gates.items():
        weight, gate = value if isinstance(value, tuple) else (value, None)
        rewards[name] = {
            "type": CONSTANT,
            "weight": weight,
            **({"only_if": gate} if gate else {}),
            **(clip if combine_mode == "product" or gate else {}),
        }
    return RewardSpec.from_dict({"rewards": rewards, "combine": combine_mode, "on_error": on_error})


ok = Score.ok


@pytest.mark.parametrize(
    ("mode", "scores", "expected"),
    [
        ("weighted_sum", [1.0, 0.5], 1.0 * 1.0 + 0.2 * 0.5),
        ("min", [1.0, 0.5], 0.1),
        ("product", [1.0, 0.5], 0.1),
        ("first_pass", [0.0, 0.5], 0.1),
        ("first_pass", [0.7, 0.5], 0.7),
        ("first_pass", [0.0, 0.0], 0.0),
    ],
)
def test_hand_computed(mode: str, scores: list[float], expected: float) -> None:
    spec = make_spec(mode, a=1.0, b=0.2)
    total, status = combine(spec, {"a": ok(scores[0]), "b": ok(scores[1])})
    assert status == "ok"
    assert total == pytest.approx(expected)


def test_gate_counts_only_when_the_gate_passes() -> None:
    spec = make_spec(correct=1.0, fmt=(0.2, "correct"))
    assert combine(spec, {"correct": ok(1.0), "fmt": ok(1.0)}) == (pytest.approx(1.2), "ok")
    assert combine(spec, {"correct": ok(0.0), "fmt": ok(1.0)}) == (0.0, "ok")


def test_failure_decides_the_total() -> None:
    spec = make_spec(a=1.0, b=1.0)
    failed = Score.failed("timeout", "slow")
    assert combine(spec, {"a": ok(1.0), "b": failed}) == (None, "timeout")
    spec = make_spec(on_error=0.0, a=1.0, b=1.0)
    assert combine(spec, {"a": ok(1.0), "b": failed}) == (0.0, "timeout")


def test_not_applicable_components_do_not_count() -> None:
    spec = make_spec(a=1.0, b=1.0)
    na = Score.failed("not_applicable", "no reference")
    assert combine(spec, {"a": ok(0.5), "b": na}) == (0.5, "ok")
    assert combine(spec, {"a": na, "b": na}) == (None, "not_applicable")


def test_non_finite_total_is_an_error_not_invalid() -> None:
    """`invalid` is for what the dataset gives; an overflowing total is charged (an error)."""
    spec = make_spec(a=1e308, b=1e308)
    assert combine(spec, {"a": ok(1e308), "b": ok(1e308)}) == (None, "error")


unit = st.floats(min_value=-10, max_value=10, allow_nan=False)
weights = st.floats(min_value=0, max_value=5, allow_nan=False)


@given(st.lists(st.tuples(weights, unit), min_size=1, max_size=6))
def test_weighted_sum_is_linear_and_min_is_a_lower_bound(pairs) -> None:
    names = {f"c{i}": w for i, (w, _) in enumerate(pairs)}
    scores = {f"c{i}": ok(s) for i, (_, s) in enumerate(pairs)}
    total, _ = combine(make_spec(**names), scores)
    assert total == pytest.approx(math.fsum(w * s for w, s in pairs), abs=1e-9)
    lowest, _ = combine(make_spec("min", **names), scores)
    assert all(lowest <= w * s for w, s in pairs)


@given(st.lists(unit, min_size=1, max_size=6), st.integers(min_value=0, max_value=5))
def test_any_failure_nulls_the_total(values, failing) -> None:
    names = {f"c{i}": 1.0 for i in range(len(values))}
    scores = {f"c{i}": ok(v) for i, v in enumerate(values)}
    scores[f"c{failing % len(values)}"] = Score.failed("error", "boom")
    for mode in ("weighted_sum", "min", "product", "first_pass"):
        assert combine(make_spec(mode, **names), scores) == (None, "error")


@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=6))
def test_product_of_unit_scores_stays_in_unit_interval(values) -> None:
    names = {f"c{i}": 1.0 for i in range(len(values))}
    total, _ = combine(
        make_spec("product", **names), {f"c{i}": ok(v) for i, v in enumerate(values)}
    )
    assert 0.0 <= total <= 1.0
