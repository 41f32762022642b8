"""Length rewards: overlong / target-length shaping and n-gram repetition penalty.

Both look at the whole completion, reasoning included: that is what the policy generated and
what costs tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal

from .._exceptions import ConfigError
from ..models import Sample, Score
from ..registry import RewardFn, reward

__all__ = ["length", "repetition"]


def _measure(sample: Sample, unit: str) -> tuple[int, str] | Score:
    """The completion's length in `unit` and where it came from, or why it is unknown."""
    if unit == "chars":
        return len(sample.text), "text"
    if unit == "words":
        return len(sample.text.split()), "text"
    ids = sample.metadata.get("completion_ids")
    if ids is not None:
        if not isinstance(ids, list):
            return Score.failed("invalid", "metadata.completion_ids must be a list of token ids")
        return len(ids), "completion_ids"
    count = sample.metadata.get("completion_length")
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            return Score.failed(
                "invalid", f"metadata.completion_length must be a count, got {count!r}"
            )
        return count, "completion_length"
    return Score.failed(
        "not_applicable",
        "unit 'tokens' needs metadata.completion_ids or metadata.completion_length; "
        "set unit to 'words' or 'chars' to measure the text",
    )


def _overlong(n: int, *, max_length: int, cache_length: int) -> float:
    """DAPO eq. 13."""
    free = max_length - cache_length
    if n <= free:
        return 0.0
    if n <= max_length:
        return (free - n) / cache_length
    return -1.0


def _to_target(n: int, *, target: int) -> float:
    return -min(1.0, abs(n - target) / target)


@reward("length")
def length(
    *,
    mode: Literal["overlong", "target"] = "overlong",
    max_length: int | None = None,
    cache_length: int | None = None,
    target: int | None = None,
    unit: Literal["tokens", "words", "chars"] = "tokens",
) -> RewardFn:
    """Length shaping in [-1, 0]: DAPO's soft overlong punishment, or distance to a target.

    ``overlong`` (needs `max_length`, `cache_length`) is the soft overlong punishment of
    DAPO (Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement Learning System at Scale",
    eq. 13): 0 up to ``max_length - cache_length``, then falling linearly to -1 at
    `max_length`, and -1 beyond. ``target`` (needs `target`) is
    ``-min(1, |L - target| / target)``: 0 on target, -1 at double the target or beyond.

    `unit` ``tokens`` reads ``metadata.completion_ids`` (as TRL passes them) or
    ``metadata.completion_length``; without either the status is `not_applicable`, never a
    guessed 0. ``words`` and ``chars`` measure the completion text.
    """
    shape: Callable[[int], float]
    if mode == "overlong":
        if max_length is None or cache_length is None or target is not None:
            raise ConfigError("max_length, cache_length: mode 'overlong' needs both, and no target")
        if not 0 < cache_length <= max_length:
            raise ConfigError(
                f"cache_length: must be in (0, max_length={max_length}], got {cache_length}"
            )
        shape = partial(_overlong, max_length=max_length, cache_length=cache_length)
    else:
        if target is None or max_length is not None or cache_length is not None:
            raise ConfigError("target: mode 'target' needs target, and no max_length/cache_length")
        if target <= 0:
            raise ConfigError(f"target: must be positive, got {target}")
        shape = partial(_to_target, target=target)

    def score(sample: Sample) -> Score:
        measured = _measure(sample, unit)
        if isinstance(measured, Score):
            return measured
        n, source = measured
        return Score.ok(shape(n), length=n, unit=unit, source=source)

    return score


@reward("repetition")
def repetition(*, ngram: int = 3, max_penalty: float = 1.0) -> RewardFn:
    """N-gram repetition penalty in [-max_penalty, 0]: ``-max_penalty * (1 - unique/total)``.

    Over lowercased whitespace words, as open-r1's repetition penalty reward
    (``get_repetition_penalty_reward`` in huggingface/open-r1 ``src/open_r1/rewards.py``,
    after Yeo et al. 2025, "Demystifying Long Chain-of-Thought Reasoning in LLMs", appendix
    C.2), except that `max_penalty` is given as a positive magnitude. Texts with fewer than
    `ngram` words have no n-gram to repeat: penalty 0.
    """
    if ngram < 1:
        raise ConfigError(f"ngram: must be at least 1, got {ngram}")
    if not 0 < max_penalty <= 1:
        raise ConfigError(
            f"max_penalty: must be in (0, 1] (the penalty's magnitude), got {max_penalty}"
        )

    def score(sample: Sample) -> Score:
        words = sample.text.lower().split()
        grams = [tuple(words[i : i + ngram]) for i in range(len(words) - ngram + 1)]
        if not grams:
            return Score.ok(0.0, ngrams=0)
        ratio = 1 - len(set(grams)) / len(grams)
        return Score.ok(-max_penalty * ratio, ngrams=len(grams), repeated_ratio=ratio)

    return score
