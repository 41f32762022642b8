"""Decide whether two expression trees are the same value by evaluating them, exactly enough.

Both trees are evaluated with mpmath at the same points: once when they have no free symbols,
at three fixed points (mixed signs, irrational, so no polynomial identity holds by accident)
when they do. The working precision grows with the size of the numbers written
(`precision_for`), so an answer that differs from the gold by `10^{-100}` or by one in a
1,000-digit number is told apart, and a decimal is never mistaken for the fraction or radical
it approximates (decimals are read exactly: `0.333` is 333/1000). Two values are equal when
they agree to all but the last 20 of those digits.

There is no symbolic simplification: nested radicals and huge fractions finish in
milliseconds, and no answer can make the comparison stall.
"""

from __future__ import annotations

import math as pymath
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction

import mpmath

from ._latex import Node, literal_value

__all__ = [
    "MAX_DIGITS",
    "OutOfTime",
    "Unevaluable",
    "ratio_sign",
    "same_value",
    "symbols",
    "time_limit",
    "value_of",
]

BASE_DIGITS = 60
"""Working digits before the size of the written numbers is added."""
GUARD_DIGITS = 20
"""Trailing digits ignored when two values are compared (rounding noise)."""
MAX_DIGITS = 10_000
"""Most digits ever worked with; an answer needing more is not evaluated (one `\\sin` of a
10,000-digit number already takes about half a second)."""
TIME_LIMIT_S = 1.5
"""Wall-clock seconds of numeric work one sample (or one `compare`) may take; past it the
comparison is "not evaluated": no answer can hold a worker near the engine's timeout."""
MAX_EXPONENT = 4_096
"""Largest literal exponent evaluated; `2^{4096}` is instant, `9^{9^{9^9}}` is not."""
MAX_SYMBOLS = 8
"""Most distinct free symbols an expression pair may have."""
MAX_FACTORIAL = 5_000
"""Largest factorial evaluated (`2006!` is fine)."""
MAX_ARGUMENT_BITS = 4_096
"""Largest argument (in binary digits before the point) a trigonometric, hyperbolic or
exponential function is given: `\\sin` of `(2^{4096})^{4096}` is one mpmath call, reducing it
modulo pi would take minutes, and no time check can interrupt it."""
MAX_INTEGER_BITS = 40_000
"""Largest value turned into a Python integer (factorial, gcd, lcm): the size is checked on the
mpmath value first, so `(((2^{4096})^{4096})^{4096})!` never allocates its 8 GiB integer."""


class Unevaluable(ValueError):
    """The tree has no numeric value here (undefined, too large, unsupported, too slow)."""


class OutOfTime(Unevaluable):
    """The time limit ran out: a verdict reached this way depends on the clock, so it is
    never cached (a later comparison of the same pair, with time left, may differ)."""


_DEADLINE: ContextVar[float | None] = ContextVar("math_numeric_deadline", default=None)


@contextmanager
def time_limit(seconds: float = TIME_LIMIT_S) -> Iterator[None]:
    """Bound the numeric work inside the block (an enclosing limit that ends sooner wins)."""
    ends = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(ends if outer is None else min(outer, ends))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _check_time() -> None:
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise OutOfTime("took too long")


def _points() -> tuple[tuple[mpmath.mpf, ...], ...]:
    """Values given to the k-th free symbol at each of the three points (at the current
    precision): irrational, of both signs, different for every symbol."""
    return (
        tuple(mpmath.mpf(k + 2) / mpmath.pi + mpmath.sqrt(2) / 7 for k in range(MAX_SYMBOLS)),
        tuple(-(mpmath.mpf(k + 3) / mpmath.e) + mpmath.sqrt(3) / 11 for k in range(MAX_SYMBOLS)),
        tuple(mpmath.mpf(2 * k + 5) / 3 + mpmath.log(2) / 13 for k in range(MAX_SYMBOLS)),
    )


def symbols(node: Node) -> frozenset[str]:
    """Names of the free symbols of a tree."""
    if node.kind == "sym":
        return frozenset((str(node.value),))
    found: frozenset[str] = frozenset()
    for arg in node.args:
        found |= symbols(arg)
    return found


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for arg in node.args:
        yield from _walk(arg)


def _point_names(a: Node, b: Node) -> tuple[list[str], dict[str, str]]:
    """The symbols to give values to, and each symbol's name among them. Case is ignored
    (`3R^2` is `3r^2`) unless an answer itself uses both cases of one letter."""
    names_a, names_b = symbols(a), symbols(b)
    fold = all(len({n.lower() for n in names}) == len(names) for names in (names_a, names_b))
    rename = {n: n.lower() if fold else n for n in names_a | names_b}
    return sorted(set(rename.values())), rename


def _renamed(node: Node, rename: dict[str, str]) -> Node:
    if node.kind == "sym":
        return Node("sym", (), rename[str(node.value)])
    if not node.args:
        return node
    return Node(node.kind, tuple(_renamed(arg, rename) for arg in node.args), node.value)


def _written_digits(tree: Node) -> int:
    total = 0
    for node in _walk(tree):
        if node.kind == "num":
            value = node.value
            assert isinstance(value, Fraction)
            total += len(str(value.numerator)) + len(str(value.denominator))
    return total


def _log10(value: mpmath.mpc) -> float:
    return float(mpmath.log10(abs(value)))


def _sum_loss(sums: list[tuple[list[mpmath.mpc], mpmath.mpc]], digits: int) -> float | None:
    """Digits a sum of these terms can lose or hide: from its largest term down to its
    smallest term or to its total, whichever is smaller; a total of exactly zero counts as
    losing all `digits`. None: a total cancelled almost to nothing (look again with more)."""
    loss = 0.0
    for terms, total in sums:
        sizes = [_log10(t) for t in terms if t != 0 and mpmath.isfinite(t)]
        if not sizes:
            continue
        top = max(sizes)
        loss = max(loss, top - min(sizes))
        if total == 0:
            loss = max(loss, float(digits))
        elif mpmath.isfinite(total):
            if top - _log10(total) > digits - 10:
                return None
            loss = max(loss, top - _log10(total))
    return loss


def precision_for(trees: tuple[Node, ...], points: tuple[dict[str, mpmath.mpc], ...]) -> int:
    """Digits needed to tell these trees apart from anything near them: the digits written,
    plus what any sum in them loses to cancellation or hides below its largest term
    (`2^{1000} + 1` needs 302 more), found by passes at low precision."""
    digits = BASE_DIGITS // 2
    while True:
        sums: list[tuple[list[mpmath.mpc], mpmath.mpc]] = []
        with mpmath.workdps(digits):
            for tree in trees:
                for point in points:
                    value_of(tree, point, sums)
        loss = _sum_loss(sums, digits)
        if loss is not None:
            break
        if digits >= MAX_DIGITS:
            raise Unevaluable("needs too many digits")
        digits = min(4 * digits, MAX_DIGITS)
    needed = BASE_DIGITS + sum(_written_digits(t) for t in trees) + int(loss)
    if needed > MAX_DIGITS:
        raise Unevaluable("needs too many digits")
    return needed


def _generic(name: str, args: list[mpmath.mpc]) -> mpmath.mpc:
    """A fixed, arbitrary function standing for an undefined one (`f`, `p`): `f(2x)` equals
    `f(x \\cdot 2)` and differs from `f(x)` or `g(2x)`."""
    seed = zlib.crc32(name.encode()) % 1000 + 1
    total = mpmath.mpf(seed) / 997
    for i, arg in enumerate(args, 1):
        _check_argument(arg)
        total += mpmath.sin(arg * (i + mpmath.mpf(seed) / 101)) + arg / (i + 2)
    return mpmath.exp(total / 3) + total


def _real(value: mpmath.mpc) -> mpmath.mpf:
    value = mpmath.mpmathify(value)
    if isinstance(value, mpmath.mpc):
        if abs(value.imag) > abs(value) * mpmath.mpf(10) ** (-mpmath.mp.dps // 2):
            raise Unevaluable("not a real number")
        return value.real
    return value


def _integer(value: mpmath.mpc) -> int:
    real = _real(value)
    if mpmath.isinf(real) or mpmath.isnan(real) or mpmath.mag(real) > MAX_INTEGER_BITS:
        raise Unevaluable("integer too large")
    nearest = mpmath.nint(real)
    if abs(real - nearest) > mpmath.mpf(10) ** (-mpmath.mp.dps // 2):
        raise Unevaluable("not an integer")
    return int(nearest)


def _negative_real(value: mpmath.mpc) -> bool:
    return isinstance(value, mpmath.mpf) and value < 0


def _root(radicand: mpmath.mpc, index: mpmath.mpc) -> mpmath.mpc:
    """Principal root; an odd root of a negative real is real (`\\sqrt[3]{-8} = -2`)."""
    n = _integer(index) if index == mpmath.nint(_real(index)) else None
    if n is not None and n % 2 == 1 and _negative_real(radicand):
        return -mpmath.root(-radicand, n)
    return mpmath.power(radicand, 1 / index)


def _log(x: mpmath.mpc, base: mpmath.mpc | None = None) -> mpmath.mpc:
    if x == 0:
        raise Unevaluable("log of zero")
    return mpmath.log(x) if base is None else mpmath.log(x) / mpmath.log(base)


def _factorial(x: mpmath.mpc) -> mpmath.mpc:
    n = _integer(x)
    if not 0 <= n <= MAX_FACTORIAL:
        raise Unevaluable("factorial out of range")
    return mpmath.factorial(n)


def _binomial(n: mpmath.mpc, k: mpmath.mpc) -> mpmath.mpc:
    if abs(_real(n)) > MAX_FACTORIAL or abs(_real(k)) > MAX_FACTORIAL:
        raise Unevaluable("binomial out of range")
    return mpmath.binomial(n, k)


def _fold_integers(op: Callable[[int, int], int]) -> Callable[..., mpmath.mpf]:
    def apply(*args: mpmath.mpc) -> mpmath.mpf:
        result = _integer(args[0])
        for arg in args[1:]:
            result = op(result, _integer(arg))
        return mpmath.mpf(result)

    return apply


def _bounded(function: Callable[[mpmath.mpc], mpmath.mpc]) -> Callable[[mpmath.mpc], mpmath.mpc]:
    """`function` refusing an argument past `MAX_ARGUMENT_BITS` (its cost grows with it)."""

    def apply(x: mpmath.mpc) -> mpmath.mpc:
        _check_argument(x)
        return function(x)

    return apply


def _check_argument(x: mpmath.mpc) -> None:
    if not mpmath.isfinite(x) or mpmath.mag(x) > MAX_ARGUMENT_BITS:
        raise Unevaluable("function argument too large")


_FUNCTIONS: dict[str, Callable[..., mpmath.mpc]] = {
    "sin": _bounded(mpmath.sin),
    "cos": _bounded(mpmath.cos),
    "tan": _bounded(mpmath.tan),
    "sec": _bounded(mpmath.sec),
    "csc": _bounded(mpmath.csc),
    "cot": _bounded(mpmath.cot),
    "sinh": _bounded(mpmath.sinh),
    "cosh": _bounded(mpmath.cosh),
    "tanh": _bounded(mpmath.tanh),
    "coth": _bounded(mpmath.coth),
    "arcsin": mpmath.asin,
    "arccos": mpmath.acos,
    "arctan": mpmath.atan,
    "arccot": mpmath.acot,
    "log": _log,
    "ln": _log,
    "lg": lambda x: _log(x, mpmath.mpf(10)),
    "exp": _bounded(mpmath.exp),
    "abs": lambda x: mpmath.mpf(abs(x)),
    "floor": lambda x: mpmath.floor(_real(x)),
    "ceil": lambda x: mpmath.ceil(_real(x)),
    "factorial": _factorial,
    "binom": _binomial,
    "gcd": _fold_integers(pymath.gcd),
    "lcm": _fold_integers(lambda a, b: abs(a * b) // pymath.gcd(a, b) if a and b else 0),
    "max": lambda *xs: max(_real(x) for x in xs),
    "min": lambda *xs: min(_real(x) for x in xs),
}
_CONSTANTS: dict[str, Callable[[], mpmath.mpc]] = {
    "pi": lambda: +mpmath.pi,
    "e": lambda: +mpmath.e,
    "i": lambda: mpmath.mpc(0, 1),
    "inf": lambda: mpmath.inf,
}


_Sums = list[tuple[list[mpmath.mpc], mpmath.mpc]]


def value_of(node: Node, point: dict[str, mpmath.mpc], sums: _Sums | None = None) -> mpmath.mpc:
    """The value of a tree at `point` (symbol -> value), at the current mpmath precision.
    `sums`, when given, collects the terms and total of every sum (to choose the precision)."""
    _check_time()
    kind, args = node.kind, node.args
    if kind in ("num", "mixed"):
        value = node.value
        assert isinstance(value, Fraction)
        return mpmath.mpf(value.numerator) / value.denominator
    if kind == "sym":
        try:
            return point[str(node.value)]
        except KeyError:
            raise Unevaluable(f"no value for {node.value}") from None
    if kind == "const":
        return _CONSTANTS[str(node.value)]()
    values = [value_of(arg, point, sums) for arg in args]
    if kind == "add":
        total = mpmath.fsum(values)
        if sums is not None:
            sums.append((values, total))
        return total
    if kind == "neg":
        return -values[0]
    if kind == "mul":
        return mpmath.fprod(values)
    if kind in ("frac", "div"):
        if values[1] == 0:
            raise Unevaluable("division by zero")
        return values[0] / values[1]
    if kind == "pow":
        base, exponent = values
        if abs(exponent) > MAX_EXPONENT:
            raise Unevaluable("exponent too large")
        if base == 0 and _real(exponent) <= 0:
            raise Unevaluable("zero to a non-positive power")
        rational = literal_value(args[1])
        if rational is not None and rational.denominator % 2 == 1 and _negative_real(base):
            magnitude = mpmath.power(-base, rational)  # real odd root: (-8)^{2/3} = 4
            return -magnitude if rational.numerator % 2 else magnitude
        return mpmath.power(base, exponent)
    if kind == "root":
        return _root(values[0], values[1])
    if kind == "func":
        return _FUNCTIONS[str(node.value)](*values)
    if kind == "apply":
        return _generic(str(node.value), values)
    raise Unevaluable(f"cannot evaluate {kind}")


def _close(
    low: tuple[mpmath.mpc, mpmath.mpc], high: tuple[mpmath.mpc, mpmath.mpc], digits: int
) -> bool:
    """Equal to within rounding: `low` at `digits`, `high` at twice that. How far each value
    moved between the two precisions measures its rounding noise (`\\sin\\pi` is not exactly 0
    at any precision); beyond that, all but the last `GUARD_DIGITS` digits must agree."""
    (a1, b1), (a2, b2) = low, high
    if any(mpmath.isinf(v) for v in (a1, b1, a2, b2)):
        return a2 == b2
    if any(mpmath.isnan(v) for v in (a1, b1, a2, b2)):
        raise Unevaluable("undefined")
    noise = (abs(a1 - a2) + abs(b1 - b2)) * mpmath.mpf(10) ** (GUARD_DIGITS // 4 - digits)
    scale = max(abs(a2), abs(b2)) * mpmath.mpf(10) ** (GUARD_DIGITS - 2 * digits)
    return abs(a2 - b2) <= noise + scale


def same_value(a: Node, b: Node) -> bool:
    """True when `a` and `b` are the same value (at every point, for expressions in symbols).

    Raises `Unevaluable` when either has no value somewhere (undefined, unsupported, too big).
    """
    names, rename = _point_names(a, b)
    if len(names) > MAX_SYMBOLS:
        raise Unevaluable("too many symbols")
    a, b = _renamed(a, rename), _renamed(b, rename)
    try:
        digits = precision_for((a, b), _at(names))
        for point_low, point_high in zip(_at(names, digits), _at(names, 2 * digits), strict=True):
            with mpmath.workdps(digits):
                low = value_of(a, point_low), value_of(b, point_low)
            with mpmath.workdps(2 * digits):
                high = value_of(a, point_high), value_of(b, point_high)
                if not _close(low, high, digits):
                    return False
    except Unevaluable:
        raise
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
        raise Unevaluable(str(exc)) from exc
    return True


def _at(names: list[str], digits: int = BASE_DIGITS // 2) -> tuple[dict[str, mpmath.mpc], ...]:
    """The evaluation points for these symbols, computed at `digits`."""
    if not names:
        return ({},)
    with mpmath.workdps(digits):
        return tuple(dict(zip(names, values, strict=False)) for values in _points())


def ratio_sign(a: Node, b: Node) -> int | None:
    """When `a` is a constant nonzero multiple of `b` (`2x+4y-6` and `x+2y-3`), the sign of that
    constant (+1 or -1); None when it is not (or either is zero).

    Raises `Unevaluable` as `same_value` does.
    """
    names, rename = _point_names(a, b)
    if len(names) > MAX_SYMBOLS:
        raise Unevaluable("too many symbols")
    a, b = _renamed(a, rename), _renamed(b, rename)
    quotient = Node("frac", (a, b))
    try:
        digits = precision_for((a, b), _at(names))
        ratios = []
        with mpmath.workdps(2 * digits):
            for point in _at(names, 2 * digits):
                if value_of(b, point) == 0:
                    return None
                ratios.append(value_of(quotient, point))
            tolerance = mpmath.mpf(10) ** (GUARD_DIGITS - digits)
            first = ratios[0]
            if first == 0 or mpmath.isinf(first) or isinstance(first, mpmath.mpc):
                if not isinstance(first, mpmath.mpc) or abs(first.imag) > tolerance:
                    return None
                first = first.real
            for other in ratios[1:]:
                if abs(other - first) > tolerance * max(1, abs(first)):
                    return None
    except Unevaluable:
        raise
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
        raise Unevaluable(str(exc)) from exc
    return 1 if first > 0 else -1
