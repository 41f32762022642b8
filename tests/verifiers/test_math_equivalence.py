"""Answer equivalence: the table of matches and traps, and properties of the number parser."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardsmith.verifiers.math import compare, is_equivalent

CASES = json.loads((Path(__file__).parent / "math_cases" / "equivalence.json").read_text())["cases"]


@pytest.mark.parametrize(("pred", "gold", "equal", "note"), CASES, ids=[c[3] for c in CASES])
def test_equivalence_table(pred: str, gold: str, equal: bool, note: str) -> None:
    assert is_equivalent(pred, gold) is equal, note
    assert is_equivalent(gold, pred) is equal, f"{note} (swapped)"


def test_verdicts_say_why() -> None:
    assert compare("18.00", "18").reason == "equal numbers"
    assert compare("1000001", "1000000").reason == "different numbers"
    assert compare("3 or 5", "3").reason == "different number of answers"
    assert compare("(3,4)", "[3,4]").reason == "brackets () vs []"
    assert compare(r"9^{9^{9^{9}}}", "18").reason == "not evaluated: exponent too large"


def test_symbolic_comparison_can_be_turned_off() -> None:
    assert is_equivalent(r"\sqrt{12}", r"2\sqrt{3}")
    assert not is_equivalent(r"\sqrt{12}", r"2\sqrt{3}", symbolic=False)
    assert is_equivalent("7,425,000", "7425000", symbolic=False)


def test_no_sympy_even_for_expressions() -> None:
    """Expressions are compared by our parser and mpmath: sympy (slow to import, and its
    simplify can stall) is never loaded."""
    import subprocess
    import sys

    code = (
        "import sys; from rewardsmith.verifiers.math import is_equivalent;"
        "assert is_equivalent('$18.00', '18'); assert not is_equivalent('1/3', '0.333');"
        "assert is_equivalent('\\\\sqrt{12}', '2\\\\sqrt{3}');"
        "assert is_equivalent('(x+1)^2', 'x^2+2x+1');"
        "print('sympy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@given(st.integers(min_value=0, max_value=10**15), st.booleans())
def test_thousands_separators_are_the_same_integer(n: int, negative: bool) -> None:
    value = -n if negative else n
    assert is_equivalent(f"{value:,}", str(value))
    assert is_equivalent(f"\\${value:,}", f"{value}.00")


@given(st.integers(min_value=-(10**9), max_value=10**9), st.integers(1, 10**9))
def test_distinct_integers_never_match(n: int, delta: int) -> None:
    assert not is_equivalent(str(n), str(n + delta))


@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6))
def test_equivalence_is_symmetric_on_numbers(a: int, b: int) -> None:
    assert is_equivalent(str(a), str(b)) == is_equivalent(str(b), str(a)) == (a == b)


@given(st.fractions(min_value=-1000, max_value=1000, max_denominator=1000))
def test_frac_and_slash_agree(value: Fraction) -> None:
    num, den = value.numerator, value.denominator
    assert is_equivalent(f"\\frac{{{num}}}{{{den}}}", f"{num}/{den}")


@given(st.decimals(min_value=-1000, max_value=1000, places=4, allow_nan=False))
def test_decimals_are_exact(value: object) -> None:
    text = str(value)
    exact = Fraction(text)
    assert is_equivalent(text, f"{exact.numerator}/{exact.denominator}")
    assert not is_equivalent(text, f"{exact.numerator + 1}/{exact.denominator}")
