"""The finished-form rule: an answer must be in the form the gold is in.

`\\dbinom{31}{28}` equals 4495 and `16-3-4` equals 9, but neither answers "compute": a policy
paid for them learns to box the question. So every kind of operation an answer still applies
to numbers is listed (`operations`), and an answer using a kind the gold does not use is not
finished (`unfinished`): binomials, factorials, sums, integrals, limits, logarithms, trig
functions, floors, absolute values, gcds, arithmetic between literals (`2 \\cdot 3`, `16-3-4`,
`\\frac{1}{2}+3`, like terms `2\\sqrt{3}+\\sqrt{3}`, `2 \\cdot \\frac{\\pi}{2}`), arithmetic on
infinity (`\\infty + 1`), unexpanded powers of numbers (`(2+\\sqrt{3})^2`, `i^2`), and three
edge cases each with its own option: unreduced fractions (`6/4` for `3/2`), powers of literals
(`2^{10}` for 1024) and radicals that simplify (`\\sqrt{8}` for `2\\sqrt{2}`). Scientific
notation (`6.72 \\times 10^{-5}`) is a finished form. A gold that itself uses a kind of
operation allows it (`\\frac{1}{2004!}`).

`restated` is the companion rule for prompts: an answer that copies an expression verbatim
from the question, in a form other than the gold's, is the question, not its answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from functools import lru_cache
from math import gcd

from ._answer import Answer, expression_tree, parse_answer
from ._config import MathConfig
from ._latex import FUNCTION_CLASSES, Node, literal_value
from ._normalize import is_decimal, key, normalize, parse_number
from ._numeric import symbols

__all__ = ["absolute_operations", "operations", "restated", "unfinished"]

ARITHMETIC = "arithmetic on numbers"
UNREDUCED_FRACTION = "unreduced fraction"
POWER_OF_NUMBERS = "power of numbers"
UNEXPANDED_POWER = "unexpanded product or power"
UNSIMPLIFIED_RADICAL = "radical that simplifies"
INFINITY = "arithmetic on infinity"
"""`\\infty + 1`, `2\\infty`, `\\frac{1}{\\infty}`, `\\sqrt{\\infty}`, `-(-\\infty)`: a limit's
value left as a computation."""
VARIABLES = "variables where the gold is a number"
"""`(u+4)(u-1) - (u-3)(u+6)` is 14 at every u, but it is the question, not the answer."""

MIN_RESTATED_CHARS = 3
"""Shortest expression (normalised, without spaces) the restatement rule looks for."""

_TEXT_OPERATIONS = (
    (re.compile(r"\\sum(?![a-zA-Z])"), "sum"),
    (re.compile(r"\\prod(?![a-zA-Z])"), "product"),
    (re.compile(r"\\i*int(?![a-zA-Z])|\\oint"), "integral"),
    (re.compile(r"\\lim(?![a-zA-Z])"), "limit"),
    (re.compile(r"\\frac\{d\w*\}\{d|\\partial|\\mathrm\{d\}|\bd/d[a-z]"), "derivative"),
    (
        re.compile(r"\\(?:[dt])?binom|\\choose|\bC\s*\(\s*\d|\bC_\{?\d|\^\{?\d+\}?C_"),
        FUNCTION_CLASSES["binom"],
    ),
    (re.compile(r"\d\s*!(?!=)|\)\s*!(?!=)"), "factorial"),
    (re.compile(r"\\end\{[pbvBV]?matrix\}\s*(?:[-+*]|\\begin)"), "matrix arithmetic"),
    (re.compile(r"\\(?:bmod|pmod|mod)(?![a-zA-Z])|\bmod\b"), "modulo"),
)
"""Operations found in the text, for answers the expression parser does not read."""


def _literal(node: Node) -> bool:
    """A number written out, or a power of one (`2^{10}` counts as a term of `2^{10}+1`)."""
    if node.kind == "pow":
        return literal_value(node.args[0]) is not None and literal_value(node.args[1]) is not None
    return literal_value(node) is not None


def _algebraic(node: Node) -> bool:
    """Made of literals, radicals of them and `i` only: a number that arithmetic can finish."""
    if node.kind in ("num", "mixed"):
        return True
    if node.kind == "const":
        return node.value == "i"
    if node.kind in ("add", "neg", "mul", "frac", "pow", "root"):
        return all(_algebraic(arg) for arg in node.args)
    return False


def _scientific(node: Node) -> bool:
    """`6.72 \\times 10^{-5}`: a mantissa in [1, 10) times an integer power of ten."""
    if node.kind != "mul" or len(node.args) != 2:
        return False
    mantissa, power = node.args
    value = literal_value(mantissa)
    if value is None or not 1 <= abs(value) < 10 or power.kind != "pow":
        return False
    exponent = literal_value(power.args[1])
    return literal_value(power.args[0]) == 10 and exponent is not None and exponent.denominator == 1


def _flat(node: Node) -> tuple[Node, ...]:
    """The terms of a sum or the factors of a product, nested ones included: `(-k+4)+(-2+3k)`
    has four terms, `(10r^3)(4r^6)` four factors."""
    items: list[Node] = []
    for arg in node.args:
        inner = arg.args[0] if node.kind == "add" and arg.kind == "neg" else arg
        if inner.kind == node.kind:
            items.extend(_flat(inner))
        else:
            items.append(arg)
    return tuple(items)


def _base(factor: Node) -> str | None:
    """The symbol a factor is a power of (`r` for `r`, `r^3`), to find `r^3 \\cdot r^6`."""
    if factor.kind == "pow":
        factor = factor.args[0]
    return repr(factor) if factor.kind == "sym" else None


def _signature(term: Node) -> tuple[str, ...]:
    """What a term is a multiple of: `3\\sqrt{2}x` -> (sqrt 2, x); a literal -> ()."""
    while term.kind == "neg":
        term = term.args[0]
    factors = _flat(term) if term.kind == "mul" else (term,)
    return tuple(sorted(repr(f) for f in factors if not _literal(f)))


def _coefficient(term: Node) -> Fraction:
    while term.kind == "neg":
        term = term.args[0]
    factors = term.args if term.kind == "mul" else (term,)
    coefficient = Fraction(1)
    for factor in factors:
        value = literal_value(factor)
        if value is not None:
            coefficient *= value
    return coefficient


def _cancels(coefficient: Fraction, fraction: Node) -> bool:
    """A literal factor and a fraction over an integer it shares a factor with: `2 \\cdot
    \\frac{\\pi}{2}` is `\\pi` and `6 \\cdot \\frac{\\sqrt{3}}{3}` is `2\\sqrt{3}`, a division left
    undone as in `\\frac{2\\pi}{2}`; `2 \\cdot \\frac{\\pi}{3}` cancels nothing."""
    denominator = literal_value(fraction.args[1])
    if denominator is None or denominator.denominator != 1:
        return False
    return gcd(coefficient.numerator, int(denominator)) != 1


def _reducible(top: Node, bottom: Node) -> bool:
    """`\\frac{6}{4}`, `\\frac{4}{2}`, `\\frac{2+2\\sqrt{5}}{4}`, `\\frac{6\\pi}{4}`: a common
    integer factor between every coefficient above and the denominator, or denominator 1."""
    denominator = literal_value(bottom)
    if denominator is None or denominator.denominator != 1:
        return False
    terms = top.args if top.kind == "add" else (top,)
    coefficients = [_coefficient(t) for t in terms]
    if any(c.denominator != 1 for c in coefficients):
        return False
    common = int(abs(denominator))
    for c in coefficients:
        common = gcd(common, int(c))
    return common != 1 or abs(denominator) == 1


def _has_power_factor(n: int, index: int) -> bool:
    """True when `n` has a factor p^index > 1 (`\\sqrt{8}` = 2\\sqrt{2}); n < 2 too."""
    if n < 2:
        return True
    p = 2
    while p**index <= n:
        if n % p**index == 0:
            return True
        p += 1 if p == 2 else 2
        if p > 100_000:
            return False
    return False


MAX_RADICAND_BITS = 2_048
"""Largest radicand (in bits) a fractional power is factored for (`8^{2/3}` is the cube root of
64); a larger one counts as unsimplified: trial division of a 25,000-digit radicand would take
seconds, outside the numeric time limit."""


def _unsimplified_power(base: Fraction, exponent: Fraction) -> bool:
    """Whether `base^{exponent}` (exponent not an integer) is a radical that simplifies, or
    one written where `\\sqrt` would not be: a negative or fractional radicand, a negative
    exponent (`2^{-1/2}` is `1/\\sqrt{2}`), a radicand with a factor p^index."""
    if exponent < 0 or base <= 0 or base.denominator != 1:
        return True
    if exponent.numerator * int(base).bit_length() > MAX_RADICAND_BITS:
        return True
    return _has_power_factor(int(base) ** exponent.numerator, exponent.denominator)


def _irrational_denominator(bottom: Node) -> str:
    """What a fraction of numbers over a radical or complex denominator leaves undone:
    `\\frac{5}{2+i}` and `\\frac{1+\\sqrt{2}}{1-\\sqrt{2}}` are divisions not carried out;
    `\\frac{1}{\\sqrt{2}}` is a radical not simplified (the `radicals` option)."""
    if bottom.kind == "add" or any(n == Node("const", (), "i") for n in _subtrees(bottom)):
        return ARITHMETIC
    return UNSIMPLIFIED_RADICAL


_INFINITY = Node("const", (), "inf")


def _infinite(node: Node) -> bool:
    """`\\infty` or `-\\infty`: the only forms of infinity that are finished."""
    return node == _INFINITY or (node.kind == "neg" and node.args[0] == _INFINITY)


def _tree_operations(node: Node, found: set[str]) -> None:
    kind, args = node.kind, node.args
    if kind in ("add", "mul", "frac", "div", "pow", "root", "func") and any(map(_infinite, args)):
        found.add(INFINITY)
    if kind == "neg" and args[0].kind == "neg" and _infinite(args[0]):
        found.add(INFINITY)  # `-(-\\infty)`
    if kind == "func" and not any(symbols(arg) for arg in args):
        found.add(FUNCTION_CLASSES[str(node.value)])  # `\\sin\\frac{\\pi}{6}`, not `\\cot x`
    elif kind == "div":
        found.add(ARITHMETIC)
    elif kind == "add":
        signatures = [_signature(t) for t in _flat(node)]
        if len(set(signatures)) < len(signatures):
            found.add(ARITHMETIC)  # two literals, or like terms (`x + x`)
    elif kind == "mul":
        if _scientific(node):
            _tree_operations(args[0], found)
            return
        factors = _flat(node)
        literals = sum(_literal(f) for f in factors)
        radicals = sum(f.kind == "root" and _algebraic(f) for f in factors)
        bases = [b for b in map(_base, factors) if b is not None]
        repeated = len({repr(f) for f in factors}) < len(factors) or len(set(bases)) < len(bases)
        if literals > 1 or radicals > 1 or repeated:
            found.add(ARITHMETIC)  # `2 \\cdot 3`, `\\sqrt{2}\\sqrt{3}`, `r^3 r^6`
        coefficient = _coefficient(node)
        if any(f.kind == "frac" and not _literal(f) and _cancels(coefficient, f) for f in factors):
            found.add(ARITHMETIC)  # `2 \\cdot \\frac{\\pi}{2}`
        if _algebraic(node) and any(f.kind == "add" for f in factors):
            found.add(UNEXPANDED_POWER)  # `(1+2i)6`, `2(3+\\sqrt{2})`
    elif kind == "frac":
        top, bottom = (literal_value(a) for a in args)
        if args[0] == args[1]:
            found.add(ARITHMETIC)  # `\\frac{\\pi}{\\pi}`
        elif top is not None and bottom is not None:
            if top.denominator != 1 or bottom.denominator != 1:
                found.add(ARITHMETIC)  # a fraction of fractions or decimals
            elif _reducible(*args):
                found.add(UNREDUCED_FRACTION)
        elif _reducible(*args):
            found.add(UNREDUCED_FRACTION)
        elif bottom is None and _algebraic(args[0]) and _algebraic(args[1]):
            found.add(_irrational_denominator(args[1]))
    elif kind == "pow":
        base, exponent = args
        value = literal_value(exponent)
        if value in (0, 1):
            found.add(ARITHMETIC)  # `8^1`, `\\pi^0`: an identity left unapplied
        elif value is not None and value.denominator == 1:
            if literal_value(base) is not None:
                found.add(POWER_OF_NUMBERS)
            elif _algebraic(base):
                found.add(UNEXPANDED_POWER)
        elif value is not None and value.denominator != 1:
            radicand = literal_value(base)
            if radicand is not None and _unsimplified_power(radicand, value):
                found.add(UNSIMPLIFIED_RADICAL)  # `242^{1/2}` is `\\sqrt{242}`, `8^{2/3}`
        elif base == Node("const", (), "e") and value is None and not symbols(exponent):
            found.add(FUNCTION_CLASSES["exp"])  # `e^{i\\pi}` is `\\exp(i\\pi)`
    elif kind == "root":
        radicand, index = (literal_value(a) for a in args)
        if (
            radicand is not None
            and index is not None
            and index.denominator == 1
            and (radicand.denominator != 1 or _has_power_factor(int(abs(radicand)), int(index)))
        ):
            found.add(UNSIMPLIFIED_RADICAL)
    for arg in args:
        _tree_operations(arg, found)


def _atoms(answer: Answer) -> list[Answer]:
    """The expressions an answer commits to: a chain's last value, both sides of a relation,
    each part of an approximation."""
    if answer.kind == "expr":
        return [answer]
    if answer.kind == "chain":
        return _atoms(answer.items[-1])
    return [atom for item in answer.items for atom in _atoms(item)]


def _values(answer: Answer) -> list[Answer]:
    """The atoms that stand for values (not the sides of a relation, whose variable is its
    subject: `-2 \\le x \\le 7`)."""
    if answer.kind == "relation":
        return []
    if answer.kind == "chain":
        return _values(answer.items[-1])
    if answer.kind == "expr":
        return [answer]
    return [atom for item in answer.items for atom in _values(item)]


@lru_cache(maxsize=8192)
def operations(normalized: str) -> frozenset[str]:
    """The kinds of operation a normalised answer applies to numbers (see the module doc)."""
    if is_decimal(normalized):
        return frozenset()
    return _operations(parse_answer(normalized))


def _operations(answer: Answer) -> frozenset[str]:
    if answer.kind == "approx":  # both parts are answers: `5! \\approx 1` is unfinished
        exact, approximation = (_operations(item) for item in answer.items)
        return exact | approximation
    found: set[str] = set()
    for atom in _atoms(answer):
        for pattern, name in _TEXT_OPERATIONS:
            if pattern.search(atom.text):
                found.add(name)
        tree = atom.tree or expression_tree(atom.text)
        if tree is not None:
            _tree_operations(tree, found)
    for value in _values(answer):
        tree = value.tree or expression_tree(value.text)
        if tree is not None and symbols(tree):
            found.add(VARIABLES)
    return frozenset(found)


@lru_cache(maxsize=4096)
def _mentions_variables(normalized: str) -> bool:
    for atom in _atoms(parse_answer(normalized)):
        tree = atom.tree or expression_tree(atom.text)
        if tree is not None and symbols(tree):
            return True
    return False


def _allowed(config: MathConfig) -> frozenset[str]:
    allowed = set()
    if config.fractions == "any":
        allowed.add(UNREDUCED_FRACTION)
    if config.powers == "any":
        allowed.add(POWER_OF_NUMBERS)
    if config.radicals == "any":
        allowed.add(UNSIMPLIFIED_RADICAL)
    return frozenset(allowed)


def absolute_operations(normalized: str, config: MathConfig) -> frozenset[str]:
    """The operations left in an answer when there is no gold to compare forms with (for
    grouping answers): any listed above, but variables, and the options `config` allows."""
    return operations(normalized) - {VARIABLES} - _allowed(config)


def unfinished(pred: str, gold: str, config: MathConfig) -> str | None:
    """Why `pred` is not in finished form where `gold` is ("not evaluated: factorial"), or
    None. Both are extracted answers (un-normalised)."""
    if not config.finished_form:
        return None
    extra = operations(normalize(pred)) - operations(normalize(gold)) - _allowed(config)
    if VARIABLES in extra and _mentions_variables(normalize(gold)):
        extra -= {VARIABLES}  # the gold is an equation or a relation in them
    if not extra:
        return None
    return "not evaluated: " + ", ".join(sorted(extra))


_SPAN = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_BOUNDARY = re.compile(r"[A-Za-z0-9.]")
_ASY = re.compile(r"\[asy\].*?(?:\[/asy\]|$)", re.S | re.IGNORECASE)
"""Figure code in a problem: its coordinates (`(0.8,0.5)`) are not the problem's math."""
_PIECE_SEPARATORS = re.compile(r",|;|=|<|>|\\(?:le|ge|ne|approx|in)(?![a-zA-Z])")


def _prompt_math(prompt: str) -> list[str]:
    """The math of a prompt: its spans (`$...$`, `\\(...\\)`), or the whole text without
    figure code when it has none."""
    prompt = _ASY.sub(" ", prompt)
    spans = [next(g for g in m.groups() if g is not None) for m in _SPAN.finditer(prompt)]
    return spans or [prompt]


@lru_cache(maxsize=1024)
def _prompt_keys(prompt: str) -> tuple[str, ...]:
    return tuple(key(normalize(s)) for s in _prompt_math(prompt))


def _shape(node: Node) -> str:
    """The tree as a canonical string, blind to how it is spelled: `9/2` is `\\frac{9}{2}`,
    brackets vanish, factors equal to 1 (`1`, `x^0`, `\\pi^0`, `\\frac{\\pi}{\\pi}`), powers of 1,
    denominators of 1 and terms of 0 (`0r`) drop out, the factors of a product and the terms
    of a sum are sorted (`(x+2)(x+1)` is `(x+1)(x+2)`), and signs are pulled out front
    (`(-x-1)(-x-2)` is `(x+1)(x+2)`, `\\frac{-3}{-20}` is `\\frac{3}{20}`, `+6(-a)` is `-6a`):
    the overall sign is not part of the shape."""
    return _signed_shape(node)[1]


_ONE, _ZERO = "num:1", "num:0"


def _signed_shape(node: Node) -> tuple[int, str]:
    """(sign, shape) of a tree: `-\\frac{3}{-20}` is (1, shape of `\\frac{3}{20}`)."""
    kind, args = node.kind, node.args
    if kind == "neg":
        sign, shape = _signed_shape(args[0])
        return -sign, shape
    if kind == "num":
        value = Fraction(node.value)  # type: ignore[arg-type]
        return (-1 if value < 0 else 1), f"num:{abs(value)}"
    if kind == "pow":
        exponent = literal_value(args[1])
        if exponent == 1:
            return _signed_shape(args[0])
        if exponent == 0:
            return 1, _ONE
    if kind == "add":
        return _sum_shape(node)
    if kind == "mul":
        return _product_shape([_signed_shape(a) for a in _flat(node)])
    if kind in ("frac", "div"):
        (top_sign, top), (bottom_sign, bottom) = (_signed_shape(a) for a in args)
        sign = top_sign * bottom_sign
        if top == _ZERO:
            return 1, _ZERO
        if bottom == _ONE or top == bottom:
            return sign, top if bottom == _ONE else _ONE
        return sign, f"frac:None({top},{bottom})"
    if not args:
        return 1, f"{kind}:{node.value}"
    inner = ",".join(("-" if sign < 0 else "") + shape for sign, shape in map(_signed_shape, args))
    return 1, f"{kind}:{node.value}({inner})"


def _product_shape(factors: list[tuple[int, str]]) -> tuple[int, str]:
    sign, parts = 1, []
    for factor_sign, shape in factors:
        if shape == _ZERO:
            return 1, _ZERO
        sign *= factor_sign
        if shape != _ONE:
            parts.append(shape)
    if not parts:
        return sign, _ONE
    return sign, parts[0] if len(parts) == 1 else f"mul({','.join(sorted(parts))})"


def _sum_shape(node: Node) -> tuple[int, str]:
    """A sum's terms with their signs, sorted; the sum and its negation share one shape (the
    lesser spelling), so a sign moved into or out of a bracket does not change it."""
    terms = [t for t in _signed_terms(node, 1) if t[1] != _ZERO]
    if not terms:
        return 1, _ZERO
    if len(terms) == 1:
        return terms[0]
    spelled = sorted(("-" if sign < 0 else "+") + shape for sign, shape in terms)
    flipped = sorted(("+" if sign < 0 else "-") + shape for sign, shape in terms)
    if flipped < spelled:
        return -1, f"add({','.join(flipped)})"
    return 1, f"add({','.join(spelled)})"


def _signed_terms(node: Node, sign: int) -> list[tuple[int, str]]:
    """The terms of a sum, nested and negated sums opened: `a - (b - c)` is +a, -b, +c."""
    if node.kind == "neg":
        return _signed_terms(node.args[0], -sign)
    if node.kind == "add":
        return [term for arg in node.args for term in _signed_terms(arg, sign)]
    term_sign, shape = _signed_shape(node)
    return [(sign * term_sign, shape)]


def _subtrees(node: Node) -> Iterator[Node]:
    yield node
    for arg in node.args:
        yield from _subtrees(arg)


def _shapes(trees: list[Node]) -> frozenset[str]:
    """The shapes of every compound sub-expression of these trees."""
    return frozenset(_shape(t) for tree in trees for t in _subtrees(tree) if t.args)


@lru_cache(maxsize=1024)
def _prompt_shapes(prompt: str) -> frozenset[str]:
    """The shapes of every expression in the prompt's math (each span cut at commas and
    relations: `$f(x) = \\frac{9}{2}x$` holds `\\frac{9}{2}x` and `\\frac{9}{2}`)."""
    trees = []
    for span in _prompt_math(prompt):
        for piece in _PIECE_SEPARATORS.split(normalize(span)):
            tree = expression_tree(piece.strip()) if piece.strip() else None
            if tree is not None:
                trees.append(tree)
    return _shapes(trees)


def _occurs(needle: str, haystack: str) -> bool:
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        before = haystack[start - 1] if start else ""
        after = haystack[end] if end < len(haystack) else ""
        if not _BOUNDARY.match(before) and not _BOUNDARY.match(after):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _number_form(text: str) -> str | None:
    """integer | decimal | fraction | mixed, for a number written out; None otherwise."""
    if parse_number(text) is None:
        return None
    if is_decimal(text):
        return "decimal" if "." in text else "integer"
    return "mixed" if re.search(r"\d\s*\\frac", text) else "fraction"


def restated(pred: str, gold: str, prompt: str) -> str | None:
    """The expression `pred` copies from the math of `prompt` in a form the gold does not
    have, or None: `\\frac{9}{2}` (or `9/2`, `(\\frac{9}{2})`) from "Express $\\frac{9}{2}$ as
    a decimal", `\\sqrt{242}` from "Simplify $\\sqrt{242}$", `(x+2)(x+1)` from "Expand
    $(x+1)(x+2)$". Integers and single symbols never count."""
    gold_atoms = _atoms(parse_answer(normalize(gold)))
    gold_key = key(normalize(gold))
    gold_forms = {_number_form(a.text) for a in gold_atoms}
    gold_trees = [t for a in gold_atoms if (t := a.tree or expression_tree(a.text)) is not None]
    gold_shapes = _shapes(gold_trees)
    for atom in _atoms(parse_answer(normalize(pred))):
        tree = atom.tree or expression_tree(atom.text)
        if tree is None or tree.kind in ("sym", "const"):
            continue
        form = _number_form(atom.text)
        if form == "integer" or (form is not None and form in gold_forms):
            continue
        needle = key(atom.text)
        if len(needle) < MIN_RESTATED_CHARS or _occurs(needle, gold_key):
            continue
        if any(_occurs(needle, haystack) for haystack in _prompt_keys(prompt)):
            return atom.text
        shape = _shape(tree)
        if "(" in shape and shape not in gold_shapes and shape in _prompt_shapes(prompt):
            return atom.text
    return None
