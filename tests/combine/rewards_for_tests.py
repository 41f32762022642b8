"""A reward type that scores what the sample's metadata says (imported by worker processes)."""

from __future__ import annotations

from rewardsmith import RewardFn, Sample, Score, reward


@reward("tests.combine.echo")
def echo(*, key: str = "score") -> RewardFn:
    """``metadata[key]`` as the score, ``metadata[key + "_detail"]`` as the detail.

    A missing key is `not_applicable`; the value ``"error"`` is an `error`.
    """

    def score(sample: Sample) -> Score:
        value = sample.metadata.get(key)
        if value is None:
            return Score.failed("not_applicable", f"no metadata.{key}")
        if value == "error":
            return Score.failed("error", "asked to fail")
        return Score.ok(value, **sample.metadata.get(f"{key}_detail", {}))

    return score
