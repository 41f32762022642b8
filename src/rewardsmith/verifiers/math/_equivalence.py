"""Are two extracted answers the same mathematical object?

Cheapest decision first: equal canonical strings, then the structure (`_answer`: sets are
order-free, tuples and intervals ordered and bracket-exact, matrices cell by cell, relations
up to a constant factor, labels ignored but where they name variables or a record's parts),
then exact numbers (`Fraction`), and for what is left the numeric screen (`_numeric`): both
expressions evaluated at the same points with as many digits as the numbers written need.
No symbolic simplification, so no comparison stalls.

Nothing is accepted by float closeness: 3.14 is not pi, 1000001 is not 1000000, 0.333 is
not 1/3. The one tolerance is for an approximation the answer itself marks (`\\frac{70}{9}
\\approx 7.78`): it may match a decimal gold when it rounds the exact value it follows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import lru_cache
from typing import Literal

import mpmath

from ._answer import Answer, expression_tree, is_name, parse_answer, split_top
from ._latex import Node
from ._normalize import is_decimal, key, normalize, parse_number
from ._numeric import OutOfTime, Unevaluable, ratio_sign, same_value, symbols, time_limit, value_of

__all__ = [
    "MAX_ANSWER_CHARS",
    "Verdict",
    "compare",
    "is_equivalent",
    "label_variable",
    "too_complex",
]

MAX_ANSWER_CHARS = 1_000
"""Answers longer than this are refused outright (no real final answer is that long)."""
MAX_STRUCTURE = 256
"""Most parts an answer's structure may have (set elements, tuple entries, matrix cells and
the parts inside them)."""
MAX_EVALUATIONS = 100
"""Most numeric comparisons one comparison may start (a set of 60 radicals against another
must not take minutes)."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of one comparison and why."""

    equal: bool
    reason: str


@dataclass
class _Budget:
    """What one comparison may still do: numeric evaluations left, and whether units count."""

    evaluations: int = MAX_EVALUATIONS
    units: bool = True
    exhausted: bool = field(default=False)

    def spend(self) -> bool:
        self.evaluations -= 1
        if self.evaluations < 0:
            self.exhausted = True
        return not self.exhausted


_SAME = Verdict(True, "same answer")


def too_complex(answer: str) -> str | None:
    """Why an answer (normalised) is refused before any evaluation, or None."""
    if len(answer) > MAX_ANSWER_CHARS:
        return "answer too long"
    structure = parse_answer(answer)
    if structure.size() > MAX_STRUCTURE:
        return "too many elements"
    return None


# --- numbers and expressions --------------------------------------------------------------


@lru_cache(maxsize=8192)
def _same_expression(a: str, b: str) -> Verdict:
    """Two expressions (unit already split off), by exact number or by the numeric screen."""
    if key(a) == key(b):
        return _SAME
    numbers = parse_number(a), parse_number(b)
    if numbers[0] is not None and numbers[1] is not None:
        same = numbers[0] == numbers[1]
        return Verdict(same, "equal numbers" if same else "different numbers")
    trees = expression_tree(a), expression_tree(b)
    if trees[1] is None:
        return Verdict(False, "the gold is not an expression we evaluate")
    if trees[0] is None:
        return Verdict(False, "unparseable answer")
    return _same_trees(trees[0], trees[1])


def _same_trees(a: Node, b: Node) -> Verdict:
    """The numeric screen's verdict; `OutOfTime` passes through, so that `_same_expression`'s
    cache never keeps a verdict the clock decided."""
    try:
        same = same_value(a, b)
    except OutOfTime:
        raise
    except Unevaluable as exc:
        return Verdict(False, f"not evaluated: {exc}")
    return Verdict(same, "equal values" if same else "different values")


def _tree(answer: Answer, factor: Fraction = Fraction(1)) -> Node | None:
    tree = answer.tree or expression_tree(answer.text)
    if tree is None or factor == 1:
        return tree
    return Node("mul", (tree, Node("num", (), factor)))


def _factor(answer: Answer, other: Answer, budget: _Budget) -> Fraction:
    """What `answer`'s unit multiplies its value by: a number word always, a unit only when
    both sides have one (a unit on one side only is ignored: `5` matches `5 cm`)."""
    unit = answer.unit
    if unit is None or not budget.units:
        return Fraction(1)
    if unit.scale or (other.unit is not None and not other.unit.scale):
        return unit.factor
    return Fraction(1)


def _compare_expressions(a: Answer, b: Answer, budget: _Budget) -> Verdict:
    """Two values, their units converted when both have one."""
    dimensioned = [x.unit for x in (a, b) if x.unit is not None and not x.unit.scale]
    if budget.units and len(dimensioned) == 2 and not dimensioned[0].convertible(dimensioned[1]):
        return Verdict(False, f"different units ({dimensioned[0].text} vs {dimensioned[1].text})")
    factors = _factor(a, b, budget), _factor(b, a, budget)
    numbers = parse_number(a.text), parse_number(b.text)
    if a.tree is None and b.tree is None and numbers[0] is not None and numbers[1] is not None:
        same = numbers[0] * factors[0] == numbers[1] * factors[1]
        return Verdict(same, "equal numbers" if same else "different numbers")
    if not budget.spend():
        return Verdict(False, "not evaluated: too many comparisons")
    try:
        return _compare_values(a, b, factors)
    except OutOfTime as exc:  # kept by no cache: with more time the verdict may differ
        return Verdict(False, f"not evaluated: {exc}")


def _compare_values(a: Answer, b: Answer, factors: tuple[Fraction, Fraction]) -> Verdict:
    if a.tree is None and b.tree is None and factors[0] == factors[1]:
        return _same_expression(a.text, b.text)
    trees = _tree(a, factors[0]), _tree(b, factors[1])
    if trees[1] is None:
        return Verdict(False, "the gold is not an expression we evaluate")
    if trees[0] is None:
        return Verdict(False, "unparseable answer")
    return _same_trees(trees[0], trees[1])


def _has_variables(answer: Answer) -> bool:
    tree = _tree(answer)
    return tree is not None and bool(symbols(tree))


def _expression(text: str) -> Answer:
    return Answer("expr", text=text)


# --- relations ----------------------------------------------------------------------------

_FLIP = {">": "<", "\\ge": "\\le"}


def _canonical_relation(relation: Answer) -> tuple[str, Node] | None:
    """`lhs op rhs` as (op, lhs - rhs) with op one of = \\ne < \\le (`x > 5` is `5 - x < 0`)."""
    if len(relation.items) != 2:
        return None
    op = relation.ops[0]
    left, right = (expression_tree(side.text) for side in relation.items)
    if left is None or right is None:
        return None
    if op in _FLIP:
        op, left, right = _FLIP[op], right, left
    return op, Node("add", (left, Node("neg", (right,))))


def _as_interval(relation: Answer) -> Answer | None:
    """`x \\ge 5` -> [5, \\infty); `-2 \\le x < 7` -> [-2, 7); `1 \\le |z| \\le 2` -> [-2, -1]
    \\cup [1, 2]; None when not of that form."""
    texts = [item.text for item in relation.items]
    ops = list(relation.ops)
    if len(ops) == 2 and ops[0] in _FLIP and ops[1] in _FLIP:
        texts, ops = texts[::-1], [_FLIP[op] for op in ops[::-1]]
    if len(ops) == 2 and all(op in ("<", "\\le") for op in ops):
        absolute = re.fullmatch(r"\|(.+)\|", texts[1])
        if absolute is not None and is_name(absolute.group(1)):
            return _symmetric_union(texts[0], texts[2], ops)
        if not is_name(texts[1]):
            return None
        low, high = texts[0], texts[2]
        brackets = ("[" if ops[0] == "\\le" else "(") + ("]" if ops[1] == "\\le" else ")")
    elif len(ops) == 1 and ops[0] in ("<", "\\le", ">", "\\ge"):
        op = ops[0]
        if _named(texts[1]) and not _named(texts[0]):
            texts, op = texts[::-1], {"<": ">", "\\le": "\\ge", ">": "<", "\\ge": "\\le"}[op]
        absolute = re.fullmatch(r"\|(.+)\|", texts[0])
        if absolute is not None and is_name(absolute.group(1)):
            bound = texts[1]
            if op in ("<", "\\le"):  # |x| < b is (-b, b)
                return _interval(f"-({bound})", bound, "[]" if op == "\\le" else "()")
            low = "<" if op == ">" else "\\le"  # |x| > b is (-inf, -b) and (b, inf)
            return _symmetric_union(bound, "\\infty", [low, "<"])
        if not is_name(texts[0]):
            return None
        closed = op in ("\\le", "\\ge")
        if op in ("<", "\\le"):
            low, high = "-\\infty", texts[1]
            brackets = "(" + ("]" if closed else ")")
        else:
            low, high = texts[1], "\\infty"
            brackets = ("[" if closed else "(") + ")"
    else:
        return None
    return _interval(low, high, brackets)


def _named(text: str) -> bool:
    """A name, or the absolute value of one (`x`, `|z|`)."""
    absolute = re.fullmatch(r"\|(.+)\|", text)
    return is_name(absolute.group(1) if absolute else text)


def _interval(low: str, high: str, brackets: str) -> Answer:
    return Answer("tuple", items=(_expression(low), _expression(high)), brackets=brackets)


def _symmetric_union(low: str, high: str, ops: list[str]) -> Answer:
    """`a < |x| \\le b`: [-b, -a) and (a, b], mirrored brackets."""
    left, right = ("[" if ops[0] == "\\le" else "("), ("]" if ops[1] == "\\le" else ")")
    mirrored = {"[": "]", "(": ")", "]": "[", ")": "("}
    negative = _interval(f"-({high})", f"-({low})", mirrored[right] + mirrored[left])
    return Answer("union", items=(negative, _interval(low, high, left + right)))


def _compare_relations(a: Answer, b: Answer, budget: _Budget) -> Verdict:
    intervals = _as_interval(a), _as_interval(b)
    if intervals[0] is not None and intervals[1] is not None:
        return _compare(intervals[0], intervals[1], budget)
    if (intervals[0] is None) != (intervals[1] is None):
        return Verdict(False, "one relation is solved for its variable, the other is not")
    canonical = _canonical_relation(a), _canonical_relation(b)
    if canonical[0] is None or canonical[1] is None:
        if a.ops != b.ops or len(a.items) != len(b.items):
            return Verdict(False, "different relations")
        return _ordered(a.items, b.items, budget, "relation")
    (op_a, diff_a), (op_b, diff_b) = canonical
    if op_a != op_b:
        return Verdict(False, "different relations")
    if not budget.spend():
        return Verdict(False, "not evaluated: too many comparisons")
    try:
        sign = ratio_sign(diff_a, diff_b)
    except Unevaluable as exc:
        return Verdict(False, f"not evaluated: {exc}")
    if sign is None or (sign < 0 and op_a in ("<", "\\le")):
        return Verdict(False, "different relations")
    return Verdict(True, "equivalent relations")


# --- structure ----------------------------------------------------------------------------


def _ordered(xs: tuple[Answer, ...], ys: tuple[Answer, ...], budget: _Budget, kind: str) -> Verdict:
    if len(xs) != len(ys):
        return Verdict(False, f"{len(xs)} vs {len(ys)} elements")
    for x, y in zip(xs, ys, strict=True):
        verdict = _compare(x, y, budget)
        if not verdict.equal:
            return verdict
    return Verdict(True, f"equal {kind}")


def _spelling(answer: Answer) -> tuple[object, ...]:
    """Two answers with the same spelling are the same answer, without evaluating them."""
    unit = answer.unit.text if answer.unit else None
    return (answer.kind, key(answer.text), unit, answer.items, answer.value, answer.tree)


def _unique(items: tuple[Answer, ...], budget: _Budget) -> list[Answer]:
    kept: list[Answer] = []
    spellings: set[tuple[object, ...]] = set()
    for item in items:
        spelling = _spelling(item)
        if spelling in spellings:
            continue
        if not any(_compare(item, k, budget).equal for k in kept):
            kept.append(item)
            spellings.add(spelling)
    return kept


def _unordered(xs: tuple[Answer, ...], ys: tuple[Answer, ...], budget: _Budget) -> Verdict:
    """Sets: the same elements, each once (a repeated element counts once). Elements spelled
    alike are paired first, so a reordered set of radicals costs no evaluation."""
    left, right = _unique(xs, budget), _unique(ys, budget)
    if len(left) != len(right):
        return Verdict(False, "different number of answers")
    unmatched = list(right)
    for x in left:
        spelling = _spelling(x)
        match = next((y for y in unmatched if _spelling(y) == spelling), None)
        if match is None:
            match = next((y for y in unmatched if _compare(x, y, budget).equal), None)
        if match is None:
            if budget.exhausted:
                return Verdict(False, "not evaluated: too many comparisons")
            return Verdict(False, "different set")
        unmatched.remove(match)
    return Verdict(True, "equal set")


def _chain_value(chain: Answer, budget: _Budget) -> Answer | Verdict:
    """The value a chain `x = a = b = c` ends on, when every step is true."""
    for left, right in zip(chain.items, chain.items[1:], strict=False):
        if not _compare(left, right, budget).equal:
            return Verdict(False, "a step of the chain is false")
    return chain.items[-1]


def _decimals(text: str) -> int | None:
    if parse_number(text) is None or "." not in text:
        return 0 if parse_number(text) is not None else None
    return len(text.rsplit(".", 1)[1])


def _compare_approximation(a: Answer, gold: Answer, budget: _Budget) -> Verdict:
    """`exact \\approx approximation` commits to its exact part, which must match the gold.
    Only a decimal gold with as many places as the approximation may be matched through the
    approximation, and only when that is the exact value rounded to its last place: an
    integer or exact gold never is (`7.6 \\approx 8` is not 8, `\\pi \\approx 3` is not 3)."""
    exact, approximation = a.items
    verdict = _compare(exact, gold, budget)
    if verdict.equal or gold.kind != "expr" or approximation.kind != "expr":
        return verdict
    places = _decimals(approximation.text)
    if not places or _decimals(gold.text) != places:
        return verdict
    tolerance = f"\\frac{{1}}{{2 \\cdot 10^{{{places}}}}}"  # rounding: half the last place
    within = Answer(
        "relation",
        items=(
            Answer("expr", text=f"|{exact.text} - ({approximation.text})|"),
            Answer("expr", text=tolerance),
        ),
        ops=("<",),
    )
    if exact.kind != "expr" or not _holds_at_most(within, budget):
        return Verdict(False, "the approximation does not round the exact value")
    return _compare(approximation, gold, budget)


def _holds_at_most(relation: Answer, budget: _Budget) -> bool:
    """Whether `a <= b` holds numerically (both sides constants)."""
    trees = [expression_tree(item.text) for item in relation.items]
    if any(t is None for t in trees) or not budget.spend():
        return False
    try:
        with mpmath.workdps(50):
            left, right = (value_of(t, {}) for t in trees if t is not None)
        return bool(mpmath.re(left) <= mpmath.re(right) * (1 + mpmath.mpf(10) ** -40))
    except (Unevaluable, ZeroDivisionError, ValueError, TypeError):
        return False


def _time_minutes(answer: Answer, twelve_hour: bool) -> int:
    """Minutes after midnight; `twelve_hour` reads a time without a.m./p.m. on a 12-hour
    clock (for a gold that does not say which half of the day either)."""
    hours, minutes, meridiem = answer.value  # type: ignore[misc]
    if meridiem is not None:
        hours = hours % 12 + (12 if meridiem == "p" else 0)
    elif twelve_hour:
        hours %= 12
    return hours * 60 + minutes


def _same_time(pred: Answer, gold: Answer) -> bool:
    """A predicted time without a.m./p.m. is read on a 24-hour clock (`4:30` is not
    `4:30 p.m.`: dropping the half of the day would earn both golds); against a gold without
    one, a committed `4:30 p.m.` matches `4:30`."""
    if gold.value[2] is None and pred.value[2] is not None:  # type: ignore[index]
        return _time_minutes(pred, True) % 720 == _time_minutes(gold, True)
    return _time_minutes(pred, False) == _time_minutes(gold, False)


def _compare_simple(a: Answer, b: Answer) -> Verdict:
    """Text, choices, times, ratios and base-n numbers: compared as what they are."""
    if a.kind == "time":
        same = _same_time(a, b)
        return Verdict(same, "same time" if same else "different times")
    if a.kind == "ratio":
        same = a.value == b.value
        return Verdict(same, "same ratio" if same else "different ratios")
    if a.kind == "base":
        same = a.value == b.value
        return Verdict(same, "same base-n number" if same else "different base-n numbers")
    same = a.text == b.text
    return Verdict(same, f"same {a.kind}" if same else f"different {a.kind}")


# --- labels -------------------------------------------------------------------------------

_COORDINATES = ("x", "y", "z")


def label_variable(label: str) -> str | None:
    """A label that names a variable (`x`, `x_1`, `\\theta`), as compared (case ignored, as in
    expressions); None for other labels (`AB`, `f(x)`, `(p,q)`), which only describe a value."""
    tree = expression_tree(label)
    return key(label).casefold() if tree is not None and tree.kind == "sym" else None


def _clash(a: str, b: str) -> bool:
    """Two labels that name different variables (a record's parts: `a=2, b=3` is not
    `x=2, y=3`)."""
    names = label_variable(a), label_variable(b)
    return names[0] is not None and names[1] is not None and names[0] != names[1]


def _part_names(answer: Answer) -> tuple[str, ...] | None:
    """The name of each part: a record's labels (`q=2, p=3`), a tuple's label split
    (`(p,q)=(2,3)`); None when the parts are not named."""
    if answer.kind == "record":
        return answer.labels
    if answer.kind == "tuple" and len(answer.labels) == 1 and answer.labels[0][:1] == "(":
        names = tuple(key(name) for name in split_top(answer.labels[0][1:-1], ","))
        if len(names) == len(answer.items) and len(set(names)) == len(names):
            return names
    return None


def _in_order(record: Answer, names: tuple[str, ...]) -> Answer:
    """A record's values in the order `names` gives (`q=2, p=3` as `p, q`)."""
    items = tuple(record.items[record.labels.index(name)] for name in names)
    return replace(record, items=items, labels=names)


def _record_order(record: Answer, other: Answer) -> Answer | Verdict:
    """A record's values in the order of what it is compared with, or why they differ: by
    name against named parts (`q=2, p=3` is `(p,q)=(3,2)`; other variables are another
    answer), coordinates in the order x, y, z against unnamed parts (`y=3, x=2` is `(2,3)`),
    other names in written order (`AB=4, CD=5` is `4, 5`)."""
    names = _part_names(other)
    if names is not None and set(names) == set(record.labels):
        return _in_order(record, names)
    if names is not None and any(map(_clash, record.labels, names)):
        return Verdict(False, "different labels")
    if names is None and not other.labels and set(record.labels) <= set(_COORDINATES):
        return _in_order(record, tuple(c for c in _COORDINATES if c in record.labels))
    return record


def _label_clash(a: Answer, b: Answer) -> Verdict | None:
    """A value named by a different coordinate on each side is another answer (`x = 4` for
    `y = 4`, `x = 2+2 = 4` too; other names only describe it). Only for whole answers:
    inside a set (`x = 1 or x = 2`) labels are ignored, as `answer_key` ignores them."""
    if len(a.labels) == 1 and len(b.labels) == 1 and _clash(a.labels[0], b.labels[0]):
        if not {label_variable(a.labels[0]), label_variable(b.labels[0])} <= set(_COORDINATES):
            return None  # `k = 5` for `n = 5`, `x_1 = 4` for `x = 4`: names that describe
        return Verdict(False, f"different labels ({a.labels[0]} vs {b.labels[0]})")
    return None


def _alone(answer: Answer) -> Answer:
    """The one item of a set or list of one (`\\{x=4\\}` is `x=4`), else the answer."""
    one = answer.kind in ("set", "list") and len(answer.items) == 1
    return answer.items[0] if one else answer


def _single(answer: Answer, budget: _Budget) -> Answer:
    """A set of one value is that value (`\\frac12 \\text{ or, equivalently, } 0.5` too; not
    `y=4 \\text{ or } x=4`, two lines)."""
    while answer.kind in ("set", "list") and answer.items:
        first, *rest = answer.items
        if any(_label_clash(item, first) for item in rest):
            break
        if not all(_compare(item, first, budget).equal for item in rest):
            break  # stops at the first element that differs: one comparison for `1, 2, ...`
        answer = first
    return answer


def _compare(a: Answer, b: Answer, budget: _Budget) -> Verdict:
    if budget.exhausted:
        return Verdict(False, "not evaluated: too many comparisons")
    a, b = _single(a, budget), _single(b, budget)
    if a.kind == "chain":
        value = _chain_value(a, budget)
        if isinstance(value, Verdict):
            return value
        a = value
    if b.kind == "chain":
        b = b.items[-1]
    if a.kind == "record":
        ordered = _record_order(a, b)
        if isinstance(ordered, Verdict):
            return ordered
        a = ordered
    elif b.kind == "record":
        ordered = _record_order(b, a)
        if isinstance(ordered, Verdict):
            return ordered
        b = ordered
    if a.kind == "approx":
        return _compare_approximation(a, b, budget)
    if b.kind == "approx":
        verdict = _compare(a, b.items[0], budget)
        return verdict if verdict.equal else _compare(a, b.items[1], budget)
    if a.kind == "relation" and b.kind == "relation":
        return _compare_relations(a, b, budget)
    if a.kind == "relation" or b.kind == "relation":
        relation, other = (a, b) if a.kind == "relation" else (b, a)
        if (
            relation.ops == ("=",)
            and other.kind == "expr"
            and len(other.labels) == 1
            and _has_variables(other)
        ):  # `y = -x/2 + 3/4` is the line `2x + 4y - 3 = 0`; `x = 3` is a value, not `2x = 6`
            equation = Answer("relation", items=(_expression(other.labels[0]), other), ops=("=",))
            return _compare_relations(
                *((equation, relation) if other is a else (relation, equation)), budget
            )
        interval = _as_interval(relation)
        if interval is not None and other.kind in ("tuple", "union"):
            return _compare(interval, other, budget)
        return Verdict(False, "a relation vs a value")
    if a.kind == "expr" and b.kind == "expr":
        return _compare_expressions(a, b, budget)
    if a.kind == b.kind and a.kind in ("text", "choice", "time", "ratio", "base"):
        return _compare_simple(a, b)
    if {a.kind, b.kind} == {"choice", "text"} or {a.kind, b.kind} == {"choice", "expr"}:
        letters = [x.text.upper() if x.kind != "expr" else x.text for x in (a, b)]
        same = letters[0] == letters[1]
        return Verdict(same, "same choice" if same else "different choice")
    if a.kind in ("set", "list") and b.kind in ("set", "list"):
        return _unordered(a.items, b.items, budget)
    if "union" in (a.kind, b.kind):
        if a.kind != b.kind:
            return Verdict(False, f"{a.kind} vs {b.kind}")
        return _unordered(a.items, b.items, budget)
    sequences = ("record", "tuple", "list")
    if a.kind in sequences and b.kind in sequences:
        if a.kind == b.kind == "tuple" and a.brackets != b.brackets:
            return Verdict(False, f"brackets {a.brackets} vs {b.brackets}")
        if "tuple" in (a.kind, b.kind) and "list" in (a.kind, b.kind):
            tuple_side = a if a.kind == "tuple" else b
            if tuple_side.brackets != "()":
                return Verdict(False, "an interval vs a list")
        return _ordered(a.items, b.items, budget, "tuple")
    if {a.kind, b.kind} == {"matrix", "tuple"}:
        vector, column = (a, b) if a.kind == "tuple" else (b, a)
        if vector.brackets != "()" or any(len(row.items) != 1 for row in column.items):
            return Verdict(False, "tuple vs matrix")
        cells = tuple(row.items[0] for row in column.items)  # `(-2, -14, -7)`, a column
        pairs = (vector.items, cells) if vector is a else (cells, vector.items)
        return _ordered(*pairs, budget, "vector")
    if a.kind == "matrix" and b.kind == "matrix":
        if [len(r.items) for r in a.items] != [len(r.items) for r in b.items]:
            return Verdict(False, "different matrix shapes")
        return _ordered(a.items, b.items, budget, "matrix")
    if "set" in (a.kind, b.kind) or "list" in (a.kind, b.kind):
        return Verdict(False, "different number of answers")
    return Verdict(False, f"{a.kind} vs {b.kind}")


def compare(
    pred: str, gold: str, *, symbolic: bool = True, units: Literal["compare", "ignore"] = "compare"
) -> Verdict:
    """Compare a predicted answer with the gold answer (both as extracted, un-normalised).

    `symbolic=False` decides only what exact text and numbers can: two different
    expressions are then unequal. `units="ignore"` never reads units.
    """
    if len(pred) > MAX_ANSWER_CHARS or len(gold) > MAX_ANSWER_CHARS:
        return Verdict(False, "not evaluated: answer too long")
    p, g = normalize(pred), normalize(gold)
    if not p:
        return Verdict(False, "empty answer")
    if key(p) == key(g):
        return _SAME
    if is_decimal(p) and is_decimal(g):
        same = parse_number(p) == parse_number(g)
        return Verdict(same, "equal numbers" if same else "different numbers")
    a, b = parse_answer(p), parse_answer(g)
    if a.size() > MAX_STRUCTURE or b.size() > MAX_STRUCTURE:
        return Verdict(False, "not evaluated: too many elements")
    clash = _label_clash(_alone(a), _alone(b))
    if clash is not None:
        return clash
    budget = _Budget(MAX_EVALUATIONS if symbolic else 0, units == "compare")
    with time_limit():
        verdict = _compare(a, b, budget)
    if not symbolic and budget.exhausted:
        return Verdict(False, "different answers (symbolic comparison off)")
    return verdict


def is_equivalent(pred: str, gold: str, *, symbolic: bool = True) -> bool:
    """True when `pred` and `gold` denote the same answer (units compared)."""
    return compare(pred, gold, symbolic=symbolic).equal
