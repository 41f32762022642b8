"""Parse one normalised answer (an expression, no relation, no list) into a small tree.

The grammar is the math a final answer is written in: numbers, letters and Greek symbols,
`+ - * / \\div ^ !`, implicit products (`2\\sqrt{3}x`), `\\frac`, `\\sqrt[n]{}`, `\\binom`,
absolute values, floors and ceilings, the elementary functions (`\\sin^2 x`, `\\log_2 8`,
`\\arctan(1/2)`), `f(x)` for an undefined function, mixed numbers (`1\\frac{4}{5}`) and
`\\pm`. Anything else (`\\sum`, `\\int`, `\\lim`, primes, `\\dots`, unknown commands) is a
`ParseError`: such an answer is compared by its text alone, never guessed at.

The tree feeds two readers: the numeric screen (`_numeric`) and the finished-form rule
(`_form`). Nodes are plain tuples (`Node(kind, args, value)`) so building one is cheap.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

__all__ = [
    "FUNCTION_CLASSES",
    "WORD_FUNCTIONS",
    "Node",
    "ParseError",
    "literal_value",
    "parse_expression",
]

MAX_DEPTH = 60
"""Deepest nesting parsed; deeper input is refused rather than recursed into."""
MAX_NUMBER_CHARS = 400
"""Longest number read (Python refuses int() beyond 4,300 digits; no real answer is near)."""
MAX_TOKENS = 600
"""Longest token stream parsed (a real final answer is far shorter)."""


class ParseError(ValueError):
    """The text is not an expression this parser reads."""


class Node(NamedTuple):
    """One tree node. `kind` is one of:

    num (value: Fraction) · sym (value: name) · const (value: pi|e|i|inf) · add · neg ·
    mul · frac (num, den) · div (a \\div b) · pow (base, exp) · root (radicand, index) ·
    mixed (value: Fraction; `1\\frac45`) · func (value: name; args) · apply (value: name of an
    undefined function; args) · pm (a \\pm b: two values).
    """

    kind: str
    args: tuple[Node, ...] = ()
    value: object = None


FUNCTION_CLASSES: dict[str, str] = {
    **dict.fromkeys(("sin", "cos", "tan", "sec", "csc", "cot"), "trigonometric function"),
    **dict.fromkeys(("sinh", "cosh", "tanh", "coth"), "hyperbolic function"),
    **dict.fromkeys(("arcsin", "arccos", "arctan", "arccot"), "inverse trigonometric function"),
    **dict.fromkeys(("log", "ln", "lg", "exp"), "logarithm or exponential"),
    "binom": "binomial coefficient",
    "factorial": "factorial",
    "abs": "absolute value",
    "floor": "floor or ceiling",
    "ceil": "floor or ceiling",
    **dict.fromkeys(("gcd", "lcm"), "gcd or lcm"),
    **dict.fromkeys(("max", "min"), "maximum or minimum"),
}
"""Each function the parser knows, by the kind of operation it is (what the finished-form
rule reports)."""
_MULTI_ARG = frozenset({"gcd", "lcm", "max", "min"})
_GREEK = frozenset(
    [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "varepsilon",
        "zeta",
        "eta",
        "theta",
        "vartheta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
        "omicron",
        "rho",
        "varrho",
        "sigma",
        "tau",
        "upsilon",
        "phi",
        "varphi",
        "chi",
        "psi",
        "omega",
        "Gamma",
        "Delta",
        "Theta",
        "Lambda",
        "Xi",
        "Sigma",
        "Upsilon",
        "Phi",
        "Psi",
        "Omega",
        "ell",
    ]
)
_DECORATORS = frozenset(
    [
        "vec",
        "overline",
        "bar",
        "hat",
        "widehat",
        "tilde",
        "widetilde",
        "overrightarrow",
        "underline",
        "dot",
        "ddot",
    ]
)
_UNDEFINED_FUNCTIONS = frozenset("fghpqPQFGHW")
"""Letters read as a function when directly followed by `(`: `f(x)`, `p(2)`. Any other letter
before a parenthesis multiplies it: `x(x+1)`."""
_TOKEN = re.compile(
    r"(?P<num>\d+(?:\.\d+)?|\.\d+)"
    r"|(?P<cmd>\\[a-zA-Z]+|\\[{}|])"
    r"|(?P<word>[a-zA-Z]+)"
    r"|(?P<op>\*\*|[-+*/^_!()\[\]{}|,])"
    r"|(?P<space>\s+)"
)
WORD_FUNCTIONS = frozenset(
    [
        "sin",
        "cos",
        "tan",
        "sec",
        "csc",
        "cot",
        "sinh",
        "cosh",
        "tanh",
        "arcsin",
        "arccos",
        "arctan",
        "log",
        "ln",
        "exp",
        "sqrt",
        "gcd",
        "lcm",
        "max",
        "min",
    ]
)
"""Function names written without a backslash (`sqrt(8)`, `sin x`, `lcm(4,6)`)."""
_OPEN_CLOSE = {"(": ")", "[": "]", "{": "}"}
_NOT_FACTOR_COMMANDS = frozenset(("pm", "mp", "div", "cdot", "times", "rfloor", "rceil", "}", "|"))
"""Commands that continue or close an expression rather than start a factor."""


class _Token(NamedTuple):
    kind: str  # num | cmd | name | const | func | op
    text: str
    spaced: bool  # preceded by whitespace


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    spaced = False
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ParseError(f"unexpected {text[pos]!r}")
        pos = match.end()
        kind = match.lastgroup
        value = match.group()
        if kind == "num" and len(value) > MAX_NUMBER_CHARS:
            raise ParseError("number too long")
        if kind == "space":
            spaced = True
            continue
        if kind == "word":
            lower = value.lower()
            if lower in WORD_FUNCTIONS:
                tokens.append(_Token("func", lower, spaced))
            elif value == "pi":
                tokens.append(_Token("const", "pi", spaced))
            else:  # `ab` is a times b
                tokens.extend(_Token("name", c, spaced and i == 0) for i, c in enumerate(value))
        elif kind == "op":
            tokens.append(_Token("op", "^" if value == "**" else value, spaced))
        else:
            tokens.append(_Token(kind or "op", value, spaced))
        spaced = False
        if len(tokens) > MAX_TOKENS:
            raise ParseError("too long")
    return tokens


def _num(value: Fraction) -> Node:
    return Node("num", (), value)


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.depth = 0
        self.abs_depth = 0

    # --- helpers -------------------------------------------------------------------------

    def peek(self, offset: int = 0) -> _Token | None:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def is_op(self, text: str, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token is not None and token.kind == "op" and token.text == text

    def is_cmd(self, *names: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "cmd" and token.text[1:] in names

    def take(self) -> _Token:
        token = self.peek()
        if token is None:
            raise ParseError("unexpected end")
        self.pos += 1
        return token

    def expect_op(self, text: str) -> None:
        if not self.is_op(text):
            raise ParseError(f"expected {text!r}")
        self.pos += 1

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError("nested too deeply")

    # --- grammar -------------------------------------------------------------------------

    def parse(self) -> Node:
        if not self.tokens:
            raise ParseError("empty")
        node = self.expr()
        if self.pos != len(self.tokens):
            raise ParseError(f"unexpected {self.tokens[self.pos].text!r}")
        return node

    def expr(self) -> Node:
        """A sum: terms joined by + - and \\pm (a \\pm b keeps both values)."""
        self.enter()
        terms = [self.unary()]
        while True:
            if self.is_op("+"):
                self.pos += 1
                terms.append(self.unary())
            elif self.is_op("-"):
                self.pos += 1
                terms.append(Node("neg", (self.unary(),)))
            elif self.is_cmd("pm", "mp"):
                sign = self.take().text
                rest = self.unary()
                left = terms[0] if len(terms) == 1 else Node("add", tuple(terms))
                terms = [Node("pm", (left, rest if sign == "\\pm" else Node("neg", (rest,))))]
            else:
                break
        self.depth -= 1
        return terms[0] if len(terms) == 1 else Node("add", tuple(terms))

    def unary(self) -> Node:
        if self.is_op("-"):
            self.pos += 1
            return Node("neg", (self.unary(),))
        if self.is_op("+"):
            self.pos += 1
            return self.unary()
        if self.is_cmd("pm", "mp"):  # a leading \pm or \mp: both signs
            self.pos += 1
            return Node("pm", (_num(Fraction(0)), self.unary()))
        return self.product()

    def product(self) -> Node:
        """Factors joined by *, /, \\div or juxtaposition (implicit multiplication)."""
        start = self.pos
        node = self.power()
        bare_number = self.pos == start + 1 and self.tokens[start].kind == "num"
        factors = [node]
        implicit = [False]
        while True:
            if self.is_op("*") or self.is_cmd("cdot", "times"):
                self.pos += 1
                factors.append(self.signed_power())
                implicit.append(False)
            elif self.is_op("/") or self.is_cmd("div"):
                kind = "frac" if self.take().text == "/" else "div"
                left = factors[0] if len(factors) == 1 else Node("mul", tuple(factors))
                factors, implicit = [Node(kind, (left, self.signed_power()))], [False]
            elif self.starts_factor():
                factors.append(self.power())
                implicit.append(True)
            else:
                break
        if len(factors) == 2 and implicit[1] and bare_number:  # `1\\frac45`, not `(0)(\\frac12)`
            mixed = _mixed_number(factors[0], factors[1])
            if mixed is not None:
                return mixed
        return factors[0] if len(factors) == 1 else Node("mul", tuple(factors))

    def signed_power(self) -> Node:
        if self.is_op("-"):
            self.pos += 1
            return Node("neg", (self.signed_power(),))
        return self.power()

    def starts_factor(self) -> bool:
        token = self.peek()
        if token is None:
            return False
        if token.kind == "num" and self.tokens[self.pos - 1].kind == "num":
            raise ParseError("two numbers side by side")  # `5 6` is not 30
        if token.kind in ("num", "name", "const", "func"):
            return True
        if token.kind == "cmd":
            return token.text[1:] not in _NOT_FACTOR_COMMANDS
        if token.kind == "op":
            if token.text == "|":
                return self.abs_depth == 0
            return token.text in ("(", "[", "{")
        return False

    def starts_function(self) -> bool:
        token = self.peek()
        if token is None:
            return False
        return token.kind == "func" or (token.kind == "cmd" and token.text[1:] in FUNCTION_CLASSES)

    def power(self) -> Node:
        self.enter()
        base = self.postfix()
        if self.is_op("^"):
            self.pos += 1
            base = Node("pow", (base, self.exponent()))
        self.depth -= 1
        return base

    def exponent(self) -> Node:
        if self.is_op("{"):
            return self.group()
        if self.is_op("-"):
            self.pos += 1
            return Node("neg", (self.exponent(),))
        token = self.peek()
        if token is not None and token.kind == "name" and not token.spaced:
            self.pos += 1  # `x^n`: one letter
            return Node("sym", (), token.text)
        return self.power()

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            if self.is_op("!"):
                self.pos += 1
                node = Node("func", (node,), "factorial")
            elif self.is_op("_"):
                self.pos += 1
                if node.kind != "sym":
                    raise ParseError("subscript on a non-symbol")
                node = Node("sym", (), f"{node.value}_{self.raw_group_text()}")
            else:
                return node

    def raw_group_text(self) -> str:
        """The text of a subscript: one token, or a braced group as written (no spaces)."""
        if not self.is_op("{"):
            return self.take().text
        self.pos += 1
        parts: list[str] = []
        depth = 1
        while True:
            token = self.take()
            if token.kind == "op" and token.text == "{":
                depth += 1
            elif token.kind == "op" and token.text == "}":
                depth -= 1
                if depth == 0:
                    return "".join(parts)
            parts.append(token.text)

    def group(self) -> Node:
        """`{...}`, `(...)` or `[...]`: one expression between matching brackets."""
        opener = self.take().text
        node = self.expr()
        self.expect_op(_OPEN_CLOSE[opener])
        return node

    def argument(self) -> Node:
        """The argument of `\\frac`, `\\sqrt`...: a braced group or one token (`\\frac12`)."""
        if self.is_op("{"):
            return self.group()
        token = self.take()
        if token.kind == "num":  # `\frac12`: one digit each
            if not token.text.isdigit():
                raise ParseError("decimal as an unbraced argument")
            if len(token.text) > 1:
                self.pos -= 1
                self.tokens[self.pos] = _Token("num", token.text[1:], False)
            return _num(Fraction(token.text[0]))
        if token.kind == "name":  # `\\frac1e` is 1/e, as `e` is anywhere else
            return Node("const" if token.text in "ei" else "sym", (), token.text)
        if token.kind == "const":
            return Node("const", (), token.text)
        if token.kind == "cmd":
            self.pos -= 1
            return self.primary()
        raise ParseError(f"bad argument {token.text!r}")

    def primary(self) -> Node:
        token = self.take()
        if token.kind == "num":
            return _num(Fraction(token.text))
        if token.kind == "name":
            if token.text in _UNDEFINED_FUNCTIONS and self.is_op("(") and not self.peek().spaced:
                return Node("apply", self.call_arguments(), token.text)
            if token.text == "e":
                return Node("const", (), "e")
            if token.text == "i":
                return Node("const", (), "i")
            return Node("sym", (), token.text)
        if token.kind == "const":
            return Node("const", (), token.text)
        if token.kind == "func":
            return self.function(token.text)
        if token.kind == "op":
            if token.text in _OPEN_CLOSE:
                self.pos -= 1
                return self.group()
            if token.text == "|":
                self.abs_depth += 1
                node = self.expr()
                self.abs_depth -= 1
                self.expect_op("|")
                return Node("func", (node,), "abs")
            raise ParseError(f"unexpected {token.text!r}")
        return self.command(token.text[1:])

    def command(self, name: str) -> Node:
        if name in ("frac", "cfrac"):
            numerator = self.argument()
            return Node("frac", (numerator, self.argument()))
        if name in ("binom", "dbinom", "tbinom"):
            top = self.argument()
            return Node("func", (top, self.argument()), "binom")
        if name == "sqrt":
            index = _num(Fraction(2))
            if self.is_op("["):
                index = self.group()
            return Node("root", (self.argument(), index))
        if name in ("lfloor", "lceil"):
            node = self.expr()
            closer = "rfloor" if name == "lfloor" else "rceil"
            if not self.is_cmd(closer):
                raise ParseError(f"expected \\{closer}")
            self.pos += 1
            return Node("func", (node,), "floor" if name == "lfloor" else "ceil")
        if name == "pi":
            return Node("const", (), "pi")
        if name == "infty":
            return Node("const", (), "inf")
        if name in _GREEK:
            return Node("sym", (), name)
        if name in _DECORATORS:
            return Node("sym", (), f"{name}{{{self.raw_group_text()}}}")
        if name in FUNCTION_CLASSES and name not in ("binom", "factorial", "abs"):
            return self.function(name)
        if name == "operatorname":
            return self.function(self.raw_group_text().lower())
        raise ParseError(f"unsupported \\{name}")

    def call_arguments(self) -> tuple[Node, ...]:
        """`(a, b, ...)` after a function name."""
        self.expect_op("(")
        args = [self.expr()]
        while self.is_op(","):
            self.pos += 1
            args.append(self.expr())
        self.expect_op(")")
        return tuple(args)

    def function(self, name: str) -> Node:
        """`\\sin^2 x`, `\\sin^{-1}(x)`, `\\log_{2} 8`, `\\max(a, b)`, `\\ln x^2`."""
        if name == "sqrt":  # plain-text sqrt(8)
            return Node("root", (self.primary(), _num(Fraction(2))), None)
        if name not in FUNCTION_CLASSES:
            raise ParseError(f"unknown function {name}")
        power: Node | None = None
        base: Node | None = None
        for _ in range(2):
            if self.is_op("^") and power is None:
                self.pos += 1
                power = self.exponent()
            elif self.is_op("_") and base is None and name in ("log", "lg"):
                self.pos += 1
                base = self.argument() if self.is_op("{") else self.primary()
        if power is not None and power == Node("neg", (_num(Fraction(1)),)):
            if not name.startswith(("sin", "cos", "tan", "cot")):
                raise ParseError("inverse of a non-trigonometric function")
            name, power = f"arc{name}", None
        if name in _MULTI_ARG:
            args = self.call_arguments()
        elif self.is_op("("):
            args = (self.group(),)
        else:
            args = (self.implicit_argument(),)
        if base is not None:
            args = (*args, base)
        node = Node("func", args, name)
        return Node("pow", (node, power)) if power is not None else node

    def implicit_argument(self) -> Node:
        """`\\sin 2x \\cos x`: an unparenthesised argument runs up to the next function."""
        factors = [self.power()]
        while self.starts_factor() and not self.starts_function():
            factors.append(self.power())
        return factors[0] if len(factors) == 1 else Node("mul", tuple(factors))


def _mixed_number(whole: Node, fraction: Node) -> Node | None:
    """`1\\frac{4}{5}` is one and four fifths, when the fraction is proper."""
    if whole.kind != "num" or fraction.kind != "frac":
        return None
    numerator, denominator = fraction.args
    if numerator.kind != "num" or denominator.kind != "num":
        return None
    w, n, d = whole.value, numerator.value, denominator.value
    if not all(isinstance(v, Fraction) and v.denominator == 1 for v in (w, n, d)):
        return None
    if not 0 < n < d:
        return None
    return Node("mixed", (whole, fraction), w + n / d)


def parse_expression(text: str) -> Node:
    """The tree of one expression (no relation, no list), or `ParseError`."""
    try:
        return _Parser(text).parse()
    except RecursionError as exc:
        raise ParseError("nested too deeply") from exc


def literal_value(node: Node) -> Fraction | None:
    """The value of a number written out (`3`, `-2.5`, `\\frac{3}{4}`, `1\\frac{4}{5}`), or None."""
    if node.kind in ("num", "mixed"):
        return node.value  # type: ignore[return-value]
    if node.kind == "neg":
        inner = literal_value(node.args[0])
        return -inner if inner is not None else None
    if node.kind == "frac":
        top, bottom = (literal_value(arg) for arg in node.args)
        if top is not None and bottom is not None and bottom != 0:
            return top / bottom
    return None
