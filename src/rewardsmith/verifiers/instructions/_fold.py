"""The response as a reader sees it, for the training checks: lookalikes folded to what they
look like.

The official checkers read code points: "no commas" passes U+201A or the Arabic comma, "avoid
the word Eiffel" passes ``Eiff\\u0435l`` (a Cyrillic e) or ``Eif\\u200bfel``, "all lowercase"
passes U+0280 (a small capital R, a lowercase letter to `str.islower`), "no whitespace"
passes U+2800. `folded` is `_words.visible` (blanks made spaces, invisible characters
removed, NFKC: fullwidth letters and commas, combining pairs composed), then commas and
small capitals folded, and the common Cyrillic and Greek lookalikes of Latin letters folded
in words that also hold a Latin letter (a word wholly in Cyrillic or Greek is left alone, so
Russian and Greek text, and keywords in them, are unchanged).
"""

from __future__ import annotations

import regex

from .._words import visible

__all__ = ["folded"]

_COMMAS = str.maketrans(dict.fromkeys("\u201a\u060c\u2e32\u2e34\u3001\ua4f9", ","))
"""Low-9 quote, Arabic, turned, raised and ideographic commas, Lisu tone mark."""

_SMALL_CAPITALS = str.maketrans(
    "\u1d00\u0299\u1d04\u1d05\u1d07\ua730\u0262\u029c\u026a\u1d0a\u1d0b\u029f\u1d0d\u0274"
    "\u1d0f\u1d18\u0280\ua731\u1d1b\u1d1c\u1d20\u1d21\u028f\u1d22",
    "ABCDEFGHIJKLMNOPRSTUVWYZ",
)
"""Latin small capitals, lowercase letters to `str.islower` that read as capitals."""

_LOOKALIKES = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb\u04cf\u051b\u051d"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0423\u0406\u0408\u0405"
    "\u03bf\u03bd\u03b9\u03c1\u03c5\u03c7\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d"
    "\u039f\u03a1\u03a4\u03a5\u03a7",
    "aeopcyxijsdhlqwABEKMHOPCTXYIJSovipuxABEZHIKMNOPTYX",
)
"""Cyrillic and Greek letters drawn as Latin ones (Unicode's confusables, the common ones)."""

_WORD = regex.compile(r"[\p{L}\p{M}]+")
_LATIN = regex.compile(r"\p{Latin}")
_LOOKALIKE = regex.compile("[" + "".join(map(chr, _LOOKALIKES)) + "]")


def _fold_word(match: regex.Match[str]) -> str:
    """The word with its lookalikes folded if it also holds a Latin letter."""
    word = match.group()
    return word.translate(_LOOKALIKES) if _LATIN.search(word) else word


def folded(text: str) -> str:
    """`text` as a reader sees it, lookalikes folded (see the module)."""
    text = visible(text).translate(_COMMAS).translate(_SMALL_CAPITALS)
    if _LOOKALIKE.search(text) is None:
        return text
    return _WORD.sub(_fold_word, text)
