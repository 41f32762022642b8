"""What the IFEval and IFBench checker tests share."""

from __future__ import annotations

from rewardsmith import RewardFn, Sample, Score


def score_one(reward: RewardFn, instruction_id: str, kwargs: dict, text: str) -> Score:
    """`text` scored by `reward` against a single instruction."""
    sample = Sample(
        id="s",
        completion=text,
        reference={"instruction_id_list": [instruction_id], "kwargs": [kwargs]},
    )
    return reward(sample)
