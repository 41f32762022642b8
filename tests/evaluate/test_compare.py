"""The STARC distance: zero exactly for the changes that cannot alter a GRPO-style optimum
(positive scaling, a shift per prompt), one for opposite rewards, in [0, 1] always."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rewardsmith.evaluate import evaluate, starc_distance

from .conftest import needs_data
from .real_data import labelled_gsm8k

rewards = st.lists(st.floats(-5, 5, allow_nan=False), min_size=4, max_size=12)
GROUPS = ["a", "a", "b", "b", "c", "c", "d", "d", "e", "e", "f", "f"]


def _spread(values: list[float], groups: list[str]) -> float:
    """Squared norm of the rewards less their group means (0: nothing left to compare)."""
    means = {
        g: sum(v for v, h in zip(values, groups, strict=True) if h == g) / groups.count(g)
        for g in groups
    }
    return sum((v - means[g]) ** 2 for v, g in zip(values, groups, strict=True))


@settings(deadline=None)
@given(rewards, st.floats(0.1, 10), st.lists(st.floats(-3, 3), min_size=6, max_size=6))
def test_scaling_and_per_prompt_shifts_are_distance_zero(
    values: list[float], scale: float, shifts: list[float]
) -> None:
    groups = GROUPS[: len(values)]
    assume(_spread(values, groups) > 1e-6)  # else rounding noise is all there is
    shift = dict(zip("abcdef", shifts, strict=True))
    other = [scale * v + shift[g] for v, g in zip(values, groups, strict=True)]
    assert starc_distance(values, other, groups) == pytest.approx(0.0, abs=1e-6)


@given(rewards)
def test_opposite_rewards_are_distance_one(values: list[float]) -> None:
    groups = GROUPS[: len(values)]
    centred = [
        v - sum(values[i] for i, h in enumerate(groups) if h == g) / groups.count(g)
        for v, g in zip(values, groups, strict=True)
    ]
    assume(sum(c * c for c in centred) > 1e-6)
    assert starc_distance(values, [-v for v in values], groups) == pytest.approx(1.0)


@settings(deadline=None)
@given(rewards, rewards)
def test_distance_is_bounded_and_symmetric(a: list[float], b: list[float]) -> None:
    n = min(len(a), len(b))
    groups = GROUPS[:n]
    d = starc_distance(a[:n], b[:n], groups)
    assert 0.0 <= d <= 1.0 + 1e-9
    assert d == pytest.approx(starc_distance(b[:n], a[:n], groups))


def test_ungrouped_samples_are_one_state() -> None:
    assert starc_distance([0.0, 1.0, 2.0], [10.0, 11.0, 12.0], ["x", "y", "z"]) == pytest.approx(
        0.0
    )


@needs_data
def test_compare_two_specs_on_labelled_gsm8k(write_rows: Callable[..., Path]) -> None:
    path = write_rows(labelled_gsm8k(24))
    spec = {"rewards": {"c": {"type": "math"}}}
    scaled = {"rewards": {"c": {"type": "math", "weight": 3.0}}}
    same = evaluate([path], spec=spec, compare=scaled, attacks="none", workers=1)
    assert same.compared is not None
    assert same.compared["starc_distance"] == pytest.approx(0.0)
    assert same.compared["spearman"] == pytest.approx(1.0)
    assert same.compared["disagreements"] == 0
    lenient = {
        "rewards": {
            "c": {"type": "math"},
            "bonus": {"type": "think_format", "weight": 0},
            "len": {"type": "length", "unit": "chars", "mode": "target", "target": 50},
        }
    }
    other = evaluate([path], spec=spec, compare=lenient, attacks="none", workers=1)
    assert other.compared is not None
    assert 0.0 < other.compared["starc_distance"] <= 1.0
    assert other.compared["n"] == 24
