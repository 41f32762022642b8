"""Combiners beyond the foundation's: ensembles, lexicographic, veto, ReNorm."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith import ConfigError, Score
from rewardsmith.combine import combine, combine_scores
from rewardsmith.combine._stats import exact_sum

from .helpers import ok, row, run, spec

NA = Score.failed("not_applicable", "nothing to check")
UNIT = {"low": 0.0, "high": 1.0}


def two(combine_mode, **weights):
    return spec(
        {
            "a": {"weight": weights.get("a", 1.0), **UNIT},
            "b": {"weight": weights.get("b", 1.0), **UNIT},
        },
        combine=combine_mode,
    )


@pytest.mark.parametrize(
    ("mode", "a", "b", "expected"),
    [
        ("average", 1.0, 0.0, 0.5),
        ("min", 1.0, 0.25, 0.25),
        ({"type": "uncertainty", "lambda": 0.5}, 1.0, 0.0, 0.5 - 0.5 * 0.25),
        ({"type": "uncertainty", "lambda": 1}, 0.8, 0.4, 0.6 - 0.04),
        ("uncertainty", 0.35, 0.35, 0.35),
        ({"type": "lexicographic", "tie_scale": 0.01}, 1.0, 0.5, 1.005),
        ("lexicographic", 0.0, 1.0, 0.001),  # in range: [0, 1] (a -1 would be `error`)
    ],
)
def test_hand_computed(mode, a, b, expected) -> None:
    total, status = combine(two(mode), {"a": ok(a), "b": ok(b)})
    assert status == "ok"
    assert total == pytest.approx(expected, abs=1e-15)


BIG = 1e308  # finite, but two of them overflow a sum


@pytest.mark.parametrize(
    ("mode", "a", "b", "expected"),
    [
        ("weighted_sum", BIG, BIG, (None, "error")),  # fsum's intermediate overflow
        ("weighted_sum", BIG, -BIG, (0.0, "ok")),
        ("average", BIG, BIG, (BIG, "ok")),  # the mean of finite scores is finite
        ("average", BIG, 0.5 * BIG, (0.75 * BIG, "ok")),
        ("lexicographic", BIG, BIG, (BIG + 1e-3 * BIG, "ok")),
        ("lexicographic", -BIG, -BIG * 1e3, (None, "error")),
        ({"type": "uncertainty", "lambda": 0}, BIG, BIG, (BIG, "ok")),
        ({"type": "uncertainty", "lambda": 0, "members": ["a"]}, BIG, BIG, (None, "error")),
    ],
)
def test_a_combination_that_overflows_is_error_never_an_exception(mode, a, b, expected) -> None:
    # lexicographic needs the range of the components after the first
    known = {"transform": {"type": "clip", "min": -BIG, "max": BIG}}
    s = spec({"a": {}, "b": known if mode == "lexicographic" else {}}, combine=mode)
    assert combine(s, {"a": ok(a), "b": ok(b)}) == expected


def test_ensembles_use_weighted_members() -> None:
    total, _ = combine(two("average", a=2.0), {"a": ok(1.0), "b": ok(1.0)})
    assert total == 1.5


def test_lexicographic_rank_is_the_spec_position_not_the_counted_position() -> None:
    s = two({"type": "lexicographic", "tie_scale": 0.01})
    assert combine(s, {"a": NA, "b": ok(1.0)}) == (pytest.approx(0.01), "ok")


def test_veto_gives_the_lowest_total_only_when_the_rule_fails() -> None:
    s = spec({"correct": UNIT, "safe": {"veto": True, "weight": 0.0, "low": -1.0, "high": 1.0}})
    assert combine(s, {"correct": ok(1.0), "safe": ok(0.0)}) == (0.0, "ok")
    assert combine(s, {"correct": ok(1.0), "safe": ok(-1.0)}) == (0.0, "ok")
    assert combine(s, {"correct": ok(1.0), "safe": ok(1.0)}) == (1.0, "ok")
    assert combine(s, {"correct": ok(1.0), "safe": NA}) == (1.0, "ok")
    failed = Score.failed("timeout", "slow")
    assert combine(s, {"correct": ok(1.0), "safe": failed}) == (None, "timeout")


def test_veto_counts_every_component_as_a_charged_failure_for_gdpo() -> None:
    """Each at the lower of the group's lowest and its range's low end (`charged_counted`)."""
    s = spec(
        {"correct": UNIT, "safe": {"veto": True, **UNIT}, "len": {"low": -1.0, "high": 0.0}},
        group_transform={"type": "gdpo", "batch_whiten": False},
    )
    vetoed = {"correct": ok(1.0), "safe": ok(0.0), "len": ok(-0.5)}
    combined = combine_scores(s, vetoed)
    assert combined.vetoed and combined.reward == -1.0
    honest = {"correct": ok(0.0), "safe": ok(1.0), "len": ok(-0.2)}
    # vetoed: correct 0 (tied), safe 0 and len -1 (below the honest 1 and -0.2): z -1, -1
    advantages = [r.advantage for r in run(s, [row("g", honest), row("g", vetoed)])]
    assert advantages == pytest.approx([2.0, -2.0], rel=1e-5)


RENORM = {"type": "renorm", "process": "prm", "outcome": "correct"}


def renorm(steps, outcome, **options):
    s = spec({"prm": {}, "correct": {}}, combine={**RENORM, **options})
    (result,) = run(s, [row("g", {"prm": ok(0.5, steps=steps), "correct": ok(outcome)})])
    return result


@pytest.mark.parametrize(
    ("steps", "outcome", "expected", "reward"),
    [
        ([0.8, 0.6, 0.9], 1.0, [0.8, 0.6, 1.0], (0.6 + 1) / 2),  # the worst process term
        ([0.8, 0.6, 0.9], 0.0, [-0.2, -0.4, 0.0], -0.4 / 2),
        ([0.3], 1.0, [0.3], (0.3 + 1) / 2),  # a lone step keeps its process term (rt15, 3)
        ([0.3], 0.0, [-0.7], -0.7 / 2),
        ([1.0, 0.0], 0.0, [0.0, 0.0], 0.0),
    ],
)
def test_renorm_hand_computed(steps, outcome, expected, reward) -> None:
    result = renorm(steps, outcome)
    assert result.steps == pytest.approx(expected)
    assert result.reward == pytest.approx(reward)
    assert result.model_dump(exclude_unset=True)["steps"] == result.steps


@given(st.floats(0, 1), st.floats(0, 1), st.sampled_from([0.0, 1.0]), st.integers(2, 12))
def test_renorm_reward_does_not_depend_on_the_number_of_steps(
    process, last, outcome, steps
) -> None:
    """The outcome weighs one half however many steps come before it: with the mean of all
    steps, a wrong answer's penalty shrank with fewer steps (rtsel: -0.05 vs -0.09)."""
    one = renorm([process, last], outcome).reward
    assert renorm([process] * (steps - 1) + [last], outcome).reward == pytest.approx(one)


def test_renorm_beta() -> None:
    assert renorm([0.5, 0.5], 1.0, beta=0.5).steps == [1.0, 1.0]


@pytest.mark.parametrize(
    ("steps", "outcome", "reason"),
    [(None, 1.0, "detail.steps"), ([1.5], 1.0, "in [0, 1]"), ([0.5], 2.0, "outcome")],
)
def test_renorm_rejects_what_it_cannot_normalise(steps, outcome, reason) -> None:
    detail = {} if steps is None else {"steps": steps}
    s = spec({"prm": {}, "correct": {}}, combine=RENORM)
    (result,) = run(s, [row("g", {"prm": ok(0.5, **detail), "correct": ok(outcome)})])
    assert (result.reward, result.status, result.steps) == (None, "error", None)
    assert reason in result.components["prm"].detail["reason"]
    assert result.cause == "completion"  # the rewards' output for this completion: charged


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12), st.sampled_from([0.0, 1.0]))
def test_renorm_wrong_answers_land_in_minus_one_zero_right_ones_in_zero_one(steps, outcome) -> None:
    result = renorm(steps, outcome)
    low, high = (0.0, 1.0) if outcome else (-1.0, 0.0)
    assert all(low <= r <= high for r in result.steps)
    assert low <= result.reward <= high


members = st.lists(st.floats(-10, 10), min_size=1, max_size=6)
WIDE = {"low": -10.0, "high": 10.0}


def uwo_limit(k: int, width: float) -> float:
    """The largest lambda for which UWO over k members in a range of `width` is monotone."""
    return math.inf if k < 2 else k / (2 * (k - 1) * width)


@settings(deadline=None)  # a spec per example (lambda varies)
@given(members, st.floats(0, 1))
def test_ensemble_bounds(values, share) -> None:
    names = {f"c{i}": WIDE for i in range(len(values))}
    scores = {f"c{i}": ok(v) for i, v in enumerate(values)}
    lam = share * min(5.0, uwo_limit(len(values), 20.0))
    mean, _ = combine(spec(names, combine="average"), scores)
    worst, _ = combine(spec(names, combine="min"), scores)
    cautious, _ = combine(spec(names, combine={"type": "uncertainty", "lambda": lam}), scores)
    assert min(values) - 1e-9 <= mean <= max(values) + 1e-9
    assert worst <= mean + 1e-9
    assert cautious <= mean + 1e-9


def test_lexicographic_refuses_a_tie_scale_a_later_component_could_outweigh() -> None:
    """rm in [-1, 1] at 0.5 moves the total by 1, a right answer's lead over a wrong one."""
    with pytest.raises(ConfigError, match=r"could outweigh it\. Lower tie_scale"):
        spec(
            {"correct": UNIT, "rm": {"low": -1.0, "high": 1.0}},
            combine={"type": "lexicographic", "tie_scale": 0.5},
        )
    spec({"correct": UNIT, "rm": {"low": -1.0, "high": 1.0}}, combine="lexicographic")


@given(st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 1.0]), st.floats(-1, 1), st.floats(-1, 1))
def test_lexicographic_order_holds_for_binary_primary(p1, p2, s1, s2) -> None:
    s = spec({"p": {}, "s": {"low": -1.0, "high": 1.0}}, combine="lexicographic")
    t1, _ = combine(s, {"p": ok(p1), "s": ok(s1)})
    t2, _ = combine(s, {"p": ok(p2), "s": ok(s2)})
    if p1 > p2:
        assert t1 > t2
    elif p1 == p2 and s1 > s2:
        assert t1 >= t2  # strictly, down to the float resolution of the primary's scale:
        if s1 - s2 > 1e-9:
            assert t1 > t2


@given(st.floats() | st.integers(-(2**60), 2**60))
def test_the_sum_of_one_value_is_fsums(value: float) -> None:
    """One counted component (the usual spec) takes a shortcut; it must give `fsum`'s value
    to the bit: -0.0 becomes 0.0, infinities stay, nan stays nan."""
    got, want = exact_sum([value]), math.fsum([value])
    assert type(got) is float
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert (got, math.copysign(1.0, got)) == (want, math.copysign(1.0, want))


@pytest.mark.parametrize("value", [np.float32(0.5), np.float64(-0.0), np.int64(3), Decimal("0.1")])
def test_the_sum_of_one_number_of_another_type_is_fsums_float(value: object) -> None:
    got, want = exact_sum([value]), math.fsum([value])
    assert type(got) is float and (got, math.copysign(1.0, got)) == (want, math.copysign(1.0, want))


def test_one_component_scoring_minus_zero_totals_plus_zero() -> None:
    total = combine_scores(spec({"a": {"weight": 1.0, **UNIT}}), {"a": ok(-0.0)}).reward
    assert total == 0.0 and math.copysign(1.0, total) == 1.0
