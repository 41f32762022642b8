"""Constraint expressions: all_of / any_of / not / if-then-else over instruction checks."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.models import Sample
from rewardsmith.verifiers.instructions import constraints

NO_COMMA = {"id": "punctuation:no_comma"}
TITLE = {"id": "detectable_format:title"}
LOWER = {"id": "change_case:english_lowercase"}
QUOTED = {"id": "startend:quotation"}


def _run(expr: Any, text: str, **params: Any):
    return constraints(**params)(Sample(id="c", completion=text, reference=expr))


def test_all_of_fraction_and_all() -> None:
    expr = {"all_of": [NO_COMMA, TITLE]}
    assert _run(expr, "<<T>> text").score == 1.0
    assert _run(expr, "plain text").score == 0.5
    assert _run(expr, "plain text", reward="all").score == 0.0


def test_any_of_holds_when_one_holds() -> None:
    result = _run({"any_of": [NO_COMMA, TITLE]}, "plain text", reward="all")
    assert result.score == 1.0 and result.detail["holds"] is True


def test_not_inverts_leaf_satisfaction() -> None:
    expr = {"not": TITLE}
    assert _run(expr, "plain").score == 1.0
    assert _run(expr, "<<T>>").score == 0.0


def test_if_then_applies_only_when_condition_holds() -> None:
    expr = {"if": LOWER, "then": QUOTED}
    lower = "this is an english sentence about the weather today."
    assert _run(expr, lower).score == 0.0  # condition holds, not quoted
    assert _run(expr, f'"{lower}"').score == 1.0
    skipped = _run(expr, "This Is Not Lowercase.")
    assert skipped.score == 1.0 and skipped.detail["scored_leaves"] == 0  # vacuously true


def test_if_then_else_scores_the_branch_taken() -> None:
    expr = {"if": TITLE, "then": NO_COMMA, "else": QUOTED}
    result = _run(expr, "a, b")
    assert result.detail["scored_leaves"] == 1 and result.score == 0.0
    assert [leaf["follows"] for leaf in result.detail["leaves"]] == [False, None, False]


def test_leaf_kwargs_and_loose_mode() -> None:
    leaf = {
        "id": "length_constraints:number_words",
        "kwargs": {"num_words": 3, "relation": "less than"},
    }
    text = "Sure, here it is:\ntwo words"
    assert _run({"all_of": [leaf, NO_COMMA]}, text).score == 0.0
    assert _run({"all_of": [leaf, NO_COMMA]}, text, mode="loose").score == 1.0


def test_ifbench_ids_mix_with_ifeval_ids() -> None:
    expr = {"all_of": [NO_COMMA, {"id": "format:no_whitespace"}]}
    assert _run(expr, "nospace").score == 1.0


@pytest.mark.parametrize(
    "expr",
    [
        {"all_of": []},
        {"xor": [NO_COMMA]},
        {"id": "nope:unknown"},
        {"id": "keywords:frequency", "kwargs": {"keyword": "a"}},
        {"id": "punctuation:no_comma", "extra": 1},
        {"then": NO_COMMA},
        [NO_COMMA],
    ],
)
def test_malformed_expressions_are_invalid(expr: Any) -> None:
    result = _run(expr, "text")
    assert result.status == "invalid" and result.score is None


def test_expression_as_json_string_or_metadata() -> None:
    assert _run('{"not": {"id": "detectable_format:title"}}', "x").score == 1.0
    sample = Sample(id="m", completion="x", metadata={"constraints": {"not": TITLE}})
    assert constraints()(sample).score == 1.0
    assert constraints()(Sample(id="n", completion="x")).status == "not_applicable"


# -- properties ----------------------------------------------------------------------------

LEAVES = [NO_COMMA, TITLE, QUOTED, {"id": "format:no_whitespace"}]
TEXTS = ["plain", "a, b", "<<T>>", '"q"', "x y"]


def _truth(expr: Any, text: str) -> bool:
    return bool(_run(expr, text, reward="all").score)


expressions = st.recursive(
    st.sampled_from(LEAVES),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"all_of": xs}),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"any_of": xs}),
        inner.map(lambda x: {"not": x}),
        st.tuples(inner, inner).map(lambda p: {"if": p[0], "then": p[1]}),
    ),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(expressions, st.sampled_from(TEXTS))
def test_boolean_laws(expr: Any, text: str) -> None:
    value = _truth(expr, text)
    assert _truth({"not": {"not": expr}}, text) == value
    assert _truth({"not": expr}, text) == (not value)
    assert _truth({"any_of": [expr, {"not": expr}]}, text) is True
    assert _truth({"all_of": [expr, {"not": expr}]}, text) is False
    assert _truth({"if": expr, "then": expr}, text) is True


@settings(max_examples=60, deadline=None)
@given(expressions, st.sampled_from(TEXTS))
def test_fraction_is_in_unit_interval_and_one_when_all_leaves_satisfied(
    expr: Any, text: str
) -> None:
    result = _run(expr, text)
    assert 0.0 <= result.score <= 1.0
    if result.detail["scored_leaves"] and (
        result.detail["satisfied_leaves"] == result.detail["scored_leaves"]
    ):
        assert result.score == 1.0


def test_training_scores_0_a_verdict_that_lookalikes_change() -> None:
    """Under a `not`, "must not mention Eiffel" would pass on a Cyrillic e: in training any
    leaf whose verdict differs on the text as a reader sees it scores the sample 0."""
    expr = {"not": {"id": "keywords:existence", "kwargs": {"keywords": ["Eiffel"]}}}
    text = "The Eiff\u0435l Tower in Paris was built for the world fair of 1889 and still stands."
    assert _run(expr, text).score == 1.0  # officially
    result = _run(expr, text, training=True)
    assert (result.status, result.score) == ("ok", 0.0)
    assert result.detail["lookalikes"] == ["keywords:existence"]
    assert _run(expr, text.replace("\u0435", "e"), training=True).score == 0.0
    assert _run(expr, text.replace("Eiff\u0435l", "iron"), training=True).score == 1.0
