"""Answers as keys for clustering: committed_answer, answer_key, same_answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.verifiers.math import MathConfig, answer_key, committed_answer, same_answer


@pytest.mark.parametrize(
    "forms",
    [
        ["0.5", r"\frac{1}{2}", "1/2", r"\dfrac{1}{2}"],
        [r"x = \frac12", "x=0.5", r"X = \frac{1}{2}"],
        [r"\{1, 2\}", "2, 1", "1 and 2", r"x = 1 \text{ or } x = 2"],
        [r"500 \text{ cents}", r"\$5", r"5 \text{ dollars}"],
        ["(1, 2)", r"\left(1, 2\right)", "(p,q)=(1,2)"],
        [r"\text{Evelyn}", "Evelyn", "evelyn"],
    ],
)
def test_equal_keys_for_one_answer(forms: list[str]) -> None:
    assert len({answer_key(f) for f in forms}) == 1, [answer_key(f) for f in forms]
    assert all(same_answer(forms[0], f) for f in forms)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("(1, 2)", "(2, 1)"),
        ("3", "3.0001"),
        (r"\sqrt{2}", "1.414"),
        (r"5 \text{ cm}", r"5 \text{ m}"),
        ("x = 4", "y = 4"),
        ("x = 2+2 = 4", "y = 4"),
        ("y=1, x=2", "(1, 2)"),
    ],
)
def test_different_answers_differ(a: str, b: str) -> None:
    assert answer_key(a) != answer_key(b)
    assert not same_answer(a, b)


def test_keys_miss_what_same_answer_finds() -> None:
    assert answer_key(r"\sqrt{12}") != answer_key(r"2\sqrt{3}")
    assert same_answer(r"\sqrt{12}", r"2\sqrt{3}")
    assert answer_key(r"x = \frac12") != answer_key("0.5")
    assert same_answer(r"x = \frac12", "0.5")


@pytest.mark.parametrize(
    ("completion", "answer", "reason"),
    [
        (r"so it is $\boxed{4495}$", "4495", None),
        (
            r"so it is $\boxed{\binom{31}{28}}$",
            None,
            "no answer: not evaluated: binomial coefficient",
        ),
        (r"$\boxed{3}$ or $\boxed{5}$", None, "no answer: several different final answers"),
        (r"\boxed{\cot x}", r"\cot x", None),
        (r"The answer is $2^{10}$.", None, "no answer: not evaluated: power of numbers"),
        # words the completion does not mark would win a label-free vote for saying nothing
        ("hmm", None, "no answer: unmarked words"),
        ("no idea", None, "no answer: unmarked words"),
        ("I don't know", None, "no answer: unmarked words"),
        ("Evelyn", None, "no answer: unmarked words"),
        (r"The answer is \text{Evelyn}.", r"\text{Evelyn}", None),
        (r"\boxed{hmm}", "hmm", None),
        ("18", "18", None),
        ("She makes 18 dollars.", "18", None),
        # boxes that render as nothing share the empty key: they would outvote an answer
        (r"\boxed{\text{}}", None, "no answer: boxed answer empty"),
        (r"\boxed{{}}", None, "no answer: boxed answer empty"),
        (r"\boxed{\mbox{}}", None, "no answer: boxed answer empty"),
        (r"The answer is $\,$.", None, "no answer: phrase answer empty"),
        (r"\boxed{\emptyset}", r"\emptyset", None),
        (r"\boxed{\{ \}}", r"\{ \}", None),  # the empty set, with a space
        # LaTeX that prints nothing, or a unit alone, would outvote an answer as well
        (r"\boxed{\enspace}", None, "no answer: boxed answer empty"),
        (r"\boxed{\color{red}{}}", None, "no answer: boxed answer empty"),
        (r"\boxed{\$}", None, "no answer: boxed answer only a unit"),
    ],
)
def test_committed_answer(completion: str, answer: str | None, reason: str | None) -> None:
    got = committed_answer(completion)
    assert got.answer == answer
    if reason is not None:
        assert got.reason == reason


def test_committed_answer_follows_the_options() -> None:
    assert committed_answer(r"\boxed{2^{10}}", MathConfig(powers="any")).answer == "2^{10}"


@settings(max_examples=200, deadline=None)
@given(st.fractions(min_value=-100, max_value=100, max_denominator=50))
def test_number_forms_share_a_key(value: object) -> None:
    from fractions import Fraction

    assert isinstance(value, Fraction)
    slash = f"{value.numerator}/{value.denominator}"
    latex = f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    if value < 0:
        latex = f"-\\frac{{{-value.numerator}}}{{{value.denominator}}}"
    assert answer_key(slash) == answer_key(latex)
    assert same_answer(slash, latex)
