"""Find the final answer a text commits to: a model completion or a dataset reference.

Every place an answer can be committed is collected: each `\\boxed{}`/`\\fbox{}`, each GSM8K
`#### X`, a final `A: X` line, each "the (final) answer is X" / "Answer: X" (with the math
spans after it, and its value when it is a sentence: "The largest $n$ is 34." commits 34).
All of them must agree: two different committed answers are a hedge (no answer; the reward
accepts them only when the gold has that many parts and they match it as a set). Only when
nothing is committed: a short text that *is* the answer ("18", "\\frac{14}{3}"), a choice
letter, and, if allowed, the final line. Reasoning inside `<think>` never counts; empty and
`\\phantom` boxes are not answers.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass

from .._completion_parts import answer_part
from .._words import as_read
from ._answer import expression_tree, parse_answer
from ._config import MathConfig
from ._equivalence import MAX_ANSWER_CHARS, is_equivalent
from ._form import operations
from ._normalize import MAX_NUMBER_CHARS, brace_group, key, normalize
from ._units import split_unit

__all__ = ["Extraction", "extract_answer", "extract_gold", "qualified"]

MAX_TEXT_CHARS = 20_000
"""Only the tail of a completion is searched: final answers come last, and a 1 MB completion
must not cost 1 MB of regex work."""
MAX_BOXES = 50
"""More `\\boxed{}` than this is not an answer but spam: no answer."""
MAX_DISTINCT = 4
"""Most distinct committed answers checked for being the same value (`15\\frac{39}{40}` and
`\\frac{639}{40}`); more is a hedge."""
MAX_PLAIN_CHARS = 200
"""A whole text this short, without prose, is taken as the answer itself."""
MAX_PLAIN_WORDS = 2
"""Words (outside LaTeX commands and `\\text{}`) a plain answer may contain ("Evelyn")."""
MIN_RESTATE_CHARS = 20
"""A completion line at least this long found verbatim in the prompt restates the question."""
_BLANKS = re.compile(r"[^\S\n]{2,}")
"""A run of blanks on one line (spaces, tabs, Unicode spaces)."""
MAX_BOX_NESTING = 4
"""`\\boxed{\\boxed{42}}`: how many boxes inside a box are opened."""
MAX_REGION_CHARS = 2_000
"""How much text after "the answer is" is read (to the end of its paragraph)."""
MAX_SENTENCE_STEPS = 4
"""'The largest $n$ is 34': how many times a sentence is cut after its verb."""

_DEFAULT = MathConfig()
_BOX = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])\s*")
_CONTEXT_CHARS = 40
"""How far before a box a negation is looked for."""
_NEGATED_BEFORE = re.compile(
    r"\b(?:not|isn't|isn’t|never|cannot be|can't be)\s*(?:equal to\s*|equals\s*)?\$*\s*$",
    re.IGNORECASE,
)
# The spaces, `$` and punctuation before the hedge are taken whole (`(?=(...))\1`, an atomic
# group): what follows them is never a space, `$` or punctuation, so no shorter reading can
# match, and going back into four `\s*` in a row was quartic (a boxed answer then 200 spaces
# and a letter took 6 s, 400 spaces 45 s).
_HEDGED_AFTER = re.compile(
    r"(?=(\s*\$*\s*[.,;:]?\s*))\1(?:\(?\s*(?:or(?!\s+equivalently)|maybe|possibly|perhaps|probably"
    r"|likely)\b"
    r"|is\s+(?:incorrect|wrong|not)\b|\?)",
    re.IGNORECASE,
)
_NOT_AN_ANSWER = re.compile(r"\\(?:[hv]?phantom\s*\{[^{}]*\}|square|quad|qquad|_)|[\s?_.]")
"""What an empty answer box holds: `\\boxed{\\phantom{2}}`, `\\boxed{\\quad}`, `\\boxed{?}`."""
_ANSWER_TAG = re.compile(r"</?answer>", re.IGNORECASE)
_HASH = re.compile(r"####[ \t]*+([^\n#]*\w[^\n]*)")
_PARAGRAPH_END = re.compile(r"\n\s*\n")
_LEADING_SPACE = re.compile(r"\s*")
_PHRASE = re.compile(
    r"(?i)\b(?:final\s+answer|answer|correct\s+(?:option|choice))\s*+(?:\*\*)?\s*+"
    r"(?:is|:|=|should\s+be|would\s+be|will\s+be)[ \t]*(?:\*\*)?[ \t]*:?[ \t]*([^\n]*)"
)
_MATH_SPAN = re.compile(
    r"\$\$(.+?)\$\$|(?<!\\)\$(.+?)(?<!\\)\$(?!\.?\d)|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S
)
"""A `\\$` is a dollar sign, never a delimiter (`$\\$18$`), and a `$` before a number opens
no span it could close: it is currency (`$2 x 12 = $24`, GSM8K's style)."""
_SENTENCE_END = re.compile(r"\.(?:\s|$)|\n")
_VERB = re.compile(r"\s(?:is|are|equals|=|becomes)\s+(?!not\b)", re.IGNORECASE)
_CHOICE_IN_LINE = re.compile(r"(?<![A-Za-z])\(([A-E])\)")
_CALCULATOR = re.compile(r"<<[^<>\n]*>>")
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?|(?<![\w.])-?\.\d+")
_LATEX_CMD = re.compile(r"\\[a-zA-Z]+")
_TEXT_GROUP = re.compile(r"\\(?:text|mbox|textbf|mathrm)\s*\{[^{}]*\}")
_PROSE_TOKEN = re.compile(r"[(\"'“]?([A-Za-z]{2,}(?:'[a-z]+)?)[.,;:!?)\"'”]*")
_CONNECTORS = frozenset(("or", "and", "either", "both"))
_HEDGES = frozenset(
    [
        "or",
        "maybe",
        "possibly",
        "perhaps",
        "probably",
        "might",
        "could",
        "either",
        "alternatively",
        "otherwise",
    ]
)
_DOUBTS = frozenset(
    ("maybe", "possibly", "perhaps", "probably", "presumably", "might", "alternatively")
)
"""Words that make any sentence a hedge, whatever else it says."""
_DOUBT_PHRASE = re.compile(
    r"\b(?:could|can|may)\s+also\b|\bor\s+(?:also|else)\b|\b(?:works?|fits?)\s+(?:too|as\s+well)\b"
    r"|\balso\s+(?:works?|fits?)\b|^\W*could\s+be\b|\d-?ish\b"
    r"|(?<!most\s)(?<!more\s)(?<!less\s)(?<!least\s)(?<!equally\s)(?<!as\s)(?<!the\s)(?<!of\s)"
    r"\blikely\b",
    re.IGNORECASE,
)
"""Phrases that offer another answer or doubt this one ("it could also be 6", "5 works too",
"likely 5", "Could be 5.", "5-ish"). "Likely" is a doubt word like "probably" but for "most
likely", "equally likely", ...: the words of probability ("the most likely sum is 7"), nor an
adjective after "the" or "of" ("the likely outcome count is 7", "the number of likely
outcomes")."""
_QUALIFIERS = frozenset(
    [
        "not",
        "more",
        "less",
        "fewer",
        "least",
        "most",
        "approximately",
        "approx",
        "about",
        "around",
        "roughly",
        "nearly",
        "almost",
        "over",
        "under",
        "than",
        "between",
        "exceeds",
    ]
)
_NEGATIONS = frozenset(
    [
        *("not", "never", "isn't", "isn’t", "isnt", "cannot", "can't", "wrong", "incorrect"),
        *("impossible", "extraneous", "rejected", "nope", "invalid", "false"),
    ]
)
"""Words that, after the last number of a final line, make it no answer."""
_BOUND_AFTER = re.compile(r"\s*(?:or\s+(?:more|less|fewer|greater|so)|at\s+(?:most|least))\b", re.I)
"""What bounds a number right after it ("5 or more", "5 at most")."""
_BOUND = re.compile(
    r"(?<![-=<>])[<>](?![<>])|[≤≥≠≈]|!=|(?:[∈∉]|\\(?:notin|in)(?![a-zA-Z]))(?:\s*\\?\{[^{}]*)?"
    r"|\\(?:neq?|[lg]eq?|[lg]t|approx)(?![a-zA-Z])|\bbetween\s+\S+\s+and\b"
    r"|\b(?:not|never|cannot|impossible|wrong|incorrect|between|except|approx\w*|about|around"
    r"|roughly|nearly|almost|close\s+to|up\s+to|(?:anything|everything|all)\s+but|apart\s+from|besides"
    r"|different\s+from|isnt|above|below|over|under|(?:a\s+)?maximum\s+of"
    r"|(?:more|less|fewer|greater|smaller|larger|higher|lower|bigger|other)\s+than)\b|n[’']t\b"
    r"|[⩾⩽≧≦≯≮≉≃≱≰＞＜~]|=/=|<>",
    re.IGNORECASE,
)
"""What, in the clause before a number, negates or bounds it ("not 5", "x cannot be 5",
"greater than 5", "x ≠ 5", "between 3 and 5", "x ∈ {3, 5}"), with at most linking words
between them (see `_LINKING`): the number is then no answer.
Not "at least 9": it is how a minimum is stated ("Jane needs to score at least 9 points")."""
_LINKING = frozenset(
    [
        *("be", "is", "are", "was", "equal", "equals", "to", "exactly", "the", "a", "an"),
        *("value", "number", "answer", "of", "it", "say", "x", "y", "z", "n"),
    ]
)
"""Words that may stand between a bound and its number ("x cannot be 5", "not equal to 5");
any other word ("except Tom ate 15", "around the track 15 times") ends the bound."""
_CLAUSE_END = re.compile(r"[;:]|,(?=\s*[A-Za-z])")
_OR = re.compile(
    r"\b(?:or|vs|versus)\b(?!\s+(?:equivalently|more|less|fewer|greater|so)\b)"
    r"(?![^\d\n]{0,20}\d[\d.,]*\s*[-+*/×x÷]\s*[\d(])",
    re.IGNORECASE,
)
"""An "or" between alternatives: not "or equivalently" or a bound ("3 or more"), nor one that
restates a value as its computation ("44 times the weight, or 5*44=220 pounds")."""
_OPERAND = re.compile(r"[-+*/×÷]\s*[$€£]?\s*$")
"""What ends right before a number that closes a computation (`48+15`)."""
_LABELLED = re.compile(
    r"(?<![\w\\])([A-Za-z])\s*=\s*(-?\d+(?:\.\d+)?)(?![\d.]|\s*[-+*/^×·]\s*[\d(.])"
)
"""A one-letter name given a number (`x = 3`, not `x = 3 + 2`)."""
_RETRACTION = re.compile(
    r"\b(?:wait|actually|kidding|oops|correction|on\s+second\s+thought|scratch\s+that|sorry"
    r"|hold\s+on|never\s+mind)\b|^\W*(?:hmm+|no|nope)\b",
    re.IGNORECASE,
)
"""Words that take back an answer given before them ("a common mistake" explains one)."""
_RESTATED = re.compile(
    r"\b(?:it\s+is|it['’]s|that\s+is|that['’]s|the\s+answer\s+is|should\s+be|must\s+be"
    r"|make\s+that|i\s+meant?)\b|^\W*nope\W+(?=[-\d$\\])",
    re.IGNORECASE,
)
"""How a retraction restates the answer ("Wait, actually it is 5.", "Sorry, I meant 5."); a
later sentence without it only checks or adds ("Wait, what about x = -2?", "Actually, she
started with 20.")."""
_SECOND_THOUGHTS = frozenset(("wait", "actually", "but", "however", "instead", "mistake"))
_NUMBER_WORD = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|\w+ty"
    r"|hundred|thousand|million|billion|half|twice|double|triple|none|yes|no|true|false)\b",
    re.IGNORECASE,
)
MIN_CLOSING_WORDS = 3
"""A closing line of words ("I hope this helps!") has at least this many: "No." or "Bob."
after an answer may be a second one."""
_STRENGTH = {"boxed": 5, "hash": 4, "answer_line": 3, "phrase": 2, "last_line": 1}
"""Which source names an answer several agreeing commitments give."""


@dataclass(frozen=True)
class Extraction:
    """The answer a text commits to, where it was found, and why (or why not)."""

    answer: str | None
    """The final answer as written (un-normalised), or None when there is no committed one."""
    source: str
    """boxed | hash | answer_line | phrase | last_line | choice | plain | last_number | none."""
    reason: str
    """Short explanation; starts with "no answer" when `answer` is None."""
    candidates: tuple[str, ...] = ()
    """The distinct answers committed (several = a hedge, or a multi-part answer)."""


def _none(reason: str, source: str = "none", candidates: tuple[str, ...] = ()) -> Extraction:
    return Extraction(None, source, f"no answer: {reason}", candidates)


@dataclass(frozen=True)
class _Commitment:
    position: int
    source: str
    answer: str


def _boxes(text: str) -> tuple[list[_Commitment], str | None]:
    """Every non-empty `\\boxed{...}` / `\\fbox{...}` (nested braces), or why none counts."""
    found: list[_Commitment] = []
    count = 0
    last_end: int | None = None
    for match in _BOX.finditer(text):
        if last_end is not None and match.start() < last_end:
            continue  # `\boxed{\boxed{42}}`: the inner box is part of the outer one
        count += 1
        if count > MAX_BOXES:
            return [], f"more than {MAX_BOXES} boxed answers"
        start = match.end()
        if text.startswith("{", start):
            end = brace_group(text, start, MAX_ANSWER_CHARS + 2)
            content = _unboxed(text[start + 1 : end - 1]) if end is not None else ""
        else:  # `\boxed 5`
            content = re.match(r"[^\s$]*", text[start : start + MAX_ANSWER_CHARS]).group()
            end = start + len(content)
        if _NEGATED_BEFORE.search(text[max(0, match.start() - _CONTEXT_CHARS) : match.start()]):
            return [], "the boxed answer is negated"
        if not _NOT_AN_ANSWER.sub("", content):
            continue  # `\boxed{}`, `\boxed{\phantom{2}}` (copied from the question)
        last_end = end
        found.append(_Commitment(match.start(), "boxed", content.strip()))
    if count and not found and last_end is None:
        return [], "boxed answer empty or with unbalanced braces"
    if found and last_end is not None and _HEDGED_AFTER.match(text, last_end):
        return [], "the boxed answer is hedged"  # between boxes, "or" is judged by agreement
    return found, None


def _unboxed(content: str) -> str:
    """A box's content with the boxes inside it opened: `\\boxed{42}` -> `42`."""
    for _ in range(MAX_BOX_NESTING):
        match = _BOX.search(content)
        if match is None or not content.startswith("{", match.end()):
            return content
        end = brace_group(content, match.end(), len(content))
        if end is None:
            return content
        content = content[: match.start()] + content[match.end() + 1 : end - 1] + content[end:]
    return content


_ENVIRONMENT_TAG = re.compile(r"\\(begin|end)\{(\w+\*?)\}")
_ENVIRONMENT_NAME = re.compile(r"\\(?:begin|end)\s*\{[^{}]*\}")


def _environments(text: str) -> list[tuple[int, int]]:
    """`\\begin{x} ... \\end{x}` ranges, each to the first `\\end` of its name after it (what
    a lazy regex finds), in one pass: 2,000 unclosed `\\begin{a}` cost no rescans."""
    tags = [(m.group(1), m.group(2), m.start(), m.end()) for m in _ENVIRONMENT_TAG.finditer(text)]
    ends: dict[str, list[int]] = {}
    for kind, name, start, _ in tags:
        if kind == "end":
            ends.setdefault(name, []).append(start)
    found: list[tuple[int, int]] = []
    covered = 0
    for kind, name, start, end in tags:
        if kind != "begin" or start < covered:
            continue
        positions = ends.get(name, [])
        index = bisect_left(positions, end)
        if index == len(positions):
            continue
        close = positions[index]
        covered = close + len(f"\\end{{{name}}}")
        found.append((start, covered))
    return found


class _Protected:
    """Ranges a sentence never ends inside (math spans and environments), merged and sorted
    once so that each position is checked in log time: cutting a text is linear, not
    (cuts x spans)."""

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for start, end in sorted(ranges):
            if merged and start < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.starts = [start for start, _ in merged]
        self.ends = [end for _, end in merged]

    def __contains__(self, position: int) -> bool:
        """Strictly inside a range."""
        index = bisect_left(self.starts, position) - 1
        return index >= 0 and position < self.ends[index]


_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
"""Math span delimiters, in the order `_MATH_SPAN` tries them."""
_OPENER = re.compile(r"(?<!\\)\$|\\[(\[]")
_CLOSER = {
    "$$": re.compile(r"(?=\$\$)"),
    "$": re.compile(r"(?<!\\)(?=\$(?!\.?\d))"),
    "\\)": re.compile(r"(?=\\\))"),
    "\\]": re.compile(r"(?=\\\])"),
}


def _math_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of each math span: what `_MATH_SPAN.finditer` finds, in one pass
    (every closing delimiter is located once, then found by bisection, so 10,000 unclosed
    `\\(` cost no rescans of the text)."""
    closers: dict[str, list[int]] = {}
    for _, close in _DELIMITERS:
        if close not in closers:
            closers[close] = [m.start() for m in _CLOSER[close].finditer(text)]
    found: list[tuple[int, int, str]] = []
    position = 0
    for opener in _OPENER.finditer(text):
        start = opener.start()
        if start < position:
            continue
        for open_, close in _DELIMITERS:
            if not text.startswith(open_, start):
                continue
            positions = closers[close]
            index = bisect_left(positions, start + len(open_) + 1)  # at least one character
            if index < len(positions):
                end = positions[index] + len(close)
                found.append((start, end, text[start + len(open_) : positions[index]]))
                position = end
                break
    return found


def _display(text: str, start: int, end: int) -> bool:
    """The span `text[start:end]` is a display: `$$...$$` or `\\[...\\]`."""
    if text.startswith("\\[", start):
        return True
    return text.startswith("$$", start) and text.endswith("$$", start, end) and end - start >= 5


def _without_spans(text: str) -> str:
    """`text` with each math span replaced by a space."""
    pieces, position = [], 0
    for start, end, _ in _math_spans(text):
        pieces += [text[position:start], " "]
        position = end
    return "".join(pieces) + text[position:]


def _protected(text: str) -> list[tuple[int, int]]:
    """Ranges a sentence never ends inside: math spans and environments."""
    return [(start, end) for start, end, _ in _math_spans(text)] + _environments(text)


def _spans(text: str) -> list[str]:
    return [content.strip() for _, _, content in _math_spans(text)]


def _prose_words(text: str) -> list[str]:
    """Words of prose: whitespace-separated runs of letters (`largest`, `is.`), outside math
    spans, LaTeX commands and `\\text{}`. Letters among symbols are math: `AB=4,CD=5`."""
    bare = _without_spans(_ENVIRONMENT_NAME.sub(" ", text))
    bare = _LATEX_CMD.sub(" ", _TEXT_GROUP.sub(" ", bare))
    return [m.group(1).lower() for m in map(_PROSE_TOKEN.fullmatch, bare.split()) if m]


_QUOTES = "\"'“” "


def _sentences(text: str) -> list[str]:
    """The sentences of a text: cut at a period or a line break outside math spans and
    environments, and after each display (`$$...$$`, `\\[...\\]`)."""
    text = text.replace("**", "").replace('\\"', '"')
    protected = _Protected(_protected(text))
    cuts = [
        (end.start(), end.end())
        for end in _SENTENCE_END.finditer(text)
        if end.start() not in protected
    ]
    cuts += [(end, end) for start, end, _ in _math_spans(text) if _display(text, start, end)]
    sentences, start = [], 0
    for cut_start, cut_end in sorted(cuts):
        if cut_start >= start:
            sentences.append(text[start:cut_start])
            start = cut_end
    sentences.append(text[start:])
    return [s.strip().strip(_QUOTES).strip() for s in sentences if s.strip(_QUOTES)]


def _lines(text: str) -> list[str]:
    """The non-empty lines of a text; a math span or environment over several lines is one."""
    protected = _Protected(_protected(text))
    lines, start = [], 0
    for newline in re.finditer(r"\n", text):
        if newline.start() not in protected:
            lines.append(text[start : newline.start()])
            start = newline.end()
    lines.append(text[start:])
    return [line for line in lines if line.strip()]


def _first_sentence(text: str) -> str:
    sentences = _sentences(text)
    return sentences[0] if sentences else ""


def _sentence_value(text: str, *, alone: bool) -> str | None:
    """The value a sentence commits to: itself when it has no prose ("$3$ or $5$", "5 cm");
    else its value after "is"/"=" ("The largest $n$ is 34."), its leading math span ("$5$
    because ..."), its only math span or only number. A hedge between spans keeps them all
    ("$3$, or maybe $5$"). `alone`: the text's only commitment, so a qualified value
    ("at least 5") is returned as it stands (it will not match) rather than dropped."""
    if _NUMBER.fullmatch(text.strip()):
        return text.strip()
    sentences = _sentences(text)
    if alone and len(sentences) == 1 and _is_word_answer(sentences[0]):
        return sentences[0]  # "The answer is yes"
    sentence = sentences[0] if sentences else ""
    for _ in range(MAX_SENTENCE_STEPS):
        if not sentence:
            return None
        words = [w for w in _prose_words(sentence) if w not in _CONNECTORS]
        if not words:
            return _bare(sentence, alone)
        if _alternatives(sentence):  # "So x = 3 or x = 5": a hedge, never a value
            verb = _VERB.search(sentence)
            tail = sentence[verb.end() :] if verb else ""
            return tail if _alternatives(tail) and not _VERB.search(tail) else sentence
        value, unit = split_unit(normalize(sentence))
        if unit is not None and not [w for w in _prose_words(value) if w not in _CONNECTORS]:
            return sentence
        spans = _spans(sentence)
        all_words = set(_prose_words(sentence))
        if len(spans) > 1 and all_words & _HEDGES:
            return " or ".join(spans)
        if all_words & _DOUBTS or _DOUBT_PHRASE.search(sentence):
            return sentence  # "5, but it could also be 6": a hedge, never a value
        leading = _MATH_SPAN.match(sentence)
        if leading is not None:
            after = _prose_words(sentence[leading.end() :])
            if after and after[0] in _QUALIFIERS:
                return sentence if alone else None
            return spans[0]
        protected = _Protected(_protected(sentence))
        verbs = [v for v in _VERB.finditer(sentence) if v.start() not in protected]
        if verbs:
            tail = sentence[verbs[-1].end() :].strip()
            if not _spans(tail) and not _NUMBER.search(tail) and spans:
                return spans[-1]  # "$x \ge 5$ is the solution"
            sentence = tail
            continue
        if all_words & _QUALIFIERS:
            return sentence if alone else None
        if len(spans) == 1:
            return spans[0]
        bare = _without_spans(sentence)
        numbers = list(_NUMBER.finditer(bare))
        if len(numbers) != 1 or spans:
            return None
        if _bounded(bare, numbers[0].start()) or _negated_after(bare, numbers[0]):
            return sentence if alone else None  # "x cannot be 5", "So x >= 5", "5 nope"
        return numbers[0].group()
    return None


def _bounded(text: str, position: int) -> bool:
    """The clause before `position` negates or bounds the number there (see `_BOUND`), with
    no other number in between: in "5 did not grow, so he has 30-5=25", 25 is not negated."""
    clause = _CLAUSE_END.split(text[:position])[-1]
    bounds = list(_BOUND.finditer(clause))
    if not bounds or _NUMBER.search(clause, bounds[-1].end()) is not None:
        return False
    return set(re.findall(r"[A-Za-z]+", clause[bounds[-1].end() :].lower())) <= _LINKING


def _alternatives(sentence: str) -> bool:
    """The sentence offers its answer, its last number, with another: a different number
    before it across an "or" ("3 or 5", "3 apples (or 5)") unless that one ends a computation
    ("48+15 outfits, or 63"), or one name given two values, the last among them ("x=3 / x=5").
    An "or" in the question restated is none ("divisible by 3 or 5 is 47"), and a sentence
    with math spans is left to their own hedge check ("factors of 34 or multiples of 7 is
    \\(6\\)", "divided by 2, 3, 4, or 6" after `$49$`)."""
    if _math_spans(sentence):
        return False
    numbers = list(_NUMBER.finditer(sentence))
    if len(numbers) < 2:
        return False
    first, last = numbers[-2], numbers[-1]
    if (
        _OR.search(sentence, first.end(), last.start())
        and first.group() != last.group()
        and not _OPERAND.search(sentence[max(0, first.start() - 4) : first.start()])
    ):
        return True
    named: dict[str, set[str]] = {}
    for name, value in _LABELLED.findall(sentence):
        named.setdefault(name, set()).add(value)
    return any(len(values) > 1 and last.group() in values for values in named.values())


def _is_word_answer(sentence: str) -> bool:
    """A sentence of at most `MAX_PLAIN_WORDS` words that reads as a text answer ("yes")."""
    words = _prose_words(sentence)
    if _NEGATIONS.intersection(words) and re.search(r"\d", sentence):
        return False  # "5 is impossible" is no answer, not a number with a unit
    return 0 < len(words) <= MAX_PLAIN_WORDS and parse_answer(normalize(sentence)).kind == "text"


def _bare(sentence: str, alone: bool) -> str | None:
    """A sentence without prose as an answer: one math span unwrapped (`$\\frac{3}{4}$`);
    anything else as written, if it reads as an answer or is the text's only commitment."""
    span = _MATH_SPAN.fullmatch(sentence)
    if span is not None:
        return next(g for g in span.groups() if g is not None).strip()
    if alone or parse_answer(normalize(sentence)).kind != "expr":
        return sentence
    value = split_unit(normalize(sentence))[0]
    return sentence if expression_tree(value) is not None else None


def _bare_line(line: str) -> str | None:
    """A last line that is nothing but a number or one math span (`6`, `$x = 6$`), after a
    finished sentence (a display that ends a sentence "equality occurs for" is not one). The
    span keeps its delimiters: read as a span, a relation (`$x = 6$`) is a value."""
    line = line.strip().rstrip(".")
    if _NUMBER.fullmatch(line):
        return line
    if _MATH_SPAN.fullmatch(line) is None or not any(c.isdigit() for c in line):
        return None
    return line


def _phrases(text: str) -> list[_Commitment]:
    """The answer after each "answer is" / "Answer:" phrase (the next line when the phrase
    ends its line). A phrase whose answer opens, in the same sentence, with another phrase
    only introduces it ("Final Answer: The final answer is $5$"); a phrase in a later
    sentence is a second commitment ("The answer is 3. The answer is 5." is a hedge), and
    ends the answer of the one before it."""
    found: list[_Commitment] = []
    match = _PHRASE.search(text)
    while match is not None:
        following = _PHRASE.search(text, match.start(1))
        if not _introduces(text, match, following):
            start = match.start(1)
            end = min(start + MAX_REGION_CHARS, following.start() if following else len(text))
            region = _PARAGRAPH_END.split(text[start:end].strip(), 1)[0]  # may run over a display
            if not _BOX.search(_first_sentence(region)):  # "the answer is $\boxed{5}$": a box
                found.append(_Commitment(match.start(), "phrase", region))
        match = following
    return found


def _introduces(text: str, phrase: re.Match[str], following: re.Match[str] | None) -> bool:
    """`phrase` is followed by `following` before its answer's first sentence ends."""
    if following is None:
        return False
    begin = _LEADING_SPACE.match(text, phrase.start(1)).end()
    return _SENTENCE_END.search(text, begin, following.start()) is None


def _is_plain(text: str) -> bool:
    """A short text with no prose is an answer by itself: "18", "p - q", "\\text{Evelyn}"."""
    if len(text) > MAX_PLAIN_CHARS or len(_CHOICE_IN_LINE.findall(text)) > 1:
        return False
    return len(_prose_words(text)) <= MAX_PLAIN_WORDS


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _closing(line: str) -> bool:
    """A line after the answer that cannot hold another one: a markdown rule or code fence
    (`---`, a closing code fence), or a sentence without digits, math, number words, a
    choice, a hedge or second thoughts ("I hope this helps!")."""
    if re.search(r"[\d$\\{}]", line) or _CHOICE_IN_LINE.search(line) or _NUMBER_WORD.search(line):
        return False
    words = set(_prose_words(line))
    if words & (_HEDGES | _DOUBTS | _NEGATIONS | _SECOND_THOUGHTS):
        return False
    return not re.search(r"[A-Za-z]", line) or len(words) >= MIN_CLOSING_WORDS


def _without_closing(text: str) -> str:
    """`text` without the closing lines that follow its answer (see `_closing`)."""
    lines = text.rstrip().split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or _closing(lines[-1])):
        lines.pop()
    return "\n".join(lines)


def _answer_line(line: str) -> str | None:
    """The value of a last line ``A: value`` (`line` is stripped, one line), else None.

    What ``^\\s*A\\s*:\\s*(.+?)\\s*$`` reads from such a line, without its lazy group
    re-trying the whitespace after each character (quadratic on ``A: x``, 20,000 spaces, ``y``).
    """
    head, colon, value = line.partition(":")
    return (value.strip() or None) if colon and head.strip() == "A" else None


def _commitments(part: str) -> tuple[list[_Commitment], Extraction | None]:
    """Every committed answer in `part`, in order, each read to its value; or why there is
    none although one was committed (a negated box, a phrase whose value cannot be read)."""
    boxes, refused = _boxes(part)
    if refused is not None:
        return [], _none(refused, "boxed")
    found = list(boxes)
    found += [_Commitment(m.start(), "hash", m.group(1).strip()) for m in _HASH.finditer(part)]
    found = [c for c in found if c.answer]
    a_line = _answer_line(_last_line(_without_closing(part)))
    raw = _phrases(part)
    if a_line is not None:
        raw.append(_Commitment(len(part), "answer_line", a_line))
    last = _last_line(part)
    marked = _BOX.search(last) or a_line or _HASH.search(last) or _PHRASE.search(last)
    before = part[: part.rfind(last)].rstrip()
    if (found or raw) and not marked and before.endswith((".", "!", "?", "}", "$", "\\]")):
        value = _bare_line(last)
        if value is not None:  # "\boxed{5}" then a last line "6"
            raw.append(_Commitment(len(part), "last_line", value))
    alone = not found and len(raw) == 1
    for commitment in raw:
        value = _sentence_value(commitment.answer, alone=alone)
        if value:
            found.append(_Commitment(commitment.position, commitment.source, value))
    if not found:  # "The answer is 3 to 5": committed, so no fallback to the last number
        return [], (_none("the committed answer cannot be read", raw[0].source) if raw else None)
    found.sort(key=lambda c: c.position)
    return found + _retractions(part, found[-1].position), None


def _retractions(part: str, position: int) -> list[_Commitment]:
    """Sentences after the one holding the last commitment (at `position`) that take it back
    and restate it with a value (see `_RESTATED`: "Wait, actually it is 5.", "Just kidding,
    it's 5.", "Wait. It is 5.", "Sorry, I meant 5."): each commits its value, so that a
    different one is a hedge. One that restates nothing ("Actually, she started with 20.")
    or whose value cannot be read is no retraction. After a box, the rest of its own sentence
    is read too (`\\boxed{3} Wait, actually it is 5.`)."""
    protected = _Protected(_protected(part))
    ends = (m.end() for m in _SENTENCE_END.finditer(part, position) if m.start() not in protected)
    start = next(ends, len(part))
    box = _BOX.match(part, position)
    box_end = box and part.startswith("{", box.end()) and brace_group(part, box.end(), start)
    sentences = _sentences(as_read(part[start:]))
    if box_end:
        sentences.insert(0, as_read(part[box_end:start]))
    found = []
    cue = False  # "Wait." alone: the next sentence is read as its retraction
    for sentence in sentences:
        restated = _RESTATED.search(sentence)
        cued = (
            cue or _RETRACTION.search(sentence) or re.match(r"(?i)\W*(?:make|i\s+meant)", sentence)
        )
        tail = _CLAUSE_END.split(sentence[restated.end() :])[0] if restated else ""
        value = _sentence_value(tail, alone=False) if tail else None  # "5, not 3" restates 5
        if cued and value:
            found.append(_Commitment(len(part), "retraction", value))
        cue = not _prose_words(_RETRACTION.sub("", sentence)) and bool(_RETRACTION.search(sentence))
    return found


def _agreeing(found: list[_Commitment], symbolic: bool) -> list[list[_Commitment]]:
    """Commitments grouped by the answer they give (same text, or the same value)."""
    groups: dict[str, list[_Commitment]] = {}
    for commitment in found:
        groups.setdefault(key(normalize(commitment.answer)), []).append(commitment)
    merged: list[list[_Commitment]] = []
    for group in groups.values():
        if len(groups) > MAX_DISTINCT:
            merged.append(group)
            continue
        home = next(
            (m for m in merged if is_equivalent(group[0].answer, m[0].answer, symbolic=symbolic)),
            None,
        )
        if home is None:
            merged.append(group)
        else:
            home.extend(group)
    return merged


def _best(group: list[_Commitment]) -> _Commitment:
    """Of agreeing commitments: the most finished (`4495` over `\\binom{31}{28}`), then the
    strongest source, then the last."""
    return min(
        group,
        key=lambda c: (
            len(operations(normalize(c.answer))),
            -_STRENGTH.get(c.source, 0),
            -c.position,
        ),
    )


def _resolve(found: list[_Commitment], config: MathConfig) -> Extraction:
    if any(len(c.answer) > MAX_ANSWER_CHARS for c in found):
        return _none(f"answer longer than {MAX_ANSWER_CHARS} characters", found[-1].source)
    if config.multiple_answers == "last" or len(found) == 1:
        last = found[-1]
        return Extraction(last.answer, last.source, f"{last.source} answer", (last.answer,))
    groups = _agreeing(found, config.symbolic)
    strongest = max(found, key=lambda c: _STRENGTH.get(c.source, 0)).source
    if len(groups) > 1:
        options = tuple(g[-1].answer for g in groups)
        return _none("several different final answers", strongest, options)
    best = _best(groups[0])
    reason = f"{best.source} answer" if len(found) == 1 else f"{best.source} answers agree"
    return Extraction(best.answer, best.source, reason, (best.answer,))


def _last_value(sentence: str) -> str | None:
    return _sentence_value(sentence, alone=False)


def _negated(line: str, number: re.Match[str]) -> bool:
    """The last number of a final line is negated after it ("42 is not the answer"), or
    negated, bounded or offered with another before it ("not 5", "3 or 5")."""
    return _negated_after(line, number) or _bounded(line, number.start()) or _alternatives(line)


def _negated_after(line: str, number: re.Match[str]) -> bool:
    """The clause after a number negates or bounds it ("5 is impossible", "5 or more"; not
    "5, since fewer is impossible")."""
    clause = _CLAUSE_END.split(line[number.end() :])[0]
    return bool(_NEGATIONS.intersection(_prose_words(clause)) or _BOUND_AFTER.match(clause))


def _doubtful(value: str) -> bool:
    """A value read from an unmarked text that is no answer: a number that still carries a
    negation or doubt ("5 is wrong", "5, but it could also be 6")."""
    if not re.search(r"\d", value):
        return False
    words = _NEGATIONS | _DOUBTS
    return bool(words.intersection(_prose_words(value)) or _DOUBT_PHRASE.search(value))


def _restated(sentences: list[str]) -> bool:
    """Two sentences (or clauses between semicolons) of one number each that say the same but
    for it ("It is 3. It is 5.", "It is 3; it's also 5."): two answers."""
    said: dict[str, str] = {}
    for sentence in sentences:
        numbers = _NUMBER.findall(sentence)
        template = _NUMBER.sub("#", sentence).lower().replace("’", "'").replace("'s ", " is ")
        template = " ".join(template.replace(" also ", " ").split())  # "It's also 5"
        if len(numbers) == 1 and said.setdefault(template, numbers[0]) != numbers[0]:
            return True
    return False


def _unmarked(part: str, config: MathConfig, prompt: str | None) -> Extraction:
    """No committed answer: the text itself when it is short, a choice letter, or the
    final line (the fallback)."""
    if _is_plain(part):
        lines = _lines(part)
        values = [_sentence_value(line, alone=True) for line in lines]
        found = [_Commitment(i, "plain", v) for i, v in enumerate(values) if v and not _doubtful(v)]
        if len(found) == len(lines) and found:  # "5\n6": two answers
            return _resolve(found, config)
    last_line = _last_line(_without_closing(part))
    letters = set(_CHOICE_IN_LINE.findall(last_line))
    if len(letters) == 1:
        letter = f"({letters.pop()})"
        return Extraction(letter, "choice", "choice answer", (letter,))
    if config.fallback == "none":
        return _none("no final answer marked")
    # runs of spaces read as one: the text clean-up backtracks over each run from every
    # space in it (a 19,000-space line took 8 s)
    line = _BLANKS.sub(" ", _CALCULATOR.sub("", last_line))
    if line.endswith("?"):
        return _none("the final line is a question")
    if prompt and len(line) >= MIN_RESTATE_CHARS and line in prompt:
        return _none("restates the question")
    sentences = _sentences(line)
    if _restated([c.strip() for sentence in sentences for c in sentence.split(";")]):
        return _none("the final line states two values")
    value = next((v for v in map(_last_value, reversed(sentences)) if v is not None), None)
    if value is None:
        numbers = list(_NUMBER.finditer(line))
        value = numbers[-1].group() if numbers else None
        if numbers and _negated(line, numbers[-1]):
            return _none("the final line negates or bounds its number")  # "It is not 5."
    if value is not None and _doubtful(value):
        return _none("the final line hedges its value")  # "5, but 6 works too."
    if value is None or len(value) > MAX_NUMBER_CHARS:
        return _none("no final answer found")
    return Extraction(value, "last_number", "last value of the final line", (value,))


def qualified(answer: str) -> bool:
    """An extracted answer that still carries doubt, a negation or a qualifier ("5, or maybe
    6", "not 5", "at least 5", "5?"). The reward scores it 0 against any gold, but without a
    gold (a vote) it would be an answer of its own that hedgers could win together."""
    words = set(_prose_words(answer))
    doubt = (_HEDGES - {"or"}) | _DOUBTS | _NEGATIONS | _QUALIFIERS
    return answer.rstrip().endswith("?") or bool(words & doubt or _DOUBT_PHRASE.search(answer))


def extract_answer(
    text: str, config: MathConfig = _DEFAULT, *, prompt: str | None = None
) -> Extraction:
    """The final answer `text` commits to. `prompt`, when given, lets a completion that merely
    restates the question be recognised (it earns no answer)."""
    part = _ANSWER_TAG.sub("\n", answer_part(text))  # R1-Zero's `<answer>42</answer>`
    if not part.strip():
        return _none("nothing after the reasoning" if text.strip() else "empty text")
    part = part[-MAX_TEXT_CHARS:].strip()
    if prompt and len(part) >= MIN_RESTATE_CHARS and part in prompt:
        return _none("restates the question")
    found, refused = _commitments(part)
    if refused is not None:
        return refused
    if found:
        return _resolve(found, config)
    return _unmarked(part, config, prompt)


def extract_gold(reference: str) -> Extraction:
    """The gold answer of a dataset reference. Several different committed answers are a
    multi-part gold (`\\boxed{1}` and `\\boxed{-2}` is the set {1, -2}), never a hedge."""
    got = extract_answer(reference)
    if got.answer is None and len(got.candidates) > 1:
        joined = ", ".join(got.candidates)
        return Extraction(joined, got.source, "several answers: a multi-part gold", got.candidates)
    return got
