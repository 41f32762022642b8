"""Issue 17 items 1-6 and issue 11 item 23: the combination hack table, and the specs that
must be refused. Every test here fails on the code before those items were fixed."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith import ConfigError, RewardSpec, Score
from rewardsmith.combine import combine, lowest_total

from .hack_table import COMBINATION_HACKS, CombinationHack
from .helpers import UNIT, advantages, ok, row, run, spec


def scores(values: dict[str, object]) -> dict[str, Score]:
    out = {}
    for name, value in values.items():
        if isinstance(value, str):
            out[name] = Score.failed(value, f"{value} on purpose")  # type: ignore[arg-type]
        elif isinstance(value, dict):
            out[name] = ok(value["score"], **value["detail"])
        else:
            out[name] = ok(value)
    return out


@pytest.mark.parametrize(
    "hack", COMBINATION_HACKS, ids=[f"{h.item} {h.name}" for h in COMBINATION_HACKS]
)
def test_the_gaming_sample_never_beats_the_honest_one(hack: CombinationHack) -> None:
    s = spec(hack.components, **hack.top)
    roles = list(hack.group)
    got = run(s, [row("g", scores(v)) for v in hack.group.values()])
    results = dict(zip(roles, got, strict=True))
    gaming, honest = results["gaming"], results["honest"]
    if gaming.status == "ok":  # a failure's `reward` is the spec's on_error, as documented
        assert gaming.reward <= honest.reward + 1e-12, (gaming.reward, honest.reward)
    if s.group_transform is not None:
        assert gaming.advantage is not None  # never a null to escape to
        assert gaming.advantage <= honest.advantage + 1e-12, (gaming.advantage, honest.advantage)


# -- 17.1: who is charged --------------------------------------------------------------------


def test_failures_the_dataset_or_infrastructure_caused_stay_out() -> None:
    s = spec({"r": UNIT}, group_transform={"type": "grpo", "epsilon": 0})
    items = [
        row("g", {"r": ok(1.0)}),
        row("g", {"r": ok(0.0)}),
        row("g", {"r": Score.failed("invalid", "bad reference")}),
        row("g", {"r": Score.failed("error", "judge down", cause="infrastructure")}),
        row("g", {"r": Score.failed("timeout", "judge slow", cause="infrastructure")}),
    ]
    got = run(s, items)
    assert [r.advantage for r in got] == [1.0, -1.0, None, None, None]
    assert [r.cause for r in got] == [None, None, "dataset", "infrastructure", "infrastructure"]


def test_an_all_failed_group_is_exactly_zero() -> None:
    s = spec({"r": UNIT}, group_transform="grpo")
    got = advantages(s, [row("g", {"r": Score.failed("timeout", "slow")})] * 3)
    assert got == [0.0, 0.0, 0.0]


def test_whiten_charges_a_failing_group_at_the_spec_lowest_total() -> None:
    """Without a baseline, REINFORCE++ compares across the batch: a group whose only sample
    failed is charged the lowest total the spec can produce, never a neutral value."""
    s = spec({"r": {"low": -5.0, "high": 5.0}}, group_transform={"type": "whiten", "epsilon": 0})
    items = [row("a", {"r": ok(1.0)}), row("a", {"r": ok(-1.0)})]
    items += [row("b", {"r": Score.failed("error", "crash")})]
    values = [1.0, -1.0, -5.0]  # b charged at -5
    mean = sum(values) / 3
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert advantages(s, items) == pytest.approx([(v - mean) / std for v in values])


def test_whiten_gives_a_failing_group_of_unknown_range_the_lowest_of_its_batch() -> None:
    s = spec({"r": {}}, group_transform={"type": "whiten", "epsilon": 0})
    items = [row("a", {"r": ok(1.0)}), row("a", {"r": ok(-1.0)})]
    items += [row("b", {"r": Score.failed("error", "crash")})]
    got = advantages(s, items)
    assert got == [1.0, -1.0, -1.0]  # whitened over the scored [1, -1]; b takes the lowest


# -- 17.2: veto --------------------------------------------------------------------------------


def test_a_fired_veto_gives_the_lowest_total_the_spec_can_produce() -> None:
    s = spec(
        {
            "correct": UNIT,
            "format": {"veto": True, "weight": 0.2, **UNIT},
            "overlong": {"low": -1.0, "high": 0.0},
        }
    )
    assert lowest_total(s) == -1.0
    vetoed = {"correct": ok(1.0), "format": ok(0.0), "overlong": ok(0.0)}
    assert combine(s, vetoed) == (-1.0, "ok")  # was 0.0: above a wrong overlong answer


def test_veto_value_never_raises_a_total() -> None:
    """A `veto_value` is trusted when the lowest total is unknown, and never raises a total."""
    s = spec({"free": {}, "rule": {"veto": True, **UNIT}}, veto_value=0.0)
    assert combine(s, {"free": ok(-0.8), "rule": ok(0.0)}) == (-0.8, "ok")
    assert combine(s, {"free": ok(1.0), "rule": ok(0.0)}) == (0.0, "ok")


def test_a_veto_value_above_the_lowest_total_is_refused() -> None:
    """Breaking a hard rule must not pay more than keeping it with the worst answer."""
    rule = {"veto": True, **UNIT}
    with pytest.raises(ConfigError, match=r"veto_value 0 is above -1, the lowest total"):
        spec({"correct": UNIT, "rule": rule, "pen": {"low": -1.0, "high": 0.0}}, veto_value=0.0)
    assert spec({"correct": UNIT, "rule": rule}, veto_value=0.0).veto_value == 0.0


def test_a_veto_over_a_component_of_unknown_range_needs_veto_value() -> None:
    with pytest.raises(ConfigError, match=r"rewards.rule: .*rewards.free declares no range"):
        spec({"free": {}, "rule": {"veto": True, **UNIT}})
    assert spec({"free": {}, "rule": {"veto": True, **UNIT}}, veto_value=-3.0).veto_value == -3.0


@pytest.mark.parametrize("shaping", ["cosine", "kimi", "grpo_lambda"])
def test_a_veto_a_transform_can_make_not_applicable_is_refused(shaping: str) -> None:
    """A transform reading `correct:` withdraws the component when `correct` has no score."""
    transform = {"type": shaping, "correct": "correct"}
    if shaping == "cosine":
        transform["max_length"] = 9
    with pytest.raises(ConfigError, match=rf"rewards.rule: .*transform {shaping} can make"):
        spec({"correct": UNIT, "rule": {"veto": True, **UNIT, "transform": transform}})


def test_a_veto_behind_a_gate_is_refused() -> None:
    """A closed gate does not count, so a gated veto never fires on a sample that breaks the
    gate's component: breaking both would pay (unsafe, correct, unformatted: 1.0)."""
    gated = {"veto": True, "weight": 0.0, "only_if": "format", **UNIT}
    with pytest.raises(ConfigError, match=r"rewards.safe: veto and only_if .*failing 'format'"):
        spec({"correct": UNIT, "format": UNIT, "safe": gated})
    # a veto may still gate others: the gated component counts only when the rule passes
    s = spec({"safe": {"veto": True, **UNIT}, "correct": {"only_if": "safe", **UNIT}})
    assert combine(s, {"safe": ok(0.0), "correct": ok(1.0)}) == (0.0, "ok")


def test_first_pass_refuses_a_gate_or_a_transform_naming_why() -> None:
    """The cascade pays its decider's score (rt22 round 3): a closed gate's "never passes"
    lets a later member pay more than the gated one at its worst, and a shaped score could pay
    passing a rule less than failing it."""
    gated = {"b": {**UNIT, "only_if": "g"}, "c": UNIT, "g": UNIT}
    with pytest.raises(ConfigError, match=r"rewards.b.only_if: under combine: first_pass"):
        spec(gated, combine="first_pass")
    shaped = {"q": {**UNIT, "transform": {"type": "min_max", "min": 0.5, "max": 1}}, "c": UNIT}
    with pytest.raises(ConfigError, match=r"rewards.q.transform: .*passing less than failing"):
        spec(shaped, combine="first_pass")


# -- 17.3: product -----------------------------------------------------------------------------


def test_product_of_penalties_is_refused_naming_the_component() -> None:
    """Two penalties multiplied: (-0.99) * (-1.0) = +0.99 for a correct, overlong, looping
    answer, above the correct concise answer's 0.0."""
    components = {"correct": UNIT, "overlong": {"low": -1.0, "high": 0.0}, "loop": UNIT}
    with pytest.raises(ConfigError, match=r"product needs non-negative members.*rewards.overlong"):
        spec(components, combine="product")
    with pytest.raises(ConfigError, match=r"rewards.correct .*negative weight"):
        spec({"correct": {"weight": -1.0, **UNIT}}, combine="product")
    mapped = {
        "correct": UNIT,
        "brevity": {
            "low": -1.0,
            "high": 0.0,
            "transform": {"type": "min_max", "min": -1, "max": 0},
        },
    }
    s = spec(mapped, combine="product")  # a penalty mapped into [0, 1] is a factor
    concise, overlong = run(
        s,
        [
            row(None, {"correct": ok(1.0), "brevity": ok(0.0)}),
            row(None, {"correct": ok(1.0), "brevity": ok(-0.9)}),
        ],
    )
    assert (concise.reward, overlong.reward) == (1.0, pytest.approx(0.1))


# -- 17.4: uncertainty -------------------------------------------------------------------------


def test_uncertainty_refuses_a_lambda_that_lets_a_wrong_answer_win() -> None:
    components = {"correct": UNIT, "overlong": {"low": -1.0, "high": 0.0}}
    with pytest.raises(ConfigError, match=r"lambda 1 is above 0.5"):
        spec(components, combine={"type": "uncertainty", "lambda": 1.0})
    s = spec(components, combine={"type": "uncertainty", "lambda": 0.5})
    right, _ = combine(s, {"correct": ok(1.0), "overlong": ok(-1.0)})
    wrong, _ = combine(s, {"correct": ok(0.0), "overlong": ok(-1.0)})
    assert right > wrong  # was -1.0 < -0.75 with lambda 1


def test_uncertainty_members_keep_other_components_out_of_the_variance() -> None:
    components = {"rm1": UNIT, "rm2": UNIT, "overlong": {"low": -1.0, "high": 0.0}}
    s = spec(components, combine={"type": "uncertainty", "lambda": 1.0, "members": ["rm1", "rm2"]})
    total, _ = combine(s, {"rm1": ok(0.8), "rm2": ok(0.4), "overlong": ok(-1.0)})
    assert total == pytest.approx(0.6 - 0.04 - 1.0)
    with pytest.raises(ConfigError, match="'rm3' is not a component"):
        spec(components, combine={"type": "uncertainty", "members": ["rm1", "rm3"]})


@settings(deadline=None)  # a spec per example (lambda varies)
@given(
    st.lists(st.floats(0, 1), min_size=2, max_size=6),
    st.integers(0, 5),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_uncertainty_never_falls_when_a_member_rises(values, which, share, bump) -> None:
    k = len(values)
    lam = share * k / (2 * (k - 1))  # the largest lambda the spec accepts for [0, 1] members
    s = spec({f"c{i}": UNIT for i in range(k)}, combine={"type": "uncertainty", "lambda": lam})
    i = which % k
    before, _ = combine(s, {f"c{j}": ok(v) for j, v in enumerate(values)})
    raised = [*values[:i], min(1.0, values[i] + bump), *values[i + 1 :]]
    after, _ = combine(s, {f"c{j}": ok(v) for j, v in enumerate(raised)})
    assert after >= before - 1e-12


# -- 17.6: correct_threshold -------------------------------------------------------------------


def test_grpo_lambda_does_not_count_hedges_as_correct() -> None:
    s = spec({"correct": UNIT, "len": {"transform": {"type": "grpo_lambda", "correct": "correct"}}})
    results = run(s, [row("g", {"correct": ok(0.67), "len": ok(-0.5)})] * 3)
    assert {r.components["len"].status for r in results} == {"not_applicable"}
    assert "ratio 0 <" in results[0].components["len"].detail["reason"]


def test_correct_threshold_is_configurable_and_required_when_the_range_is_unknown() -> None:
    cosine = {"type": "cosine", "correct": "correct", "max_length": 100}
    s = spec({"correct": UNIT, "len": {"transform": {**cosine, "correct_threshold": 0.5}}})
    (result,) = run(s, [row("g", {"correct": ok(0.67), "len": ok(0.0, length=0)})])
    assert result.components["len"].score == 1.0  # 0.67 >= 0.5: the correct branch
    with pytest.raises(ConfigError, match=r"rewards.correct declares no range.*correct_threshold"):
        spec({"correct": {}, "len": {"transform": cosine}})


# -- 11.23: tournaments ------------------------------------------------------------------------


@given(st.integers(2, 32), st.integers(0, 1000), st.sampled_from([0.0, 1.0, 0.35, -2.0]))
def test_an_all_equal_group_gets_exactly_zero_in_a_tournament(n, seed, value) -> None:
    s = spec({"r": {}}, group_transform={"type": "tournament", "seed": seed})
    got = advantages(s, [row("g", {"r": ok(value)}) for _ in range(n)])
    assert got == [0.0] * n  # was 2.02 ... -0.83 from coin-flipped ties


@given(st.integers(1, 40), st.integers(0, 10**6))
def test_players_that_tie_end_level(n, seed) -> None:
    """Every match a tie: whoever the coin sends on, the other is credited with the same."""
    from rewardsmith import Result, Sample
    from rewardsmith.combine import Contestant
    from rewardsmith.combine._tournament import run_bracket

    players = [
        Contestant(Sample(id=str(i), completion="x"), Result(id=str(i), reward=0.0,
                                                             status="ok", components={}))
        for i in range(n)
    ]  # fmt: skip
    survived, matches = run_bracket(players, lambda a, b: 0.0, random.Random(seed))
    assert len(set(survived)) == 1 and matches == n - 1


@pytest.mark.parametrize("seed", range(20))
def test_equal_rewards_that_meet_share_their_result(seed) -> None:
    """Rewards [1, 1, 0, 0]: equal players meet in the first round or in the final, and a
    tie leaves them level either way (a coin used to decide)."""
    s = spec({"r": {}}, group_transform={"type": "tournament", "seed": seed, "epsilon": 0})
    got = advantages(s, [row("g", {"r": ok(v)}) for v in (1.0, 1.0, 0.0, 0.0)])
    assert got[0] == got[1] > got[2] == got[3]


def test_uncertainty_spec_with_every_key_validates() -> None:
    data = {
        "rewards": {"a": {"type": "tests.combine.rewards_for_tests:echo", **UNIT}},
        "combine": {"type": "uncertainty", "lambda": 0.5, "members": ["a"]},
    }
    assert RewardSpec.from_dict(data).combiner.members == ("a",)
