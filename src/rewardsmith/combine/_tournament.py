"""A seeded single-elimination tournament inside each group, over any pairwise comparator."""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

from pydantic import Field, field_validator

from ..models import Result, Sample
from ._advantages import Entry, GroupTransform
from ._base import Finite
from ._stats import standardised

__all__ = ["Comparator", "Contestant", "Tournament", "by_reward", "run_bracket"]


class Contestant(NamedTuple):
    """What a comparator sees of one sample."""

    sample: Sample
    result: Result


Comparator = Callable[[Contestant, Contestant], float]
"""> 0 when the first wins, < 0 when the second does, 0 for a tie (tied players end level)."""


def by_reward(a: Contestant, b: Contestant) -> float:
    """The higher combined reward wins."""
    assert a.result.reward is not None and b.result.reward is not None
    return a.result.reward - b.result.reward


def _load(path: str) -> Comparator:
    if path == "reward":
        return by_reward
    module, _, attr = path.partition(":")
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"cannot import comparator {path!r}: {exc}") from None
    if not callable(found):
        raise ValueError(f"comparator {path!r} is not callable")
    return found  # type: ignore[no-any-return]


def run_bracket(
    contestants: Sequence[Contestant], compare: Comparator, rng: random.Random
) -> tuple[list[int], int]:
    """Rounds survived by each contestant, and the number of comparisons made.

    The bracket is a seeded shuffle; in a round with an odd number of players the last one
    has a bye (advances without playing). Every match eliminates one player, so N players
    take exactly N - 1 comparisons. A tie is not settled by chance: a seeded coin picks which
    of the two goes on (someone must), and the other is credited with whatever the one that
    went on goes on to survive, so tied players end level (an all-tied group exactly so).
    """
    survived = [0] * len(contestants)
    tied_with: dict[int, int] = {}
    alive = list(range(len(contestants)))
    rng.shuffle(alive)
    matches = 0
    while len(alive) > 1:
        advancing = []
        for a, b in zip(alive[0::2], alive[1::2], strict=False):
            verdict = compare(contestants[a], contestants[b])
            matches += 1
            first_wins = verdict > 0 or (verdict == 0 and rng.random() < 0.5)
            winner, loser = (a, b) if first_wins else (b, a)
            if verdict == 0:
                tied_with[loser] = winner
            advancing.append(winner)
        if len(alive) % 2:
            advancing.append(alive[-1])
        for player in advancing:
            survived[player] += 1
        alive = advancing
    return [survived[_last_tied(i, tied_with)] for i in range(len(contestants))], matches


def _last_tied(player: int, tied_with: dict[int, int]) -> int:
    """The player at the end of `player`'s chain of ties (itself when it lost no tie)."""
    while player in tied_with:
        player = tied_with[player]
    return player


def _charged_lose(compare: Comparator, charged: set[int]) -> Comparator:
    """`compare`, except that a charged failure loses to any scored sample (without a call)
    and ties another charged failure."""

    def play(a: Contestant, b: Contestant) -> float:
        a_charged, b_charged = id(a) in charged, id(b) in charged
        if a_charged or b_charged:
            return float(b_charged) - float(a_charged)
        return compare(a, b)

    return play


class Tournament(GroupTransform):
    """Tournament advantages: a seeded single-elimination bracket, then GRPO normalisation.

    Zhang et al. 2026, "ArenaRL: Scaling RL for Open-Ended Agents via Tournament-based
    Relative Ranking": pairwise comparison inside the group separates trajectories that a
    pointwise judge scores alike, and a single-elimination bracket ranks N of them with N - 1
    comparisons (O(N)) instead of a round robin's N(N-1)/2. The rounds each sample survived
    are its tournament score, normalised within the group as GRPO does (population std).

    ArenaRL seeds its bracket from comparisons with an anchor trajectory; here the bracket is
    a shuffle seeded by `seed` and the group id, so a run is reproducible and independent of
    the order groups are processed in. `compare` is ``reward`` (higher combined reward wins)
    or an importable ``"module:function"`` taking two `Contestant`s (sample and result), e.g.
    an LLM judge; it runs in the engine's process, once per match.

    A tie is not settled by chance: tied players end level (`run_bracket`), so a group whose
    comparisons all tie gets exactly 0. A sample charged for a failure its completion caused
    loses to every scored sample without a comparison, and ties another charged one.
    """

    type: Literal["tournament"] = "tournament"
    compare: str = "reward"
    seed: int = 0
    epsilon: Finite = Field(default=1e-6, ge=0)

    @field_validator("compare")
    @classmethod
    def _importable(cls, value: str) -> str:
        _load(value)
        return value

    def advantages(self, group: Sequence[Entry]) -> list[float]:
        """One advantage per entry."""
        if not group:
            return []
        rng = random.Random(f"{self.seed}:{group[0].sample.group}")
        contestants = [Contestant(e.sample, e.result) for e in group]
        charged = {id(c) for c, e in zip(contestants, group, strict=True) if e.charged}
        survived, _ = run_bracket(contestants, _charged_lose(_load(self.compare), charged), rng)
        return standardised(survived, std="population", epsilon=self.epsilon)
