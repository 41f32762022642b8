"""A reward type that scores what the sample's metadata says (imported by worker processes)."""

from __future__ import annotations

from rewardsmith import RewardFn, Sample, Score, reward
from rewardsmith.registry import bounded


@reward("tests.combine.echo")
def echo(*, key: str = "score", low: float | None = None, high: float | None = None) -> RewardFn:
    """``metadata[key]`` as the score, ``metadata[key + "_detail"]`` as the detail.

    A missing key is `not_applicable`; the value ``"error"`` is an `error` (caused by the
    completion), ``"infrastructure"`` an `error` caused by the infrastructure. With `low` and
    `high`, the reward declares that range for its scores.
    """

    def score(sample: Sample) -> Score:
        value = sample.metadata.get(key)
        if value is None:
            return Score.failed("not_applicable", f"no metadata.{key}")
        if value == "error":
            return Score.failed("error", "asked to fail")
        if value == "infrastructure":
            return Score.failed("error", "server down", cause="infrastructure")
        return Score.ok(value, **sample.metadata.get(f"{key}_detail", {}))

    if low is not None and high is not None:
        return bounded(score, low, high)
    return score
