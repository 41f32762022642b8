"""The master-key guard: completions that fool judges never reach one.

LLM judges are known to accept contentless replies ("One Token to Fool LLM-as-a-Judge",
Zhao et al. 2025): an empty answer, a lone colon, or a generic opener such as "Thought
process:" or "Let's solve this problem step by step." earn "YES" far too often. Such
completions score 0 with status `ok` (they were judged: by a rule) and `detail.guard` names
the rule that fired. The openers are data: a spec extends them with `guard_openers`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["DEFAULT_OPENERS", "Guard"]

DEFAULT_OPENERS: tuple[str, ...] = (
    "thought process",
    "thinking process",
    "thoughts",
    "reasoning",
    "reasoning process",
    "let's solve this problem step by step",
    "let's solve this step by step",
    "let's solve it step by step",
    "let's think step by step",
    "let's think about this step by step",
    "let's work through this step by step",
    "let's break this down",
    "let's break it down step by step",
    "let me think",
    "let me think step by step",
    "let me solve this step by step",
    "step by step",
    "step 1",
    "solution",
    "the solution",
    "the solution is",
    "here is the solution",
    "here's the solution",
    "answer",
    "the answer",
    "the answer is",
    "final answer",
    "the final answer is",
    "response",
    "explanation",
    "sure",
    "sure here is the answer",
    "okay",
    "ok",
    "alright",
    "of course",
    "certainly",
    "解",
    "解答",
    "答案",
)
"""Bare openers (compared after normalisation: case, quotes, markup, trailing punctuation)."""

_MARKUP = re.compile(r"[*_#>`~\[\]()]+")
_SPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("’", "'").replace("‘", "'")
    text = _MARKUP.sub(" ", text)
    text = _SPACE.sub(" ", text).strip()
    return text.strip(" .:;,!?…-—–=\"'")


def _is_punctuation_only(text: str) -> bool:
    return all(unicodedata.category(c)[0] in "PSZC" for c in text)


class Guard:
    """Decides whether a completion is a master key; `check` returns the rule or None."""

    def __init__(self, extra_openers: Iterable[str] = (), defaults: bool = True) -> None:
        openers = (*(DEFAULT_OPENERS if defaults else ()), *extra_openers)
        self.openers = frozenset(_normalise(o) for o in openers if _normalise(o))

    def check(self, text: str) -> str | None:
        """`empty`, `punctuation_only`, `generic_opener`, or None when the text may be judged."""
        if not text.strip():
            return "empty"
        if _is_punctuation_only(text):
            return "punctuation_only"
        if _normalise(text) in self.openers:
            return "generic_opener"
        return None
