"""Seeded single-elimination tournament: N - 1 comparisons, reproducible, any comparator."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardsmith import ConfigError
from rewardsmith.combine import Contestant
from rewardsmith.combine._tournament import run_bracket

from .helpers import advantages, rewards_in_group, spec

CALLS: list[tuple[str, str]] = []


def by_length(a: Contestant, b: Contestant) -> float:
    """A pairwise judge: the longer completion wins (records each call)."""
    CALLS.append((a.sample.id, b.sample.id))
    return len(a.sample.completion) - len(b.sample.completion)


def contestants(n: int) -> list[Contestant]:
    from rewardsmith import Result, Sample

    return [
        Contestant(
            Sample(id=str(i), completion="x" * (i + 1)),
            Result(id=str(i), reward=float(i), status="ok", components={}),
        )
        for i in range(n)
    ]


@given(st.integers(1, 64), st.integers(0, 2**32))
def test_exactly_n_minus_1_comparisons_and_reproducible(n, seed) -> None:
    calls = []

    def compare(a: Contestant, b: Contestant) -> float:
        calls.append(1)
        return 0.0  # all ties: every match is settled by the seeded coin

    first = run_bracket(contestants(n), compare, random.Random(seed))
    again = run_bracket(contestants(n), compare, random.Random(seed))
    assert first[1] == n - 1
    assert len(calls) == 2 * (n - 1)
    assert first == again


@given(st.lists(st.floats(-5, 5), min_size=2, max_size=20, unique=True), st.integers(0, 99))
def test_the_best_reward_wins_every_match_it_plays(values, seed) -> None:
    pool = [
        Contestant(c.sample, c.result.model_copy(update={"reward": v}))
        for c, v in zip(contestants(len(values)), values, strict=True)
    ]
    from rewardsmith.combine._tournament import by_reward

    survived, _ = run_bracket(pool, by_reward, random.Random(seed))
    best = max(range(len(values)), key=values.__getitem__)
    assert survived[best] == max(survived)
    assert survived.count(max(survived)) == 1


def test_hand_computed_bracket_of_four() -> None:
    """Four distinct rewards: champion 2 rounds, finalist 1, two first-round losers 0."""
    got = advantages(
        spec({"r": {}}, group_transform={"type": "tournament", "epsilon": 0}),
        rewards_in_group([0.1, 0.9, 0.5, 0.3]),
    )
    # the finalist is whichever first-round winner met the champion; rounds are {2, 1, 0, 0}
    rounds = sorted(got)
    mean, std = 0.75, (0.5625 * 2 + 0.0625 + 1.5625) ** 0.5 / 2
    assert rounds == pytest.approx(sorted((r - mean) / std for r in (2, 1, 0, 0)))
    assert got[1] == max(got)  # the best reward is the champion


def test_seed_and_group_fix_the_bracket() -> None:
    CALLS.clear()
    s = spec(
        {"r": {}},
        group_transform={"type": "tournament", "compare": f"{__name__}:by_length", "seed": 7},
    )
    items = rewards_in_group([0.0] * 6)
    first = advantages(s, items)
    first_calls = list(CALLS)
    CALLS.clear()
    assert advantages(s, items) == first
    assert first_calls == CALLS
    assert len(first_calls) == 5


def test_a_comparator_that_cannot_be_imported_is_a_spec_error() -> None:
    with pytest.raises(ConfigError, match=r"group_transform \(type tournament\).*cannot import"):
        spec({"r": {}}, group_transform={"type": "tournament", "compare": "no.such:thing"})
