"""Words as a reader sees them (`verifiers._words`): a table of real cases and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardsmith.verifiers._words import count_words, has_words, words

CASES = [
    ("hello world", ["hello", "world"]),
    ("a\u200bb\u200bc", ["a", "b", "c"]),  # zero-width spaces separate words
    ("x\u2060y\ufeffz", ["x", "y", "z"]),  # word joiner, BOM
    ("x\u034fy", ["x", "y"]),  # combining grapheme joiner
    ("snake_case_word", ["snake", "case", "word"]),
    ("well-known", ["well", "known"]),
    ("don't stop", ["don't", "stop"]),
    ("café e\u0301te\u0301", ["café", "e\u0301te\u0301"]),  # combining accents stay inside
    ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # Devanagari vowel signs are marks, not breaks
    ("中文字符", ["中", "文", "字", "符"]),
    ("ひらがなカタカナ", list("ひらがなカタカナ")),
    ("안녕하세요 세계", ["안녕하세요", "세계"]),  # Korean is written with spaces
    ("สวัสดี", ["ส", "วั", "ส", "ดี"]),  # Thai: one word per character and its marks
    ("12345", ["12345"]),
    ("<think>a b</think>c", ["think", "a", "b", "think", "c"]),
    ("", []),
    ("   \n\t", []),
    ("\u200b\u200c\u200d\u2060\ufeff", []),
    ("\u3164\u115f\u1160\uffa0", []),  # Hangul fillers are letters to Python, not to a reader
    ("\u2800\u2800", []),  # braille blank
    ("... !!! ---", []),
    ("\U000e0041\U000e0042", []),  # tag characters
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[repr(t)[:30] for t, _ in CASES])
def test_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected
    assert count_words(text) == len(expected)
    assert has_words(text) == bool(expected)


def test_a_run_without_spaces_counts_once_per_16_characters() -> None:
    assert count_words("internationalization") == 2  # 20 characters
    assert count_words("word" * 500) == 125  # dropping the spaces does not make it one word
    assert count_words("Rechtsschutzversicherungsgesellschaften") == 3


def test_has_words_minimum() -> None:
    assert has_words("one two", 2) and not has_words("one two", 3) and has_words("", 0)


INVISIBLE = st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u034f", "_"])


@given(st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), max_size=30), INVISIBLE)
def test_joining_words_with_an_invisible_character_never_merges_them(parts, joiner) -> None:
    assert count_words(joiner.join(parts)) == count_words(" ".join(parts)) == len(parts)


@given(st.text(max_size=200))
def test_no_word_holds_an_invisible_character(text) -> None:
    for word in words(text):
        assert not any(c in word for c in "\u200b\u200c\u200d\u2060\ufeff\u034f\u3164\u2800")
        assert word.strip() == word
