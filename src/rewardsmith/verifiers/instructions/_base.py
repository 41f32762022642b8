"""What a checker is: a builder validating its kwargs once, returning a test of one text.

A registry maps an instruction id (``"punctuation:no_comma"``) to a builder. A builder gets
the instruction's kwargs (entries whose value is None already dropped, as the official
evaluation does) and returns a `Check`: a function of a `Text` that says whether the text
follows the instruction. Where the official code would draw a random value for a missing or
out-of-range kwarg, or would crash on a bad one, the builder raises `InstructionError`: the
reward then fails closed with status `invalid`, never a random or silent pass.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from . import _text

__all__ = ["Builder", "Check", "InstructionError", "Kwargs", "ResourceMissing", "Text", "build"]


class InstructionError(ValueError):
    """An instruction id is unknown or its kwargs are unusable (status `invalid`, caused by
    the dataset)."""

    status = "invalid"
    cause = "dataset"


class ResourceMissing(InstructionError):
    """A checker needs local data that is not installed (status `error`): the machine's
    failure, never the completion's (`cause: infrastructure`, left out of group statistics)."""

    status = "error"
    cause = "infrastructure"


class Text:
    """One response text with what several checkers need computed at most once.

    `undecided_language_passes`: whether a language check passes when langdetect cannot
    decide (the official behaviour: "12345" is then in any language), or has nothing to
    judge ("every 29th word in Japanese" on a reply of 12 words). The training option turns
    it off.
    """

    def __init__(self, value: str, undecided_language_passes: bool = True) -> None:
        self.value = value
        self.undecided_language_passes = undecided_language_passes

    @functools.cached_property
    def lower(self) -> str:
        return self.value.lower()

    @functools.cached_property
    def sentences(self) -> list[str]:
        """Punkt sentences (``nltk.sent_tokenize``)."""
        return _text.split_sentences(self.value)

    @functools.cached_property
    def rule_sentences(self) -> list[str]:
        """IFEval's rule-based sentences (`_text.split_sentences_rules`)."""
        return _text.split_sentences_rules(self.value)

    @functools.cached_property
    def word_count(self) -> int:
        """Number of ``\\w+`` runs."""
        return _text.count_words(self.value)

    @functools.cached_property
    def word_tokens(self) -> list[str]:
        """``nltk.word_tokenize`` tokens."""
        return _text.word_tokenize(self.value)

    @functools.cached_property
    def language(self) -> str | None:
        """langdetect's language code; None when it cannot decide."""
        try:
            return _text.detect_language(self.value)
        except _text.LanguageUndetectable:
            return None

    def language_is(self, *codes: str) -> bool:
        """Whether the text is in one of `codes` (an undecided language: see the class)."""
        found = self.language
        return found in codes if found is not None else self.undecided_language_passes


Check = Callable[[Text], bool]
Builder = Callable[["Kwargs"], Check]


class Kwargs:
    """Typed access to one instruction's kwargs; `done()` rejects the keys nobody read."""

    def __init__(self, instruction_id: str, raw: Mapping[str, Any] | None) -> None:
        if raw is not None and not isinstance(raw, Mapping):
            raise InstructionError(f"{instruction_id}: kwargs must be an object, got {raw!r}")
        self.id = instruction_id
        self._raw = {k: v for k, v in (raw or {}).items() if v is not None}
        self._read: set[str] = set()

    def _fail(self, message: str) -> InstructionError:
        return InstructionError(f"{self.id}: {message}")

    def get(self, key: str) -> Any:
        self._read.add(key)
        return self._raw.get(key)

    def int(self, key: str, *, minimum: int | None = 0, required: bool = True) -> Any:
        value = self.get(key)
        if value is None:
            if required:
                raise self._fail(f"kwarg {key!r} is required (the official code would draw it)")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise self._fail(f"kwarg {key!r} must be an integer, got {value!r}")
        value = int(value)
        if minimum is not None and value < minimum:
            raise self._fail(f"kwarg {key!r} must be >= {minimum}, got {value}")
        return value

    def str(self, key: str, *, required: bool = True, nonempty: bool = True) -> Any:
        value = self.get(key)
        if value is None or (nonempty and value == ""):
            if required:
                raise self._fail(f"kwarg {key!r} is required (the official code would draw it)")
            return None
        if not isinstance(value, str):
            raise self._fail(f"kwarg {key!r} must be a string, got {value!r}")
        return value

    def choice(self, key: str, options: tuple[str, ...]) -> str:
        value = self.str(key)
        if value not in options:
            raise self._fail(f"kwarg {key!r} must be one of {list(options)}, got {value!r}")
        return value  # type: ignore[no-any-return]

    def str_list(self, key: str) -> list[str]:
        value = self.get(key)
        if not value:
            raise self._fail(f"kwarg {key!r} is required (the official code would draw it)")
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise self._fail(f"kwarg {key!r} must be a list of strings, got {value!r}")
        return list(value)

    def done(self) -> None:
        unknown = sorted(set(self._raw) - self._read)
        if unknown:
            raise self._fail(f"unexpected kwargs {unknown}")


def build(registry: Mapping[str, Builder], instruction_id: str, raw: Any) -> Check:
    """The check for one instruction, or `InstructionError` naming the id."""
    if not isinstance(instruction_id, str):
        raise InstructionError(f"instruction id must be a string, got {instruction_id!r}")
    builder = registry.get(instruction_id)
    if builder is None:
        raise InstructionError(f"unknown instruction id {instruction_id!r}")
    kwargs = Kwargs(instruction_id, raw)
    check = builder(kwargs)
    kwargs.done()
    return check
