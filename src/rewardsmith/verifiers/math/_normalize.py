"""String normalisation of LaTeX and plain answers: the fast path that needs no sympy.

`normalize` turns what a model or a dataset writes ("$\\$18.00$", "5 \\text{ cm}", "30^\\circ",
"\\dfrac12") into one canonical LaTeX string; `key` is that string without spaces, for exact
comparison; `parse_number` reads plain numbers exactly (as `Fraction`) so that most pairs are
decided without sympy.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "MAX_NUMBER_CHARS",
    "brace_group",
    "choice_letter",
    "key",
    "normalize",
    "parse_number",
    "strip_lhs",
]

MAX_NUMBER_CHARS = 400
"""Longer digit strings are not read as numbers (Python refuses int() beyond 4,300 digits, and
no real answer is that long)."""
MAX_BRACE_DEPTH = 64
"""Brace nesting deeper than this is treated as malformed instead of being walked."""
MAX_TEXT_PASSES = 16
"""`\\text{}` wrappers handled per answer; more is not an answer but prose."""

_ROW_BREAK = "\\\\"
# Order matters: `\$` before `$`, `,\!` (explicit thousands separator) before `\!`.
_LITERAL_REPLACEMENTS: tuple[tuple[str, str], ...] = (
    ("\\$", ""),
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
    ("\\cdot", "*"),
    ("\\times", "*"),
    ("\\%", ""),
    ("%", ""),
    ("°", ""),
    ("−", "-"),
)
_SIZING = re.compile(r"\\(?:left|right|[bB]igg?[lr]?)(?![a-zA-Z])\s*\.?")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree")
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
_UNIT_TAIL = re.compile(r"(?<=[\d}])\s+(?:[A-Za-z]{2,}\.?(?:\^\{?\d\}?)?\s*)+$")
_WORD_OR = re.compile(r"\s+(?:or|and)\s+|\s*,\s*(?:or|and)\s+")
_SPACES = re.compile(r"\s+")
_LHS = re.compile(r"^\s*(?:[A-Za-z]|\\[a-zA-Z]+)(?:_\{?\w+\}?)?\s*(?:=|\\in(?![a-zA-Z]))\s*")
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
_NON_DIGIT_SPACE = re.compile(r"(?<!\d) +| +(?!\d)")
_SPACE_THOUSANDS = re.compile(r"-?\d{1,3}(?: \d{3})+(?:\.\d+)?")
_UNIT_TEXT = re.compile(r"\s*[A-Za-z°%]+(?:[ ./][A-Za-z°%]+)*\.?\s*")
"""What a trailing `\\text{}` may hold to be dropped as a unit: words, `/`, `.`, `°`, `%`."""
_NOT_A_UNIT = re.compile(
    r"\b(?:or|and|more|less|fewer|approx\w*|about|around|roughly|nearly|almost|least|most|"
    r"over|under|than|maybe|possibly|not)\b",
    re.IGNORECASE,
)
"""Words that make trailing text a hedge or a qualifier, never a unit (`5 \\text{ or more}`)."""


def _drop_unit(match: re.Match[str]) -> str:
    """A trailing unit goes; trailing hedges and qualifiers (`or more`, `approximately`) stay,
    so the answer no longer reads as the bare number."""
    return match.group(0) if _NOT_A_UNIT.search(match.group(0)) else ""


def _unwrap_text(s: str) -> str:
    """Resolve `\\text{...}` wrappers: the whole answer (`\\text{Evelyn}`), connectives
    (`\\text{ or }`), trailing units (`5 \\text{ cm}^2`) dropped, anything else unwrapped."""
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
            and _UNIT_TEXT.fullmatch(inner)
            and not _NOT_A_UNIT.search(inner)
        ):
            s = before
        else:
            s = f"{before}{inner}{after}"
    return s


@lru_cache(maxsize=8192)
def normalize(answer: str) -> str:
    """Canonical LaTeX for an extracted answer: delimiters, spacing, sizing, `\\text`, units,
    degrees, percent and currency removed; short `\\frac12` forms braced; spaces collapsed."""
    rows = answer.strip().split(_ROW_BREAK)  # `\\ ` is a row break, not `\ `
    for i, row in enumerate(rows):
        for old, new in _LITERAL_REPLACEMENTS:
            if old in row:
                row = row.replace(old, new)
        rows[i] = row
    s = _ROW_BREAK.join(rows)
    s = _SIZING.sub("", s)
    s = _DEGREES.sub("", s)
    s = _unwrap_text(s)
    s = _SHORT_SUBSCRIPT.sub(r"_\1", s)
    for pattern, replacement in _FRAC_SHORT:
        s = pattern.sub(replacement, s)
    s = _THOUSANDS_SPACED.sub(",", s) if ",\\!" in answer else s
    s = _SPACES.sub(" ", s).strip().rstrip(".;:,").strip()
    s = _UNIT_TAIL.sub(_drop_unit, s)
    s = _WORD_OR.sub(" or ", s)
    if s.startswith("="):
        s = s[1:].strip()
    return s


def key(normalized: str) -> str:
    """The normalised answer without spaces, but for those between two digits (`5 6` is two
    numbers, not 56): equal keys mean equal answers."""
    return _NON_DIGIT_SPACE.sub("", normalized)


def strip_lhs(normalized: str) -> str:
    """`x = 5` -> `5`, `x \\in [1, 2]` -> `[1, 2]`: a lone variable naming the answer is not
    part of it. Equations with more on the left (`5x + y = 0`) are kept whole."""
    match = _LHS.match(normalized)
    if match is None or "=" in normalized[match.end() :]:
        return normalized
    return normalized[match.end() :].strip()


def choice_letter(normalized: str) -> str | None:
    """The letter of a multiple-choice answer: `C`, `(C)`, `C.`; None otherwise."""
    match = _CHOICE.match(normalized.replace(" ", ""))
    return match.group(1) if match else None


def parse_number(normalized: str) -> Fraction | None:
    """The exact value of a plain number (`-7,425,000`, `18.00`, `.35`, `3/4`, `\\frac{3}{4}`,
    `1\\frac{4}{5}`), or None. Decimals are read exactly as written: 0.333 is not 1/3."""
    if _SPACED_DIGITS.search(normalized) and not _SPACE_THOUSANDS.fullmatch(normalized.strip()):
        return None  # "5 6" is two numbers, not 56; only "7 425 000" groups digits
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
