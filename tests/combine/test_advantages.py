"""Group transforms: hand-computed advantages, exactness and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardsmith import Score

from .helpers import advantages, ok, rewards_in_group, row, run, spec

R = {"r": {}}


def grpo(**options):
    return spec(R, group_transform={"type": "grpo", **options})


@pytest.mark.parametrize(
    ("transform", "rewards", "expected"),
    [
        ({"type": "grpo", "epsilon": 0}, [1, 0, 0, 1], [1, -1, -1, 1]),
        (
            {"type": "grpo", "epsilon": 0, "std": "unbiased"},
            [1, 0, 1, 0],
            [0.5 / math.sqrt(1 / 3), -0.5 / math.sqrt(1 / 3)] * 2,
        ),
        ({"type": "grpo"}, [1, 0, 1, 0], [0.5 / (0.5 + 1e-6), -0.5 / (0.5 + 1e-6)] * 2),
        ({"type": "dr_grpo"}, [1, 0, 0, 1], [0.5, -0.5, -0.5, 0.5]),
        ({"type": "rloo"}, [1, 0, 0, 1], [2 / 3, -2 / 3, -2 / 3, 2 / 3]),
        ({"type": "rloo"}, [3, 1, 2], [3 - 1.5, 1 - 2.5, 2 - 2]),
        ({"type": "rank"}, [0.2, 0.9, 0.2, 0.5], [-1 / 3, 0.5, -1 / 3, 1 / 6]),
    ],
)
def test_hand_computed(transform, rewards, expected) -> None:
    got = advantages(spec(R, group_transform=transform), rewards_in_group(rewards))
    assert got == pytest.approx(expected, abs=1e-12)


def test_groups_are_normalised_separately_and_a_lone_sample_is_its_own_group() -> None:
    items = [
        *rewards_in_group([1, 0], "a"),
        row(None, {"r": ok(5.0)}),
        *rewards_in_group([2, 2], "b"),
    ]
    assert advantages(grpo(epsilon=0), items) == [1.0, -1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("value", [0.35, 0.1, 1 / 3, -7.3, 1e-300])
@pytest.mark.parametrize("n", [1, 3, 7, 8])
@pytest.mark.parametrize(
    "transform",
    [
        {"type": "grpo"},
        {"type": "grpo", "std": "unbiased", "epsilon": 0},
        {"type": "dr_grpo"},
        {"type": "rloo"},
        {"type": "rank"},
        {"type": "gdpo", "epsilon": 0},
        {"type": "whiten", "baseline": "group_mean", "epsilon": 0},
    ],
)
def test_all_equal_group_gets_exactly_zero(value, n, transform) -> None:
    got = advantages(spec(R, group_transform=transform), rewards_in_group([value] * n))
    assert got == [0.0] * n
    assert all(math.copysign(1, a) == 1 for a in got)  # not even -0.0


@pytest.mark.parametrize(
    "transform",
    [
        {"type": "grpo"},
        {"type": "grpo", "std": "unbiased"},
        {"type": "dr_grpo"},
        {"type": "rloo"},
        {"type": "rank"},
        {"type": "gdpo"},
        {"type": "whiten"},
        {"type": "whiten", "baseline": "group_mean"},
    ],
)
@pytest.mark.parametrize("values", [[1e308, 1e308, 0.0], [1.7e308, -1.7e308, 1.7e308, 0.0]])
def test_group_statistics_of_huge_finite_rewards_do_not_raise(transform, values) -> None:
    """`math.fsum` raises on an intermediate overflow; the statistics scale instead (and a
    difference of rewards beyond the float range saturates), so the advantages are finite and
    keep the order of the rewards."""
    got = advantages(spec(R, group_transform=transform), rewards_in_group(values))
    assert all(a is not None and math.isfinite(a) for a in got)
    order = sorted(range(len(values)), key=lambda i: values[i])
    assert [got[i] for i in order] == sorted(got)


@pytest.mark.parametrize("values", [[1.7, -1.7], [1.7e308, -1.7e308]])
@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_gdpo_charges_a_component_of_unknown_range_below_the_group(values, weight) -> None:
    """The charge of a component without a declared range is finite (its range's low end,
    -inf, made every z-score of the group nan)."""
    s = spec({"r": {"weight": weight}}, group_transform={"type": "gdpo"})
    timeout = row("g", {"r": Score.failed("timeout", "ran past timeout_s")})
    got = advantages(s, [*rewards_in_group(values), timeout])
    assert all(a is not None and math.isfinite(a) for a in got)
    assert got[0] > got[1] > got[2]


def test_dataset_failures_are_left_out_and_completion_failures_charged() -> None:
    items = [
        row("g", {"r": ok(1.0)}),
        row("g", {"r": Score.failed("timeout", "slow")}),
        row("g", {"r": ok(0.0)}),
        row("g", {"r": Score.failed("not_applicable", "nothing")}),
        row("g", {"r": Score.failed("invalid", "bad reference")}),
    ]
    results = run(grpo(epsilon=0), items)
    # `r` declares no range, so the timeout enters strictly below the group's lowest reward
    # (by the group's spread, at least 1): values [1, -1, 0]
    unit = math.sqrt(1.5)
    assert [r.advantage for r in results] == pytest.approx([unit, -unit, 0.0, None, None])
    assert results[4].advantage is None
    assert all("advantage" in r.model_dump(exclude_unset=True) for r in results)


def test_on_error_enters_statistics_no_better_than_the_worst() -> None:
    s = spec(R, group_transform="dr_grpo", on_error=2.0)
    items = [row("g", {"r": ok(1.0)}), row("g", {"r": Score.failed("error", "x")})]
    # charged at min(2.0, 1.0) = the worst, so (the range being unknown) strictly below it:
    # a group whose scored answers are all correct must not tie a failure
    assert advantages(s, items) == [0.5, -0.5]
    s = spec(R, group_transform="dr_grpo", on_error=-1.0)
    assert advantages(s, items) == [1.0, -1.0]


def test_whiten_is_batch_level_reinforce_pp() -> None:
    s = spec(R, group_transform={"type": "whiten", "epsilon": 0})
    got = advantages(s, [*rewards_in_group([1, 0], "a"), *rewards_in_group([1, 1], "b")])
    std = math.sqrt(0.1875)
    assert got == pytest.approx([0.25 / std, -0.75 / std, 0.25 / std, 0.25 / std])


def test_whiten_with_group_baseline_keeps_all_equal_groups_at_zero() -> None:
    s = spec(R, group_transform={"type": "whiten", "baseline": "group_mean", "epsilon": 0})
    got = advantages(s, [*rewards_in_group([1, 0], "a"), *rewards_in_group([0.35, 0.35], "b")])
    assert got == pytest.approx([math.sqrt(2), -math.sqrt(2), 0.0, 0.0])
    assert got[2:] == [0.0, 0.0]


def test_whiten_batches_close_at_group_boundaries() -> None:
    s = spec(R, group_transform={"type": "whiten", "epsilon": 0, "batch_size": 3})
    items = [
        *rewards_in_group([1, 0], "a"),
        *rewards_in_group([5, 3], "b"),
        *rewards_in_group([2, 0], "c"),
    ]
    got = advantages(s, items)
    first = [1, 0, 5, 3]  # batch 1: groups a and b (closed once it holds >= 3 samples)
    mean = sum(first) / 4
    std = math.sqrt(sum((x - mean) ** 2 for x in first) / 4)
    assert got[:4] == pytest.approx([(x - mean) / std for x in first])
    assert got[4:] == [1.0, -1.0]


def test_gdpo_normalises_each_component_then_sums_weighted() -> None:
    s = spec(
        {"a": {}, "b": {"weight": 2.0}},
        group_transform={"type": "gdpo", "epsilon": 0, "batch_whiten": False},
    )
    items = [
        row("g", {"a": ok(1), "b": ok(1)}),
        row("g", {"a": ok(0), "b": ok(1)}),
        row("g", {"a": ok(0), "b": ok(0)}),
    ]
    r2 = math.sqrt(2)
    assert advantages(s, items) == pytest.approx([2 * r2, r2 / 2, -5 * r2 / 2])


def test_gdpo_batch_whitening_rescales_by_the_batch_rms() -> None:
    s = spec({"a": {}, "b": {}}, group_transform={"type": "gdpo", "epsilon": 0})
    items = [row("g", {"a": ok(1), "b": ok(0)}), row("g", {"a": ok(0), "b": ok(0)})]
    # a: z = [1, -1]; b: all equal -> [0, 0]; sums [1, -1]; batch rms 1
    assert advantages(s, items) == [1.0, -1.0]


def test_gdpo_separates_what_grpo_collapses() -> None:
    """(1, 0) and (0, 1) have the same sum: GRPO gives them one advantage, GDPO does not."""
    components = {"a": {}, "b": {"weight": 2.0}}
    items = [
        row("g", {"a": ok(1), "b": ok(0)}),
        row("g", {"a": ok(0), "b": ok(1)}),
        row("g", {"a": ok(0), "b": ok(0)}),
        row("g", {"a": ok(1), "b": ok(1)}),
    ]
    gdpo = advantages(
        spec(components, group_transform={"type": "gdpo", "batch_whiten": False}), items
    )
    assert gdpo[0] != pytest.approx(gdpo[1])


# ---- properties ------------------------------------------------------------------------

rewards = st.lists(st.floats(min_value=-10, max_value=10, allow_nan=False), min_size=1, max_size=16)


@given(rewards)
def test_grpo_advantages_sum_to_zero(values) -> None:
    for options in ({}, {"std": "unbiased"}):
        got = advantages(grpo(**options), rewards_in_group(values))
        assert math.fsum(got) == pytest.approx(0.0, abs=1e-9)


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.integers(1, 32))
def test_all_equal_is_exactly_zero_for_any_value(value, n) -> None:
    for transform in ("grpo", "dr_grpo", "rloo", "rank"):
        got = advantages(spec(R, group_transform=transform), rewards_in_group([value] * n))
        assert got == [0.0] * n


@given(rewards)
def test_rloo_is_the_reward_minus_the_mean_of_the_others(values) -> None:
    got = advantages(spec(R, group_transform="rloo"), rewards_in_group(values))
    n = len(values)
    for i, advantage in enumerate(got):
        others = values[:i] + values[i + 1 :]
        baseline = math.fsum(others) / (n - 1) if others else values[i]
        assert advantage == pytest.approx(values[i] - baseline, abs=1e-9)
        if n > 1:
            mean = math.fsum(values) / n
            assert advantage == pytest.approx(n / (n - 1) * (values[i] - mean), abs=1e-9)


@given(st.lists(st.integers(-100, 100), min_size=1, max_size=16))
def test_rank_is_invariant_to_increasing_maps(values) -> None:
    s = spec(R, group_transform="rank")
    base = advantages(s, rewards_in_group([float(v) for v in values]))
    mapped = advantages(s, rewards_in_group([float(v**3 + 7) for v in values]))
    assert base == mapped
    assert math.fsum(base) == pytest.approx(0.0, abs=1e-12)
    assert all(-0.5 <= a <= 0.5 for a in base)
