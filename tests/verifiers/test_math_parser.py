"""The expression parser and the numeric screen: properties against exact arithmetic."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.verifiers.math._latex import Node, ParseError, parse_expression
from rewardsmith.verifiers.math._numeric import Unevaluable, same_value

_SMALL = st.integers(min_value=-40, max_value=40)


@st.composite
def _expression(draw: st.DrawFn, depth: int = 0) -> tuple[str, Fraction]:
    """A LaTeX expression of small integers and its exact value."""
    if depth > 3 or draw(st.booleans()):
        value = draw(_SMALL)
        return (f"({value})" if value < 0 else str(value)), Fraction(value)
    op = draw(st.sampled_from(["+", "-", "cdot", "frac", "times", "paren"]))
    left, a = draw(_expression(depth + 1))
    right, b = draw(_expression(depth + 1))
    if op == "frac":
        if b == 0:
            return left, a
        return f"\\frac{{{left}}}{{{right}}}", a / b
    if op == "paren":
        return f"({left})({right})", a * b
    if op in ("cdot", "times"):
        return f"({left}) \\{op} ({right})", a * b
    return (f"{left} + ({right})", a + b) if op == "+" else (f"{left} - ({right})", a - b)


@settings(max_examples=300, deadline=None)
@given(_expression())
def test_parsed_value_is_exact(case: tuple[str, Fraction]) -> None:
    text, value = case
    tree = parse_expression(text)
    assert same_value(tree, Node("num", (), value))
    assert not same_value(tree, Node("num", (), value + Fraction(1, 10**30)))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_fractions_and_decimals_are_exact(numerator: int, denominator: int) -> None:
    exact = Fraction(numerator, denominator)
    tree = parse_expression(f"\\frac{{{numerator}}}{{{denominator}}}")
    decimal = f"{float(exact):.12f}"
    assert same_value(tree, Node("num", (), exact))
    if Fraction(decimal) != exact:
        assert not same_value(tree, parse_expression(decimal))


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (r"x^2+2x+1", r"(x+1)^2", True),
        (r"\sin^2 x + \cos^2 x", "1", True),
        (
            r"\frac{\sqrt{\sqrt{11}+\sqrt{194}}}{15+2\sqrt{33}}",
            r"\frac{\sqrt{\sqrt{11}+\sqrt{194}}}{2\sqrt{33}+15}",
            True,
        ),
        (r"\sqrt{x^2}", "x", False),
        (r"\frac{1}{2004!}", r"\frac{1}{2006!}", False),
        (r"2^{1000}", r"2^{1000}+1", False),
        ("0", r"10^{-100}", False),
        (r"e^{i\pi}", "-1", True),
        (r"\sqrt[3]{-8}", "-2", True),
        (r"(-8)^{2/3}", "4", True),
        ("f(2x)", r"f(x \cdot 2)", True),
        ("f(x)", "f(y)", False),
        ("3R^2", "3r^2", True),
        ("A + a", "2a", False),
        (r"\log_2 8", "3", True),
        (r"\lfloor 3.7 \rfloor + \lceil 0.2 \rceil", "4", True),
    ],
)
def test_same_value_table(a: str, b: str, equal: bool) -> None:
    assert same_value(parse_expression(a), parse_expression(b)) is equal


@pytest.mark.parametrize(
    "text",
    ["5 6", r"\sum_{k=1}^n k", r"\int_0^1 x dx", "x'", r"1, 2", r"\foo{3}", "(1+2", "9" * 500],
)
def test_unreadable_expressions_are_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_expression(text)


@pytest.mark.parametrize(
    "text", [r"9^{9^{9^{9}}}", r"10^{10000000}", r"100000!", r"\frac{1}{0}", r"\binom{10^6}{3}"]
)
def test_values_out_of_reach_are_unevaluable(text: str) -> None:
    with pytest.raises(Unevaluable):
        same_value(parse_expression(text), parse_expression("1"))


def test_mixed_numbers_and_implicit_products() -> None:
    assert same_value(parse_expression(r"1\frac{4}{5}"), parse_expression(r"\frac{9}{5}"))
    assert same_value(parse_expression(r"2 \cdot \frac{1}{2}"), parse_expression("1"))
    assert same_value(parse_expression(r"\sin 2x"), parse_expression(r"2 \sin x \cos x"))
