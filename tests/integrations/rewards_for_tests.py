"""Reward types for the adapter tests (imported by worker processes)."""

from __future__ import annotations

from rewardsmith import RewardFn, Sample, Score, reward


@reward("tests.integrations.scripted")
def scripted() -> RewardFn:
    """Acts out the completion: `raise`, `invalid`, `n/a`, or scores its number of words."""

    def score(sample: Sample) -> Score:
        text = sample.text
        if text == "raise":
            raise ValueError("raised on purpose")
        if text == "invalid":
            return Score.failed("invalid", "bad reference")
        if text == "n/a":
            return Score.failed("not_applicable", "nothing to check")
        return Score.ok(len(text.split()))

    return score
