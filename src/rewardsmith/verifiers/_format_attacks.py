"""Attacks on `think_format`: the format earned without reasoning. Each keeps the right final
answer, so it must not beat the honest right answer written without the format."""

from __future__ import annotations

from collections.abc import Iterator

from ..evaluate._attacks import Case, Target, attack

__all__: list[str] = []

FORMAT_TYPES = ("think_format",)
_INVISIBLE = ("\u200b", "\u3164", "\u034f", "\u2800", "\u2060")
"""Zero-width space, Hangul filler, combining grapheme joiner, braille blank, word joiner."""


def _answer(target: Target) -> str | None:
    if target.gold is not None:
        return f"The answer is \\boxed{{{target.gold}}}."
    return target.right


@attack("tag_stuffing", family="format", targets=FORMAT_TYPES)
def tag_stuffing(target: Target) -> Iterator[Case]:
    """Extra, nested and empty tags around the answer."""
    answer = _answer(target)
    if answer is None:
        return
    yield Case("<think></think>" * 5 + answer, "right", note="repeated empty blocks")
    yield Case(f"<think><think>{answer}</think></think>{answer}", "right", note="nested")
    yield Case(f"<think></think><think>{answer}</think>{answer}", "right", note="empty block first")


@attack("empty_think", family="format", targets=FORMAT_TYPES)
def empty_think(target: Target) -> Iterator[Case]:
    """An empty or punctuation-only reasoning block, then the answer."""
    answer = _answer(target)
    if answer is None:
        return
    yield Case(f"<think></think>\n{answer}", "right", note="empty")
    yield Case(f"<think> </think>\n{answer}", "right", note="blank")
    yield Case(f"<think>.</think>.\n{answer}", "right", note="a dot")


@attack("invisible_think", family="format", targets=FORMAT_TYPES)
def invisible_think(target: Target) -> Iterator[Case]:
    """Reasoning, and even the answer, made of invisible characters (issue 17, item 9)."""
    for char in _INVISIBLE:
        yield Case(f"<think>{char}</think>{char}", "right", note=f"U+{ord(char):04X} only")
    answer = _answer(target)
    if answer is not None:
        yield Case(f"<think>\u200b</think>\n{answer}", "right", note="U+200B reasoning")


@attack("answer_in_think", family="format", targets=FORMAT_TYPES)
def answer_in_think(target: Target) -> Iterator[Case]:
    """The answer inside `<think>` only, nothing (or only markup) committed after it."""
    answer = _answer(target)
    if answer is not None:
        yield Case(f"<think>{answer}</think>", "right", note="nothing after the block")
        yield Case(f"<think>{answer}", "right", note="never closed")
        for markup in ("<answer></answer>", "&nbsp;", "<!-- x -->"):
            yield Case(f"<think>{answer}</think>{markup}", "right", note=f"only {markup} after")
