"""exact_match, f1, choice, regex: option by option, edge cases, properties, real data."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Sample, Score
from rewardsmith.registry import registry
from rewardsmith.verifiers._words import visible
from rewardsmith.verifiers.text import MAX_REGEX_CHARS, choice, exact_match, f1, regex

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def sample(completion: Any, reference: Any = None, **metadata: Any) -> Sample:
    return Sample(id="x", completion=completion, reference=reference, metadata=metadata)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def chat(answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": "Question?"}, {"role": "assistant", "content": answer}]


@pytest.mark.parametrize("name", ["exact_match", "f1", "choice", "regex"])
def test_registered_lazily_under_their_names(name: str) -> None:
    import rewardsmith.verifiers.text as text

    assert registry.get(name).factory is getattr(text, name)


# -- exact_match ---------------------------------------------------------------------------

EXACT_CASES = [
    # (options, completion, reference, expected score)
    ({}, "Paris", "Paris", 1.0),
    ({}, "  Paris \n", "Paris", 1.0),
    ({}, "London", "Paris", 0.0),
    ({}, "PARIS", "paris", 1.0),
    ({"ignore_case": False}, "PARIS", "paris", 0.0),
    ({}, "Straße", "STRASSE", 1.0),  # casefold, not lower
    ({}, "Paris.", "Paris", 0.0),
    ({"ignore_punctuation": True}, "Paris.", "Paris", 1.0),
    ({"ignore_punctuation": True}, "«Paris»!", "Paris", 1.0),
    ({"ignore_punctuation": True}, "Paris", "Lyon", 0.0),
    ({}, "New   York\nCity", "new york city", 1.0),
    ({"normalize_whitespace": False}, "New   York", "New York", 0.0),
    ({}, "the Eiffel Tower", "Eiffel Tower", 0.0),
    ({"strip_articles": True}, "the Eiffel Tower", "Eiffel Tower", 1.0),
    ({"strip_articles": True}, "a cat on an apple", "cat on apple", 1.0),
    ({"strip_articles": True}, "theory", "ory", 0.0),  # articles are whole words only
    ({}, "café", "cafe\u0301", 1.0),  # composed vs decomposed é
    ({}, "東京", "東京", 1.0),
    ({}, "東京", "京都", 0.0),
    ({}, "Blue", ["red", "blue"], 1.0),
    ({}, "green", ["red", "blue"], 0.0),
    ({}, "18", 18, 1.0),
    ({}, "<think>It is Paris? No, Lyon.</think>Paris", "Paris", 1.0),
    ({}, "<think>Paris</think>Lyon", "Paris", 0.0),
    ({}, "<think>Paris, surely", "Paris", 0.0),  # unclosed: nothing committed
    ({}, "", "Paris", 0.0),
    ({}, chat("Paris"), "Paris", 1.0),
    ({"extract": "last_line"}, "Let me think.\nParis\n\n", "Paris", 1.0),
    ({"extract": "last_line"}, "Paris\nLet me think.", "Paris", 0.0),
    ({"extract": "after_marker"}, "2 + 2 = 4\nAnswer: 4", "4", 1.0),
    ({"extract": "after_marker"}, "answer: 3\nWait.\nFinal answer: 4\nDone.", "4", 1.0),
    ({"extract": "after_marker"}, "**Answer:** 4", "4", 1.0),
    ({"extract": "after_marker"}, "**Answer**: **4**", "4", 1.0),
    ({"extract": "after_marker"}, "16 - 3 - 4 = 9\n#### 18", "18", 1.0),
    ({"extract": "after_marker"}, "Answer: 5", "4", 0.0),
]


@pytest.mark.parametrize(
    ("options", "completion", "reference", "expected"),
    EXACT_CASES,
    ids=[f"{c[0] or 'default'}-{str(c[1])[:30]!r}-vs-{c[2]!r}" for c in EXACT_CASES],
)
def test_exact_match(
    options: dict[str, Any], completion: Any, reference: Any, expected: float
) -> None:
    result = exact_match(**options)(sample(completion, reference))
    assert result.status == "ok"
    assert result.score == expected
    assert ("reason" in result.detail) == (expected == 0.0)


def test_exact_match_detail_names_the_matching_reference() -> None:
    result = exact_match()(sample(" BLUE ", ["red", "Blue"]))
    assert result.detail == {"answer": "blue", "reference": "Blue"}


def test_exact_match_missing_marker_is_a_zero_with_reason() -> None:
    result = exact_match(extract="after_marker")(sample("It is 4.", "4"))
    assert result.score == 0.0
    assert "marker" in result.detail["reason"]


@pytest.mark.parametrize(
    ("reference", "status"),
    [(None, "not_applicable"), ([], "not_applicable"), ({"a": 1}, "invalid"), ([True], "invalid")],
    ids=["none", "empty-list", "dict", "bool"],
)
def test_text_rewards_without_usable_reference_fail(reference: Any, status: str) -> None:
    for factory in (exact_match, f1):
        result = factory()(sample("Paris", reference))
        assert (result.status, result.score) == (status, None)


@given(st.text())
def test_exact_match_of_a_string_with_itself_is_one(text: str) -> None:
    assume("<think>" not in text and "</think>" not in text)
    for options in (
        {},
        {"ignore_case": False, "normalize_whitespace": False},
        {"ignore_punctuation": True, "strip_articles": True},
    ):
        result = exact_match(**options)(sample(text, text))
        if visible(text).strip():
            assert result.score == 1.0
        else:  # a blank reference would pay the empty answer
            assert result.status == "invalid"


@pytest.mark.parametrize(
    ("options", "completion", "reference", "expected"),
    [
        ({"strip_articles": True}, "A", "A", 1.0),  # a choice letter is no article
        ({"strip_articles": True}, "(a)", "A", 0.0),
        ({"strip_articles": True, "ignore_punctuation": True}, "(a)", "A.", 1.0),
        ({"strip_articles": True}, "the", "A", 0.0),
        ({"strip_articles": True}, "the the", "The The", 1.0),
        ({"strip_articles": True}, "The Who", "the who", 1.0),  # "who" is left: articles go
        ({"strip_articles": True}, "Who", "the who", 1.0),
        ({"ignore_punctuation": True}, "?", "?", 1.0),
        ({"ignore_punctuation": True}, "!", "?", 0.0),
        ({}, "Paris", ["", "Paris"], 1.0),  # a blank alias is skipped
        ({}, "", ["", "Paris"], 0.0),
    ],
)
def test_exact_match_reference_the_options_would_empty(
    options: dict[str, Any], completion: str, reference: Any, expected: float
) -> None:
    assert exact_match(**options)(sample(completion, reference)).score == expected


@pytest.mark.parametrize("reference", ["", " \n", "\u200b", ["", "\u2060 "]])
def test_exact_match_blank_reference_is_invalid(reference: Any) -> None:
    assert exact_match()(sample("", reference)).status == "invalid"


# -- f1 ------------------------------------------------------------------------------------

F1_CASES = [
    ("the cat sat", "cat sat", 1.0),  # articles dropped
    ("Cat sat!", "cat sat", 1.0),  # case and punctuation dropped
    ("Cat, sat!", "cat sat", 0.0),  # a list is a hedge (the reference is not one)
    ("cat", "cat sat", 2 / 3),  # precision 1, recall 1/2
    ("cat sat on mat", "cat sat", 2 / 3),  # precision 1/2, recall 1
    ("dog", "cat sat", 0.0),
    ("cat cat", "cat", 2 / 3),  # bag of tokens: the second cat is unmatched
    ("", "", 1.0),  # SQuAD v2.0: both empty
    ("the", "a", 0.0),  # a reference of articles keeps them: "a" is not "the"
    ("the the", "The The", 1.0),  # the band
    ("", "The The", 0.0),  # no answer
    ("", "cat", 0.0),
    ("cat", "...", 0.0),
    ("東京 タワー", "東京", 2 / 3),
    ("<think>cat sat</think>dog", "cat sat", 0.0),
    ("<think>cat sat", "cat sat", 0.0),
]


@pytest.mark.parametrize(
    ("completion", "reference", "expected"),
    F1_CASES,
    ids=[f"{c[0]!r}-vs-{c[1]!r}" for c in F1_CASES],
)
def test_f1(completion: str, reference: str, expected: float) -> None:
    result = f1()(sample(completion, reference))
    assert result.status == "ok"
    assert result.score == pytest.approx(expected)


def test_f1_takes_the_best_of_several_references() -> None:
    result = f1()(sample(chat("Eiffel Tower"), ["the tower", "eiffel tower", "Paris"]))
    assert result.score == 1.0
    assert result.detail["reference"] == "eiffel tower"


WORDS = st.lists(st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "Cat,", "東京", ""]))


@given(WORDS.map(" ".join), WORDS.map(" ".join))
def test_f1_is_a_symmetric_fraction(a: str, b: str) -> None:
    plain = f1(reject_hedges=False)  # hedge detection looks at the answer side only
    ab = plain(sample(a, b)).score
    assert ab is not None
    assert 0.0 <= ab <= 1.0
    assert ab == plain(sample(b, a)).score


@given(st.text())
def test_f1_of_text_with_itself_is_one(text: str) -> None:
    assume("<think>" not in text and "</think>" not in text)
    assert f1()(sample(text, text)).score == 1.0


# -- choice --------------------------------------------------------------------------------

CHOICE_CASES = [
    # (completion, expected letter or None, hedged)
    ("B", "B", False),
    ("(B)", "B", False),
    ("B)", "B", False),
    ("B.", "B", False),
    ("**B**", "B", False),
    ("B) Paris", "B", False),
    ("(B) Paris\nBecause it is the capital.", "B", False),
    ("Answer: B", "B", False),
    ("answer: (B)", "B", False),
    ("**Answer:** B", "B", False),
    ("The answer is **B**.", "B", False),
    ("The answer is: B", "B", False),
    ("The correct option is C", "C", False),
    ("The answer is option D, since...", "D", False),
    ("Thus $\\boxed{B}$.", "B", False),
    ("\\boxed{\\text{(B)}}", "B", False),
    ("Checking A) and C) first.\n\nLong reasoning.\n\nB", "B", False),
    ("<think>Maybe A. Answer: A</think>Answer: B", "B", False),
    (chat("Answer: B"), "B", False),
    ("A or B", None, True),
    ("(A) or (C)", None, True),
    ("The answer is A or B.", None, True),
    ("The answer is B/C", None, True),
    ("Answer: A\nHmm, wait.\nAnswer: B", None, True),
    ("Answer: B\nTo double-check: the answer is B.", "B", False),
    ("Because", None, False),
    ("A cat sat on the mat.", None, False),
    ("The answer is a tricky one", None, False),
    ("I pick b", None, False),  # lowercase letters are not committed choices
    ("Answer: E", None, False),  # not among the choices
    ("Beside the ABC of it, nothing.", None, False),
    ("", None, False),
    ("<think>The answer is B", None, False),
    ("<think>B</think>", None, False),
]


@pytest.mark.parametrize(
    ("completion", "letter", "hedged"),
    CHOICE_CASES,
    ids=[repr(str(c[0]))[:40] for c in CHOICE_CASES],
)
def test_choice_extraction(completion: Any, letter: str | None, hedged: bool) -> None:
    result = choice()(sample(completion, "B"))
    assert result.status == "ok"
    assert result.score == float(letter == "B")
    assert result.detail.get("answer") == letter
    assert ("letters" in result.detail) == hedged


@pytest.mark.parametrize(
    ("completion", "letters"),
    [("Answer: A AND C", ["A", "C"]), ("A or B or D", ["A", "B", "D"]), ("(C) OR (D)", ["C", "D"])],
)
def test_choice_hedge_names_exactly_the_letters(completion: str, letters: list[str]) -> None:
    result = choice()(sample(completion, "B"))
    assert (result.score, result.detail["letters"]) == (0.0, letters)


@pytest.mark.parametrize("reference", ["B", "b", "(B)", " (b) "])
def test_choice_reference_forms(reference: str) -> None:
    assert choice()(sample("Answer: B", reference)).score == 1.0
    assert choice()(sample("Answer: C", reference)).score == 0.0


@pytest.mark.parametrize(
    ("reference", "status"),
    [(None, "not_applicable"), ("E", "invalid"), ("AB", "invalid"), ("", "invalid")],
)
def test_choice_unusable_reference(reference: Any, status: str) -> None:
    assert choice()(sample("Answer: B", reference)).status == status


def test_choice_custom_choices() -> None:
    ten = choice(choices="ABCDEFGHIJ")
    assert ten(sample("Answer: J", "J")).score == 1.0
    assert choice(choices="AB")(sample("Answer: C", "B")).detail["reason"] == (
        "no committed choice letter"
    )


@pytest.mark.parametrize("choices", ["", "abcd", "AAB", "A1"])
def test_choice_bad_config_names_the_parameter(choices: str) -> None:
    with pytest.raises(ConfigError, match="choices"):
        choice(choices=choices)


@given(st.text())
def test_choice_never_raises(text: str) -> None:
    result = choice(choices="ABCDE")(sample(text, "C"))
    assert result.status == "ok"
    assert result.score in (0.0, 1.0)


@pytest.mark.skipif(not (DATA / "math500").exists(), reason=f"no real data at {DATA}")
def test_choice_on_math500_multiple_choice_solutions() -> None:
    """MATH-500 answers like \\text{(C)}: the boxed letter in the gold solution is found."""
    rows = _jsonl(DATA / "math500" / "test.jsonl")
    mc = [r for r in rows if re.fullmatch(r"\\text\{\([A-E]\)\}", r["answer"])]
    assert len(mc) >= 3
    reward_fn = choice(choices="ABCDE")
    for row in mc:
        letter = row["answer"][7]
        assert reward_fn(sample(row["solution"], letter)).score == 1.0
        wrong = "A" if letter != "A" else "B"
        assert reward_fn(sample(row["solution"], wrong)).score == 0.0


# -- regex ---------------------------------------------------------------------------------

REGEX_CASES = [
    # (options, completion, expected)
    ({"pattern": r"\d+"}, "It is 42.", 1.0),
    ({"pattern": r"\d+"}, "It is forty-two.", 0.0),
    ({"pattern": r"\d+", "mode": "fullmatch"}, " 42\n", 1.0),
    ({"pattern": r"\d+", "mode": "fullmatch"}, "It is 42.", 0.0),
    ({"pattern": "paris"}, "PARIS", 0.0),
    ({"pattern": "paris", "ignore_case": True}, "PARIS", 1.0),
    ({"pattern": r"^Answer"}, "Reasoning.\nAnswer: 4", 0.0),
    ({"pattern": r"^Answer", "multiline": True}, "Reasoning.\nAnswer: 4", 1.0),
    ({"pattern": r"a.b", "mode": "fullmatch"}, "a\nb", 0.0),
    ({"pattern": r"a.b", "mode": "fullmatch", "dotall": True}, "a\nb", 1.0),
    ({"pattern": r"\d"}, "<think>7</think>seven", 0.0),
    ({"pattern": r"\d", "scope": "completion"}, "<think>7</think>seven", 1.0),
    ({"pattern": r"^<think>", "scope": "completion"}, "<think>x</think>y", 1.0),
    ({"pattern": r"\d"}, "<think>1 2 3", 0.0),
    ({"pattern": r"\d", "mode": "fullmatch"}, "", 0.0),
    ({"pattern": r"^$", "mode": "fullmatch"}, "", 0.0),  # a blank answer is no answer
    ({"pattern": r"[\x00-\x7F]*", "mode": "fullmatch"}, "<think> 中文", 0.0),
    ({"pattern": r"^[^!]*$"}, "\u200b \n", 0.0),
    ({"pattern": r"東京"}, chat("東京です"), 1.0),
]


@pytest.mark.parametrize(
    ("options", "completion", "expected"),
    REGEX_CASES,
    ids=[f"{c[0]}-{str(c[1])[:20]!r}" for c in REGEX_CASES],
)
def test_regex(options: dict[str, Any], completion: Any, expected: float) -> None:
    result = regex(**options)(sample(completion))
    assert result.status == "ok"
    assert result.score == expected
    assert ("match" in result.detail) == (expected == 1.0)


def test_regex_invalid_pattern_names_the_parameter() -> None:
    with pytest.raises(ConfigError, match="pattern"):
        regex(pattern="(unclosed")


def test_regex_does_not_run_over_the_cap_and_the_text_is_wrong_not_invalid() -> None:
    reward_fn = regex(pattern=r"(a+)+$")  # catastrophic on long runs of "a" then "b"
    assert reward_fn(sample("a" * MAX_REGEX_CHARS)).score == 1.0
    result = reward_fn(sample("a" * (MAX_REGEX_CHARS + 1) + "b"))
    assert (result.status, result.score) == ("ok", 0.0)  # the policy wrote it: never a null
    assert str(MAX_REGEX_CHARS) in result.detail["reason"]


@pytest.mark.skipif(not (DATA / "gsm8k").exists(), reason=f"no real data at {DATA}")
def test_regex_and_exact_match_on_gsm8k_gold_solutions() -> None:
    """Every GSM8K gold solution ends in '#### <number>' and matches its own final answer."""
    rows = _jsonl(DATA / "gsm8k" / "test.jsonl")
    assert len(rows) == 1319
    has_final = regex(pattern=r"#### -?[\d,]+$", scope="completion")
    grade = exact_match(extract="after_marker")
    for row, other in zip(rows, rows[1:] + rows[:1], strict=True):
        final = row["answer"].rsplit("####", 1)[1].strip()
        other_final = other["answer"].rsplit("####", 1)[1].strip()
        assert has_final(sample(row["answer"])).score == 1.0
        assert grade(sample(row["answer"], final)).score == 1.0
        assert grade(sample(row["answer"], other_final)).score == float(final == other_final)


@pytest.mark.skipif(not (DATA / "gsm8k").exists(), reason=f"no real data at {DATA}")
def test_exact_match_agrees_with_gsm8k_human_labels() -> None:
    """Final-answer match vs the human `is_correct` labels of 5,276 model solutions.

    A labelled-correct solution must never score 0 (commas as in '5,600' vs '5600' need
    ignore_punctuation). Labels also judge the reasoning, so 11 right-answer solutions are
    labelled incorrect; more than that would mean the extraction grew too lenient.
    """
    grade = exact_match(extract="after_marker", ignore_punctuation=True)
    misses, lucky, total = 0, 0, 0
    for row in _jsonl(DATA / "gsm8k" / "example_model_solutions.jsonl"):
        gold = row["ground_truth"].rsplit("A:", 1)[1].strip()
        for key in ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification"):
            solution = row[key]["solution"].replace("\nA:", "\nAnswer:")
            result: Score = grade(sample(solution, gold))
            misses += row[key]["is_correct"] and result.score == 0.0
            lucky += not row[key]["is_correct"] and result.score == 1.0
            total += 1
    assert total == 5276
    assert misses == 0
    assert lucky == 11


@pytest.mark.parametrize(
    "completion",
    [
        "answer: " + " " * 50_000 + "x",
        "A" + " " * 50_000 + "x",
        "answer: A" + " " * 50_000 + "x",
        "answer: " + "*" * 50_000 + "x",
        "(A" + "\n" * 50_000 + "x",
        "answer is A " + "or " * 20_000,
    ],
    ids=[
        "spaces-after-marker",
        "spaces-after-letter",
        "spaces-after-answer",
        "stars",
        "newlines",
        "or-chain",
    ],
)
def test_choice_is_linear_on_adversarial_text(completion: str) -> None:
    """Backtracking over long whitespace runs once made these take seconds each."""
    start = time.perf_counter()
    assert choice()(sample(completion, "A")).status == "ok"
    assert time.perf_counter() - start < 0.5


def test_f1_hedge_detection_can_be_turned_off_for_plain_squad_f1() -> None:
    hedge = sample("Paris or London", "Paris")
    assert f1()(hedge).score == 0.0
    assert f1(reject_hedges=False)(hedge).score == 0.5  # 2 * (1/3 * 1) / (1/3 + 1)
    assert f1()(sample("salt or pepper", "salt or pepper")).score == 1.0  # the gold's own "or"
    assert f1()(sample("9/11", "9/11")).score == 1.0  # a slash between digits is no hedge


@pytest.mark.parametrize(
    "text",
    ["Answer: B, because it fits.", "The answer is B. A is a distractor.", "Answer: (B)"],
)
def test_choice_separators_do_not_turn_prose_into_a_hedge(text: str) -> None:
    assert choice()(sample(text, "B")).score == 1.0


# A first or last line of letters joined by separators that fails at its very end made the
# `lone` regex backtrack into every separator's optional spaces: 20 letters took 5 s.
@pytest.mark.parametrize(
    ("completion", "score"),
    [
        ("A, " * 2_000 + "A?", 0.0),
        ("Thinking.\n" + "B, " * 2_000 + "B?", 0.0),
        ("B, " * 2_000 + "B.", 1.0),
    ],
    ids=["hedge then ?", "last line then ?", "one letter repeated"],
)
def test_choice_long_lines_of_letters(completion: str, score: float) -> None:
    result = choice()(sample(completion, "B"))
    assert result.status == "ok"
    assert result.score == score
