"""Attacks on `length` and `repetition`: an overlong or looping answer that pays no penalty,
measured against the same degenerate text written plainly (issue 17, items 10 and 11)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..evaluate._attacks import Case, Target, attack

__all__: list[str] = []

_MAX_WORDS = 20_000
_LOOPS = 600
_WORD = re.compile(r"[A-Za-z]{3,}")


def _overlong_words(target: Target) -> int:
    """Twice the longest `max_length` of the spec's length components (4,096 when unknown)."""
    lengths = [int(p.get("max_length") or 0) for p in target.params.get("length", [])]
    limit = max(lengths, default=0)
    return min(2 * (limit or 4096), _MAX_WORDS)


def _filler(target: Target, count: int) -> list[str]:
    words = _WORD.findall(target.prompt) or ["answer", "because", "therefore"]
    return [words[i % len(words)] for i in range(count)]


@attack("word_joined_padding", family="length", targets=("length",), rows=100)
def word_joined_padding(target: Target) -> Iterator[Case]:
    """Overlong filler whose words are joined by U+200B or `_`, or written in CJK, so a word
    count sees one word, or blank padding as long as 16 characters a word (no words at all);
    the baseline is the same filler with spaces."""
    head = target.wrong or ""
    words = _filler(target, _overlong_words(target))
    plain = f"{head}\n{' '.join(words)}"
    yield Case(f"{head}\n{chr(0x200B).join(words)}", baseline=plain, note="U+200B joined")
    yield Case(f"{head}\n{'_'.join(words)}", baseline=plain, note="underscore joined")
    yield Case(f"{head}\n{'的' * len(words)}", baseline=plain, note="CJK characters")
    for blank in (" ", "\u3164"):
        padding = blank * 16 * len(words)
        yield Case(f"{head}\n{padding}", baseline=plain, note=f"U+{ord(blank):04X} padding")


@attack("dodged_repetition", family="repetition", targets=("repetition",), rows=100)
def dodged_repetition(target: Target) -> Iterator[Case]:
    """A loop with a counter in each repeat, or without spaces; the baseline is the plain loop."""
    head = target.wrong or ""
    loop = " ".join(["the answer is"] * _LOOPS)
    counted = " ".join(f"the answer is {i}" for i in range(_LOOPS))
    yield Case(f"{head}\n{counted}", baseline=f"{head}\n{loop}", note="counter in each repeat")
    spaced, joined = "hmm " * _LOOPS * 3, "hmm" * _LOOPS * 3
    yield Case(f"{head}\n{joined}", baseline=f"{head}\n{spaced}", note="no spaces")
