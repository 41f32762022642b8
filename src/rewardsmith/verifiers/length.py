"""Length rewards: overlong / target-length shaping and repetition penalty.

Both look at everything the policy generated, reasoning included: that is what costs tokens.
For a chat completion that is every assistant turn (`turns: all`, the default; `last` for the
last one only): earlier turns are not free to pad.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal

from .._exceptions import ConfigError
from ..models import Sample, Score
from ..registry import RewardFn, bounded, reward
from ._completion_parts import Turns, generated_text
from ._words import length_in_words, visible

__all__ = ["compressed_ratio", "length", "repeated_ratio", "repetition"]


def _measure(sample: Sample, unit: str, turns: Turns) -> tuple[int, str] | Score:
    """The completion's length in `unit` and where it came from, or why it is unknown."""
    if unit == "chars":
        return len(generated_text(sample, turns)), "text"
    if unit == "words":
        return length_in_words(generated_text(sample, turns)), "text"
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
    turns: Turns = "all",
) -> RewardFn:
    """Length shaping in [-1, 0]: DAPO's soft overlong punishment, or distance to a target.

    ``overlong`` (needs `max_length`, `cache_length`) is the soft overlong punishment of
    DAPO (Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement Learning System at Scale",
    eq. 13): 0 up to ``max_length - cache_length``, then falling linearly to -1 at
    `max_length`, and -1 beyond. ``target`` (needs `target`) is
    ``-min(1, |L - target| / target)``: 0 on target, -1 at double the target or beyond.

    `unit` ``tokens`` reads ``metadata.completion_ids`` (as TRL passes them) or
    ``metadata.completion_length``; without either the status is `not_applicable`, never a
    guessed 0. ``words`` counts words as a reader does (`_words`: each CJK character is a word,
    zero-width characters and ``_`` separate words, runs of symbols or emoji count one word
    per 16 characters, and so do blanks between words beyond the first of each run),
    ``chars`` counts characters; both measure the `turns` of the
    completion.
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
        measured = _measure(sample, unit, turns)
        if isinstance(measured, Score):
            return measured
        n, source = measured
        return Score.ok(shape(n), length=n, unit=unit, source=source)

    return bounded(score, -1.0, 0.0)


def repeated_ratio(items: Sequence[object]) -> float:
    """``1 - unique / total`` over `items` (0.0 when there are none)."""
    return 1 - len(set(items)) / len(items) if items else 0.0


def compressed_ratio(text: str) -> float:
    """zlib-compressed size over length, with each distinct character coded on one byte
    (two when there are more than 256), so scripts whose UTF-8 takes several bytes per
    character compress like ASCII does. Low means repetitive: a loop compresses to a few
    bytes however its repeats differ (a counter in each, random tokens between them)."""
    if not text:
        return 1.0
    ranked = Counter(text).most_common()
    coded = text.translate({ord(c): chr(i) for i, (c, _) in enumerate(ranked)})
    if len(ranked) <= 256:
        data = coded.encode("latin-1")
    elif len(ranked) <= 65536:
        data = coded.encode("utf-16-be", "surrogatepass")
    else:
        data = coded.encode("utf-32-be")
    return len(zlib.compress(data, 9)) / len(text)


def _below(ratio: float, floor: float) -> float:
    """0 at or above `floor`, rising linearly to 1 at three quarters of it."""
    return min(1.0, max(0.0, 4 * (floor - ratio) / floor))


@reward("repetition")
def repetition(
    *,
    ngram: int = 3,
    max_penalty: float = 1.0,
    char_ngram: int = 16,
    min_compression: float = 0.2,
    turns: Turns = "all",
) -> RewardFn:
    """Repetition penalty in [-max_penalty, 0]: ``-max_penalty * max(word, char, compression)``.

    - word: ``1 - unique/total`` over word `ngram`-grams of lowercased whitespace words, as
      open-r1's repetition penalty reward (``get_repetition_penalty_reward`` in
      huggingface/open-r1 ``src/open_r1/rewards.py``, after Yeo et al. 2025, "Demystifying
      Long Chain-of-Thought Reasoning in LLMs", appendix C.2), except that `max_penalty` is a
      positive magnitude. It misses loops without spaces (``hmm`` x 2000 is one word) and
      loops with a counter in each repeat (``the answer 0 the answer 1 ...``: every trigram
      differs).
    - char: the same ratio over `char_ngram`-character windows: catches loops without
      spaces. At 16 characters it is below the word measure on real text (IFEval, IFBench
      and Qwen2.5-Math responses: 99th percentile 0.23 to 0.35 against 0.29 to 0.45).
    - compression: ``(min_compression - r) / (min_compression / 4)``, clipped to [0, 1],
      with r the `compressed_ratio`: 0 at or above `min_compression`, 1 at three quarters of
      it. Real responses stay above 0.2 (lowest 0.20 in those 1,500; ~0.23 for 100k
      characters of different solutions joined), while a counter loop is 0.14, random tokens
      between repeats 0.12 and plain loops below 0.02: each pays the full penalty, as a
      plain loop does.

    All three measure the text as a reader sees it (`_words.visible`: zero-width, format and
    private-use characters removed, blanks such as U+2800 made spaces, NFKC), so invisible
    characters sprinkled between the repeats of a loop do not hide it. `char_ngram: 0` or
    `min_compression: 0` turns that measure off. Texts shorter than a window have nothing to
    repeat: 0 for that measure.
    """
    if ngram < 1:
        raise ConfigError(f"ngram: must be at least 1, got {ngram}")
    if char_ngram < 0:
        raise ConfigError(f"char_ngram: must be 0 (off) or a window length, got {char_ngram}")
    if not 0 <= min_compression < 1:
        raise ConfigError(f"min_compression: must be in [0, 1), got {min_compression}")
    if not 0 < max_penalty <= 1:
        raise ConfigError(
            f"max_penalty: must be in (0, 1] (the penalty's magnitude), got {max_penalty}"
        )

    def score(sample: Sample) -> Score:
        text = visible(generated_text(sample, turns))
        words = text.lower().split()
        measures = {
            "word": repeated_ratio(
                [tuple(words[i : i + ngram]) for i in range(len(words) - ngram + 1)]
            ),
            "char": repeated_ratio(
                [text[i : i + char_ngram] for i in range(len(text) - char_ngram + 1)]
                if char_ngram
                else []
            ),
        }
        ratio = compressed_ratio(text) if min_compression else None
        measures["compression"] = 0.0 if ratio is None else _below(ratio, min_compression)
        worst = max(measures, key=measures.__getitem__)
        penalty = measures[worst]
        return Score.ok(
            0.0 - max_penalty * penalty,
            repeated_ratio=penalty,
            measure=worst if penalty else None,
            compressed_ratio=ratio,
            **{f"{k}_repetition": v for k, v in measures.items()},
        )

    return bounded(score, -max_penalty, 0.0)
