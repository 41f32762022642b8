"""The parts of a completion a reward reads: the answer after the thinking, tagged blocks,
the generated turns.

Every scan here is linear in the text: a completion is policy-written, and a lazy
``open(.*?)close`` regex rescans to the end of the text from every unclosed opening tag
(quadratic: a 100 kB answer of repeated tags would run for seconds).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from ..models import Sample

__all__ = [
    "THINK_CLOSE",
    "THINK_OPEN",
    "Turns",
    "answer_part",
    "generated_text",
    "tag_blocks",
    "tagged_answer",
]

Turns = Literal["all", "last"]
"""Which assistant turns of a chat completion a length-like reward measures."""

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def answer_part(text: str) -> str:
    """The part of a completion that commits to an answer: what follows the reasoning.

    Reasoning inside ``<think>...</think>`` never counts as the answer. A completion whose
    ``<think>`` is never closed has committed to nothing, so the answer part is empty.
    """
    if THINK_CLOSE in text:
        return text.rsplit(THINK_CLOSE, 1)[1]
    if THINK_OPEN in text:
        return ""
    return text


def tag_blocks(text: str, open_tag: str, close_tag: str) -> Iterator[tuple[int, int]]:
    """The ``open_tag ... close_tag`` blocks of `text`, left to right, as ``(start, end)``
    spans that include both tags: what ``re.finditer(open(.*?)close, DOTALL)`` finds, in
    one pass. A block runs to the first closing tag after its opening tag; an opening tag
    that is never closed ends the search (no later one can be closed either)."""
    position = 0
    while True:
        start = text.find(open_tag, position)
        if start < 0:
            return
        close = text.find(close_tag, start + len(open_tag))
        if close < 0:
            return
        position = close + len(close_tag)
        yield start, position


def generated_text(sample: Sample, turns: Turns = "all") -> str:
    """What the policy generated: with ``all``, the text of every assistant turn of a chat
    completion, joined by newlines (earlier turns cost tokens too, and are not free to pad);
    with ``last``, the last one (`Sample.text`). A text completion is one turn."""
    if turns == "last" or isinstance(sample.completion, str):
        return sample.text
    said = [m.text for m in sample.completion if m.role == "assistant"]
    return "\n".join(said) if said else sample.text


def tagged_answer(text: str) -> str:
    """What an ``<answer>...</answer>`` format commits to: the content of the last answer
    block of the answer part, else the whole answer part (R1-style VLM and GUI rewards)."""
    answer = answer_part(text)
    blocks = list(tag_blocks(answer, "<answer>", "</answer>"))
    if not blocks:
        return answer
    start, end = blocks[-1]
    return answer[start + len("<answer>") : end - len("</answer>")]
