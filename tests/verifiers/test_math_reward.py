"""The `math` reward end to end: registry, scores, statuses, limits and speed."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Message, Sample, Score
from rewardsmith.registry import registry
from rewardsmith.verifiers.math import math

FAST = 1.0
"""Seconds a pathological input may take in-process (the engine's kill must not be needed)."""


def run(completion: Any, reference: Any, **config: Any) -> Score:
    sample = Sample(id="1", completion=completion, reference=reference)
    return math(**config)(sample)


def test_registered_under_its_public_path() -> None:
    info = registry.get("math")
    assert info.factory is math
    assert set(info.params) == {
        "fallback",
        "multiple_answers",
        "symbolic",
        "finished_form",
        "fractions",
        "powers",
        "radicals",
        "units",
    }
    assert info.description.startswith("Verifiable math")


def test_correct_answer_scores_one_with_evidence() -> None:
    score = run(r"So the answer is $\boxed{4\dfrac{2}{3}}$.", r"\frac{14}{3}")
    assert score.status == "ok"
    assert score.score == 1.0
    assert score.detail["answer"] == r"4\dfrac{2}{3}"
    assert score.detail["gold"] == r"\frac{14}{3}"
    assert score.detail["source"] == "boxed"
    assert score.detail["reason"] == "equal numbers"


def test_unfinished_answer_scores_zero_with_the_reason() -> None:
    score = run(r"So the answer is $\boxed{\dfrac{28}{6}}$.", r"\frac{14}{3}")
    assert (score.status, score.score) == ("ok", 0.0)
    assert score.detail["reason"] == "not evaluated: unreduced fraction"
    assert run(r"\boxed{\dfrac{28}{6}}", r"\frac{14}{3}", fractions="any").score == 1.0


def test_wrong_answer_scores_zero() -> None:
    score = run("work\nA: 26", "work\nA: 18")
    assert (score.status, score.score, score.detail["reason"]) == ("ok", 0.0, "different numbers")


def test_gsm8k_reference_and_solution() -> None:
    reference = "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nA: 18"
    assert run("She makes 2 * 9 = $<<2*9=18>>18 per day\nA: 18", reference).score == 1.0
    assert run("She makes $18.00 a day.\n#### 18", "#### 18").score == 1.0


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ("", "no answer: empty text"),
        ("<think>it is 5", "no answer: nothing after the reasoning"),
        (r"$\boxed{3}$ or $\boxed{5}$", "no answer: several different final answers"),
        ("How many eggs are left?", "no answer: the final line is a question"),
    ],
)
def test_no_committed_answer_scores_zero(completion: str, reason: str) -> None:
    score = run(completion, "3")
    assert (score.status, score.score, score.detail["answer"]) == ("ok", 0.0, None)
    assert score.detail["reason"] == reason


def test_hedging_in_one_answer_scores_zero() -> None:
    assert run("The answer is x = 3 or x = 5.", "3").score == 0.0
    assert run("The answer is 3 or 5.", "3").score == 0.0


def test_thinking_is_ignored_when_an_answer_follows() -> None:
    assert run(r"<think>\boxed{5}</think> The answer is 3.", "3").score == 1.0
    assert run(r"<think>\boxed{3}</think> The answer is 5.", "3").score == 0.0


def test_chat_completion_uses_last_assistant_turn() -> None:
    chat = [Message(role="user", content="2+2?"), Message(role="assistant", content=r"\boxed{4}")]
    assert run(chat, "4").score == 1.0


def test_restating_the_prompt_scores_zero() -> None:
    prompt = "A robe takes 2 bolts of blue fiber and half that much white fiber."
    sample = Sample(id="1", prompt=prompt, completion=prompt, reference="3")
    score = math()(sample)
    assert score.score == 0.0
    assert score.detail["reason"] == "no answer: restates the question"


@pytest.mark.parametrize("reference", [None, "", "   "])
def test_missing_reference_is_not_applicable(reference: Any) -> None:
    score = run(r"\boxed{4}", reference)
    assert (score.status, score.score) == ("not_applicable", None)


@pytest.mark.parametrize(
    "reference",
    [r"\boxed{}", r"\boxed{3", r"9^{9^{9^{9}}}", "x" * 5_000, ["18"], True],
)
def test_unusable_reference_is_invalid(reference: Any) -> None:
    score = run(r"\boxed{4}", reference)
    assert (score.status, score.score) == ("invalid", None)
    assert score.detail["reason"]


@pytest.mark.parametrize(("reference", "completion"), [(18, "A: 18"), (0.5, r"\boxed{\frac12}")])
def test_numeric_reference(reference: Any, completion: str) -> None:
    assert run(completion, reference).score == 1.0


def test_config_is_validated() -> None:
    with pytest.raises(ConfigError, match="fallback"):
        math(fallback="first_number")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="multiple_answers"):
        math(multiple_answers="any")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="symbolic"):
        math(symbolic="yes")  # type: ignore[arg-type]


def test_config_changes_behaviour() -> None:
    assert run("She sold 12 apples in total", "12").score == 1.0
    assert run("She sold 12 apples in total", "12", fallback="none").score == 0.0
    assert run(r"\boxed{3} \boxed{5}", "5", multiple_answers="last").score == 1.0
    assert run(r"\boxed{\sqrt{12}}", r"2\sqrt3", symbolic=False).score == 0.0


PATHOLOGICAL = {
    "power tower": r"\boxed{9^{9^{9^{9}}}}",
    "power tower in a phrase": r"The answer is $9^{9^{9^{9}}}$",
    "huge exponent": r"\boxed{10^{10000000}}",
    "huge factorial": r"\boxed{100000!}",
    "big symbolic power": r"\boxed{(x+1)^{4000}}",
    "1 MB completion": "x" * 1_000_000 + r" so \boxed{18}",
    "1 MB of digits": "9" * 1_000_000,
    "1 MB of spaces then a number": " " * 1_000_000 + "A: 5",
    "5,000 boxes": " ".join(f"\\boxed{{{i}}}" for i in range(5_000)),
    "unbalanced braces": r"\boxed{" + "{" * 10_000 + "5",
    "deeply nested braces": r"\boxed{" + "{" * 500 + "5" + "}" * 500 + "}",
    "deeply nested phrase": "The answer is " + "{" * 5_000 + "5" + "}" * 5_000,
    "nested fractions": r"\boxed{" + r"\frac{1}{" * 200 + "2" + "}" * 200 + "}",
    "nested radicals": r"\boxed{" + r"\sqrt{" * 60 + "2" + "}" * 60 + "}",
    "many think tags": "<think>" * 10_000 + "x",
    "long sum": "A: " + "1+" * 100_000 + "1",
    "many commas": r"\boxed{" + "1," * 400 + "1}",
}


@pytest.mark.parametrize("completion", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_pathological_prediction_is_fast_and_wrong(completion: str) -> None:
    start = time.perf_counter()
    score = run(completion, "18")
    elapsed = time.perf_counter() - start
    assert elapsed < FAST
    assert score.status == "ok"
    if completion.endswith(r"so \boxed{18}"):
        assert score.score == 1.0  # the answer at the end of a huge completion still counts
    else:
        assert score.score == 0.0


@pytest.mark.parametrize(
    "reference", [r"9^{9^{9^{9}}}", r"10^{10000000}", "{" * 100_000, "1" * 1_000_000]
)
def test_pathological_reference_is_fast_and_invalid(reference: str) -> None:
    start = time.perf_counter()
    score = run("18", reference)
    assert time.perf_counter() - start < FAST
    assert score.status == "invalid"


def test_plain_number_pairs_at_scale() -> None:
    """2,000 GSM8K-style pairs (speed is measured in benchmarks/math_bench.py, not here)."""
    score = math()
    samples = [
        Sample(id=str(i), completion=f"work <<{i}*2={2 * i}>>\nA: {i:,}", reference=f"A: {i}")
        for i in range(2_000)
    ]
    assert all(score(s).score == 1.0 for s in samples)


_FRAGMENTS = [
    "\\boxed{",
    "}",
    "{",
    "$",
    "\\frac",
    "\\sqrt",
    "^",
    "_",
    "=",
    "<",
    "\\le",
    "x",
    "2",
    "10",
    "!",
    "\\pm",
    "or",
    " and ",
    "The answer is ",
    "Answer: ",
    "####",
    "\n",
    "A: ",
    "\\text{ cm}",
    "\\$",
    ",",
    ".",
    "(",
    ")",
    "[",
    "]",
    "\\begin{pmatrix}",
    "\\end{pmatrix}",
    "\\\\",
    "&",
    "\\approx",
    "\\in",
    ":",
    "|",
    "\\cdot",
    "\\sin",
    "\\log_",
    "i",
    "e",
    "\\pi",
    "\\infty",
    "\\overline{3}",
    "\\phantom{2}",
    "<think>",
    "</think>",
    "99999",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join),
    st.sampled_from(
        ["5", "\\frac{3}{2}", "x^2+1", "(1,2)", "[0, 1)", "x \\ge 2", "\\text{Evelyn}"]
    ),
)
def test_a_completion_is_never_anything_but_ok(completion: str, gold: str) -> None:
    """Whatever the policy writes, the sample is `ok` with 0 or 1: never invalid, error or
    an internal error turned into 0."""
    result = run(completion, gold)
    assert result.status == "ok", result.detail
    assert result.score in (0.0, 1.0)
    assert not result.detail.get("internal_error"), result.detail


# A `\text{}` after the number that is almost a unit made the unit regex backtrack
# exponentially (a space is both `\s` and `[ ]`, `per` both letters and a separator):
# 90 characters took 5 s, 30 more hours.
@pytest.mark.parametrize(
    ("completion", "score"),
    [
        ("\\boxed{5\\text{" + "aper" * 200 + "?}}", 0.0),
        ("\\boxed{5\\text{" + "a  " * 200 + "?}}", 0.0),
        ("\\boxed{5\\text{ m / s}}", 1.0),
        ("\\boxed{5\\text{ cm per s}}", 1.0),
    ],
    ids=["aper then ?", "spaced letters then ?", "m / s", "cm per s"],
)
def test_almost_a_unit_in_text(completion: str, score: float) -> None:
    result = run(completion, "5")
    assert result.status == "ok"
    assert result.score == score


def test_unit_text_reads_what_the_old_regex_read() -> None:
    """`_is_unit_text` is the old regex's language: every string up to 5 characters over an
    alphabet of its letters, spaces and separators."""
    import itertools
    import re

    from rewardsmith.verifiers.math._normalize import _is_unit_text

    old = re.compile(r"\s*[A-Za-z¢]+\.?(?:\s*(?:[ ./]|per)\s*[A-Za-z¢]+\.?)*\s*")
    alphabet = ["a", "p", "e", "r", "¢", " ", "\t", ".", "/", "1"]
    for n in range(6):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            assert _is_unit_text(text) == bool(old.fullmatch(text)), text


# Text after the last box is read for a hedge ("or 6", "maybe"); four `\s*` in a row made a
# long run of spaces that ends in anything else quartic: 200 spaces took 6 s.
@pytest.mark.parametrize(
    ("completion", "score"),
    [
        ("\\boxed{5}" + " " * 5_000 + "x", 1.0),
        ("\\boxed{5}" + " $" * 2_000 + " x", 1.0),
        ("\\boxed{5}" + " " * 5_000 + "or 6", 0.0),
        ("\\boxed{5} $" + " \n" * 2_000 + ". maybe 6", 0.0),
    ],
    ids=["spaces then a letter", "dollars then a letter", "spaces then or", "then maybe"],
)
def test_long_space_after_the_box(completion: str, score: float) -> None:
    result = run(completion, "5")
    assert result.status == "ok"
    assert result.score == score
