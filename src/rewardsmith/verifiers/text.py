"""Text rewards: exact match, SQuAD token F1, multiple-choice letter, regular expression.

All of them judge the answer part of a completion (`answer_part`): reasoning inside
``<think>...</think>`` is never taken as the answer.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from typing import Any, Literal

from .._exceptions import ConfigError
from ..models import Sample, Score
from ..registry import RewardFn, bounded, reward
from ._completion_parts import answer_part
from ._words import visible

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


_DISJUNCTION = re.compile(
    r"(?<![^\W_])(?:and/)?or(?![^\W_])|\b(?:either|maybe|perhaps|possibly|versus|vs)\b\.?"
    r"|[;|&?()\[\]\n\u2013\u2014]|(?<!\d),|,(?!\d)|(?<=[^\W\d_])\s*/\s*(?=[^\W\d_])",
    re.IGNORECASE,
)
"""What separates the candidates of a hedge: "or" (also "(or"), "either", "maybe", "vs",
";", "|", "&", "?", parentheses, dashes, a line break, a comma (not inside a number:
"1,000"), a slash between words (not "9/11")."""


def _candidates(answer: str) -> list[str]:
    """The alternatives an answer offers ("Paris or London", "Paris (London)", "Paris,
    London", "Paris\nLondon"), each with at least one SQuAD token; one item when it offers
    none."""
    parts = [part for part in _DISJUNCTION.split(answer) if _squad_tokens(part)]
    return parts or [answer]


def _plain_tokens(text: str) -> list[str]:
    """SQuAD's normalisation without dropping articles."""
    return "".join(c for c in text.lower() if c not in _SQUAD_PUNCT).split()


@reward("f1")
def f1(*, reject_hedges: bool = True) -> RewardFn:
    """SQuAD token F1 between the answer and the reference (max over a list of references).

    Normalisation and bag-of-tokens overlap follow the official SQuAD v1.1 evaluation script
    (``evaluate-v1.1.py``: lowercase, drop ASCII punctuation, drop a/an/the, split on
    whitespace). An empty side follows the SQuAD v2.0 script (``evaluate-v2.0.py``): both
    empty is 1.0, one empty is 0.0 (v1.1 would give 0 for both empty).

    F1 pays for hedging: k candidates earn about 2/(k+1), more than a guess's expected 1/k.
    With `reject_hedges` (default), an answer offering several candidates scores 0 with the
    reason, unless the reference itself offers several. Candidates are separated by "or",
    "either", "maybe", "vs", ";", "|", "&", "?", parentheses, dashes, line breaks, commas
    (outside numbers) and slashes between words (`_DISJUNCTION`): a list is a hedge however
    it is written. So an answer more specific than its reference in that form ("Paris,
    France" or "Paris (France)" for "Paris") is 0 too: the price of not paying lists. Turn
    it off for plain SQuAD F1.

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
            offered = _candidates(answer)
            if len(offered) > 1 and not any(len(_candidates(r)) > 1 for r in refs):
                return Score.ok(
                    0.0, answer=answer, candidates=offered, reason="hedged between answers"
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


@reward("choice")
def choice(*, choices: str = "ABCD") -> RewardFn:
    """1 if the committed multiple-choice letter is the reference letter, else 0.

    Letters are uppercase only and never part of a word ("Because" is not B). Committed
    forms, first: ``Answer: B``, ``The answer is **B**``, ``correct option is (B)``,
    ``\\boxed{B}``. Failing those, the first or last line of the answer being a lone letter
    or starting with a label: ``B``, ``(B)``, ``B)``, ``B. Paris``. Two different committed
    letters are hedging and score 0, whether committed twice or in one run joined by a
    separator (``A or B``, ``B, C``, ``B; A``, ``B/C``, ``B & C``, ``B–D``, ``B、C``,
    ``B, though C``, ``\\boxed{B, C}``, ``(B), also (C)``, ``(B) (C)``). The answer is read
    as it is seen: zero-width and other default-ignorable characters removed, NFKC (full-width
    letters and commas fold to ASCII). The reference is a letter, optionally in parentheses,
    any case.
    """
    if not choices or not re.fullmatch(r"[A-Z]+", choices) or len(set(choices)) != len(choices):
        raise ConfigError(f"choices: must be distinct uppercase letters A-Z, got {choices!r}")
    # Regexes run on text with markdown emphasis and `$` removed and whitespace collapsed, so
    # each gap is at most one space: no ambiguous `\s*` runs to backtrack over.
    one = rf"(?<![A-Za-z0-9])[{choices}](?![A-Za-z0-9])"
    words = (
        r"(?i:or|and|also|plus|maybe|perhaps|possibly|either|as well as|though|although"
        r"|otherwise|alternatively|else|through|to)\b"
    )
    joined = rf" ?[)\]}}]? ?[(\[{{]? ?(?:(?:[,;/&+\-\u2013\u2014\u3001~]|{words}) ?){{1,3}}"
    sep = rf"(?:{joined}[(\[{{]? ?| ?[)\]}}] ?[(\[{{] ?)"
    run = rf"{one}(?:{sep}{one})*"
    committed = re.compile(
        rf"\b(?i:answer|option|choice)\b ?(?:(?i:is)\b|:|=) ?:? ?(?:(?i:option|choice) )?"
        rf"[(\[{{]? ?(?P<run>{run})"
        rf"|\\boxed\{{ ?(?:\\text(?:bf)?\{{)? ?\(? ?(?P<boxed>{run})"
    )
    # `lone` is fullmatched: its run of separated letters is taken whole, without going back
    # into it (`(?=(...))\1`, an atomic group). Each letter ends where the next standalone
    # letter is, so no other reading of a separator reaches further; backtracking into the
    # run's optional spaces made a failing line exponential ("A, A, ..., A?": 20 letters, 5 s).
    lone = re.compile(rf"\(?{one}(?=((?:{sep}{one})*))\1\)?[.:]?")
    label = re.compile(rf"(?:\({one}\)|{one}[).:]) ")
    letter = re.compile(one)

    def committed_letters(answer: str) -> list[str]:
        answer = _MARKUP.sub("", visible(answer))
        lines = [_SPACES.sub(" ", line).strip() for line in answer.splitlines()]
        lines = [line for line in lines if line]
        found = [
            c
            for m in committed.finditer(" ".join(lines))
            for c in letter.findall(m.group("run") or m.group("boxed"))
        ]
        if found:
            return found
        for line in {*lines[:1], *lines[-1:]}:
            if lone.fullmatch(line):
                found += letter.findall(line)
            elif m := label.match(line + " "):  # a labelled line: its run of letters, if any
                run = lone.match(line)  # ("(B) or (C)?" is a hedge, "(B) Paris" is B)
                found += letter.findall(run.group() if run else m.group())
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
