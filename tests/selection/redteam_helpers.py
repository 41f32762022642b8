"""What the selection red-team tables (`test_redteam_selection*.py`) share: boxed answers,
`majority_vote` run on one group as the engine runs it, and a selection method's pick."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rewardsmith import Sample, Score
from rewardsmith.selection import METHODS, Candidate, majority_vote

BOX = r"\boxed{{{}}}".format
EQUAL: Callable[[float, float], bool] = lambda attack, honest: attack == pytest.approx(honest)  # noqa: E731


def vote_group(completions: list[str], **options: Any) -> list[Score]:
    """`majority_vote` on one group, as the engine runs it (read each, then the group step)."""
    reward = majority_vote(**options)
    samples = [Sample(id=str(i), completion=c, group="g") for i, c in enumerate(completions)]
    return reward.group(samples, [reward(s) for s in samples])


def score_at(scores: list[Score], index: int) -> float:
    """The score of `scores[index]`, which must not be missing."""
    value = scores[index].score
    assert value is not None
    return value


def choose(method: str, candidates: list[Candidate], weights: str = "sigmoid") -> Any:
    """What selection `method` picks among `candidates` (temperature 1)."""
    return METHODS[method].choose(candidates, weights, 1.0)  # type: ignore[arg-type]
