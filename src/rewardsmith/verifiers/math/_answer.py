"""The structure of one normalised answer: what kind of object it is and its parts.

`parse_answer("x \\in [-2, 7]")` is an interval; `"(p,q)=(3,2)"` a labelled tuple (the label
is not part of the answer); `"AB=4, CD=5"` a record; `"x = 3 or x = 5"` a set; `"-2 \\le x
\\le 7"` a relation; `"x = 5+5+1 = 7"` a chain; `"\\frac{70}{9} \\approx 7.78"` an exact value
with its approximation; `"5 \\text{ cm}"` an expression with a unit; `"4:30 p.m."` a time;
`"\\text{Evelyn}"` text. Comparing two of them is `_equivalence`'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

from ._latex import WORD_FUNCTIONS, Node, ParseError, parse_expression
from ._normalize import brace_group, choice_letter, is_decimal, parse_number
from ._numeric import symbols
from ._units import Unit, split_unit

__all__ = ["Answer", "expression_tree", "is_name", "parse_answer", "split_top"]

MAX_BRANCHES = 4
"""Most values one expression with `\\pm` stands for."""
MAX_NESTING = 12
"""Deepest structure (sets of tuples of ...) parsed; deeper is read as one opaque expression."""

_OPEN, _CLOSE = "([{", ")]}"
_MATRIX = re.compile(r"^\\begin\{([pbvBV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.S)
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_TIME = re.compile(
    r"^(\d{1,2}):(\d{2})\s*(?:\\unit\{\s*)?(?:([ap])\.?\s*m\.?)?\s*\}?$", re.IGNORECASE
)
_BASE_N = re.compile(r"^(\w+)_\{?(\d+)\}?$")
_TEXT = re.compile(r"[A-Za-z][A-Za-z'.\- ]*")
_TEXT_WORD = re.compile(r"[A-Za-z]{3,}")
_SHORT_WORDS = frozenset(("no", "yes"))
_EMPTY_SET = re.compile(r"\\(?:emptyset|varnothing)")
_REALS = re.compile(r"\\mathbb\s*\{?\s*R\s*\}?|\\R")
"""The set of real numbers: a name the parser does not read as an expression. It equals only
itself (`\\mathbb R`), not the interval `(-\\infty, \\infty)`."""
_RELATION = re.compile(r"\\(?:le|ge|ne|approx|in)(?![a-zA-Z])|[<>=]")


@dataclass(frozen=True)
class Answer:
    """One answer: `kind` and its parts.

    kinds: expr (`text`, maybe `unit`), text, choice, time (`value` = minutes since midnight,
    am/pm or None), ratio (`value` = parts), base (`value` = digits, base), set and list
    (order-free; a list is ordered against a tuple), tuple (`brackets`), matrix (rows of
    tuples), union, record (`labels`), relation (`ops` between `items`), chain (`items`
    joined by =), approx (`items` = exact, approximation).
    """

    kind: str
    text: str = ""
    items: tuple[Answer, ...] = ()
    brackets: str = ""
    unit: Unit | None = None
    labels: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    value: object = None
    tree: Node | None = None
    """For one value of a `\\pm` expression: its tree (its `text` is the whole expression)."""

    def parts(self) -> int:
        """How many answers this is (a set or record of three is three; anything else one)."""
        return len(self.items) if self.kind in ("set", "list", "record") else 1

    def size(self) -> int:
        return 1 + sum(item.size() for item in self.items)


@lru_cache(maxsize=8192)
def expression_tree(text: str) -> Node | None:
    """The parsed tree of an expression, or None when the parser does not read it."""
    if is_decimal(text):  # `7,425,000` (commas the parser does not read)
        value = parse_number(text)
        if value is not None:  # else two numbers (`7.5 8`): the parser refuses them too
            return Node("num", (), value)
    try:
        return parse_expression(text)
    except ParseError:
        return None


def split_top(s: str, sep: str) -> list[str]:
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
        if char == "\\" and s.startswith(("\\begin", "\\end"), i):
            depth += 1 if s.startswith("\\begin", i) else -1
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


def _relation_split(s: str) -> list[str]:
    """`a \\le x < b` -> [a, \\le, x, <, b]: top-level relation operators and what they join."""
    pieces: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(s):
        if s.startswith(("\\{", "\\}"), i):
            i += 2
            continue
        char = s[i]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif depth == 0:
            match = _RELATION.match(s, i)
            if match is not None:
                pieces += [s[start:i].strip(), match.group().strip()]
                i = start = match.end()
                continue
        i += 1
    pieces.append(s[start:].strip())
    return pieces


def is_name(text: str) -> bool:
    """A label that names an answer rather than being part of it: `x`, `x_1`, `f(x)`, `|AB|`,
    `(p,q)`, `S_{MBCN}:S`, `\\frac{NO}{BO}`, `AB`. No numbers, no sums."""
    text = text.strip()
    if not text:
        return False
    if ":" in text:
        return all(is_name(part) for part in text.split(":"))
    if text[0] in "([" and text[-1] in ")]" and _encloses(text):
        return all(is_name(part) for part in split_top(text[1:-1], ","))
    tree = expression_tree(text)
    return tree is not None and _names_only(tree)


def _names_only(node: Node) -> bool:
    if node.kind == "sym" or node.kind == "apply":
        return True
    if node.kind in ("mul", "frac"):
        return all(_names_only(arg) for arg in node.args)
    if node.kind == "func" and node.value == "abs":
        return _names_only(node.args[0])
    return False


def _label(element: str) -> tuple[str | None, str]:
    """(`x`, `5`) for `x = 5`; (None, element) when it is not `name = value`."""
    pieces = _relation_split(element)
    if len(pieces) == 3 and pieces[1] in ("=", "\\in") and is_name(pieces[0]) and pieces[2]:
        return pieces[0].replace(" ", ""), pieces[2]
    return None, element


def _list(elements: list[str], depth: int) -> Answer:
    """A comma list: `1, 2` (order-free), `AB=4, CD=5` (a record), `x=1, x=2` (one name:
    a set of values), `a=4, -8, -10` (the first label names them all)."""
    labelled = [_label(e) for e in elements]
    labels = [label for label, _ in labelled]
    values = tuple(_parse(value, depth + 1) for _, value in labelled)
    named = [label for label in labels if label is not None]
    if len(named) == len(labels) and len(set(named)) == len(named):
        return Answer("record", items=values, labels=tuple(named))
    return Answer("list", items=_flatten(values))


def _flatten(items: tuple[Answer, ...]) -> tuple[Answer, ...]:
    flat: list[Answer] = []
    for item in items:
        flat.extend(item.items if item.kind in ("set", "list") else (item,))
    return tuple(flat)


def _set(elements: list[str], depth: int) -> Answer:
    return Answer("set", items=_flatten(tuple(_parse(e, depth + 1) for e in elements if e)))


def _relation(s: str, pieces: list[str], depth: int) -> Answer:
    values, ops = pieces[0::2], pieces[1::2]
    if "\\approx" in ops:
        cut = ops.index("\\approx")
        exact = values[0] + "".join(
            f" {op} {v}" for op, v in zip(ops[:cut], values[1 : cut + 1], strict=False)
        )
        approximation = _parse(values[cut + 1], depth + 1)
        if is_name(values[0]) and cut == 0:
            return approximation  # `x \approx 11`: only the approximation is given
        return Answer("approx", items=(_parse(exact.strip(), depth + 1), approximation))
    if ops == ["\\in"] and is_name(values[0]):
        return _parse(values[1], depth + 1)
    if any(not v for v in values):
        return _expr(s)
    if all(op == "=" for op in ops):
        if is_name(values[0]):
            rest = [_parse(v, depth + 1) for v in values[1:]]
            if len(rest) == 1:  # `x = 5`: the value, its label kept aside
                return replace(rest[0], labels=(values[0].replace(" ", ""),))
            return Answer("chain", items=tuple(rest), labels=(values[0],))
        sides = tuple(_parse(v, depth + 1) for v in values)
        if len(values) > 2 or all(map(_constant, sides)):  # `\\binom{31}{28} = 4495`
            return Answer("chain", items=sides)
    return Answer("relation", items=tuple(_expr(v) for v in values), ops=tuple(ops))


def _constant(side: Answer) -> bool:
    """A side with no variable (`2+3`, `5 \\text{ hours}`): an equation between two of them
    is a step of arithmetic, not a relation to solve."""
    tree = expression_tree(side.text) if side.kind == "expr" else None
    return tree is not None and not symbols(tree)


def _expr(s: str) -> Answer:
    return Answer("expr", text=s)


def _atom(s: str) -> Answer:
    """A single value: time, ratio, base-n number, choice letter, words, or an expression
    (with its unit, if any)."""
    if _EMPTY_SET.fullmatch(s):
        return Answer("set")
    if _REALS.fullmatch(s):
        return Answer("text", text="\\mathbb{R}")
    time = _TIME.match(s)
    if time is not None and int(time.group(1)) <= 24 and int(time.group(2)) < 60:
        meridiem = time.group(3).lower() if time.group(3) else None
        return Answer("time", text=s, value=(int(time.group(1)), int(time.group(2)), meridiem))
    if ":" in s:
        parts = [parse_number(p.strip()) for p in s.split(":")]
        if all(p is not None for p in parts):
            return Answer("ratio", text=s, value=tuple(parts))
        return _expr(s)
    base = _BASE_N.match(s.replace(" ", ""))
    if base is not None and base.group(1).isalnum() and any(c.isdigit() for c in base.group(1)):
        return Answer("base", text=s, value=(base.group(1).upper(), int(base.group(2))))
    if choice_letter(s) is not None:
        return Answer("choice", text=choice_letter(s) or "")
    if _TEXT.fullmatch(s) and _is_words(s):
        return Answer("text", text=" ".join(s.lower().replace(".", " ").split()))
    value, unit = split_unit(s)
    if "\\pm" in value or "\\mp" in value:
        tree = expression_tree(value)
        branches = branches_of(tree) if tree is not None else []
        if len(branches) > 1:
            return Answer(
                "set", items=tuple(Answer("expr", value, unit=unit, tree=b) for b in branches)
            )
    return Answer("expr", text=value, unit=unit)


def branches_of(node: Node) -> list[Node]:
    """`1 \\pm \\sqrt{2}` is two values (a tree with two `\\pm` four); other trees one."""
    if node.kind == "pm":
        left, right = node.args
        if left == Node("num", (), Fraction(0)):  # `\\pm 3` is 3 and -3, not 0 + 3 and 0 - 3
            return [b for y in branches_of(right) for b in (y, Node("neg", (y,)))][:MAX_BRANCHES]
        pairs = [(x, y) for x in branches_of(left) for y in branches_of(right)]
        plus = [Node("add", (x, y)) for x, y in pairs]
        minus = [Node("add", (x, Node("neg", (y,)))) for x, y in pairs]
        return (plus + minus)[:MAX_BRANCHES]
    for i, arg in enumerate(node.args):
        options = branches_of(arg)
        if len(options) > 1:
            results: list[Node] = []
            for option in options:
                args = (*node.args[:i], option, *node.args[i + 1 :])
                results.extend(branches_of(Node(node.kind, args, node.value)))
            return results[:MAX_BRANCHES]
    return [node]


def _is_words(s: str) -> bool:
    words = [w for w in re.split(r"[\s.\-']+", s.lower()) if w]
    if any(w in _SHORT_WORDS for w in words):
        return True
    long_words = [w for w in words if _TEXT_WORD.fullmatch(w)]
    return bool(long_words) and not all(w in WORD_FUNCTIONS for w in long_words)


def _matrix(body: str, depth: int) -> Answer:
    rows = [r for r in re.split(r"\\\\", body) if r.strip()]
    return Answer(
        "matrix",
        items=tuple(
            Answer("tuple", items=tuple(_parse(c, depth + 1) for c in row.split("&")))
            for row in rows
        ),
    )


def _parse(s: str, depth: int = 0) -> Answer:
    s = s.strip()
    if depth > MAX_NESTING:
        return _expr(s)
    while len(s) >= 2 and s[0] == "{" and brace_group(s, 0, len(s)) == len(s):
        s = s[1:-1].strip()  # `{1,3}` is LaTeX grouping, not a set
    solutions = split_top(s, ";")
    if len(solutions) > 1:
        return _set(solutions, depth)
    alternatives = split_top(s, " or ")
    if len(alternatives) > 1:
        return _set(alternatives, depth)
    matrix = _MATRIX.match(s[1:-1].strip() if s[:1] in "([" and s[-1:] in ")]" else s)
    matrix = matrix or _MATRIX.match(s)
    if matrix is not None:
        return _matrix(matrix.group(2), depth)
    union = split_top(s, "\\cup")
    if len(union) > 1:
        return Answer("union", items=tuple(_parse(u, depth + 1) for u in union))
    if s.startswith("\\{") and s.endswith("\\}"):
        return _set(split_top(s[2:-2], ","), depth)
    if _THOUSANDS.fullmatch(split_unit(s)[0]):
        return _atom(s)
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and _encloses(s):
        inner = s[1:-1]
        elements = split_top(inner, ",")
        if len(elements) == 1:
            elements = split_top(inner, ";")
        if len(elements) > 1:
            items = tuple(_parse(e, depth + 1) for e in elements)
            return Answer("tuple", items=items, brackets=s[0] + s[-1])
    elements = split_top(s, ",")
    if len(elements) > 1:
        return _list(elements, depth)
    pieces = _relation_split(s)
    if len(pieces) > 1:
        return _relation(s, pieces, depth)
    return _atom(s)


@lru_cache(maxsize=8192)
def parse_answer(normalized: str) -> Answer:
    """The structure of a normalised answer (see `Answer`)."""
    return _parse(normalized)
