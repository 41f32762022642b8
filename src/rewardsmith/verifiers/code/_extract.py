"""The program in a completion: a markdown code block, or the text as is.

``auto`` (default): the last fenced block tagged ``python``/``py``/``python3``; failing that,
the last untagged fenced block; failing that (no fences at all), the whole text. ``last`` and
``first`` require a Python (or untagged) block and take the last or first; ``all`` joins
every such block in order; ``raw`` uses the completion unchanged. Blocks tagged with another
language (```` ```bash ````, ```` ```text ````) are never run.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Extract", "extract_code"]

Extract = Literal["auto", "last", "first", "all", "raw"]

_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+#.-]*)[^\n]*\n"
    r"(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_PYTHON = frozenset({"python", "py", "python3", "py3"})


def _blocks(text: str) -> tuple[list[str], list[str]]:
    """(python-tagged blocks, untagged blocks), each in order."""
    tagged, untagged = [], []
    for match in _FENCE.finditer(text):
        lang = match.group("lang").lower()
        if lang in _PYTHON:
            tagged.append(match.group("body"))
        elif not lang:
            untagged.append(match.group("body"))
    return tagged, untagged


def extract_code(text: str, how: Extract) -> str | None:
    """The program to run, or None when `how` asks for a block and there is none."""
    if how == "raw":
        return text
    tagged, untagged = _blocks(text)
    if how == "auto":
        if tagged:
            return tagged[-1]
        if untagged:
            return untagged[-1]
        return None if "```" in text or "~~~" in text else text
    if how == "all":
        every = [m.group("body") for m in _FENCE.finditer(text) if _is_code(m.group("lang"))]
        return "\n".join(every) if every else None
    candidates = tagged or untagged
    if not candidates:
        return None
    return candidates[-1] if how == "last" else candidates[0]


def _is_code(lang: str) -> bool:
    return not lang or lang.lower() in _PYTHON
