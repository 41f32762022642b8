"""The master-key guard."""

from __future__ import annotations

import pytest

from rewardsmith import Sample
from rewardsmith.judges import Guard, judge_pointwise, judge_reference, rubric


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("", "empty"),
        ("   \n\t", "empty"),
        (":", "punctuation_only"),
        ("...!?", "punctuation_only"),
        ("—", "punctuation_only"),
        ("Thought process:", "generic_opener"),
        ("Let's solve this problem step by step.", "generic_opener"),
        ("Let’s solve this problem step by step", "generic_opener"),
        ("**Solution**", "generic_opener"),
        ("Solution:", "generic_opener"),
        ("  The answer is:  ", "generic_opener"),
        ("解", "generic_opener"),
        ("Sure!", "generic_opener"),
    ],
)
def test_guard_fires(text: str, rule: str) -> None:
    assert Guard().check(text) == rule


@pytest.mark.parametrize(
    "text",
    ["Paris", "Yes", "42", "Solution: x = 2", "Let's solve this problem step by step. 2+2=4."],
)
def test_guard_lets_content_through(text: str) -> None:
    assert Guard().check(text) is None


def test_guard_is_extendable_from_the_spec(scripted) -> None:
    backend = scripted(lambda request: "YES")
    fn = rubric(rubric=["Is correct."], guard_openers=["As an AI model"], cache=False)
    result = fn(Sample(id="1", completion="As an AI model."))
    assert result.status == "ok" and result.score == 0.0
    assert result.detail["guard"] == "generic_opener"
    assert backend.requests == []
    assert fn(Sample(id="2", completion="Correct answer: 4")).score == 1.0
    off = rubric(rubric=["Is correct."], guard=False, cache=False)
    assert off(Sample(id="3", completion=":")).score == 1.0  # the judge was asked


@pytest.mark.parametrize("factory", [rubric, judge_pointwise, judge_reference])
def test_guard_in_every_mode(scripted, factory) -> None:
    backend = scripted(lambda request: "YES")
    params = {"rubric": ["Is correct."]} if factory is rubric else {}
    sample = Sample(id="1", completion="<think>long</think>Thought process:", reference="4")
    result = factory(cache=False, **params)(sample)
    assert result.score == 0.0 and result.detail["guard"] == "generic_opener"
    assert backend.requests == []
