"""`majority_vote` on groups checked by hand: ties, one answer, all different, hedges."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from rewardsmith import ConfigError, Sample, Score, load_spec
from rewardsmith.selection import MajorityVote, Vote, cluster_votes, majority_vote
from tests.selection.test_redteam_selection import built_to_share_a_bucket


def run_group(completions: list[str], **options: Any) -> list[Score]:
    """The reward's two steps, as the engine runs them: each sample, then the whole group."""
    reward = majority_vote(**options)
    samples = [Sample(id=str(i), completion=c, group="g") for i, c in enumerate(completions)]
    return reward.group(samples, [reward(s) for s in samples])


def entropy(*sizes: int) -> float:
    total = sum(sizes)
    return -sum(n / total * math.log(n / total) for n in sizes)


FOUR, FIVE, THREE = r"\boxed{4}", r"\boxed{5}", r"\boxed{3}"

# (case, completions, options, rewards, majority, share, entropy)
GROUPS = [
    (
        "one answer, four forms",
        [FOUR, "The final answer is $4$.", r"\boxed{4.0}", "#### 4"],
        {},
        [1, 1, 1, 1],
        "4",
        1.0,
        0.0,
    ),
    ("three against one", [FOUR, FOUR, FOUR, FIVE], {}, [1, 1, 1, 0], "4", 0.75, entropy(3, 1)),
    (
        "tie: nobody wins (default)",
        [FOUR, FOUR, FIVE, FIVE],
        {},
        [0, 0, 0, 0],
        None,
        0.5,
        entropy(2, 2),
    ),
    (
        "tie: the first wins",
        [FIVE, FOUR, FOUR, FIVE],
        {"ties": "first"},
        [1, 0, 0, 1],
        "5",
        0.5,
        entropy(2, 2),
    ),
    (
        "tie: all win",
        [FOUR, FOUR, FIVE, FIVE],
        {"ties": "all"},
        [1, 1, 1, 1],
        None,
        0.5,
        entropy(2, 2),
    ),
    ("all different", [THREE, FOUR, FIVE, r"\boxed{6}"], {}, [0, 0, 0, 0], None, 0.25, math.log(4)),
    (
        "all different, the first wins",
        [THREE, FOUR, FIVE, r"\boxed{6}"],
        {"ties": "first"},
        [1, 0, 0, 0],
        "3",
        0.25,
        math.log(4),
    ),
    (
        "hedges vote for nothing",
        [THREE, THREE, r"\boxed{3} \boxed{5}", r"\boxed{5}. The answer is 3."],
        {},
        [1, 1, 0, 0],
        "3",
        0.5,
        0.0,
    ),
    (
        "'3 or 5' is its own answer, not a vote for both",
        [THREE, FIVE, r"\boxed{3 \text{ or } 5}"],
        {},
        [0, 0, 0],
        None,
        1 / 3,
        math.log(3),
    ),
    ("no answers at all", ["I do not know", "", "I am not sure."], {}, [0, 0, 0], None, 0.0, 0.0),
    (
        "equivalent forms are one answer",
        [
            r"\boxed{\frac{\sqrt{2}}{2}}",
            r"\boxed{\frac{1}{2}\sqrt{2}}",
            r"\boxed{0.7071}",
            r"\boxed{1}",
        ],
        {},
        [1, 1, 0, 0],
        r"\frac{\sqrt{2}}{2}",
        0.5,
        entropy(2, 1, 1),
    ),
    (
        "... but not with cluster: exact",
        [
            r"\boxed{\frac{\sqrt{2}}{2}}",
            r"\boxed{\frac{1}{2}\sqrt{2}}",
            r"\boxed{0.7071}",
            r"\boxed{1}",
        ],
        {"cluster": "exact"},
        [0, 0, 0, 0],
        None,
        0.25,
        math.log(4),
    ),
    (
        "units: converted, or ignored when one side has none",
        [r"\boxed{5 \text{ cm}}", r"\boxed{0.05 \text{ m}}", r"\boxed{5}", r"\boxed{6}"],
        {},
        [1, 1, 1, 0],
        r"5 \text{ cm}",
        0.75,
        entropy(3, 1),
    ),
    # a bare number is the same answer as that number in any unit; it must not make one
    # cluster of units that differ (golds from MATH-500: `5.4 \text{ cents}`,
    # `\frac{270}7\text{ degrees}`)
    (
        "a bare number joins one unit, not two that differ",
        [
            r"\boxed{5.4}",
            r"\boxed{5.4 \text{ cents}}",
            r"\boxed{5.4 \text{ dollars}}",
            r"\boxed{5.4 \text{ dollars}}",
            r"\boxed{\$0.054}",
        ],
        {},
        [1, 1, 0, 0, 1],
        "5.4",
        0.6,
        entropy(3, 2),
    ),
    (
        "degrees and radians stay apart beside a bare value",
        [
            r"\boxed{\frac{270}{7}}",
            r"\boxed{\frac{270}7\text{ degrees}}",
            r"\boxed{\frac{270}{7} \text{ radians}}",
            r"\boxed{\frac{270}{7} \text{ radians}}",
            r"\boxed{\frac{270}{7}^\circ}",
        ],
        {},
        [1, 1, 0, 0, 1],
        r"\frac{270}{7}",
        0.6,
        entropy(3, 2),
    ),
    (
        "a bare number first cannot gather two units into a majority",
        [
            r"\boxed{5}",
            *[r"\boxed{5 \text{ cm}}"] * 2,
            *[r"\boxed{5 \text{ m}}"] * 2,
            *[r"\boxed{6 \text{ cm}}"] * 3,
        ],
        {},
        [0, 0, 0, 0, 0, 0, 0, 0],  # 5 with 5 cm (3), 5 m (2), 6 cm (3): a tie
        None,
        3 / 8,
        entropy(3, 2, 3),
    ),
    (
        "an unfinished answer is no answer",
        [r"\boxed{\binom{5}{2}}", r"\boxed{10}", r"\boxed{\frac{20}{2}}", r"\boxed{9}"],
        {},
        [0, 0, 0, 0],
        None,
        0.25,
        math.log(2),
    ),
]


@pytest.mark.parametrize(
    ("completions", "options", "rewards", "majority", "share", "entropy_"),
    [case[1:] for case in GROUPS],
    ids=[case[0] for case in GROUPS],
)
def test_group_rewards_by_hand(
    completions: list[str],
    options: dict[str, Any],
    rewards: list[int],
    majority: str | None,
    share: float,
    entropy_: float,
) -> None:
    scores = run_group(completions, **options)
    assert [s.status for s in scores] == ["ok"] * len(completions)
    assert [s.score for s in scores] == rewards
    for score in scores:
        assert score.detail["majority"] == majority
        assert score.detail["share"] == pytest.approx(share)
        assert score.detail["entropy"] == pytest.approx(entropy_)


def test_detail_names_each_sample_cluster_and_why() -> None:
    scores = run_group([FOUR, FIVE, FOUR, r"\boxed{3} \boxed{5}"])
    assert [s.detail["answer"] for s in scores] == ["4", "5", "4", None]
    assert [s.detail.get("cluster") for s in scores] == [0, 1, 0, None]
    assert scores[0].detail["votes"] == 2 and scores[0].detail["clusters"] == [2, 1]
    assert scores[0].detail["reason"] == "the majority answer (2 of 4 votes)"
    assert (
        scores[1].detail["reason"] == "not the majority answer (1 of 4 votes; the majority has 2)"
    )
    assert scores[3].detail["reason"] == "no answer: several different final answers"


def test_tied_answers_are_named() -> None:
    scores = run_group([FOUR, FIVE])
    assert scores[0].detail["tied"] == ["4", "5"]
    assert scores[0].detail["reason"].startswith("no majority: 2 answers tied with 1 of 2 votes")


def test_answers_given_in_metadata_normalized() -> None:
    reward = majority_vote(cluster="normalized", answer_key="metadata.answer")
    given = ["Paris", "paris.", "  PARIS ", "Lyon", None]
    samples = [
        Sample(id=str(i), completion="", group="g", metadata={} if a is None else {"answer": a})
        for i, a in enumerate(given)
    ]
    scores = reward.group(samples, [reward(s) for s in samples])
    assert [s.score for s in scores] == [1, 1, 1, 0, 0]
    assert scores[0].detail["majority"] == "Paris"
    assert scores[4].detail["reason"] == "no answer: metadata.answer is missing"


@pytest.mark.parametrize(
    ("same", "apart"),
    [(["3", "3."], "-3"), (["1.2", "1.2,"], "1/2"), (["3.5", "(3.5)"], "3,5"), (["1,000"], "1000")],
)
def test_normalized_keeps_the_punctuation_of_numbers(same: list[str], apart: str) -> None:
    """A sign, decimal point, fraction bar or separator is part of the number; a sentence's
    final `.` or `,` is not."""
    reward = majority_vote(cluster="normalized", answer_key="metadata.answer")
    samples = [
        Sample(id=str(i), completion="", group="g", metadata={"answer": a})
        for i, a in enumerate([*same, apart])
    ]
    scores = reward.group(samples, [reward(s) for s in samples])
    assert scores[0].detail["clusters"] == [len(same), 1]


def test_a_group_of_one_is_not_applicable() -> None:
    (score,) = run_group([FOUR])
    assert score.status == "not_applicable" and score.score is None
    assert score.detail["answer"] == "4"


def test_failed_samples_pass_through_and_do_not_vote() -> None:
    reward = majority_vote()
    samples = [Sample(id=str(i), completion=c, group="g") for i, c in enumerate([FOUR, FIVE, FIVE])]
    scores = [reward(samples[0]), Score.failed("timeout", "exceeded 5s"), reward(samples[2])]
    out = reward.group(samples, scores)
    assert out[1].status == "timeout"
    assert [out[0].score, out[2].score] == [0.0, 0.0]  # one vote each: a tie, nobody wins
    assert out[0].detail["share"] == 0.5


def test_parameters_are_checked_when_the_spec_loads() -> None:
    with pytest.raises(ConfigError, match=r"metadata\.KEY"):
        load_spec({"rewards": {"v": {"type": "majority_vote", "answer_key": "pred"}}})
    with pytest.raises(ConfigError, match="ties"):
        load_spec({"rewards": {"v": {"type": "majority_vote", "ties": "random"}}})
    with pytest.raises(ConfigError, match="scope: turns"):
        load_spec({"rewards": {"v": {"type": "majority_vote", "scope": "turns"}}})
    spec = load_spec({"rewards": {"v": {"type": "majority_vote"}}})
    assert spec.needs_groups and spec.rewards["v"].group_scoped
    assert spec.rewards["v"].bounds == (0.0, 1.0)
    assert isinstance(spec.rewards["v"].build_group(), MajorityVote)


def test_comparisons_stop_at_the_group_time_limit() -> None:
    """Each comparison takes at least 50 ms: in 0.2 s at most 5 start (whatever the load);
    the keys left are their own clusters (none is compared) and the clustering says it was
    capped."""

    def slow(a: str, b: str) -> bool:
        time.sleep(0.05)
        return False

    votes = [Vote(str(k), f"k{k}", ("one bucket",)) for k in range(20)]
    clustering = cluster_votes(votes, "math", same=slow, time_limit_s=0.2)
    assert 1 <= clustering.comparisons <= 5 and clustering.capped
    assert len(clustering.clusters) == 20


def test_answers_built_to_stall_the_group_step_stay_alone_and_earn_nothing() -> None:
    """Four answers whose comparisons are slow come first and may use up the group's time:
    each stays alone (1 vote, 0), as low as the honest wrong `5`; the honest majority `4`
    shares one key and needs no comparison."""
    built = built_to_share_a_bucket(4)
    scores = run_group([*built, FOUR, FOUR, FOUR, FIVE, FIVE])
    assert [s.score for s in scores] == [0, 0, 0, 0, 1, 1, 1, 0, 0]
    assert [s.detail["votes"] for s in scores[:4]] == [1, 1, 1, 1]
    assert scores[0].detail["majority"] == "4"  # whether the budget ran out depends on speed
