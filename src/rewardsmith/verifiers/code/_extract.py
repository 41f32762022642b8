"""The program in a completion: a markdown code block, or the text as is.

``auto`` (default): the last fenced block tagged ``python``/``py``/``python3``; failing that,
the last untagged fenced block; failing that (no complete fenced block at all: "```" or "~~~"
in a comment does not make one), the whole text. ``last`` and ``first`` require a Python (or
untagged) block and take the last or first; ``all`` joins every such block in order; ``raw``
uses the completion unchanged. Blocks tagged with another language (```` ```bash ````,
```` ```text ````) are never run. A block closes at a fence at least as long as its opening
one (CommonMark). Fence lines may end in CRLF; a fence indented under a list item has its
indentation removed from the block's lines, when every line has it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Literal

__all__ = ["Extract", "extract_code"]

Extract = Literal["auto", "last", "first", "all", "raw"]

_OPENING = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)")
_CLOSING = re.compile(r"[ \t]*(`+|~+)[ \t]*\r?")
_PYTHON = frozenset({"python", "py", "python3", "py3"})


def _fenced(text: str) -> Iterator[tuple[str, str]]:
    """Each fenced block of `text` as ``(language, body)``, left to right, in one pass over
    its lines (a regex re-tried from every unclosed fence took quadratic time).

    A block opens on a line (not the last) that starts with three or more backticks or
    tildes, its language after them, and closes at the next line that is a fence of the same
    character alone, at least as long (CommonMark). An opening fence no line closes is read
    shorter, one character at a time down to three (the rest of the line then names no
    language), as the regex this replaces read it; an opening line that still finds no
    closing line opens nothing. The body loses the opening fence's indentation (`_dedent`).
    """
    lines = text.split("\n")
    starts = [0]
    closing = {"`": _Closings(), "~": _Closings()}
    for number, line in enumerate(lines):
        starts.append(starts[-1] + len(line) + 1)
        if bare := _CLOSING.fullmatch(line):
            closing[bare[1][0]].add(number, len(bare[1]))
    for closings in closing.values():
        closings.index()
    number = 0
    while number < len(lines) - 1:
        opening = _OPENING.match(lines[number])
        found = opening and closing[opening[1][0]].after(number, len(opening[1]))
        if not found:
            number += 1
            continue
        end, size = found
        language = opening[2] if size == len(opening[1]) else ""
        body = text[starts[number + 1] : starts[end]]
        yield language, _dedent(body, lines[number][: opening.start(1)])
        number = end + 1


class _Closings:
    """The lines that are a fence of one character alone, for `_fenced`: which one closes a
    fence, in time linear in the text."""

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.sizes: list[int] = []
        self.greater: list[int] = []
        self.longest: list[int] = [0]

    def add(self, line: int, size: int) -> None:
        self.lines.append(line)
        self.sizes.append(size)

    def index(self) -> None:
        """Each entry's next longer one (`greater`) and the longest from it on (`longest`)."""
        count = len(self.sizes)
        self.greater, self.longest = [count] * count, [0] * (count + 1)
        waiting: list[int] = []
        for i, size in enumerate(self.sizes):
            while waiting and self.sizes[waiting[-1]] < size:
                self.greater[waiting.pop()] = i
            waiting.append(i)
        for i in range(count - 1, -1, -1):
            self.longest[i] = max(self.sizes[i], self.longest[i + 1])

    def after(self, line: int, size: int) -> tuple[int, int] | None:
        """(closing line, fence size) for a fence of `size` opened on `line`: the first later
        entry at least that long, else the fence read as long as the longest later entry (at
        least three). Each step to a longer entry is one character of the opening fence."""
        i = bisect.bisect_right(self.lines, line)
        size = min(size, self.longest[i])
        if size < 3:
            return None
        while self.sizes[i] < size:
            i = self.greater[i]
        return self.lines[i], size


def _dedent(body: str, indent: str) -> str:
    """`body` without `indent`, the opening fence's, when every line that is not blank starts
    with it (a block under a list item, as Markdown renders it); else as written (a program
    whose first lines are not indented would lose its own indentation)."""
    lines = body.split("\n")
    if not indent or any(line.strip() and not line.startswith(indent) for line in lines):
        return body
    return "\n".join(
        line[len(indent) :] if line.startswith(indent) else line.lstrip(" \t") for line in lines
    )


def _blocks(blocks: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """(python-tagged blocks, untagged blocks), each in order."""
    tagged, untagged = [], []
    for lang, body in blocks:
        lang = lang.lower()
        if lang in _PYTHON:
            tagged.append(body)
        elif not lang:
            untagged.append(body)
    return tagged, untagged


def extract_code(text: str, how: Extract) -> str | None:
    """The program to run, or None when `how` asks for a block and there is none."""
    if how == "raw":
        return text
    blocks = list(_fenced(text))
    tagged, untagged = _blocks(blocks)
    if how == "auto":
        if tagged:
            return tagged[-1]
        if untagged:
            return untagged[-1]
        return None if blocks else text
    if how == "all":
        every = [body for lang, body in blocks if _is_code(lang)]
        return "\n".join(every) if every else None
    candidates = tagged or untagged
    if not candidates:
        return None
    return candidates[-1] if how == "last" else candidates[0]


def _is_code(lang: str) -> bool:
    return not lang or lang.lower() in _PYTHON
