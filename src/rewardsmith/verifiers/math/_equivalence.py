"""Are two extracted answers the same mathematical object?

Cheapest decision first: equal canonical strings, then exact numbers (`Fraction`), then the
structure (sets are order-free, tuples/intervals ordered and bracket-exact, matrices
cell by cell), and only for what is left a symbolic comparison with sympy, imported lazily.

Nothing exact is ever compared by float closeness: 3.14 is not pi, 1000001 is not 1000000,
0.333 is not 1/3. Floats are used only to *reject* quickly, never to accept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ._normalize import (
    MAX_BRACE_DEPTH,
    MAX_NUMBER_CHARS,
    brace_group,
    choice_letter,
    key,
    normalize,
    parse_number,
    strip_lhs,
)

if TYPE_CHECKING:
    import sympy

__all__ = ["Verdict", "compare", "is_equivalent", "too_complex"]

MAX_ANSWER_CHARS = 1_000
"""Answers longer than this are refused outright (no real final answer is that long)."""
MAX_SYMBOLIC_CHARS = 400
"""Longest answer handed to the LaTeX parser and sympy."""
MAX_ELEMENTS = 64
"""Most elements compared in a set, tuple or matrix."""
MAX_EXPONENT = 4_096
"""Largest literal exponent evaluated; `2^{4096}` is instant, `9^{9^{9^9}}` is not."""
MAX_FACTORIAL = 5_000
"""Largest literal factorial evaluated (`2006!` is fine)."""
MAX_OPS = 150
"""Expressions bigger than this (sympy op count) are only expanded, never `simplify`-ed."""
MAX_SYMBOLIC_POWER = 64
"""Expressions with symbols raised to a higher integer power are not expanded."""
REJECT_PRECISION = 30
"""Digits used to reject clearly different values before trying to simplify."""
REJECT_THRESHOLD = 1e-20
"""A difference this far from zero at an exact point is certainly not zero."""
REJECT_POINTS = (7, 11)
"""Denominators of the exact rational points where symbolic answers are probed."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of one comparison and why."""

    equal: bool
    reason: str
    gold_unparseable: bool = False
    """The gold answer could not be read: the sample cannot be judged (never a 0)."""


_OR = " or "
_OPEN, _CLOSE = "([{", ")]}"
_MATRIX = re.compile(r"^\\begin\{([pbvBV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.S)
_EXPONENT_LITERAL = re.compile(r"\s*\{?\s*(\d+)")
_FACTORIAL = re.compile(r"(\d+)\s*!")
_DIGIT_RUN = re.compile(rf"\d{{{MAX_NUMBER_CHARS + 1},}}")
_DECIMAL = re.compile(r"(?<![\d.])(\d*)\.(\d+)")
_WORDS = re.compile(r"[A-Za-z][A-Za-z' ]*")
_BASE_N = re.compile(r"\d_\{?\d")
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


# --- structure ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Node:
    """A parsed answer: `atom` text, or a container of nodes."""

    kind: str  # atom | set | tuple | matrix | union
    text: str = ""
    items: tuple[_Node, ...] = ()
    brackets: str = ""


def _split_top(s: str, sep: str) -> list[str]:
    """Split at `sep` where no bracket is open (intervals like `(3, 4]` count as brackets)."""
    if sep not in s:
        return [s]
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        char = s[i]
        if s.startswith(("\\{", "\\}"), i):
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(s[start:])
    return [p.strip() for p in parts]


def _encloses(s: str) -> bool:
    """True when the bracket opening at s[0] closes at the last character."""
    depth = 0
    for i, char in enumerate(s):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth == 0:
                return i == len(s) - 1
    return False


def _set(elements: list[str]) -> _Node:
    """An order-free collection; nested collections (`1 \\pm \\sqrt{5}`) are flattened."""
    items: list[_Node] = []
    for element in elements:
        if element:
            node = _parse(element)
            items.extend(node.items if node.kind == "set" else (node,))
    return _Node("set", items=tuple(items))


def _parse(s: str) -> _Node:
    """Split an answer into its structure; leaves are atoms compared by `_compare_atoms`."""
    s = strip_lhs(s.strip())
    alternatives = _split_top(s, _OR)
    if len(alternatives) > 1:
        return _set(alternatives)
    matrix = _MATRIX.match(s)
    if matrix is not None:
        rows = [r for r in re.split(r"\\\\", matrix.group(2)) if r.strip()]
        return _Node(
            "matrix",
            items=tuple(
                _Node("tuple", items=tuple(_parse(c) for c in row.split("&"))) for row in rows
            ),
        )
    union = _split_top(s, "\\cup")
    if len(union) > 1:
        return _Node("union", items=tuple(_parse(u) for u in union))
    if s.startswith("\\{") and s.endswith("\\}"):
        return _set(_split_top(s[2:-2], ","))
    if _THOUSANDS.fullmatch(s):
        return _Node("atom", text=s)
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and _encloses(s):
        elements = _split_top(s[1:-1], ",")
        if len(elements) > 1:
            return _Node("tuple", items=tuple(_parse(e) for e in elements), brackets=s[0] + s[-1])
    elements = _split_top(s, ",")
    if len(elements) > 1:
        return _set(elements)
    plus_minus = _split_top(s, "\\pm")
    if len(plus_minus) == 2 and all(plus_minus):
        a, b = plus_minus
        return _Node(
            "set", items=(_Node("atom", text=f"{a}+{b}"), _Node("atom", text=f"{a}-({b})"))
        )
    return _Node("atom", text=s)


def _size(node: _Node) -> int:
    return 1 if node.kind == "atom" else sum(_size(i) for i in node.items)


def _compare_nodes(pred: _Node, gold: _Node, symbolic: bool) -> Verdict:
    if pred.kind == "set" and len(pred.items) == 1:
        return _compare_nodes(pred.items[0], gold, symbolic)
    if gold.kind == "set" and len(gold.items) == 1:
        return _compare_nodes(pred, gold.items[0], symbolic)
    if pred.kind == "atom" and gold.kind == "atom":
        return _compare_atoms(pred.text, gold.text, symbolic)
    if pred.kind != gold.kind:
        if "set" in (pred.kind, gold.kind):
            return Verdict(False, "different number of answers")
        return Verdict(False, f"{pred.kind} vs {gold.kind}")
    if len(pred.items) != len(gold.items):
        return Verdict(False, f"{len(pred.items)} vs {len(gold.items)} elements")
    if pred.brackets != gold.brackets:
        return Verdict(False, f"brackets {pred.brackets} vs {gold.brackets}")
    if pred.kind in ("tuple", "matrix"):
        for p, g in zip(pred.items, gold.items, strict=True):
            verdict = _compare_nodes(p, g, symbolic)
            if not verdict.equal:
                return verdict
        return Verdict(True, f"equal {pred.kind}")
    unmatched = list(gold.items)
    for p in pred.items:
        match = next((g for g in unmatched if _compare_nodes(p, g, symbolic).equal), None)
        if match is None:
            return Verdict(False, f"different {pred.kind}")
        unmatched.remove(match)
    return Verdict(True, f"equal {pred.kind}")


# --- atoms -------------------------------------------------------------------------------


def _exponent_too_big(s: str) -> str | None:
    """Refuse power towers and huge literal exponents before sympy sees them."""
    for caret in re.finditer(r"\^|\*\*", s):
        start = caret.end()
        while start < len(s) and s[start] == " ":
            start += 1
        if start < len(s) and s[start] == "{":
            end = brace_group(s, start, len(s) - start)
            if end is None:
                return "unbalanced braces"
            if "^" in s[start:end]:
                return "power tower"
        literal = _EXPONENT_LITERAL.match(s, start)
        if literal is not None and int(literal.group(1)) > MAX_EXPONENT:
            return "exponent too large"
    return None


def too_complex(answer: str) -> str | None:
    """Why an answer is refused for symbolic evaluation (a safety limit), or None."""
    if len(answer) > MAX_SYMBOLIC_CHARS:
        return "answer too long"
    if _DIGIT_RUN.search(answer):
        return "number too long"
    if answer.count("{") > MAX_BRACE_DEPTH * 4:
        return "too many braces"
    if any(int(n) > MAX_FACTORIAL for n in _FACTORIAL.findall(answer)):
        return "factorial too large"
    return _exponent_too_big(answer)


def _rationalize(s: str) -> str:
    """Decimals as exact fractions, so the parser never makes a float of `0.333`."""
    return _DECIMAL.sub(lambda m: f"(\\frac{{{m[1]}{m[2]}}}{{1{'0' * len(m[2])}}})", s)


@lru_cache(maxsize=4096)
def _to_sympy(answer: str) -> Any:
    """Parse LaTeX into sympy, or None. Cached: the gold repeats across a group's samples."""
    from latex2sympy2_extended import latex2sympy

    try:
        return latex2sympy(_rationalize(answer))
    except Exception:  # the parser raises many unrelated types on bad input
        return None


def _sympy_equal(a: sympy.Basic, b: sympy.Basic) -> bool:
    """Exact symbolic equality; numeric evaluation may only say *no*."""
    import sympy

    if a == b:
        return True
    if isinstance(a, sympy.Equality) or isinstance(b, sympy.Equality):
        if not (isinstance(a, sympy.Equality) and isinstance(b, sympy.Equality)):
            return False
        da, db = a.lhs - a.rhs, b.lhs - b.rhs
        ratio = sympy.simplify(da / db)
        return bool(ratio.is_number and ratio != 0) or _sympy_equal(da, db)
    if isinstance(a, sympy.MatrixBase) or isinstance(b, sympy.MatrixBase):
        if not (isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase)):
            return False
        return a.shape == b.shape and all(_sympy_equal(x, y) for x, y in zip(a, b, strict=True))
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return bool(a == b)
    if a.free_symbols != b.free_symbols:
        return False
    diff = a - b
    if _clearly_nonzero(diff):
        return False
    if diff.free_symbols and _max_power(diff) > MAX_SYMBOLIC_POWER:
        return False  # undecidable cheaply: expanding (x+1)^4000 takes seconds
    if sympy.count_ops(diff) > MAX_OPS:
        return sympy.expand(diff) == 0
    return sympy.expand(diff) == 0 or bool(sympy.simplify(diff) == 0)


def _clearly_nonzero(diff: sympy.Expr) -> bool:
    """True when `diff` is visibly not zero at a few exact points (numeric rejection only)."""
    import sympy

    symbols = sorted(diff.free_symbols, key=str)
    for offset in REJECT_POINTS:
        point = {s: sympy.Rational(2 * i + 3, offset + i) for i, s in enumerate(symbols)}
        value = diff.subs(point) if point else diff
        if not value.is_number:
            continue
        approx = value.evalf(REJECT_PRECISION)
        if approx.is_comparable and abs(approx) > REJECT_THRESHOLD:
            return True
    return False


def _max_power(expr: sympy.Expr) -> int:
    import sympy

    powers = [abs(int(p.exp)) for p in expr.atoms(sympy.Pow) if p.exp.is_Integer]
    return max(powers, default=0)


def _compare_atoms(pred: str, gold: str, symbolic: bool) -> Verdict:
    if key(pred) == key(gold):
        return Verdict(True, "same answer")
    letters = choice_letter(pred), choice_letter(gold)
    if letters[1] is not None:
        return Verdict(
            letters[0] == letters[1],
            "same choice" if letters[0] == letters[1] else "different choice",
        )
    numbers = parse_number(pred), parse_number(gold)
    if numbers[0] is not None and numbers[1] is not None:
        same = numbers[0] == numbers[1]
        return Verdict(same, "equal numbers" if same else "different numbers")
    if _WORDS.fullmatch(pred) and _WORDS.fullmatch(gold):
        same = pred.strip().lower() == gold.strip().lower()
        return Verdict(same, "same text" if same else "different text")
    if _BASE_N.search(pred) or _BASE_N.search(gold):
        return Verdict(False, "different base-n numbers")
    if not symbolic:
        return Verdict(False, "different answers (symbolic comparison off)")
    refused = too_complex(pred) or too_complex(gold)
    if refused is not None:
        return Verdict(False, f"not evaluated: {refused}")
    a, b = _to_sympy(pred), _to_sympy(gold)
    if b is None:
        return Verdict(False, "unparseable gold", gold_unparseable=True)
    if a is None:
        return Verdict(False, "unparseable answer")
    try:
        same = _sympy_equal(a, b)
    except Exception:  # sympy raises many types (TypeError, RecursionError...) on odd trees
        return Verdict(False, "symbolic comparison failed")
    return Verdict(same, "symbolically equal" if same else "different expressions")


def compare(pred: str, gold: str, *, symbolic: bool = True) -> Verdict:
    """Compare a predicted answer with the gold answer (both as extracted, un-normalised)."""
    if len(pred) > MAX_ANSWER_CHARS or len(gold) > MAX_ANSWER_CHARS:
        return Verdict(False, "not evaluated: answer too long")
    p, g = normalize(pred), normalize(gold)
    if not p:
        return Verdict(False, "empty answer")
    if key(p) == key(g):
        return Verdict(True, "same answer")
    pred_node, gold_node = _parse(p), _parse(g)
    if _size(pred_node) > MAX_ELEMENTS or _size(gold_node) > MAX_ELEMENTS:
        return Verdict(False, "not evaluated: too many elements")
    return _compare_nodes(pred_node, gold_node, symbolic)


def is_equivalent(pred: str, gold: str, *, symbolic: bool = True) -> bool:
    """True when `pred` and `gold` denote the same answer."""
    return compare(pred, gold, symbolic=symbolic).equal
