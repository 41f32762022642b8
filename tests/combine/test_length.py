"""Length control transforms: cosine, Kimi group reward, GRPO-lambda switch."""

from __future__ import annotations

import math

import pytest

from rewardsmith import Score

from .helpers import UNIT, ok, row, run, spec


def length(n: int) -> Score:
    """A `length` reward's score (the overlong penalty) with the length it measured."""
    return ok(0.0, length=n, unit="tokens", source="completion_length")


def run_length(transform, samples, group="g", **top):
    s = spec({"correct": UNIT, "len": {"transform": transform}}, **top)
    return run(s, [row(group, {"correct": ok(float(c)), "len": length(n)}) for c, n in samples])


COSINE = {"type": "cosine", "correct": "correct", "max_length": 100}


@pytest.mark.parametrize(
    ("correct", "n", "expected"),
    [
        (1, 0, 1.0),
        (1, 50, 0.75),
        (1, 100, 0.5),
        (0, 0, -1.0),
        (0, 50, -0.75),
        (0, 100, -0.5),
        (1, 101, -1.0),
        (1, 25, 0.5 + 0.5 * (1 + math.cos(math.pi / 4)) / 2),
    ],
)
def test_cosine_hand_computed(correct, n, expected) -> None:
    (result,) = run_length(COSINE, [(correct, n)])
    assert result.components["len"].score == pytest.approx(expected)


def test_cosine_with_the_papers_values() -> None:
    transform = {
        **COSINE,
        "correct_at_0": 2.0,
        "correct_at_max": 1.0,
        "wrong_at_0": -10.0,
        "wrong_at_max": 0.0,
        "exceed": -10.0,
    }
    got = [r.components["len"].score for r in run_length(transform, [(1, 50), (0, 50), (0, 200)])]
    assert got == pytest.approx([1.5, -5.0, -10.0])


def test_kimi_group_length_reward_hand_computed() -> None:
    results = run_length(
        {"type": "kimi", "correct": "correct"}, [(1, 10), (0, 20), (1, 30), (0, 10)]
    )
    # min 10, max 30: lambda = 0.5, 0, -0.5, 0.5; wrong answers get min(0, lambda)
    assert [r.components["len"].score for r in results] == [0.5, 0.0, -0.5, 0.0]


def test_kimi_equal_lengths_give_zero() -> None:
    results = run_length({"type": "kimi", "correct": "correct"}, [(1, 7), (0, 7)])
    assert [r.components["len"].score for r in results] == [0.0, 0.0]


def test_kimi_groups_are_separate() -> None:
    s = spec({"correct": UNIT, "len": {"transform": {"type": "kimi", "correct": "correct"}}})
    items = [
        row("a", {"correct": ok(1), "len": length(10)}),
        row("a", {"correct": ok(1), "len": length(20)}),
        row("b", {"correct": ok(1), "len": length(100)}),
    ]
    assert [r.components["len"].score for r in run(s, items)] == [0.5, -0.5, 0.0]


def test_length_transforms_need_the_length_detail() -> None:
    s = spec({"correct": UNIT, "len": {"transform": COSINE}})
    (result,) = run(s, [row("g", {"correct": ok(1), "len": ok(0.0)})])
    assert result.status == "invalid"
    assert "detail.length" in result.components["len"].detail["reason"]


def test_unknown_correctness_makes_the_length_reward_not_applicable() -> None:
    s = spec({"correct": UNIT, "len": {"transform": COSINE}})
    (result,) = run(
        s, [row("g", {"correct": Score.failed("not_applicable", "x"), "len": length(5)})]
    )
    assert result.components["len"].status == "not_applicable"
    assert result.status == "not_applicable"


def test_grpo_lambda_switches_the_length_reward_off_in_mostly_wrong_groups() -> None:
    s = spec(
        {
            "correct": UNIT,
            "len": {
                "weight": 0.5,
                "transform": {"type": "grpo_lambda", "correct": "correct", "threshold": 0.5},
            },
        }
    )
    mostly_wrong = [(1, -1.0), (0, -0.5), (0, 0.0), (0, -0.2)]
    mostly_right = [(1, -1.0), (1, -0.5), (0, 0.0), (1, -0.2)]
    items = [row("a", {"correct": ok(c), "len": ok(p)}) for c, p in mostly_wrong]
    items += [row("b", {"correct": ok(c), "len": ok(p)}) for c, p in mostly_right]
    results = run(s, items)
    assert [r.reward for r in results[:4]] == [1.0, 0.0, 0.0, 0.0]
    assert [r.components["len"].status for r in results[:4]] == ["not_applicable"] * 4
    assert "ratio 0.25 < threshold 0.5" in results[0].components["len"].detail["reason"]
    assert [r.reward for r in results[4:]] == [0.5, 0.75, 0.0, 0.9]


def test_kimi_then_grpo_lambda_compose() -> None:
    transform = [
        {"type": "kimi", "correct": "correct"},
        {"type": "grpo_lambda", "correct": "correct", "threshold": 1.0},
    ]
    results = run_length(transform, [(1, 10), (1, 30)])
    assert [r.reward for r in results] == [1.5, 0.5]
    results = run_length(transform, [(1, 10), (0, 30)])
    assert [r.reward for r in results] == [1.0, 0.0]
