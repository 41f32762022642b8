"""Find the final answer a text commits to: a model completion or a dataset reference.

Strongest evidence first: `\\boxed{}`/`\\fbox{}`, GSM8K `#### X`, a final `A: X` line, "the
(final) answer is X" / "Answer: X", a multiple-choice letter, a short text that *is* the
answer ("18", "\\frac{14}{3}"), and only then, if allowed, the last number of the final line.
Reasoning inside `<think>` never counts. Several different final answers are hedging and
yield no answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._common import answer_part
from ._config import MathConfig
from ._equivalence import MAX_ANSWER_CHARS, is_equivalent
from ._normalize import MAX_NUMBER_CHARS, brace_group, key, normalize, parse_number

__all__ = ["Extraction", "extract_answer"]

MAX_TEXT_CHARS = 20_000
"""Only the tail of a completion is searched: final answers come last, and a 1 MB completion
must not cost 1 MB of regex work."""
MAX_BOXES = 50
"""More `\\boxed{}` than this is not an answer but spam: no answer."""
MAX_DISTINCT = 4
"""Most distinct candidate answers checked for being the same value (e.g. `15\\frac{39}{40}`
and `\\frac{639}{40}`); more is hedging."""
MAX_PLAIN_CHARS = 200
"""A whole text this short, without prose, is taken as the answer itself."""
MAX_PLAIN_WORDS = 2
"""Words (outside LaTeX commands and `\\text{}`) a plain answer may contain ("Evelyn")."""
MIN_RESTATE_CHARS = 20
"""A completion line at least this long found verbatim in the prompt restates the question."""
MAX_PHRASE_NESTING = 4
"""'Final Answer: The final answer is $5$' — phrases re-read inside a phrase's answer."""

_DEFAULT = MathConfig()
_BOX = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])\s*")
_CONTEXT_CHARS = 40
"""How far before a box a negation is looked for."""
_NEGATED_BEFORE = re.compile(
    r"\b(?:not|isn't|isn’t|never|cannot be|can't be)\s*(?:equal to\s*|equals\s*)?\$*\s*$",
    re.IGNORECASE,
)
_HEDGED_AFTER = re.compile(
    r"\s*\$*\s*[.,;:]?\s*(?:\(?\s*(?:or(?!\s+equivalently)|maybe|possibly|perhaps|probably)\b"
    r"|is\s+(?:incorrect|wrong|not)\b|\?)",
    re.IGNORECASE,
)
_HASH = re.compile(r"####[ \t]*([^\n]*)")
_A_LINE = re.compile(r"^\s*A\s*:\s*(.+?)\s*$")
_PHRASE = re.compile(
    r"(?i)\b(?:final\s+answer|answer|correct\s+(?:option|choice))\s*(?:\*\*)?\s*"
    r"(?:is|:|=|should\s+be|would\s+be|will\s+be)\s*(?:\*\*)?\s*:?\s*([^\n]*)"
)
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_CHOICE_IN_LINE = re.compile(r"\(([A-E])\)")
_CALCULATOR = re.compile(r"<<[^<>\n]*>>")
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?|(?<![\w.])-?\.\d+")
_LATEX_CMD = re.compile(r"\\[a-zA-Z]+")
_TEXT_GROUP = re.compile(r"\\(?:text|mbox|textbf|mathrm)\s*\{[^{}]*\}")
_WORD = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True)
class Extraction:
    """The answer a text commits to, where it was found, and why (or why not)."""

    answer: str | None
    """The final answer as written (un-normalised), or None when there is no committed one."""
    source: str
    """boxed | hash | answer_line | phrase | choice | plain | last_number | none."""
    reason: str
    """Short explanation; starts with "no answer" when `answer` is None."""
    candidates: tuple[str, ...] = ()
    """Distinct answers found by the deciding rule (several = hedging)."""


def _none(reason: str, source: str = "none", candidates: tuple[str, ...] = ()) -> Extraction:
    return Extraction(None, source, f"no answer: {reason}", candidates)


def _boxes(text: str) -> tuple[list[str], str | None]:
    """Contents of every `\\boxed{...}` / `\\fbox{...}` (nested braces), or why there are none."""
    found: list[str] = []
    count = 0
    last_end: int | None = None
    for match in _BOX.finditer(text):
        count += 1
        if count > MAX_BOXES:
            return [], f"more than {MAX_BOXES} boxed answers"
        start = match.end()
        if text.startswith("{", start):
            end = brace_group(text, start, MAX_ANSWER_CHARS + 2)
            content = text[start + 1 : end - 1] if end is not None else ""
        else:  # `\boxed 5`
            content = re.match(r"[^\s$]*", text[start : start + MAX_ANSWER_CHARS]).group()
            end = start + len(content)
        if _NEGATED_BEFORE.search(text[max(0, match.start() - _CONTEXT_CHARS) : match.start()]):
            return [], "the boxed answer is negated"
        last_end = end
        if content.strip():
            found.append(content.strip())
    if count and not found:
        return [], "boxed answer empty or with unbalanced braces"
    if found and last_end is not None and _HEDGED_AFTER.match(text, last_end):
        return [], "the boxed answer is hedged"  # between boxes, "or" is judged by agreement
    return found, None


def _trim(answer: str) -> str:
    """The answer of an "answer is ..." line: its first math span, else its first sentence."""
    answer = answer.replace("**", "").strip()
    span = _MATH_SPAN.search(answer)
    if span is not None:
        return next(g for g in span.groups() if g is not None).strip()
    return _SENTENCE_END.split(answer, 1)[0].strip()


def _phrase(text: str) -> str | None:
    """The answer after the last "answer is" / "Answer:" phrase, re-read when nested."""
    matches = list(_PHRASE.finditer(text))
    if not matches:
        return None
    answer = matches[-1].group(1)
    for _ in range(MAX_PHRASE_NESTING):
        inner = _PHRASE.search(answer)
        if inner is None:
            break
        answer = inner.group(1)
    answer = _trim(answer)
    return answer or None


def _is_plain(text: str) -> bool:
    """A short text with no prose is an answer by itself: "18", "p - q", "\\text{Evelyn}"."""
    if len(text) > MAX_PLAIN_CHARS or len(_CHOICE_IN_LINE.findall(text)) > 1:
        return False
    words = _WORD.findall(_LATEX_CMD.sub(" ", _TEXT_GROUP.sub(" ", text)))
    return len(words) <= MAX_PLAIN_WORDS


def _resolve(candidates: list[str], source: str, config: MathConfig) -> Extraction:
    """One answer from a rule's candidates; different answers are hedging unless allowed."""
    if len(candidates[-1]) > MAX_ANSWER_CHARS:
        return _none(f"answer longer than {MAX_ANSWER_CHARS} characters", source)
    if len(candidates) == 1:
        return Extraction(candidates[0], source, f"{source} answer", tuple(candidates))
    distinct: dict[str, str] = {}
    for candidate in candidates:
        distinct.setdefault(key(normalize(candidate)), candidate)
    last = candidates[-1]
    options = tuple(distinct.values())
    if len(distinct) == 1 or config.multiple_answers == "last":
        return Extraction(last, source, f"{source} answer", options)
    if len(distinct) <= MAX_DISTINCT and all(
        is_equivalent(other, last, symbolic=config.symbolic) for other in options
    ):
        return Extraction(last, source, f"{source} answers agree", options)
    return _none("several different final answers", source, options)


def _numeric_markers(text: str) -> list[str]:
    """Plain-number answers given by other final-answer markers (`####`, `A:`, "the answer
    is"), to check a boxed answer against. Only numbers: prose after "the answer is" is not a
    rival answer."""
    found = [m.group(1).strip() for m in _HASH.finditer(text)]
    a_line = _A_LINE.match(_last_line(text))
    if a_line is not None:
        found.append(_trim(a_line.group(1)))
    phrase = _phrase(text)
    if phrase is not None:
        found.append(phrase)
    return [f for f in found if f and parse_number(normalize(f)) is not None]


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def extract_answer(
    text: str, config: MathConfig = _DEFAULT, *, prompt: str | None = None
) -> Extraction:
    """The final answer `text` commits to. `prompt`, when given, lets a completion that merely
    restates the question be recognised (it earns no answer)."""
    part = answer_part(text)
    if not part.strip():
        return _none("nothing after the reasoning" if text.strip() else "empty text")
    part = part[-MAX_TEXT_CHARS:].strip()
    if prompt and len(part) >= MIN_RESTATE_CHARS and part in prompt:
        return _none("restates the question")

    boxed, refused = _boxes(part)
    if refused is not None:
        return _none(refused, "boxed")
    if boxed:
        found = _resolve(boxed, "boxed", config)
        for other in _numeric_markers(part):  # "\boxed{5} ... Final Answer: 6" is a hedge
            if found.answer is not None and not is_equivalent(
                other, found.answer, symbolic=config.symbolic
            ):
                return _none("several different final answers", "boxed", (*boxed, other))
        return found
    hashes = [m.group(1).strip() for m in _HASH.finditer(part) if m.group(1).strip()]
    if hashes:
        return _resolve(hashes[-1:], "hash", config)
    last_line = _last_line(part)
    a_line = _A_LINE.match(last_line)
    if a_line is not None:
        return _resolve([_trim(a_line.group(1))], "answer_line", config)
    phrase = _phrase(part)
    if phrase is not None:
        return _resolve([phrase], "phrase", config)
    if _is_plain(part):
        return _resolve([_trim(part)], "plain", config)
    letters = set(_CHOICE_IN_LINE.findall(last_line))
    if len(letters) == 1:
        return _resolve([f"({letters.pop()})"], "choice", config)
    if config.fallback == "none":
        return _none("no final answer marked")
    line = _CALCULATOR.sub("", last_line)
    if line.endswith("?"):
        return _none("the final line is a question")
    if prompt and len(line) >= MIN_RESTATE_CHARS and line in prompt:
        return _none("restates the question")
    numbers = _NUMBER.findall(line)
    if not numbers or len(numbers[-1]) > MAX_NUMBER_CHARS:
        return _none("no final answer found")
    return Extraction(numbers[-1], "last_number", "last number of the final line", (numbers[-1],))
