"""Text helpers shared by the verifiable rewards."""

from __future__ import annotations

import re

__all__ = ["THINK_CLOSE", "THINK_OPEN", "answer_part", "tagged_answer"]

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


def answer_part(text: str) -> str:
    """The part of a completion that commits to an answer: what follows the reasoning.

    Reasoning inside ``<think>...</think>`` never counts as the answer. A completion whose
    ``<think>`` is never closed has committed to nothing, so the answer part is empty.
    """
    if THINK_CLOSE in text:
        return text.rsplit(THINK_CLOSE, 1)[1]
    if THINK_OPEN in text:
        return ""
    return _THINK_BLOCK.sub("", text)


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def tagged_answer(text: str) -> str:
    """What an ``<answer>...</answer>`` format commits to: the content of the last answer
    block of the answer part, else the whole answer part (R1-style VLM and GUI rewards)."""
    answer = answer_part(text)
    blocks = _ANSWER_TAG.findall(answer)
    return blocks[-1] if blocks else answer
