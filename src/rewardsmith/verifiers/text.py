"""Text rewards: exact match, SQuAD token F1, multiple-choice letter, regular expression.

All of them judge the answer part of a completion (`answer_part`): reasoning inside
``<think>...</think>`` is never taken as the answer.
"""

from __future__ import annotations

import functools
import itertools
import re
import string
import unicodedata
from collections import Counter
from typing import Any, Literal

import regex as uregex  # the `regex` module: `re` has no Unicode properties

from .._exceptions import ConfigError
from ..models import Sample, Score
from ..registry import RewardFn, bounded, reward
from ._completion_parts import answer_part
from ._words import as_read, visible

__all__ = ["MAX_REGEX_CHARS", "choice", "exact_match", "f1", "regex"]

MAX_REGEX_CHARS = 100_000
"""Longest text `regex` will run a pattern over. A backtracking pattern can take polynomial or
exponential time in the text length; a longer text (the policy's doing) scores 0, with the
reason, instead of running."""


def _references(reference: Any) -> list[str] | Score:
    """The acceptable answers as strings, or the failure that says why there are none."""
    items = reference if isinstance(reference, list | tuple) else [reference]
    if reference is None or not items:
        return Score.failed("not_applicable", "no reference")
    refs: list[str] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            return Score.failed(
                "invalid", f"reference must be a string or a list of strings, got {item!r}"
            )
        refs.append(str(item))
    return refs


# -- exact_match ---------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(?:a|an|the)\b\s*", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")
_ANSWER_MARKER = re.compile(r"(?:(?i:answer)[*_]*\s*:|####)")


def _extract(answer: str, mode: str) -> str | None:
    """The span of the answer part to compare; None when the requested span is missing."""
    if mode == "answer":
        return answer
    if mode == "last_line":
        lines = [line for line in answer.splitlines() if line.strip()]
        return lines[-1] if lines else ""
    markers = list(_ANSWER_MARKER.finditer(answer))
    if not markers:
        return None
    return answer[markers[-1].end() :].split("\n", 1)[0].strip().strip("*")


def _blank(text: str) -> bool:
    """Whether a reader sees nothing in `text` (empty, whitespace, zero-width characters)."""
    return not visible(text).strip()


@reward("exact_match")
def exact_match(
    *,
    ignore_case: bool = True,
    ignore_punctuation: bool = False,
    normalize_whitespace: bool = True,
    strip_articles: bool = False,
    extract: Literal["answer", "last_line", "after_marker"] = "answer",
) -> RewardFn:
    """1 if the answer equals the reference (or one of a list of references), else 0.

    Both sides get the same normalisation: Unicode NFC (so composed and decomposed accents
    agree), then the options, then stripping. `extract` picks what is compared: the whole
    answer part, its last non-empty line, or the rest of the line after the last ``Answer:``
    or ``####`` (GSM8K's marker); a missing marker scores 0 with a reason.

    A reference the options would normalise to nothing keeps what they drop: the choice
    letter "A" with `strip_articles`, or "?" with `ignore_punctuation`, would otherwise equal
    an empty answer. A blank reference (nothing visible) would pay the empty answer: it is
    skipped, and a sample with no other reference is `invalid`.
    """

    def normalize(text: str, punctuation: bool, articles: bool) -> str:
        text = unicodedata.normalize("NFC", text)
        if ignore_case:
            text = text.casefold()
        if punctuation:
            text = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
        if articles:
            text = _ARTICLES.sub("", text)
        if normalize_whitespace:
            text = _WHITESPACE.sub(" ", text)
        return text.strip()

    def options_for(ref: str) -> tuple[bool, bool]:
        """The options `ref` is compared under: those that leave something of it."""
        for options in ((ignore_punctuation, strip_articles), (ignore_punctuation, False)):
            if normalize(ref, *options):
                return options
        return False, False

    def score(sample: Sample) -> Score:
        refs = _references(sample.reference)
        if isinstance(refs, Score):
            return refs
        refs = [ref for ref in refs if not _blank(ref)]
        if not refs:
            return Score.failed("invalid", "the reference is blank: it would pay no answer")
        answer = _extract(answer_part(sample.text), extract)
        if answer is None:
            return Score.ok(0.0, reason="no 'Answer:' or '####' marker in the answer")
        got = normalize(answer, ignore_punctuation, strip_articles)
        for ref in refs:
            options = options_for(ref)
            if normalize(answer, *options) == normalize(ref, *options):
                return Score.ok(1.0, answer=normalize(answer, *options), reference=ref)
        return Score.ok(0.0, answer=got, reason="no reference matches")

    return bounded(score, 0.0, 1.0)


# -- f1 ------------------------------------------------------------------------------------

_SQUAD_PUNCT = frozenset(string.punctuation)
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def _squad_tokens(text: str) -> list[str]:
    """SQuAD's `normalize_answer`, then whitespace tokens."""
    text = "".join(c for c in text.lower() if c not in _SQUAD_PUNCT)
    return _SQUAD_ARTICLES.sub(" ", text).split()


def _token_f1(prediction: list[str], gold: list[str]) -> float:
    if not prediction or not gold:
        return float(prediction == gold)
    common = sum((Counter(prediction) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction), common / len(gold)
    return 2 * precision * recall / (precision + recall)


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_WORD_CHAR = r"[\p{L}\p{N}\p{M}]"
_HEDGE = uregex.compile(
    rf"(?V1)(?<!{_WORD_CHAR})(?:and|or|nor|either|neither|maybe|perhaps|possibly|versus|vs)"
    rf"(?!{_WORD_CHAR})|[{_LINE_BREAKS}]"
    r"|(?<=\s)[[\p{P}\p{S}]--['\"`\p{Pi}\p{Pf}]]+|[[\p{P}\p{S}]--['\"`\p{Pi}\p{Pf}]]+(?=\s)"
)
"""What separates the candidates of a hedge: a word ("or", "and", "nor", "either",
"neither", "maybe", "perhaps", "possibly", "versus", "vs"), a line break of any kind, or
punctuation or symbols next to a space ("Paris, London", "Paris. London.", "Paris - London",
"Paris → London"), quotes aside. Glued to words ("Paris/London", "AT&T") they join one SQuAD
token, which matches no reference word: no hedge to pay."""

_NOT_A_STOP = uregex.compile(
    rf"(?<!{_WORD_CHAR})(\p{{L}}|mrs?|ms|dr|prof|st|mt|ft|jr|sr|no|answer(?: is)?)[*_]*[.:][*_]*"
    r"(?=\s)"
)
"""A period or colon that ends no candidate: after an initial ("J. K. Rowling", "U.S. Steel"),
an abbreviation ("St. Louis") or an answer label ("Answer: Paris")."""

_SPACED_AMPERSAND = uregex.compile(r"(?<=\s)&(?=\s)")
_SPACE_RUN = uregex.compile(r"\s+")


def _hedge_view(text: str) -> str:
    """`text` as hedge detection reads it: as seen (`as_read`), casefolded, each run of
    whitespace one space or line break, "&" as "and" (so "Tom & Jerry" is "Tom and Jerry"),
    without the stops `_NOT_A_STOP` names."""
    text = _SPACE_RUN.sub(
        lambda m: "\n" if any(c in _LINE_BREAKS for c in m.group()) else " ",
        as_read(text).casefold(),
    ).strip()
    return _SPACED_AMPERSAND.sub("and", _NOT_A_STOP.sub(r"\1", text))


def _plain_tokens(text: str) -> list[str]:
    """SQuAD's normalisation without dropping articles."""
    return "".join(c for c in text.lower() if c not in _SQUAD_PUNCT).split()


def _candidates(view: str) -> list[str]:
    """The alternatives a (viewed) answer offers ("paris or london", "paris, london",
    "paris\nlondon"), each with at least one token; one item when it offers none."""
    parts = [part.strip() for part in _HEDGE.split(view) if _plain_tokens(part)]
    return parts or [view]


_COPY_WORDS = 32
"""Most words of a reference whose copies may differ in punctuation between words."""


@functools.lru_cache(maxsize=4096)
def _copies(gold: str) -> uregex.Pattern[str] | None:
    """What a copy of the (viewed) reference `gold` looks like in an answer: its words in
    order, between two of them what the reference has there or what separates nothing (a
    space, punctuation glued to the words: "Jean-Paul" for "Jean Paul"), its leading and
    trailing punctuation optional. A reference without words, or with over `_COPY_WORDS`, is
    copied as it is (matching the free form costs the answer's length times the words)."""
    words = list(uregex.finditer(rf"{_WORD_CHAR}+", gold))
    if not words or len(words) > _COPY_WORDS:
        return uregex.compile(uregex.escape(gold)) if gold else None
    body = uregex.escape(words[0].group())
    for before, word in itertools.pairwise(words):
        between = uregex.escape(gold[before.end() : word.start()])
        body += rf"(?:{between}| |[^\p{{L}}\p{{N}}\p{{M}}\s]+){uregex.escape(word.group())}"
    head = uregex.escape(gold[: words[0].start()])
    tail = uregex.escape(gold[words[-1].end() :])
    return uregex.compile(rf"(?:{head})?(?<!{_WORD_CHAR}){body}(?!{_WORD_CHAR})(?:{tail})?")


def _hedged(view: str, gold: str) -> bool:
    """Whether a (viewed) answer offers several candidates once each copy of the (viewed)
    reference in it is one word: the reference's own separators ("Romeo and Juliet", "Paris,
    France") offer no alternative, one outside it does."""
    copies = _copies(gold)
    return len(_candidates(copies.sub("gold", view) if copies else view)) > 1


@reward("f1")
def f1(*, reject_hedges: bool = True) -> RewardFn:
    """SQuAD token F1 between the answer and the reference (max over a list of references).

    Normalisation and bag-of-tokens overlap follow the official SQuAD v1.1 evaluation script
    (``evaluate-v1.1.py``: lowercase, drop ASCII punctuation, drop a/an/the, split on
    whitespace). An empty side follows the SQuAD v2.0 script (``evaluate-v2.0.py``): both
    empty is 1.0, one empty is 0.0 (v1.1 would give 0 for both empty).

    F1 pays for hedging: k candidates earn about 2/(k+1), more than a guess's expected 1/k.
    With `reject_hedges` (default), an answer offering several candidates scores 0, with the
    reason. A hedge is two candidates, one of them not the reference: against each reference,
    a separator inside a copy of it (its words in order) separates nothing, so "Romeo and
    Juliet" matches itself, and an alias "Paris, France" pays "Paris, France" but exempts no
    other answer. Candidates are separated by hedge words ("or", "and", "nor", "either",
    "maybe", "vs", ...), line breaks, and punctuation or symbols next to a space (`_HEDGE`),
    read as seen: zero-width characters removed, NFKC, Cyrillic or Greek lookalikes inside a
    Latin word read as Latin. A period after an initial or abbreviation ("John F. Kennedy",
    "St. Louis") and the colon of "Answer:" separate nothing. So a list is a hedge however it
    is written, and so is an answer more specific than its reference in that form ("Paris,
    France", "Paris (France)", "Paris. The capital." for "Paris"), or the reference's words
    reordered or punctuated anew ("pepper or salt", "Mission: Impossible" for "salt or
    pepper", "Mission Impossible"): the price of not paying lists. Two candidates side by side
    with nothing between them ("Paris London") read as one answer of two words, paid as F1
    pays it; glued by punctuation ("Paris/London") they are one token matching no reference.
    Turn it off for plain SQuAD F1.

    When either side normalises to no token, both keep their articles: the band "The The"
    needs an answer saying "the the", and an empty answer scores 0 against it (1.0 only
    against a blank reference, as in SQuAD v2.0).
    """

    def score(sample: Sample) -> Score:
        refs = _references(sample.reference)
        if isinstance(refs, Score):
            return refs
        answer = answer_part(sample.text).strip()
        if reject_hedges:
            view = _hedge_view(answer)
            refs = [ref for ref in refs if not _hedged(view, _hedge_view(ref))]
            if not refs:
                return Score.ok(
                    0.0,
                    answer=answer,
                    candidates=_candidates(view),
                    reason="hedged between answers",
                )
        tokens = _squad_tokens(answer)

        def overlap(ref: str) -> float:
            gold = _squad_tokens(ref)
            if tokens and gold:
                return _token_f1(tokens, gold)
            return _token_f1(_plain_tokens(answer), _plain_tokens(ref))  # "The The"

        best, best_ref = max(((overlap(r), r) for r in refs), key=lambda pair: pair[0])
        return Score.ok(best, answer=answer, reference=best_ref)

    return bounded(score, 0.0, 1.0)


# -- choice --------------------------------------------------------------------------------

_MARKUP = re.compile(r"[*_$]+")
_SPACES = re.compile(r"\s+")
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox)\{([^{}]*)\}")
_CLAUSE = re.compile(r"[^,.;:!?()\[\]]+")
_DOUBT = re.compile(
    r"\b(?:or|nor|either|maybe|perhaps|possibly|possible|plausible|might|could|alternatively"
    r"|also|too|but|otherwise)\b",
    re.IGNORECASE,
)
_DISMISSAL = re.compile(
    r"\b(?:not|no|never|wrong|incorrect|false|cannot|impossible|unlikely|eliminated?"
    r"|excluded?|ruled? out|distractors?|mistakes?|mistaken|\w+n't)\b",
    re.IGNORECASE,
)
"""A clause after the committed letter naming another letter hedges when it doubts ("C is
also possible", "or C", "but C") and does not dismiss ("C is wrong", "A is not possible")."""


@reward("choice")
def choice(*, choices: str = "ABCD") -> RewardFn:
    """1 if the committed multiple-choice letter is the reference letter, else 0.

    Letters are uppercase only and never part of a word ("Because" is not B). Committed
    forms, first: ``Answer: B``, ``The answer is **B**``, ``correct option is (B)``,
    ``\\boxed{B}``. Failing those, the first or last line of the answer being a lone letter
    or starting with a label: ``B``, ``(B)``, ``B)``, ``B. Paris``. Two different committed
    letters are hedging and score 0: committed twice (a lone letter on the first or last
    line counts beside a committed form: ``Answer: B`` then ``C``), in one run joined by a
    separator or side by side (``A or B``, ``B, C``, ``B; A``, ``B/C``, ``B & C``, ``B–D``,
    ``B、C``, ``B | C``, ``B ∨ C``, ``B → C``, ``B vs C``, ``B nor C``, ``B, though C``,
    ``B C``, ``B (C)``, ``\\boxed{B, C}``, ``\\boxed{B \\text{ or } C}``, ``(B), also (C)``,
    ``(B) (C)``), or later on the committed line in a clause that doubts and does not dismiss
    (``B, but C``, ``B. Or C.``, ``B. C is also possible.``; not ``B. A is a distractor.``).
    The answer is read as it is seen: zero-width and other default-ignorable characters
    removed, NFKC (full-width letters and bars fold to ASCII), Cyrillic or Greek lookalikes in
    a Latin word read as Latin. The reference is a letter, optionally in parentheses, any case.
    """
    if not choices or not re.fullmatch(r"[A-Z]+", choices) or len(set(choices)) != len(choices):
        raise ConfigError(f"choices: must be distinct uppercase letters A-Z, got {choices!r}")
    # Regexes run on text with markdown emphasis and `$` removed, whitespace collapsed and
    # lines joined by "\n", so each gap is at most one space or line break (`_`): no ambiguous
    # `\s*` runs to backtrack over. Letters side by side are on one line.
    one = rf"(?<![A-Za-z0-9])[{choices}](?![A-Za-z0-9])"
    word_follows = r" ?[a-z'\u2019]"  # "A cat", "I think", "C is wrong": a word, not a list
    words = (
        r"(?i:or|nor|and|also|plus|maybe|perhaps|possibly|either|neither|as well as|though"
        r"|although|otherwise|alternatively|else|through|to|versus|vs)\b\.?"
    )
    symbols = r",;/&+\-\u2013\u2014\u3001~|<>=\u2228\u2190-\u21ff\u27f0-\u27ff\u2900-\u297f"
    _ = r"\s?"
    joined = rf"{_}[)\]}}]?{_}[(\[{{]?{_}(?:(?:[{symbols}]|{words}){_}){{1,3}}"
    sep = rf"(?:{joined}[(\[{{]?{_}|{_}[)\]}}]{_}[(\[{{]{_})"
    side_by_side = rf"[^A-Za-z0-9\n]+{one}(?!{word_follows})"
    run = rf"{one}(?:{sep}{one}|{side_by_side})*"
    committed = re.compile(
        rf"\b(?i:answer|option|choice)\b{_}(?:(?i:is)\b|:|=){_}:?{_}(?:(?i:option|choice)\s)?"
        rf"[(\[{{]?{_}(?P<run>{run})"
        rf"|\\boxed\{{{_}\(?{_}(?P<boxed>{run})"
    )
    # `lone` is fullmatched: its run of separated letters is taken whole, without going back
    # into it (`(?=(...))\1`, an atomic group). Each letter ends where the next standalone
    # letter is, so no other reading of a separator reaches further; backtracking into the
    # run's optional spaces made a failing line exponential ("A, A, ..., A?": 20 letters, 5 s).
    lone = re.compile(rf"\(?{one}(?=((?:{sep}{one}|{side_by_side})*))\1\)?[.:]?")
    label = re.compile(rf"(?:\({one}\)|{one}[).:]) ")
    letter = re.compile(one)
    # In a later clause a letter followed by a word is one ("C is also possible") only when
    # the word says something of it: "A good option could be" is an article.
    named = re.compile(
        rf"{one}(?:(?!{word_follows})|(?= (?i:is|was|could|might|may|would|seems|also|too)\b))"
    )

    def doubted(tail: str) -> list[str]:
        """The letters that the clauses of `tail` (the rest of a committed line) offer too."""
        return [
            c
            for clause in _CLAUSE.findall(tail)
            if _DOUBT.search(clause) and not _DISMISSAL.search(clause)
            for c in named.findall(clause)
        ]

    def lone_letters(line: str) -> list[str]:
        """The letters of a line that is only letters ("B", "(B)", "B or C"); "A:" is a
        question-and-answer label, not a choice."""
        return letter.findall(line) if lone.fullmatch(line) and not line.endswith(":") else []

    def committed_letters(answer: str) -> list[str]:
        answer = _MARKUP.sub("", _LATEX_TEXT.sub(r"\1", as_read(answer)))
        lines = [_SPACES.sub(" ", line).strip() for line in answer.splitlines()]
        lines = [line for line in lines if line]
        text = "\n".join(lines)
        found = []
        for m in committed.finditer(text):
            line_end = text.find("\n", m.end())
            found += letter.findall(m.group("run") or m.group("boxed"))
            found += doubted(text[m.end() : line_end if line_end >= 0 else len(text)])
        edges = {*lines[:1], *lines[-1:]}
        if found:
            return found + [c for line in edges for c in lone_letters(line)]
        for line in edges:
            if lone.fullmatch(line):
                found += letter.findall(line)
            elif m := label.match(line + " "):  # a labelled line: its run of letters, if any
                run = lone.match(line)  # ("(B) or (C)?" is a hedge, "(B) Paris" is B)
                head = run.group() if run else m.group()
                found += letter.findall(head) + doubted(line[len(head) :])
        return found

    def score(sample: Sample) -> Score:
        if sample.reference is None:
            return Score.failed("not_applicable", "no reference")
        ref = str(sample.reference).strip().strip("()").strip().upper()
        if len(ref) != 1 or ref not in choices:
            return Score.failed(
                "invalid", f"reference {sample.reference!r} is not one of the choices {choices}"
            )
        letters = sorted(set(committed_letters(answer_part(sample.text))))
        if not letters:
            return Score.ok(0.0, reason="no committed choice letter", reference=ref)
        if len(letters) > 1:
            return Score.ok(
                0.0, reason="hedged between several choices", letters=letters, reference=ref
            )
        return Score.ok(float(letters[0] == ref), answer=letters[0], reference=ref)

    return bounded(score, 0.0, 1.0)


# -- regex ---------------------------------------------------------------------------------


@reward("regex")
def regex(
    *,
    pattern: str,
    mode: Literal["search", "fullmatch"] = "search",
    scope: Literal["answer", "completion"] = "answer",
    ignore_case: bool = False,
    multiline: bool = False,
    dotall: bool = False,
) -> RewardFn:
    """1 if `pattern` matches the answer part (or, with ``scope: completion``, the whole
    completion), else 0.

    `mode` is ``search`` (anywhere) or ``fullmatch`` (the stripped text, entirely). The
    pattern is Python `re` syntax, compiled once here. Texts over `MAX_REGEX_CHARS` score 0
    without running (a backtracking pattern on a huge text could stall a worker): the policy
    wrote them, so they are wrong, never `invalid`. A blank text (nothing visible: empty,
    whitespace, zero-width characters; an unclosed ``<think>`` leaves the answer part empty)
    is no answer and scores 0 without running: an empty answer satisfies any "must not
    contain" pattern.
    """
    flags = (
        (re.IGNORECASE if ignore_case else 0)
        | (re.MULTILINE if multiline else 0)
        | (re.DOTALL if dotall else 0)
    )
    try:
        compiled = re.compile(pattern, flags)
    except re.error as exc:
        raise ConfigError(f"pattern: invalid regular expression {pattern!r}: {exc}") from exc
    match = compiled.search if mode == "search" else compiled.fullmatch

    def score(sample: Sample) -> Score:
        text = answer_part(sample.text) if scope == "answer" else sample.text
        if mode == "fullmatch":
            text = text.strip()
        if len(text) > MAX_REGEX_CHARS:
            return Score.ok(
                0.0, reason=f"text is {len(text)} chars, over the regex limit of {MAX_REGEX_CHARS}"
            )
        if not visible(text).strip():
            return Score.ok(0.0, reason="no answer: the text is blank")
        found = match(text)
        if found is None:
            return Score.ok(0.0, reason="no match" if mode == "search" else "no full match")
        return Score.ok(1.0, match=found.group())

    return bounded(score, 0.0, 1.0)
