"""Trainer data as the data contract wants it: plain Python values, readable chat content.

Absolute imports only: verl loads `verl.py` by file path (as a module outside any package),
and that module imports this one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["normalise_chat", "plain"]


def plain(value: Any) -> Any:
    """Trainer data (numpy arrays and scalars, OmegaConf containers) as plain Python data."""
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return plain(tolist())
    if isinstance(value, Sequence):  # e.g. OmegaConf ListConfig
        return [plain(v) for v in value]
    return value


_READABLE_PARTS = ("text", "image_url")
"""Content block types a reward can read (verifiers the text, judges the images too)."""


def normalise_chat(value: Any) -> Any:
    """A prompt or completion as the data contract wants it.

    Text stays text. A conversation keeps its messages; multimodal content blocks keep their
    text and ``image_url`` parts (judges receive the images) and drop the others, such as the
    ``{"type": "image"}`` placeholders of vision trainers, whose pixels travel in another
    column and which no reward can read.
    """
    if not isinstance(value, list):
        return value
    messages = []
    for message in value:
        if isinstance(message, Mapping) and isinstance(message.get("content"), list):
            kept = [
                block
                for block in message["content"]
                if isinstance(block, Mapping) and block.get("type", "text") in _READABLE_PARTS
            ]
            message = {**message, "content": [{"type": "text", **b} for b in kept]}
        messages.append(message)
    return messages
