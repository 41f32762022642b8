"""Extraction of the final answer from completions and references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.verifiers.math import Extraction, MathConfig, extract_answer

CASES = json.loads((Path(__file__).parent / "math_cases" / "extraction.json").read_text())["cases"]


@pytest.mark.parametrize(("text", "answer", "source", "note"), CASES, ids=[c[3] for c in CASES])
def test_extraction_table(text: str, answer: str | None, source: str, note: str) -> None:
    got = extract_answer(text)
    assert (got.answer, got.source) == (answer, source), note
    if answer is None:
        assert got.reason.startswith("no answer")


def test_hedging_lists_the_candidates() -> None:
    got = extract_answer(r"It is $\boxed{3}$, or maybe $\boxed{5}$.")
    assert got.answer is None
    assert got.reason == "no answer: several different final answers"
    assert got.candidates == ("3", "5")


def test_hedging_allowed_when_configured() -> None:
    got = extract_answer(r"$\boxed{3}$ then $\boxed{5}$", MathConfig(multiple_answers="last"))
    assert got.answer == "5"


def test_fallback_can_be_disabled() -> None:
    text = "She sold 12 apples in total"
    assert extract_answer(text).answer == "12"
    got = extract_answer(text, MathConfig(fallback="none"))
    assert got.answer is None
    assert got.reason == "no answer: no final answer marked"


def test_marked_answers_do_not_need_the_fallback() -> None:
    config = MathConfig(fallback="none")
    assert extract_answer("blah\nA: 18", config).answer == "18"
    assert extract_answer(r"so \boxed{7}", config).answer == "7"


@pytest.mark.parametrize(
    "completion",
    [
        "Janet's ducks lay 16 eggs per day and she eats three for breakfast",
        "How much in dollars does she make every day at the farmers' market",
    ],
)
def test_restating_the_question_is_no_answer(completion: str) -> None:
    prompt = (
        "Janet's ducks lay 16 eggs per day and she eats three for breakfast. "
        "How much in dollars does she make every day at the farmers' market?"
    )
    got = extract_answer(completion, prompt=prompt)
    assert got.answer is None
    assert got.reason == "no answer: restates the question"


def test_short_answer_found_in_prompt_is_still_an_answer() -> None:
    assert extract_answer("16", prompt="Janet's ducks lay 16 eggs per day.").answer == "16"


@pytest.mark.parametrize(
    ("reference", "gold"),
    [
        ("18", "18"),
        (r"\left( 3, \frac{\pi}{2} \right)", r"\left( 3, \frac{\pi}{2} \right)"),
        ("Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nA: 18", "18"),
        ("She makes 9 * 2 = $<<9*2=18>>18.\n#### 18", "18"),
        (
            r"Therefore the polar coordinates are $\boxed{\left( 3, \frac{\pi}{2} \right)}.$",
            r"\left( 3, \frac{\pi}{2} \right)",
        ),
        (r"\frac{14}{3}", r"\frac{14}{3}"),
        (r"\text{(C)}", r"\text{(C)}"),
    ],
)
def test_references_yield_their_final_answer(reference: str, gold: str) -> None:
    assert extract_answer(reference).answer == gold


def test_only_the_tail_of_a_huge_completion_is_read() -> None:
    got = extract_answer(r"\boxed{1} " + "x" * 1_000_000 + r" \boxed{2}")
    assert got.answer == "2"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_extraction_never_raises(text: str) -> None:
    got = extract_answer(text)
    assert isinstance(got, Extraction)
    assert (got.answer is None) == got.reason.startswith("no answer")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["\\boxed{", "{", "}", "\\", "$", "A: ", "####", "answer is ", "1", "x"]),
        max_size=40,
    ).map("".join)
)
def test_extraction_never_raises_on_latex_fragments(text: str) -> None:
    assert isinstance(extract_answer(text), Extraction)


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_boxed_integer_round_trips(n: int) -> None:
    assert extract_answer(f"so the result is $\\boxed{{{n}}}$.").answer == str(n)
