"""String normalisation of LaTeX and plain answers: the fast path that needs no evaluation.

`normalize` turns what a model or a dataset writes ("$\\$18.00$", "5 \\text{ cm}", "30^\\circ",
"\\dfrac12") into one canonical LaTeX string; `key` is that string without spaces, for exact
comparison; `parse_number` reads plain numbers exactly (as `Fraction`) so that most pairs are
decided without evaluating anything.
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "MAX_NUMBER_CHARS",
    "brace_group",
    "choice_letter",
    "is_decimal",
    "key",
    "normalize",
    "parse_number",
]

MAX_NUMBER_CHARS = 400
"""Longer digit strings are not read as numbers (Python refuses int() beyond 4,300 digits, and
no real answer is that long)."""
MAX_BRACE_DEPTH = 64
"""Brace nesting deeper than this is treated as malformed instead of being walked."""
MAX_TEXT_PASSES = 16
"""`\\text{}` wrappers handled per answer; more is not an answer but prose."""

_ROW_BREAK = "\\\\"
_DOLLAR = "\x00"
# Order matters: `\$` (a dollar sign, kept) before `$` (a delimiter), `,\!` (explicit
# thousands separator) before `\!`, `\cdots` before `\cdot`.
_LITERAL_REPLACEMENTS: tuple[tuple[str, str], ...] = (
    ("\\$", _DOLLAR),
    ("$", ""),
    ("\\(", ""),
    ("\\)", ""),
    ("\\[", ""),
    ("\\]", ""),
    (",\\!", ","),
    ("{,}", ","),
    ("\\!", ""),
    ("\\,", ""),
    ("\\;", " "),
    ("\\:", " "),
    ("\\ ", " "),
    ("\\qquad", " "),
    ("\\quad", " "),
    ("~", " "),
    ("\\displaystyle", ""),
    ("\\dfrac", "\\frac"),
    ("\\tfrac", "\\frac"),
    ("\\cfrac", "\\frac"),
    ("\\cdots", "\\dots"),
    ("\\ldots", "\\dots"),
    ("\\cdot", "*"),
    ("\\times", "*"),
    ("\\%", ""),
    ("%", ""),
    ("°", ""),
    ("−", "-"),
    ("×", "*"),
    ("·", "*"),
    ("÷", "\\div "),
    ("±", "\\pm "),
    ("∓", "\\mp "),
    ("π", "\\pi "),
    ("∞", "\\infty "),
    ("≤", "\\le "),
    ("≥", "\\ge "),
    ("≠", "\\ne "),
    ("∅", "\\emptyset "),
    (_DOLLAR, "\\$"),
)
_RADICAL = re.compile(r"([√∛∜])\s*(?:(\d+(?:\.\d+)?)|\(((?:[^()]|\([^()]*\))*)\))?")
"""A radical sign and its radicand: a whole number (`√53`) or a bracket (`√(x+1)`); else the
next token is (`√x`, `√{...}`)."""
_RADICAL_INDEX = {"√": "", "∛": "[3]", "∜": "[4]"}
_SUPERSCRIPTS = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+")
_SUPERSCRIPT_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_VULGAR_FRACTIONS = re.compile("[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅐⅛⅜⅝⅞⅑⅒]")
_RELATIONS = (
    (re.compile(r"\\(?:geqslant|geq|ge)(?![a-zA-Z])|>="), "\\ge "),
    (re.compile(r"\\(?:leqslant|leq|le)(?![a-zA-Z])|<="), "\\le "),
    (re.compile(r"\\(?:neq|ne)(?![a-zA-Z])|!="), "\\ne "),
    (re.compile(r"\\gt(?![a-zA-Z])"), ">"),
    (re.compile(r"\\lt(?![a-zA-Z])"), "<"),
)
"""Every spelling of a relation, one canonical form (`x \\geq 5` is `x >= 5`)."""
_DOUBLED_BACKSLASH = re.compile(r"\\\\(?=[a-zA-Z])")
"""`\\\\frac` outside a matrix is a doubled escape, not a row break (`\\\\left(` in datasets)."""
_BRACED_COMMA = re.compile(r"\s*\{,\s*\}\s*")
"""`14 {, }916` is 14,916."""
_REPEATING = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\overline\s*\{(\d{1,50})\}")
"""`0.\\overline{3}`, `1.2\\overline{45}`: repeating decimals, read as the fractions they are."""
_PHANTOM = re.compile(r"\\(?:h|v)?phantom\s*\{[^{}]*\}")
_PERCENT_WORD = re.compile(r"(?<=[\d}])\s*(?:\\unit\{)?\s*(?:percent(?:age)?|pct)\s*\}?$")
_PARENTHESISED_OR = re.compile(r"\(\s*or\s+([^()]*)\)")
"""`3 (or 5)` is `3 or 5`."""
_EITHER = re.compile(r"^(?:either|both)\s+", re.IGNORECASE)
_SIZING = re.compile(r"\\(?:left|right|[bB]igg?[lr]?)(?![a-zA-Z])\s*\.?")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree")
_TRAILING_DEGREES = re.compile(
    r"\s*(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree)(?=\s*(?:$|[,;)\]]|\\\}|or\b))"
)
"""Degrees ending a value (`30^\\circ`, `30^\\circ, 150^\\circ`) are its unit, so that `30
\\text{ radians}` is not `30^\\circ`; degrees elsewhere (`\\sin 30^\\circ`) are dropped."""
_TEXT_CMD = re.compile(
    r"\\(?:text|mbox|textbf|textit|textnormal|mathrm|mathbf|textrm|operatorname)\s*\{"
)
_THOUSANDS_SPACED = re.compile(r"(?<=\d),\s+(?=\d{3}(?!\d))")
_FRAC_SHORT = (
    (re.compile(r"\\frac\s*(\d)\s*(\d)"), r"\\frac{\1}{\2}"),
    (re.compile(r"\\frac\s*(\d)\s*\{"), r"\\frac{\1}{"),
    (re.compile(r"\\frac\s*(\{[^{}]*\})\s*(\d)"), r"\\frac\1{\2}"),
    (re.compile(r"\\frac\s*(\d)\s*\\"), r"\\frac{\1}\\"),
    (re.compile(r"\\sqrt\s*(\d)"), r"\\sqrt{\1}"),
)
_SHORT_SUBSCRIPT = re.compile(r"_\{(\w)\}")
_WORD_OR = re.compile(r"\s+(?:or|and)\s+|\s*,\s*(?:or|and)\s+|(?<=[)\]}])(?:or|and)(?=[(\[{])")
_SPACES = re.compile(r"\s+")
_CHOICE = re.compile(r"^\(?([A-E])\)?\.?$")
_INT = re.compile(r"[-+]?\d+")
_DECIMAL = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?")
_SLASH = re.compile(r"([-+]?\d+)\s*/\s*(\d+)")
_FRAC = re.compile(r"([-+]?)\\frac\{\s*([-+]?\d+)\s*\}\{\s*([-+]?\d+)\s*\}")
_MIXED = re.compile(r"([-+]?)(\d+)\s*\\frac\{\s*(\d+)\s*\}\{\s*(\d+)\s*\}")


def brace_group(text: str, start: int, limit: int) -> int | None:
    """Index just past the `{...}` group opening at `text[start]`, or None when the braces
    do not balance within `limit` characters or nest deeper than `MAX_BRACE_DEPTH`.

    Escaped braces (`\\{`, `\\}`) are content, as in `\\boxed{\\{1, 2\\}}`.
    """
    depth = 0
    end = min(len(text), start + limit)
    i = start
    while i < end:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            depth += 1
            if depth > MAX_BRACE_DEPTH:
                return None
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


_SPACED_DIGITS = re.compile(r"\d\s+\d")
_COMMA_SPACE = re.compile(r",\s+\d")
_NON_DIGIT_SPACE = re.compile(r"(?<!\d) +| +(?!\d)")
_SPACE_THOUSANDS = re.compile(r"-?\d{1,3}(?: \d{3})+(?:\.\d+)?")
_UNIT_STEPS: dict[int, tuple[tuple[str, int], ...]] = {
    0: (("space", 0), ("letter", 2)),  # leading spaces, then a word
    1: (("letter", 2),),  # a word after a separator
    2: (("letter", 2), (".", 3), ("space", 4), (" ", 7), (".", 7), ("/", 7), ("p", 5)),
    3: (("space", 4), (" ", 7), (".", 7), ("/", 7), ("p", 5)),  # after a word's `.`
    4: (("space", 4), (" ", 7), (".", 7), ("/", 7), ("p", 5)),  # spaces after a word
    5: (("e", 6),),
    6: (("r", 7),),  # `per`
    7: (("space", 7), ("letter", 2)),  # after the separator, spaces then the next word
}
_UNIT_ACCEPT = frozenset({2, 3, 4})


def _is_unit_text(text: str) -> bool:
    """What a trailing `\\text{}` may hold to be a unit: words, `/`, `.` (`cm`, `m/s`, `sq ft`).

    The language of ``\\s*[A-Za-z¢]+\\.?(?:\\s*(?:[ ./]|per)\\s*[A-Za-z¢]+\\.?)*\\s*`` (fullmatch),
    read as a set of automaton states in one pass: that regex backtracks exponentially when it
    fails (a space is both `\\s` and `[ ]`, `per` both letters and a separator: a 90-character
    `\\text{aperaper...?}` took 5 s, 30 more characters hours).
    """
    states = {0}
    for ch in text:
        kinds = {ch}
        if ch.isspace():  # what `\\s` matches in a str pattern
            kinds.add("space")
        if "a" <= ch <= "z" or "A" <= ch <= "Z" or ch == "¢":
            kinds.add("letter")
        states = {after for state in states for kind, after in _UNIT_STEPS[state] if kind in kinds}
        if not states:
            return False
    return bool(states & _UNIT_ACCEPT)


_NOT_A_UNIT = re.compile(
    r"\b(?:or|and|more|less|fewer|approx\w*|about|around|roughly|nearly|almost|least|most|"
    r"over|under|than|maybe|possibly|not)\b",
    re.IGNORECASE,
)
"""Words that make trailing text a hedge or a qualifier, never a unit (`5 \\text{ or more}`)."""


def _unwrap_text(s: str) -> str:
    """Resolve `\\text{...}` wrappers: a trailing unit (`5 \\text{ cm}^2`) becomes the marker
    `\\unit{cm}^2` for `split_unit`; connectives (`\\text{ or }`) become words; anything else
    (`\\text{Evelyn}`, `\\mathbf{v}`) is unwrapped."""
    for _ in range(MAX_TEXT_PASSES):
        match = _TEXT_CMD.search(s)
        if match is None:
            return s
        open_at = match.end() - 1
        close_at = brace_group(s, open_at, len(s) - open_at)
        if close_at is None:
            return s
        inner = s[open_at + 1 : close_at - 1]
        before, after = s[: match.start()], s[close_at:]
        unit_power = re.match(r"\s*\^\s*\{?\d\}?", after)
        if inner.strip().lower() in ("or", "and"):
            s = f"{before} {inner.strip().lower()} {after}"
        elif (
            before.strip()
            and (not after.strip() or (unit_power and not after[unit_power.end() :].strip()))
            and _is_unit_text(inner)
            and not _NOT_A_UNIT.search(inner)
        ):
            s = f"{before} \\unit{{{inner.strip()}}}{after}"
        else:
            s = f"{before}{inner}{after}"
    return s


def _radical(match: re.Match[str]) -> str:
    sign, number, bracketed = match.groups()
    radicand = number if number is not None else bracketed
    command = "\\sqrt" + _RADICAL_INDEX[sign]
    return f"{command}{{{radicand}}}" if radicand is not None else f"{command} "


def _superscript(match: re.Match[str]) -> str:
    exponent = match.group().translate(_SUPERSCRIPT_DIGITS)
    return f"^{exponent}" if len(exponent) == 1 else f"^{{{exponent}}}"


def _vulgar_fraction(match: re.Match[str]) -> str:
    value = Fraction(unicodedata.numeric(match.group())).limit_denominator(10)
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def _unicode_math(s: str) -> str:
    """Unicode radicals, superscripts and fractions as LaTeX: `√53` is `\\sqrt{53}` (the whole
    number: `\\sqrt53` would be `\\sqrt{5}3`), `2√(x+1)` is `2\\sqrt{x+1}`, `∛8` is
    `\\sqrt[3]{8}`, `x⁴` is `x^4`, `10⁻¹²` is `10^{-12}`, `1½` is `1\\frac{1}{2}`."""
    s = _RADICAL.sub(_radical, s)
    s = _SUPERSCRIPTS.sub(_superscript, s)
    return _VULGAR_FRACTIONS.sub(_vulgar_fraction, s)


def _repeating_fraction(match: re.Match[str]) -> str:
    whole, fixed, cycle = match.groups()
    shift = 10 ** len(fixed)
    value = Fraction(int(whole or "0")) + Fraction(int(fixed or "0"), shift)
    value += Fraction(int(cycle), shift * (10 ** len(cycle) - 1))
    if value.denominator == 1:
        return str(value.numerator)
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


@lru_cache(maxsize=8192)
def normalize(answer: str) -> str:
    """Canonical LaTeX for an extracted answer: delimiters, spacing, sizing, degrees and
    percent removed; relations, fractions and `\\text` spelled one way; a trailing unit kept
    as `\\unit{...}` and a dollar sign as `\\$` (for `split_unit`); spaces collapsed."""
    s = answer.strip()
    if "\\begin" not in s:
        s = _DOUBLED_BACKSLASH.sub(r"\\", s)
    rows = s.split(_ROW_BREAK)  # `\\ ` is a row break, not `\ `
    for i, row in enumerate(rows):
        for old, new in _LITERAL_REPLACEMENTS:
            if old in row:
                row = row.replace(old, new)
        rows[i] = row
    # runs of blanks read as one from here: patterns below backtrack over a run from every
    # blank in it (`5` then 9,000 `` ~`` took 5 s)
    s = _SPACES.sub(" ", _ROW_BREAK.join(rows))
    if not s.isascii():
        s = _unicode_math(s)
    if "\\overline" in s:
        s = _REPEATING.sub(_repeating_fraction, s)
    if "phantom" in s:
        s = _PHANTOM.sub("", s)
    if "{," in s:
        s = _BRACED_COMMA.sub(",", s)
    for pattern, relation in _RELATIONS:
        s = pattern.sub(lambda _, r=relation: r, s)
    s = _SIZING.sub("", s)
    # `\{ \}` (`\{~\}`, `\left\{ \right\}`, spaced and sized above) is the empty set, not a
    # set of one empty answer
    s = s.replace("\\{ \\}", "\\{\\}")
    s = _DEGREES.sub("", _TRAILING_DEGREES.sub(r" \\unit{degree}", s))
    s = _unwrap_text(s)
    s = _SHORT_SUBSCRIPT.sub(r"_\1", s)
    for pattern, replacement in _FRAC_SHORT:
        s = pattern.sub(replacement, s)
    s = _THOUSANDS_SPACED.sub(",", s) if ",\\!" in answer else s
    s = _SPACES.sub(" ", s).strip().rstrip(".;:,").strip()
    s = _PERCENT_WORD.sub("", s)
    s = _EITHER.sub("", s)
    s = _PARENTHESISED_OR.sub(r" or \1", s)
    s = _WORD_OR.sub(" or ", s)
    if s.startswith("="):
        s = s[1:].strip()
    return s


def key(normalized: str) -> str:
    """The normalised answer without spaces, but for those between two digits (`5 6` is two
    numbers, not 56): equal keys mean equal answers."""
    return _NON_DIGIT_SPACE.sub("", normalized)


def choice_letter(normalized: str) -> str | None:
    """The letter of a multiple-choice answer: `C`, `(C)`, `C.`; None otherwise."""
    match = _CHOICE.match(normalized.replace(" ", ""))
    return match.group(1) if match else None


def is_decimal(normalized: str) -> bool:
    """A plain integer or decimal (`-7,425,000`, `18.00`, `.35`): a number in finished form."""
    s = normalized.replace(" ", "")
    return (
        bool(s) and bool(_INT.fullmatch(s) or _DECIMAL.fullmatch(s)) and any(c.isdigit() for c in s)
    )


@lru_cache(maxsize=8192)
def parse_number(normalized: str) -> Fraction | None:
    """The exact value of a plain number (`-7,425,000`, `18.00`, `.35`, `3/4`, `\\frac{3}{4}`,
    `1\\frac{4}{5}`), or None. Decimals are read exactly as written: 0.333 is not 1/3."""
    if _SPACED_DIGITS.search(normalized) and not _SPACE_THOUSANDS.fullmatch(normalized.strip()):
        return None  # "5 6" is two numbers, not 56; only "7 425 000" groups digits
    if _COMMA_SPACE.search(normalized):
        return None  # "32, 349" is a list, not 32349
    s = normalized.replace(" ", "")
    if not s or len(s) > MAX_NUMBER_CHARS or not any(c.isdigit() for c in s):
        return None
    if _INT.fullmatch(s) or _DECIMAL.fullmatch(s):
        return Fraction(s.replace(",", ""))
    match = _FRAC.fullmatch(s) or _SLASH.fullmatch(s)
    if match is not None:
        *sign, num, den = match.groups()
        if int(den) == 0:
            return None
        value = Fraction(int(num), int(den))
        return -value if sign and sign[0] == "-" else value
    match = _MIXED.fullmatch(s)
    if match is not None:
        sign, whole, num, den = match.groups()
        if int(den) == 0:
            return None
        value = int(whole) + Fraction(int(num), int(den))
        return -value if sign == "-" else value
    return None
