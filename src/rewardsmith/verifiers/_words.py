"""Words as a reader sees them: what counts as content, and how long a text is in words.

A policy paid by the word (or for "having" an answer) learns to game a naive count: words
joined by U+200B or `_` are one whitespace token, 2,100 CJK characters are one, and text
made of U+3164 HANGUL FILLER, U+2800 BRAILLE BLANK or U+034F looks non-empty to `str.strip`.
Here, with the `regex` module's Unicode properties:

- a word is a run of letters, digits and combining marks that starts with a letter or digit
  (apostrophes inside a word, as in "don't", keep it whole); anything else separates words,
  `_`, hyphens and every default-ignorable code point (zero-width spaces and joiners,
  fillers, variation selectors) included;
- in scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar)
  each character, with its combining marks, is a word of its own: 2,100 CJK characters are
  2,100 words, not one (an overcount for Thai and its neighbours, whose words run to a few
  characters, where whitespace would count a whole sentence as one);
- default-ignorable code points are never part of a word, so a text of fillers has none;
- counting, a word longer than `LONG_WORD` characters counts once per `LONG_WORD` characters:
  natural words are shorter, and a policy that drops its spaces ("wordwordword...") must not
  shrink its length to one word. It still counts fewer words than with its spaces: `tokens`
  is the unit no output can shrink;
- measuring a length (`length_in_words`), symbols and punctuation (emoji, dots, `=`) count
  too, one word per `LONG_WORD` of them in the whole text: 100,000 dots or 5,000 emoji,
  spaced or not, are 6,250 and 312 words, not 0, while prose, whose punctuation is a few
  characters per sentence, counts about as before (GSM8K's solutions: a median of 2 more);
  so does padding, the blank characters between words beyond the first of each run
  (whitespace, invisible characters, combining marks on no letter): 100,000 spaces, newlines
  or U+3164 after an answer are 6,250 words, while a single space between words is free
  (IFEval's and GSM8K's texts: none more; HumanEval's indented solutions: a median of 1.5).

`as_read` goes one step further, for checks a lookalike would pass: `visible`, with
look-alike commas, letters drawn as punctuation (the modifier letter "ː" as a colon, the Lisu
tone letter "ꓸ" as a period), Latin small capitals, and the Cyrillic, Greek, Armenian, Lisu,
Cherokee and Latin-extended letters drawn like Latin ones ("ɑ", "ɡ", "ı") read as what they
look like, the last only in words that also hold a Latin letter (a word wholly in another
script keeps it: Russian and Greek text, or a Russian option "В", are unchanged). It is how
the hedge readers of `f1` and `choice` and the training checks of the instruction rewards
read a completion.

`visible` is the text as a reader sees it, for measures that compare pieces of text
(repetition, the training checks of the instruction rewards): blank letters and symbols
(U+2800, the Hangul fillers) made spaces, default-ignorable, format, private-use and
unassigned code points removed, compatibility forms folded (NFKC), so characters sprinkled
into a loop do not make its repeats differ.
"""

from __future__ import annotations

import unicodedata

import regex  # the standard `re` has no Unicode properties

__all__ = [
    "LONG_WORD",
    "as_read",
    "count_words",
    "has_words",
    "length_in_words",
    "visible",
    "words",
]

LONG_WORD = 16
"""Characters per counted word in a longer run (0.05% of English words are longer)."""

_EACH = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_START = rf"[[\p{{L}}\p{{N}}]--[{_EACH}\p{{Default_Ignorable_Code_Point}}]]"
_INSIDE = rf"[[\p{{L}}\p{{N}}\p{{M}}]--[{_EACH}\p{{Default_Ignorable_Code_Point}}]]"
_ONE = rf"[[{_EACH}]--[\p{{M}}\p{{Default_Ignorable_Code_Point}}]]\p{{M}}*"
_WORD = regex.compile(rf"(?V1){_ONE}|{_START}{_INSIDE}*(?:['’]{_INSIDE}+)*")
_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}+")
_SYMBOLS = regex.compile(r"[^\s\p{L}\p{N}\p{M}]+")
_BLANK_RUN = regex.compile(r"[\s\p{M}\p{Default_Ignorable_Code_Point}]+")


_BLANKS = regex.compile("[\u115f\u1160\u2800\u3164\uffa0]")
"""Hangul fillers and the braille blank: drawn as a space, though not whitespace."""
_UNSEEN = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Co}\p{Cn}\p{Cs}]+")
"""What a reader does not see: default-ignorable, format (U+FFF9, U+13430), private-use,
unassigned and surrogate code points."""


def visible(text: str) -> str:
    """`text` as a reader sees it: `_BLANKS` as spaces, without `_UNSEEN`, in NFKC."""
    return unicodedata.normalize("NFKC", _UNSEEN.sub("", _BLANKS.sub(" ", text)))


_COMMAS = str.maketrans(
    dict.fromkeys("\u201a\u060c\u2e32\u2e34\u3001\ua4f9\u066c\u2e41\u02cf\u0375\u055d", ",")
)
"""Low-9 quote, Arabic, turned, raised and ideographic commas, Lisu tone mark, Arabic
thousands separator, reversed comma, modifier low acute, Greek lower numeral sign, Armenian
comma."""
_PUNCTUATION_LETTERS = str.maketrans(
    {
        **dict.fromkeys("\u02d0\ua4fd", ":"),
        "\ua4f8": ".",
        "\ua4fa": "..",
        "\ua4fb": ".,",
        "\ua4fc": ";",
        "\u02d1": "\u00b7",
        **dict.fromkeys(
            "\u02b9\u02bb\u02bc\u02bd\u02be\u02bf\u02c8\u02ca\u02cc\u0559\u07f4\u07f5", "'"
        ),
        **dict.fromkeys("\u02ba\u02ee", '"'),
        **dict.fromkeys("\u02cb\u02ce", "`"),
        **dict.fromkeys("\u02c6\ua788", "^"),
        **dict.fromkeys("\u02cd\u07fa", "_"),
        "\u02c9": "\u00af",
        **dict.fromkeys("\u01c3\ua71d", "!"),
        **dict.fromkeys("\ua71e\ua71f", "\u00a1"),
        "\u01c0": "|",
        "\u01c1": "\u2016",
        **dict.fromkeys("\u0294\u0241\u0242\u02c0", "?"),
    }
)
"""Letters drawn as punctuation: modifier letters (the triangular colon, primes, accents,
low macron), Lisu tone letters (a period, a colon, ...), NKo tone apostrophes and
lajanyalan, the modifier exclamation marks, and the Latin click and glottal-stop letters
drawn as "!", "|", "‖" and "?"."""
_SMALL_CAPITALS = str.maketrans(
    "\u1d00\u0299\u1d04\u1d05\u1d07\ua730\u0262\u029c\u026a\u1d0a\u1d0b\u029f\u1d0d\u0274"
    "\u1d0f\u1d18\u0280\ua731\u1d1b\u1d1c\u1d20\u1d21\u028f\u1d22",
    "ABCDEFGHIJKLMNOPRSTUVWYZ",
)
"""Latin small capitals: lowercase letters to `str.islower`, drawn as capitals."""
_LOOKALIKES = str.maketrans(
    "аеорсухіјѕһԁԛԝӏҽгпѵѡүьтвкмнԍӀҮЬҺ"
    "АВЕКМНОРСТХУІЈЅ"
    "οινρυχαεκϳςγστωηΑΒΕΖΗΙΚΜΝΟΡΤΥΧͿ"
    "օոսռհցզգայքՍՕԼՏ"
    "ɩɑɡıȷɾʋɯƽƅɣɛƒɦ"
    "ᎬᎪᏴᏟᎠᏀᎻᎫᏦᏞᎷᏢᎡᏚᎢᏙᏔᎩᏃᎥᏏᏂᏧ"
    "ꓰꓡꓐꓑꓓꓔꓖꓗꓙꓚꓜꓝꓟꓠꓢꓣꓦꓧꓪꓫꓬꓮꓲꓳꓴ",
    "aeopcyxijshdqwlernvwybTBKMHGIYbH"
    "ABEKMHOPCTXYIJS"
    "oivpuxaekjcyotwnABEZHIKMNOPTYXJ"
    "onunhgqqwjfUOLS"
    "iagijruwsbyefh"
    "EABCDGHJKLMPRSTVWYZibhd"
    "ELBPDTGKJCZFMNSRVHWXYAIOU",
)
"""Cyrillic, Greek, Armenian, Cherokee and Lisu letters, and Latin-extended ones (the iota,
alpha, script g, dotless i and j, ...), drawn as Latin ones (Unicode's confusables, the
common ones; after NFKC, so the lunate epsilon is ε and the lunate sigma ς). Cyrillic letters
drawn as small capitals (т, к, м, н, в) read as capitals, as `_SMALL_CAPITALS` do."""
_ANY_LOOKALIKE = regex.compile("[" + "".join(map(chr, _LOOKALIKES)) + "]")
_LETTERS = regex.compile(r"[\p{L}\p{M}]+")
_LATIN = regex.compile(r"\p{Latin}")


def _in_latin(word: regex.Match[str]) -> str:
    """A word with its lookalikes read as Latin, if it holds a Latin letter."""
    text = word.group()
    return text.translate(_LOOKALIKES) if _LATIN.search(text) else text


def as_read(text: str, every_word: bool = False) -> str:
    """`text` as a reader reads it: `visible`, with lookalikes read as what they look like
    (see the module); with `every_word`, letters read as Latin in every word, for a lone
    letter read as a label (a Greek "Β" naming option B)."""
    text = visible(text).translate(_COMMAS).translate(_PUNCTUATION_LETTERS)
    text = text.translate(_SMALL_CAPITALS)
    if every_word:
        return text.translate(_LOOKALIKES)
    if _ANY_LOOKALIKE.search(text) is None:
        return text
    return _LETTERS.sub(_in_latin, text)


def words(text: str) -> list[str]:
    """The words of `text`, in order."""
    return _WORD.findall(text)  # type: ignore[no-any-return]


def count_words(text: str) -> int:
    """How many words `text` has, a run longer than `LONG_WORD` counting once per
    `LONG_WORD` characters."""
    return sum(-(-len(m.group()) // LONG_WORD) for m in _WORD.finditer(text))


def _padding(text: str) -> int:
    """Blank characters between words beyond the first of each run: whitespace, invisible
    characters and combining marks on no letter (a single space between words is free)."""
    return sum(len(run) - 1 for gap in _WORD.split(text) for run in _BLANK_RUN.findall(gap))


def length_in_words(text: str) -> int:
    """`count_words`, plus one word per `LONG_WORD` characters of symbols, punctuation and
    `_padding`."""
    symbols = sum(len(m.group()) for m in _SYMBOLS.finditer(_IGNORABLE.sub("", text)))
    return count_words(text) + (symbols + _padding(text)) // LONG_WORD


def has_words(text: str, minimum: int = 1) -> bool:
    """Whether `text` has at least `minimum` words (a blank, invisible or punctuation-only
    text has none)."""
    if minimum <= 0:
        return True
    return any(found >= minimum for found, _ in enumerate(_WORD.finditer(text), start=1))
