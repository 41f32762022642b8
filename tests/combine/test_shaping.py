"""Per-component transforms: hand-computed values, failures, and raw verdicts for gates."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardsmith import Score

from .helpers import UNIT, ok, row, run, spec


def shaped(transform, values, group="g", **metadata):
    s = spec({"r": {"transform": transform}})
    results = run(s, [row(group, {"r": ok(v)}, **metadata) for v in values])
    return [r.components["r"] for r in results]


def scores(transform, values, **metadata):
    return [c.score for c in shaped(transform, values, **metadata)]


@pytest.mark.parametrize(
    ("transform", "values", "expected"),
    [
        ({"type": "clip", "min": -1, "max": 1}, [-3, 0.5, 2], [-1, 0.5, 1]),
        ({"type": "clip", "max": 0.2}, [-3, 0.5], [-3, 0.2]),
        ("tanh", [0.0, 1.0], [0.0, math.tanh(1.0)]),
        ({"type": "tanh", "scale": 2}, [1.0], [math.tanh(0.5)]),
        ({"type": "min_max", "min": 0, "max": 4}, [1, 4], [0.25, 1.0]),
        ("min_max", [2, 4, 3], [0.0, 1.0, 0.5]),
        ("min_max", [0.35, 0.35], [0.0, 0.0]),
        ({"type": "mean_std", "mean": 1, "std": 2, "epsilon": 0}, [5], [2.0]),
        ({"type": "mean_std", "epsilon": 0}, [1, 3], [-1.0, 1.0]),
        ("mean_std", [0.35] * 7, [0.0] * 7),
        ([{"type": "clip", "min": 0}, "tanh"], [-2, 1], [0.0, math.tanh(1)]),
    ],
)
def test_hand_computed(transform, values, expected) -> None:
    assert scores(transform, values) == pytest.approx(expected, abs=1e-12)


def test_shaped_score_keeps_the_raw_value_and_detail() -> None:
    s = spec({"r": {"transform": [{"type": "clip", "max": 1}, "tanh"]}})
    (result,) = run(s, [row("g", {"r": ok(3.0, answer="42")})])
    assert result.components["r"].detail == {"answer": "42", "raw_score": 3.0}
    assert result.reward == pytest.approx(math.tanh(1.0))


def test_raw_score_is_the_engines_record_not_the_rewards() -> None:
    """A reward's own `raw_score` key is replaced by the value it returned (rt22 round 3: a
    reward model's logit -3 there made its in-range 0.9 an error, and a gate read -3)."""
    s = spec(
        {"r": {**UNIT, "transform": {"type": "clip", "max": 1}}, "b": {**UNIT, "only_if": "r"}}
    )
    (result,) = run(s, [row(None, {"r": ok(0.9, raw_score=-3.0), "b": ok(1)})])
    assert result.components["r"].detail == {"raw_score": 0.9}
    assert (result.reward, result.status) == (pytest.approx(1.9), "ok")


def test_group_statistics_leave_out_a_closed_gate_and_an_out_of_range_score() -> None:
    """min_max over the group: a score behind a closed gate, or outside its declared range
    (an error, charged), neither sets the group's max nor is reshaped by it."""
    s = spec({"g": {**UNIT, "weight": 0.0}, "r": {**UNIT, "transform": "min_max", "only_if": "g"}})
    got = run(
        s,
        [
            row("x", {"g": ok(1), "r": ok(0.2)}),
            row("x", {"g": ok(1), "r": ok(0.6)}),
            row("x", {"g": ok(0), "r": ok(1.0)}),
            row("x", {"g": ok(1), "r": ok(7.0)}),
        ],
    )
    assert [r.components["r"].score for r in got[:3]] == [0.0, 1.0, 1.0]
    assert [r.reward for r in got[:3]] == [0.0, 1.0, 0.0]
    assert (got[3].status, got[3].cause) == ("error", "completion")


def test_par_is_the_mean_sigmoid_over_reference_rewards() -> None:
    sigmoid = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert scores("par", [1.0], reference_rewards=[0.0]) == pytest.approx([sigmoid(1)])
    assert scores("par", [1.0], reference_rewards=[0.0, 2.0]) == pytest.approx([0.5])
    got = scores({"type": "par", "key": "ref"}, [0.3], ref=[0.1, -0.4, 2.0])
    assert got == pytest.approx([(sigmoid(0.2) + sigmoid(0.7) + sigmoid(-1.7)) / 3])


@pytest.mark.parametrize("refs", [None, [], ["a"], [float("nan")], 3])
def test_par_without_reference_rewards_is_invalid_not_a_guess(refs) -> None:
    metadata = {} if refs is None else {"reference_rewards": refs}
    s = spec({"r": {"transform": "par"}})
    (result,) = run(s, [row("g", {"r": ok(1.0)}, **metadata)])
    assert (result.reward, result.status) == (None, "invalid")
    assert "metadata.reference_rewards" in result.components["r"].detail["reason"]


def test_failed_scores_are_not_shaped_and_do_not_enter_group_statistics() -> None:
    s = spec({"r": {"transform": {"type": "mean_std", "epsilon": 0}}})
    items = [
        row("g", {"r": ok(1.0)}),
        row("g", {"r": Score.failed("not_applicable", "none")}),
        row("g", {"r": ok(3.0)}),
    ]
    got = [r.components["r"] for r in run(s, items)]
    assert [c.score for c in got] == [-1.0, None, 1.0]
    assert got[1].status == "not_applicable"


def test_gates_and_vetoes_judge_the_raw_score() -> None:
    """A mean-std shaped `correct` of 1 in a group of 1s and 2s scores -1, yet still passes."""
    s = spec(
        {
            "correct": {"transform": {"type": "mean_std", "epsilon": 0}, "veto": True},
            "fmt": {**UNIT, "only_if": "correct"},
        },
        veto_value=0.0,  # a group z-score has no fixed range, so the veto's total is given
    )
    items = [row("g", {"correct": ok(1), "fmt": ok(1)}), row("g", {"correct": ok(2), "fmt": ok(1)})]
    assert [r.reward for r in run(s, items)] == [0.0, 2.0]


@given(st.floats(-1e6, 1e6), st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=8))
def test_par_and_tanh_are_bounded(value, refs) -> None:
    (par,) = scores("par", [value], reference_rewards=refs)
    assert 0.0 <= par <= 1.0
    (squashed,) = scores("tanh", [value])
    assert -1.0 <= squashed <= 1.0


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=10))
def test_group_min_max_lands_in_unit_interval(values) -> None:
    got = scores("min_max", values)
    assert all(0.0 <= v <= 1.0 for v in got)
