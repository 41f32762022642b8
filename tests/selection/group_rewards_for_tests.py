"""Group-scoped reward types for the tests (imported by worker processes by path)."""

from __future__ import annotations

from collections.abc import Sequence

from rewardsmith import Sample, Score, reward


class _Spread:
    """`metadata.value` minus the group's smallest value."""

    def __call__(self, sample: Sample) -> Score:
        return Score.ok(float(sample.metadata["value"]))

    def group(self, samples: Sequence[Sample], scores: Sequence[Score]) -> list[Score]:
        low = min(s.score for s in scores if s.score is not None)
        return [Score.ok(s.score - low) if s.score is not None else s for s in scores]


class _Broken(_Spread):
    def __call__(self, sample: Sample) -> Score:
        return Score.ok(0.0)

    def group(self, samples: Sequence[Sample], scores: Sequence[Score]) -> list[Score]:
        raise RuntimeError("group step bug")


@reward("test_spread", group_scoped=True)
def spread() -> _Spread:
    """The value above the group's minimum."""
    return _Spread()


@reward("test_broken_group", group_scoped=True)
def broken() -> _Broken:
    """A group step that raises."""
    return _Broken()


@reward("test_not_group_scoped")
def not_a_group_reward() -> _Spread:
    """Not registered as group-scoped: an ordinary reward type."""
    return _Spread()
