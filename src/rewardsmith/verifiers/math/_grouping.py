"""Answers as keys: group completions by the answer they commit to (majority vote, best-of-N
clustering) with the math reward's own rules.

`committed_answer` is the extraction the reward uses (hedges, restatements and answers not in
finished form give no answer), except that words the completion does not mark as its answer
("hmm") are no answer either, where the reward would read them against a text gold;
`answer_key` is a canonical key (equal keys are the same answer: `0.5` and `\\frac{2}{4}`
share `n:1/2`; `x = \\frac12` is `x=n:1/2`, for it is not `y = \\frac12`); `same_answer`
decides the pairs keys cannot (`\\sqrt{12}` and `2\\sqrt{3}`, `x = \\frac12` and `0.5`);
`answer_buckets` says which pairs are worth asking (answers `same_answer` calls equal share a
bucket: their values agree to 12 digits). Group by key first, then compare keys
pairwise only inside a bucket: N answers never cost N^2 comparisons unless N different
answers agree to 12 digits.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from fractions import Fraction

import mpmath

from ._answer import Answer, expression_tree, parse_answer
from ._config import MathConfig
from ._equivalence import MAX_ANSWER_CHARS, _as_interval, compare, label_variable
from ._extract import Extraction, extract_answer, qualified
from ._form import absolute_operations
from ._latex import Node
from ._normalize import key, normalize, parse_number
from ._numeric import (
    MAX_SYMBOLS,
    OutOfTime,
    Unevaluable,
    precision_for,
    symbols,
    time_limit,
    value_of,
)

__all__ = [
    "BUCKET_DIGITS",
    "answer_buckets",
    "answer_key",
    "committed_answer",
    "no_answer_left",
    "same_answer",
]

BUCKET_DIGITS = 12
"""Significant digits of the values that put answers in a bucket. Equal answers agree to all
of them (the numeric screen compares 60 and more); different ones rarely do."""

_DEFAULT = MathConfig()
UNMARKED = frozenset(("plain", "last_number"))
"""Extraction sources of an answer the completion did not mark (the whole short text, the
final line's last value)."""

_PRINTS_NOTHING = (
    r"\\[hv]space\*?\s*\{[^{}]*\}",  # \hspace{1em}, \vspace*{2pt}
    r"\\(?:m?kern|[hmv]skip)\s*[-+]?[\d.]*\s*[a-z]{2}",  # \kern1em, \mkern-3mu
    r"\\(?:neg)?(?:en|thin|med|thick)space(?![a-zA-Z])",  # \enspace, \negthinspace
    r"\\(?:hfill|vfill|newline)(?![a-zA-Z])",
    r"\\\\",  # a line break
    r"\\(?:[ >]|$)",  # `\ ` (its space stripped with the answer's), `\>`
    r"\\(?:text)?color\s*\{[^{}]*\}",  # the colour of `\color{red}{...}`: its braces stay
    r"\\ensuremath(?![a-zA-Z])",  # its braces stay
    r"\\rule\s*(?:\[[^\]]*\])?\s*\{[^{}]*\}\s*\{[^{}]*\}",  # \rule{1em}{0pt}
)
"""LaTeX that prints nothing, or nothing that is an answer, beyond what `normalize` already
drops (`\\,`, `\\quad`, `~`, `\\phantom{..}`, `\\text{}`...): a new spelling is one more
entry. Used only to decide whether an answer is there, so keys and verdicts do not move."""
_INVISIBLE = re.compile("|".join(_PRINTS_NOTHING))
_UNIT_MARK = re.compile(r"\\unit\{[^{}]*\}")


def committed_answer(
    completion: str, config: MathConfig = _DEFAULT, *, prompt: str | None = None
) -> Extraction:
    """The one answer a completion commits to, or no answer (with the reason) when it hedges,
    restates the question, still carries doubt, a negation or a qualifier ("5, or maybe 6",
    "not 5", "at least 5"), leaves nothing visible but a unit, if that (`no_answer_left`:
    `\\text{}`, `\\enspace`, `\\$`), or is not in finished form
    (`\\binom{31}{28}`, `16-3-4`: there is no gold to compare forms with, so any operation
    left on numbers counts). Words the completion does not mark as its answer ("hmm", "no
    idea": no box, no "the answer is") are no answer either: the reward may read them against
    a text gold, but without a gold they would win a vote for saying nothing."""
    with time_limit():
        got = extract_answer(completion, config, prompt=prompt)
    if got.answer is None:
        return got
    if qualified(got.answer):  # "5, or maybe 6", "not 5": the reward's 0 for any gold
        return Extraction(None, got.source, "no answer: hedged or qualified", got.candidates)
    missing = no_answer_left(got.answer)
    if missing:
        return Extraction(
            None, got.source, f"no answer: {got.source} answer {missing}", got.candidates
        )
    if got.source in UNMARKED and parse_answer(normalize(got.answer)).kind == "text":
        return Extraction(None, got.source, "no answer: unmarked words", got.candidates)
    if not config.finished_form:
        return got
    left = absolute_operations(normalize(got.answer), config)
    if left:
        return Extraction(
            None, got.source, "no answer: not evaluated: " + ", ".join(sorted(left)), got.candidates
        )
    return got


def no_answer_left(answer: str) -> str | None:
    """Why a written answer is still no answer: "empty" when nothing visible remains of its
    key once LaTeX that prints nothing and format characters (U+200B) are removed, "only a
    unit" when a unit is all that remains (`\\$`, `^\\circ`); None for an answer. Boxes like
    these from many samples would share one key and outvote a real answer."""
    shown = "".join(c for c in answer if unicodedata.category(c) != "Cf")
    visible = _INVISIBLE.sub("", shown)
    if not answer_key(visible):
        return "empty"
    structure = parse_answer(normalize(visible))
    if structure.kind == "expr" and not _UNIT_MARK.sub("", structure.text).strip():
        return "only a unit"
    return None


def _key(answer: Answer) -> str:
    if answer.kind == "expr":
        number = parse_number(answer.text) if answer.tree is None else None
        if number is not None and answer.unit is not None:
            dims = ",".join(f"{name}^{power}" for name, power in answer.unit.dims)
            return f"n:{number * answer.unit.factor}[{dims}]"
        if number is not None:
            return f"n:{number}"
        return key(answer.text) + (f"[{answer.unit.text}]" if answer.unit else "")
    if answer.kind in ("set", "list", "union"):
        return "{" + ",".join(sorted({_key(item) for item in answer.items})) + "}"
    if answer.kind == "record":  # `AB=4, CD=5`: each value under its label, in any order
        labelled = zip(answer.labels, answer.items, strict=True)
        pairs = sorted(f"{label}={_key(item)}" for label, item in labelled)
        return f"record({','.join(pairs)})"
    if answer.kind in ("tuple", "matrix"):
        inner = ",".join(_key(item) for item in answer.items)
        return f"{answer.kind}{answer.brackets}({inner})"
    if answer.kind in ("relation", "chain", "approx"):  # `x \\le 5`, `x = 2+3 = 5`, `a \\approx b`
        sides = [_key(item) for item in answer.items]
        ops = answer.ops or ("=" if answer.kind == "chain" else "\\approx",) * (len(sides) - 1)
        joined = "".join(f"{op}{side}" for op, side in zip(ops, sides[1:], strict=True))
        return f"{answer.kind}({sides[0]}{joined})"
    return f"{answer.kind}:{key(answer.text)}:{answer.value}"


def answer_key(answer: str) -> str:
    """A canonical key for an extracted answer: equal keys are the same answer. Different keys
    may still be the same answer (`\\sqrt{12}`, `2\\sqrt{3}`): ask `same_answer`."""
    structure = parse_answer(normalize(answer))
    if structure.kind in ("set", "list") and len(structure.items) == 1:
        structure = structure.items[0]
    if structure.kind == "record":  # a record's labels are part of it
        return _key(structure)
    plain = _key(replace(structure, labels=()))
    name = label_variable(structure.labels[0]) if len(structure.labels) == 1 else None
    return f"{name}={plain}" if name in ("x", "y", "z") else plain  # `x = 4` is not `y = 4`


def same_answer(a: str, b: str, *, symbolic: bool = True) -> bool:
    """Whether two extracted answers are the same (symmetric; units converted, labels and
    order of set elements ignored). Like the reward, it gives up (False) past the numeric
    time limit."""
    return compare(a, b, symbolic=symbolic).equal and compare(b, a, symbolic=symbolic).equal


# --- buckets --------------------------------------------------------------------------------


def _fingerprint(value: mpmath.mpc, digits: int) -> str:
    """A value to `BUCKET_DIGITS` significant digits; parts below the rounding noise of the
    working precision (`\\sin\\pi`, the imaginary dust of a real root) are zero."""
    value = mpmath.mpc(value)
    parts = [value.real, value.imag]
    noise = max(mpmath.mpf(1), max(abs(p) for p in parts)) * mpmath.mpf(10) ** (-(digits // 2))
    re_part, im_part = (mpmath.mpf(0) if abs(p) <= noise else p for p in parts)
    text = mpmath.nstr(re_part, BUCKET_DIGITS)
    return text if im_part == 0 else f"{text}{mpmath.nstr(im_part, BUCKET_DIGITS)}i"


def _renamed(node: Node, names: dict[str, str]) -> Node:
    if node.kind == "sym":
        return Node("sym", (), names[str(node.value)])
    if not node.args:
        return node
    return Node(node.kind, tuple(_renamed(arg, names) for arg in node.args), node.value)


def _points(names: list[str], digits: int) -> dict[str, mpmath.mpc]:
    """The first of the numeric screen's evaluation points (irrational, both signs)."""
    with mpmath.workdps(digits):
        return {name: (k + 2) / mpmath.pi + mpmath.sqrt(2) / 7 for k, name in enumerate(names)}


def _expression_leaf(answer: Answer, converted: bool) -> str:
    """The value of one expression (its unit's factor applied when `converted`, a number word's
    always), or its key when it has none we can compute."""
    unit = answer.unit
    factor = unit.factor if unit is not None and (converted or unit.scale) else Fraction(1)
    number = parse_number(answer.text) if answer.tree is None else None
    if number is not None:
        with mpmath.workdps(30):
            scaled = number * factor
            return "v:" + _fingerprint(mpmath.mpf(scaled.numerator) / scaled.denominator, 30)
    tree = answer.tree or expression_tree(answer.text)
    fallback = "k:" + key(answer.text)
    if tree is None:
        return fallback
    found = sorted(symbols(tree))
    if len(found) > MAX_SYMBOLS:
        return fallback
    fold = len({n.lower() for n in found}) == len(found)  # `3R^2` is `3r^2`, as in the screen
    names = {n: n.lower() if fold else n for n in found}
    ordered = sorted(set(names.values()))
    tree = _renamed(tree, names)
    try:
        digits = precision_for((tree,), (_points(ordered, 30),))
        with mpmath.workdps(digits):
            value = value_of(tree, _points(ordered, digits)) * mpmath.mpf(factor.numerator)
            value /= factor.denominator
    except OutOfTime:
        raise
    except Unevaluable:
        return fallback
    except (ZeroDivisionError, OverflowError, ValueError, TypeError):
        return fallback
    prefix = f"f({','.join(ordered)}):" if ordered else "v:"
    return prefix + _fingerprint(value, digits)


def _leaves(answer: Answer, converted: bool) -> set[str]:
    """The values an answer is made of, as `_expression_leaf` writes them (a set: a repeated
    element counts once, as in set comparison)."""
    kind = answer.kind
    if kind == "expr":
        return {_expression_leaf(answer, converted)}
    if kind in ("text", "choice"):
        return {"t:" + answer.text.upper()}
    if kind == "time":
        hours, minutes, _ = answer.value  # type: ignore[misc]
        return {f"time:{hours % 12 * 60 + minutes}"}  # 4:30 p.m. is 16:30
    if kind in ("ratio", "base"):
        return {f"{kind}:{answer.value}"}
    if kind == "relation":
        interval = _as_interval(answer)
        if interval is not None:
            return _leaves(interval, converted)
        return {"relation:" + ",".join(answer.ops)}
    if kind == "chain":
        return _leaves(answer.items[-1], converted)
    if kind == "approx":
        return _leaves(answer.items[0], converted)
    return {leaf for item in answer.items for leaf in _leaves(item, converted)}


def answer_buckets(answer: str) -> frozenset[str]:
    """The buckets of an extracted answer: two answers `same_answer` calls equal share at least
    one; two different answers share one only when their values agree to `BUCKET_DIGITS`
    digits (or for structures: relations, text). So a clustering compares pairwise only
    answers that share a bucket.

    A bucket is the set of values an answer is made of (set elements, tuple entries,
    interval ends; a chain's last value), each to 12 significant digits, once with units
    converted and once as written (a unit on one side only is ignored in comparison). An
    approximation (`\\frac{70}{9} \\approx 7.78`) is in the buckets of both its parts.
    Expressions in variables are valued at a fixed irrational point. An answer whose values
    take longer than the numeric time limit falls in no bucket: it is compared by key only.

    The guarantee has one hole: a value within rounding noise of a 12-digit boundary may
    round differently in two forms; such answers then stay apart (never wrongly together).
    """
    if len(answer) > MAX_ANSWER_CHARS:
        return frozenset()
    structure = parse_answer(normalize(answer))
    parts = list(structure.items) if structure.kind == "approx" else [structure]
    buckets: set[str] = set()
    try:
        with time_limit():
            for part in parts:
                for converted in (False, True):
                    leaves = _leaves(part, converted)
                    buckets.add("{" + ",".join(sorted(leaves)) + "}")
                    if part.labels and any(leaf.startswith("f(") for leaf in leaves):
                        buckets.add("{relation:=}")  # `y = 2x + 3` is the line `2x - y + 3 = 0`
    except Unevaluable:  # past the time limit: compared by key only
        return frozenset()
    return frozenset(buckets)
