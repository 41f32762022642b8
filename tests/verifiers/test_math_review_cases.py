"""False positives and silent zeros found in review: each row failed before its fix."""

from __future__ import annotations

import pytest

from rewardsmith import ComponentSpec, Sample

MATH = ComponentSpec(type="math").build()


@pytest.mark.parametrize(
    ("completion", "gold", "expected"),
    [
        # A box contradicted, negated or hedged by the text around it
        ("\\boxed{5}\n\nFinal Answer: 6", "5", 0.0),
        ("Final Answer: 6\n\\boxed{5}", "5", 0.0),
        ("\\boxed{5} is incorrect; the answer is 6", "5", 0.0),
        ("The answer is not \\boxed{5}", "5", 0.0),
        ("\\boxed{5} (or possibly 6)", "5", 0.0),
        ("Is it \\boxed{5}?", "5", 0.0),
        # Hedges and qualifiers inside the box are not units
        ("\\boxed{5 \\text{(or 6)}}", "5", 0.0),
        ("\\boxed{5\\text{ or more}}", "5", 0.0),
        ("\\boxed{5 \\text{ (approximately)}}", "5", 0.0),
        # Two numbers are not one
        ("\\boxed{5 6}", "56", 0.0),
        ("\\boxed{5\\ 6}", "56", 0.0),
        # ...and what must still pass
        ("The answer is $\\boxed{5}$.", "5", 1.0),
        ("So the final answer is \\boxed{5}. Final Answer: 5", "5", 1.0),
        ("\\boxed{5}\n#### 5", "5", 1.0),
        ("x is not 3, so \\boxed{5}", "5", 1.0),
        ("\\boxed{5}, or equivalently $\\frac{10}{2}$", "5", 1.0),
        ("\\boxed{7 425 000}", "7425000", 1.0),
        ("\\boxed{5 \\text{ cm}}", "5", 1.0),
        ("\\boxed{12 \\text{ inches}}", "12", 1.0),
    ],
)
def test_review_cases(completion: str, gold: str, expected: float) -> None:
    result = MATH(Sample(id="r", completion=completion, reference=gold))
    assert result.status == "ok"
    assert result.score == expected, result.detail


def test_an_unparseable_gold_is_invalid_not_zero() -> None:
    result = MATH(Sample(id="r", completion="\\boxed{6}", reference="\\sum_{k=1}^{3} k"))
    assert result.status == "invalid" and result.score is None


def test_a_repeating_decimal_gold_is_its_fraction() -> None:
    result = MATH(Sample(id="r", completion="\\boxed{\\frac{1}{3}}", reference="0.\\overline{3}"))
    assert (result.status, result.score) == ("ok", 1.0)
