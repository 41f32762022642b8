"""Units after a number: `5 \\text{ cm}`, `15\\mbox{ cm}^2`, `\\$18.90`, `5.4 \\text{ cents}`.

A unit is a conversion factor and a dimension (powers of length, mass, time, money, or of a
named count such as `apples`). Answers with units in the same dimension are compared after
conversion (`500 cents` is `\\$5`, `0.05 m` is `5 cm`); different dimensions (`5 cm` vs `5 kg`,
`5 apples` vs `5 pears`) are unequal. Whether a side *without* a unit matches is the caller's
policy (`MathConfig.units`). Number words (`5 thousand`, `2 dozen`) are units without a
dimension: they always scale the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Unit", "split_unit"]

_Dims = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Unit:
    """A unit: `factor` base units of dimension `dims` (sorted `(name, power)` pairs)."""

    factor: Fraction
    dims: _Dims
    text: str
    """The unit as written (for reasons and keys)."""

    def convertible(self, other: Unit) -> bool:
        return self.dims == other.dims

    @property
    def scale(self) -> bool:
        """A number word (`5 thousand`, `2 dozen`): it changes the value, whatever the other
        side carries."""
        return not self.dims


_LENGTH = {
    **dict.fromkeys(("mm", "millimeter", "millimetre"), Fraction(1, 1000)),
    **dict.fromkeys(("cm", "centimeter", "centimetre"), Fraction(1, 100)),
    **dict.fromkeys(("dm", "decimeter", "decimetre"), Fraction(1, 10)),
    **dict.fromkeys(("m", "meter", "metre"), Fraction(1)),
    **dict.fromkeys(("km", "kilometer", "kilometre"), Fraction(1000)),
    **dict.fromkeys(("in", "inch", "inche"), Fraction(254, 10_000)),
    **dict.fromkeys(("ft", "foot", "feet"), Fraction(3048, 10_000)),
    **dict.fromkeys(("yd", "yard"), Fraction(9144, 10_000)),
    **dict.fromkeys(("mi", "mile"), Fraction(1_609_344, 1000)),
}
_SIMPLE: dict[str, tuple[Fraction, _Dims]] = {
    **{name: (factor, (("length", 1),)) for name, factor in _LENGTH.items()},
    **dict.fromkeys(("mg", "milligram"), (Fraction(1, 1000), (("mass", 1),))),
    **dict.fromkeys(("g", "gram"), (Fraction(1), (("mass", 1),))),
    **dict.fromkeys(("kg", "kilogram"), (Fraction(1000), (("mass", 1),))),
    **dict.fromkeys(("lb", "lbs", "pound"), (Fraction(45_359_237, 100_000), (("mass", 1),))),
    **dict.fromkeys(("oz", "ounce"), (Fraction(28_349_523_125, 10**9), (("mass", 1),))),
    **dict.fromkeys(("s", "sec", "second"), (Fraction(1), (("time", 1),))),
    **dict.fromkeys(("min", "minute"), (Fraction(60), (("time", 1),))),
    **dict.fromkeys(("h", "hr", "hrs", "hour"), (Fraction(3600), (("time", 1),))),
    **dict.fromkeys(("day",), (Fraction(86_400), (("time", 1),))),
    **dict.fromkeys(("week", "wk"), (Fraction(604_800), (("time", 1),))),
    **dict.fromkeys(("cent", "¢"), (Fraction(1), (("money", 1),))),
    **dict.fromkeys(("dollar", "$", "usd"), (Fraction(100), (("money", 1),))),
    **dict.fromkeys(("euro", "€", "eur"), (Fraction(1), (("euro", 1),))),
    **dict.fromkeys(("pound sterling", "£", "gbp"), (Fraction(1), (("sterling", 1),))),
    **dict.fromkeys(("yen", "¥", "yuan", "rmb"), (Fraction(1), (("yen or yuan", 1),))),
    **dict.fromkeys(("l", "liter", "litre"), (Fraction(1, 1000), (("length", 3),))),
    **dict.fromkeys(("ml", "milliliter", "millilitre"), (Fraction(1, 10**6), (("length", 3),))),
    "mph": (_LENGTH["mile"] / 3600, (("length", 1), ("time", -1))),
    "dozen": (Fraction(12), ()),
    "hundred": (Fraction(100), ()),
    "thousand": (Fraction(1000), ()),
    "million": (Fraction(10**6), ()),
    "billion": (Fraction(10**9), ()),
    "trillion": (Fraction(10**12), ()),
    "kph": (Fraction(1000, 3600), (("length", 1), ("time", -1))),
}
_POWER_WORDS = {"square": 2, "sq": 2, "cubic": 3, "cu": 3}
_UNIT_TEXT = re.compile(r"\\(?:unit|text)\{([^{}]*)\}")
_TAIL = re.compile(
    r"(?P<value>.*?[\d}.)]|.*?\\(?:pi|infty))"
    r"(?P<unit>(?:\\(?:unit|text)\{[^{}]*\}|(?<![A-Za-z\\])[A-Za-z]{2,}\.?|[¢€£¥]"
    r"|(?<=\s)[A-Za-z]\.?|/|\s|\^\s*\{?\s*[23]\s*\}?|[²³])+)$",
    re.S,
)
MAX_UNIT_CHARS = 100
"""A unit is looked for in an answer's last 100 characters only: `_TAIL` tries every
candidate end of the value and re-reads the rest as a unit from there, so over a whole
20,000-character line (`Hmm.` repeated) it was quadratic (20 CPU-s)."""
_DOLLAR_PREFIX = re.compile(r"^\s*(-?)\s*\\\$\s*")
_NOT_A_UNIT = frozenset(
    [
        "or",
        "and",
        "more",
        "less",
        "fewer",
        "approx",
        "approximately",
        "about",
        "around",
        "roughly",
        "nearly",
        "almost",
        "least",
        "most",
        "over",
        "under",
        "than",
        "maybe",
        "possibly",
        "not",
        "only",
        "exactly",
        "is",
        "are",
        "was",
        "were",
        "be",
        "isn",
        "aren",
        "wasn",
        "cannot",
        "no",
        "never",
        "wrongly",
        "ruled",
        "think",
        "perhaps",
        "probably",
        "likely",
        "unlikely",
        "guess",
        "if",
        "unless",
        "except",
        "but",
        "either",
        "neither",
        "nor",
        "vs",
        "versus",
    ]
)
"""Words that make trailing text a hedge, a qualifier or a verdict on the value, never a unit
(`5 \\text{ or more}`, `5 is wrong`: a unit is read from any other trailing words, so these
would otherwise pass as one)."""
_VERDICTS = frozenset(
    [
        "wrong",
        "incorrect",
        "false",
        "impossible",
        "invalid",
        "extraneous",
        "rejected",
        "excluded",
        "doubtful",
        "nope",
        "bound",
    ]
)
"""Verdicts on the value when they end the trailing text (`5 extraneous`, `5 nope`); before a
noun they describe it (`5 \\text{ false coins}`, `3 \\text{ invalid ballots}` are units)."""


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        return word[:-1]
    return word


def _unit_words(text: str) -> list[tuple[str, int]] | None:
    """`square cm`, `cm^2`, `km/h`, `miles per hour` -> [(word, power)], or None."""
    words: list[tuple[str, int]] = []
    sign, pending_power = 1, 1
    tokens = re.findall(r"\^\s*\{?\s*[23]\s*\}?|[²³]|/|[A-Za-z]+|[¢$€£¥]", text)
    last_word = next((t.lower() for t in reversed(tokens) if t.isalpha()), "")
    if last_word in _VERDICTS:
        return None
    for token in tokens:
        if token == "/" or token.lower() == "per":
            sign = -1
            continue
        power = re.search(r"[23²³]", token)
        if power is not None and not token.isalpha():
            if not words:
                return None
            word, previous = words[-1]
            words[-1] = (word, previous * {"2": 2, "3": 3, "²": 2, "³": 3}[power.group()])
            continue
        lower = token.lower()
        if lower in _NOT_A_UNIT:
            return None
        if lower in _POWER_WORDS:
            pending_power = _POWER_WORDS[lower]
            continue
        words.append((token if _case_matters(token) else lower, sign * pending_power))
        pending_power = 1
    return words or None


def _case_matters(token: str) -> bool:
    """An abbreviation opening with a large SI prefix keeps its case (`Mm` is a megametre, not
    `mm`; `Gm` not `gm`); others fold (`Km`, `CM`, `L`), and so do words (`Meters`)."""
    return len(token) <= 2 and token[0] in "MGTPE" and token != token.lower()


def _unit(text: str) -> Unit | None:
    words = _unit_words(text)
    if words is None:
        return None
    factor = Fraction(1)
    dims: dict[str, int] = {}
    for word, power in words:
        known = _SIMPLE.get(word) or _SIMPLE.get(_singular(word))
        base, unit_dims = known if known else (Fraction(1), ((f"count of {_singular(word)}", 1),))
        factor *= base**power
        for name, exponent in unit_dims:
            dims[name] = dims.get(name, 0) + exponent * power
    cleaned = tuple(sorted((n, p) for n, p in dims.items() if p))
    if not cleaned and dims:  # `hours per week`: a ratio, not a number word that scales
        cleaned = (("ratio", 1),)
    return Unit(factor, cleaned, " ".join(w if p == 1 else f"{w}^{p}" for w, p in words))


def split_unit(answer: str) -> tuple[str, Unit | None]:
    """(value, unit) of a normalised answer: `5 \\text{cm}^2` -> (`5`, cm^2); `\\$18.90` ->
    (`18.90`, dollar). Without a unit, (answer, None). Single letters count as units only
    when set apart (`5 m`, `5 \\text{m}`): `2k` is an expression."""
    sign, rest = _without_dollars(answer)
    if rest is not answer:
        value, unit = split_unit(rest)
        return sign + value, unit or _unit("dollar")
    match = _TAIL.match(answer, max(0, len(answer) - MAX_UNIT_CHARS))
    if match is None or not match.group("unit").strip():
        return answer, None
    unit_text = _UNIT_TEXT.sub(lambda m: f" {m.group(1)} ", match.group("unit"))
    unit = _unit(unit_text)
    if unit is None:
        return answer, None
    return answer[: match.end("value")].strip(), unit


def _without_dollars(answer: str) -> tuple[str, str]:
    """(sign, rest) of an answer opening with `\\$` (`-\\$5`), every leading `\\$` taken
    in one loop (one recursion per `\\$` overflowed the stack on 1,000 of them); the answer
    itself when it has none."""
    sign, rest = "", answer
    while (dollar := _DOLLAR_PREFIX.match(rest)) is not None:
        sign += dollar.group(1)
        rest = rest[dollar.end() :].strip()
    return sign, rest
