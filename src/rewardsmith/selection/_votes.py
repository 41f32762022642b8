"""What one sample votes for: its answer, the key that identifies the answer, its buckets.

Three ways to tell answers apart (`ClusterMode`):

- `math`: the math reward's own reading. The answer is the one a completion commits to
  (`committed_answer`: a hedge, a restated question, an unfinished form, an empty answer
  such as `\\text{}` or unmarked words such as "hmm" are no answer), its key is canonical
  (`0.5`, `\\frac{1}{2}` and `x = \\frac12` share one) and its buckets say which other keys
  it may still equal (`\\sqrt{12}` and `2\\sqrt{3}`), for `_clusters`.
- `exact`: the answer string itself.
- `normalized`: the answer string case-folded, without punctuation, spaces collapsed; the
  punctuation of numbers stays (`-3` is not `3`, `1.2` not `1/2`, `3.5` not `3,5`).

The answer is read from the completion, or taken as given from the sample's metadata
(`answer_key: metadata.pred`, e.g. answers another tool extracted), where an empty or
unit-only answer is no answer as it is when read (`no_answer_left`). A vote is computed in a
reward worker, under the hard timeout: the math reading is the expensive part.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Literal

from ..models import Sample
from ..verifiers.math import answer_buckets, answer_key, committed_answer, no_answer_left

__all__ = ["ClusterMode", "Vote", "metadata_path", "metadata_value", "read_vote"]

ClusterMode = Literal["math", "exact", "normalized"]
"""How answers are told apart: the math reward's equivalence, the raw string, or the string
case-, space- and punctuation-normalised."""

_SPACES = re.compile(r"\s+")
_NUMBER_PUNCTUATION = re.compile(r"-(?= ?\.?\d)|[./,](?=\d)|(?<=\d)[-/]")
"""Punctuation that is part of a number: a sign before a digit (`-3`, `-.5`, `- 3`), a
decimal point, a fraction bar or a thousands separator before a digit, a minus or a bar
after one. A `.` or `,` after the last digit ends a sentence and goes."""
_BEFORE_NUMBER = re.compile(r"[^\w\s](?= ?\.?\d)")
"""A mark before a number, which may be a minus written as a dash (`_minus`)."""


def _minus(mark: re.Match[str]) -> str:
    """A dash (category Pd: en dash, hyphen...) or U+2212 before a number is its minus sign:
    read as punctuation, -3 written with an en dash would vote with `3`."""
    dash = mark[0] == "\u2212" or unicodedata.category(mark[0]) == "Pd"
    return "-" if dash else mark[0]


@dataclass(frozen=True)
class Vote:
    """One sample's answer, as clustering sees it; `answer` None is no vote, with `reason`."""

    answer: str | None
    key: str | None = None
    buckets: tuple[str, ...] = ()
    reason: str | None = None

    def detail(self) -> dict[str, Any]:
        """As a score's detail (what a worker sends back)."""
        if self.answer is None:
            return {"answer": None, "reason": self.reason}
        return {"answer": self.answer, "key": self.key, "buckets": list(self.buckets)}

    @classmethod
    def from_detail(cls, detail: dict[str, Any]) -> Vote:
        """The vote a worker sent back in a score's detail."""
        answer, key = detail.get("answer"), detail.get("key")
        if not isinstance(answer, str) or not isinstance(key, str):
            return cls(None, reason=str(detail.get("reason") or "no answer"))
        return cls(answer, key, tuple(detail.get("buckets") or ()))


def metadata_path(path: str) -> tuple[str, ...]:
    """`metadata.a.b` -> ("a", "b"); a path elsewhere is a ValueError naming the form."""
    head, _, rest = path.partition(".")
    if head != "metadata" or not rest or any(not part for part in rest.split(".")):
        raise ValueError(f"{path!r}: expected metadata.KEY (e.g. metadata.pred)")
    return tuple(rest.split("."))


def metadata_value(sample: Sample, path: tuple[str, ...]) -> Any:
    """The value at `path` in the sample's metadata, or None when absent."""
    value: Any = sample.metadata
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _normalized(text: str) -> str:
    """Case-folded, punctuation and runs of spaces made one space, but a number's own
    punctuation kept: without it `-3` and `3` would vote together."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _SPACES.sub(" ", _BEFORE_NUMBER.sub(_minus, text))
    kept = {match.start() for match in _NUMBER_PUNCTUATION.finditer(text)}
    text = "".join(
        " " if i not in kept and unicodedata.category(c).startswith("P") else c
        for i, c in enumerate(text)
    )
    return _SPACES.sub(" ", text).strip()


def _prompt_text(sample: Sample) -> str | None:
    if sample.prompt is None or isinstance(sample.prompt, str):
        return sample.prompt
    return "\n".join(message.text for message in sample.prompt)


def _given(sample: Sample, path: tuple[str, ...]) -> str | Vote:
    value = metadata_value(sample, path)
    where = "metadata." + ".".join(path)
    if value is None:
        return Vote(None, reason=f"no answer: {where} is missing")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return Vote(None, reason=f"no answer: {where} is {type(value).__name__}, not text")
    text = str(value)
    missing = no_answer_left(text)  # as for an answer read: `\text{}` x3 would outvote `3` x2
    return Vote(None, reason=f"no answer: {where} is {missing}") if missing else text


def read_vote(sample: Sample, mode: ClusterMode, answer_from: tuple[str, ...] | None) -> Vote:
    """The sample's vote: its answer read from the completion (or taken from the metadata at
    `answer_from`), keyed for `mode`."""
    if answer_from is not None:
        given = _given(sample, answer_from)
        if isinstance(given, Vote):
            return given
        answer = given
    else:
        extraction = committed_answer(sample.text, prompt=_prompt_text(sample))
        if extraction.answer is None:
            return Vote(None, reason=extraction.reason or "no answer")
        answer = extraction.answer
    if mode == "exact":
        return Vote(answer, answer)
    if mode == "normalized":
        key = _normalized(answer)
        return Vote(answer, key) if key else Vote(None, reason="no answer: only punctuation")
    return Vote(answer, answer_key(answer), tuple(sorted(answer_buckets(answer))))
