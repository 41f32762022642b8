"""length and repetition: formulas, length sources, config errors, bounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Sample
from rewardsmith.registry import registry
from rewardsmith.verifiers.length import length, repetition

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def sample(completion: Any, **metadata: Any) -> Sample:
    return Sample(id="x", completion=completion, metadata=metadata)


def tokens(n: int) -> Sample:
    return sample("ignored text", completion_ids=list(range(n)))


@pytest.mark.parametrize("name", ["length", "repetition"])
def test_registered_lazily_under_their_names(name: str) -> None:
    import rewardsmith.verifiers.length as module

    assert registry.get(name).factory is getattr(module, name)


# -- length: overlong (DAPO eq. 13) --------------------------------------------------------

OVERLONG = {"max_length": 100, "cache_length": 20}


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, 0.0),
        (50, 0.0),
        (80, 0.0),
        (81, -0.05),
        (90, -0.5),
        (99, -0.95),
        (100, -1.0),
        (101, -1.0),
        (10_000, -1.0),
    ],
    ids=lambda v: str(v),
)
def test_overlong_penalty_follows_dapo(n: int, expected: float) -> None:
    result = length(**OVERLONG)(tokens(n))
    assert result.score == pytest.approx(expected)
    assert result.detail == {"length": n, "unit": "tokens", "source": "completion_ids"}


def test_cache_equal_to_max_length_penalises_from_the_first_token() -> None:
    reward_fn = length(max_length=10, cache_length=10)
    assert [reward_fn(tokens(n)).score for n in (0, 5, 10, 11)] == [0.0, -0.5, -1.0, -1.0]


LENGTH_SOURCES = [
    # (unit, completion, metadata, expected length, source)
    ("tokens", "a b c", {"completion_ids": [1, 2, 3, 4]}, 4, "completion_ids"),
    ("tokens", "a b c", {"completion_length": 7}, 7, "completion_length"),
    ("tokens", "a", {"completion_ids": [1], "completion_length": 9}, 1, "completion_ids"),
    ("words", "one two  three\nfour", {}, 4, "text"),
    ("words", "", {}, 0, "text"),
    ("chars", "héllo 東京", {}, 8, "text"),
    (
        "chars",
        [{"role": "user", "content": "long prompt"}, {"role": "assistant", "content": "ok"}],
        {},
        2,
        "text",
    ),
    ("words", "<think>a b</think>c", {}, 5, "text"),  # think a b think c: tags are text too
    ("chars", "<think>a", {}, 8, "text"),  # reasoning counts: it was generated
]


@pytest.mark.parametrize(
    ("unit", "completion", "metadata", "n", "source"),
    LENGTH_SOURCES,
    ids=[f"{c[0]}-{sorted(c[2])}-{str(c[1])[:20]!r}" for c in LENGTH_SOURCES],
)
def test_length_sources(
    unit: str, completion: Any, metadata: dict[str, Any], n: int, source: str
) -> None:
    result = length(max_length=1000, cache_length=100, unit=unit)(sample(completion, **metadata))
    assert result.score == 0.0
    assert (result.detail["length"], result.detail["source"]) == (n, source)


def test_words_and_chars_measure_the_whole_completion() -> None:
    by_words = length(max_length=4, cache_length=2, unit="words")
    by_chars = length(max_length=4, cache_length=2, unit="chars")
    assert by_words(sample("<think> a b c </think>")).score == -1.0  # 5 words
    assert by_chars(sample("abc")).score == -0.5


@pytest.mark.parametrize(
    ("metadata", "status"),
    [
        ({}, "not_applicable"),
        ({"other": 1}, "not_applicable"),
        ({"completion_ids": "1 2 3"}, "invalid"),
        ({"completion_length": -1}, "invalid"),
        ({"completion_length": 3.5}, "invalid"),
        ({"completion_length": True}, "invalid"),
    ],
    ids=["none", "unrelated", "ids-not-list", "negative", "float", "bool"],
)
def test_tokens_without_token_info_is_never_a_zero(metadata: dict[str, Any], status: str) -> None:
    result = length(**OVERLONG)(sample("a b c", **metadata))
    assert (result.status, result.score) == (status, None)
    assert result.detail["reason"]


# -- length: target ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "expected"),
    [(100, 0.0), (90, -0.1), (110, -0.1), (150, -0.5), (0, -1.0), (200, -1.0), (500, -1.0)],
)
def test_target_length(n: int, expected: float) -> None:
    result = length(mode="target", target=100)(tokens(n))
    assert result.score == pytest.approx(expected)


def test_target_in_words() -> None:
    reward_fn = length(mode="target", target=4, unit="words")
    assert reward_fn(sample("one two three four")).score == 0.0
    assert reward_fn(sample("one two")).score == -0.5


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({}, "max_length"),
        ({"max_length": 100}, "cache_length"),
        ({"max_length": 100, "cache_length": 0}, "cache_length"),
        ({"max_length": 100, "cache_length": 101}, "cache_length"),
        ({"max_length": 100, "cache_length": 10, "target": 50}, "target"),
        ({"mode": "target"}, "target"),
        ({"mode": "target", "target": 0}, "target"),
        ({"mode": "target", "target": 50, "max_length": 100}, "max_length"),
    ],
    ids=[
        "nothing",
        "no-cache",
        "zero-cache",
        "cache-over-max",
        "target-in-overlong",
        "no-target",
        "zero-target",
        "max-in-target",
    ],
)
def test_length_bad_config_names_the_parameter(options: dict[str, Any], names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        length(**options)


@given(
    st.integers(1, 10_000),
    st.integers(1, 10_000),
    st.integers(0, 20_000),
    st.integers(0, 20_000),
)
def test_overlong_penalty_is_monotone_and_bounded(max_len: int, cache: int, a: int, b: int) -> None:
    cache = min(cache, max_len)
    reward_fn = length(max_length=max_len, cache_length=cache)
    short, long = sorted((a, b))
    r_short, r_long = reward_fn(tokens(short)).score, reward_fn(tokens(long)).score
    assert r_short is not None and r_long is not None
    assert -1.0 <= r_long <= r_short <= 0.0


@given(st.integers(1, 5_000), st.integers(0, 20_000))
def test_target_penalty_is_bounded(target: int, n: int) -> None:
    score = length(mode="target", target=target)(tokens(n)).score
    assert score is not None
    assert -1.0 <= score <= 0.0
    assert (score == 0.0) == (n == target)


@pytest.mark.skipif(not (DATA / "gsm8k").exists(), reason=f"no real data at {DATA}")
def test_overlong_on_gsm8k_solutions_in_words() -> None:
    """Real solutions: most are short; the longest ones are pushed into the buffer."""
    rows = [
        json.loads(line)
        for line in (DATA / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    reward_fn = length(max_length=150, cache_length=50, unit="words")
    scores = [reward_fn(sample(row["answer"])) for row in rows]
    values = [s.score for s in scores if s.score is not None]
    assert len(values) == len(rows)
    assert all(-1.0 <= v <= 0.0 for v in values)
    for s in scores:
        assert (s.score == 0.0) == (s.detail["length"] <= 100)
    # 150 of 1,319 are past 100 words (128 without their symbols: the calculator
    # annotations `<<5*3=15>>` count one word per 16 symbols)
    assert 0 < sum(v < 0 for v in values) < len(values) // 8


# -- repetition ----------------------------------------------------------------------------

REPETITION_CASES = [
    # (options, completion, expected)
    ({}, "the cat sat on the mat", 0.0),
    ({}, "a b c a b c", -0.25),  # 4 trigrams, 3 unique
    ({}, "A b C a B c", -0.25),  # case-insensitive
    ({}, "x x x x x x", -0.75),  # 4 trigrams, 1 unique
    ({"max_penalty": 0.5}, "x x x x x x", -0.375),
    ({"ngram": 1}, "a a b", -1 / 3),
    ({"ngram": 2}, "a b a b", -1 / 3),
    ({}, "", 0.0),
    ({}, "two words", 0.0),  # fewer words than n: nothing to repeat
    ({}, "東京 東京 東京 東京", -0.5),
    ({}, [{"role": "user", "content": "a a a a"}, {"role": "assistant", "content": "a b c"}], 0.0),
]


@pytest.mark.parametrize(
    ("options", "completion", "expected"),
    REPETITION_CASES,
    ids=[f"{c[0] or 'default'}-{str(c[1])[:20]!r}" for c in REPETITION_CASES],
)
def test_repetition(options: dict[str, Any], completion: Any, expected: float) -> None:
    result = repetition(**options)(sample(completion))
    assert result.status == "ok"
    assert result.score == pytest.approx(expected)


def test_repetition_counts_reasoning_too() -> None:
    looped = "<think>" + "I will check again. " * 50 + "</think>42"
    result = repetition()(sample(looped))
    assert result.score is not None and result.score < -0.9
    # 199 word trigrams over "<think>I will check again. I will ... again.</think>42": 6 distinct
    assert result.detail["word_repetition"] == pytest.approx(1 - 6 / 199)


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"ngram": 0}, "ngram"),
        ({"max_penalty": -1.0}, "max_penalty"),
        ({"max_penalty": 0.0}, "max_penalty"),
        ({"max_penalty": 1.5}, "max_penalty"),
    ],
    ids=["ngram-0", "negative-penalty", "zero-penalty", "penalty-over-1"],
)
def test_repetition_bad_config_names_the_parameter(options: dict[str, Any], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        repetition(**options)


@given(
    st.lists(st.sampled_from(["a", "b", "c", "東", "A"]), max_size=60).map(" ".join),
    st.integers(1, 5),
    st.floats(0.01, 1.0),
)
def test_repetition_penalty_is_bounded(text: str, n: int, max_penalty: float) -> None:
    score = repetition(ngram=n, max_penalty=max_penalty)(sample(text)).score
    assert score is not None
    assert -max_penalty <= score <= 0.0
    if len(text.split()) < n:
        assert score == 0.0


def test_turns_all_measures_every_assistant_turn_and_last_only_the_last() -> None:
    conversation = [
        {"role": "assistant", "content": "one two three"},
        {"role": "user", "content": "not counted at all"},
        {"role": "assistant", "content": "four"},
    ]
    every = length(max_length=10, cache_length=5, unit="words")(sample(conversation))
    last = length(max_length=10, cache_length=5, unit="words", turns="last")(sample(conversation))
    assert (every.detail["length"], last.detail["length"]) == (4, 1)


def test_each_repetition_measure_can_be_turned_off() -> None:
    loop = "hmm" * 2000
    assert repetition()(sample(loop)).score == -1.0
    only_words = repetition(char_ngram=0, min_compression=0)(sample(loop))
    assert only_words.score == 0.0 and only_words.detail["compressed_ratio"] is None
    with pytest.raises(ConfigError, match="min_compression"):
        repetition(min_compression=1.5)


def _real_responses() -> list[str]:
    found = [
        json.loads(line)["response"]
        for path in (
            DATA / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl",
            DATA / "ifbench" / "sample_output.jsonl",
        )
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    for line in (DATA / "qwen25math" / "math_cot_100.jsonl").read_text().splitlines():
        found += json.loads(line)["code"]
    return [text for text in found if len(text) >= 200]


@pytest.mark.skipif(not (DATA / "qwen25math").exists(), reason=f"no real data at {DATA}")
def test_the_new_measures_leave_real_responses_as_the_word_measure_does() -> None:
    """The character and compression measures catch loops, not prose: on 1,500 real IFEval,
    IFBench and Qwen2.5-Math responses, compression never adds a penalty and the character
    measure stays below the word measure's 99th percentile."""
    texts = _real_responses()
    assert len(texts) > 1400
    results = [repetition()(sample(text)).detail for text in texts]
    assert max(r["compression_repetition"] for r in results) == 0.0
    word = sorted(r["word_repetition"] for r in results)
    char = sorted(r["char_repetition"] for r in results)
    p99 = int(0.99 * (len(results) - 1))
    assert char[p99] <= word[p99]
