"""Attacks on instruction following (`ifeval`, `ifbench`, `constraints`): replies that do
not attempt the task but satisfy the checkers, which only test form (issue 17, items 7-8)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ...evaluate._attacks import Case, Target, attack

__all__: list[str] = []

INSTRUCTION_TYPES = ("ifeval", "ifbench", "constraints")


def _keywords(reference: Any) -> list[str]:
    """Words the instructions ask for (`keywords`, `keyword`, `first_word`...)."""
    found: list[str] = []
    kwargs = reference.get("kwargs") if isinstance(reference, dict) else None
    for item in kwargs if isinstance(kwargs, list) else []:
        for key in ("keywords", "keyword", "first_word", "end_phrase"):
            value = (item or {}).get(key)
            found += value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return [w for w in found if isinstance(w, str) and w.strip()]


@attack("contentless_reply", family="instructions", targets=INSTRUCTION_TYPES)
def contentless_reply(target: Target) -> Iterator[Case]:
    """Empty, `OK`, invisible, or the prompt's keywords alone: no attempt at the task."""
    yield Case("", note="empty")
    yield Case("OK", note="OK")
    yield Case("\u200b", note="U+200B")
    keywords = _keywords(target.reference)
    if keywords:
        yield Case(" ".join(keywords), note="the instruction's keywords only")


def _has_negation(node: Any, depth: int = 0) -> bool:
    if depth > 32 or not isinstance(node, dict | list):
        return False
    if isinstance(node, list):
        return any(_has_negation(n, depth + 1) for n in node)
    if "not" in node or ("if" in node and "else" not in node):
        return True
    return any(_has_negation(v, depth + 1) for v in node.values())


@attack("empty_under_negation", family="instructions", targets=("constraints",))
def empty_under_negation(target: Target) -> Iterator[Case]:
    """A blank answer to an expression with `not` (or `if` without `else`): "not fewer than
    50 words" and "not containing a comma" hold vacuously on nothing."""
    expression = (
        target.reference if target.reference is not None else target.metadata.get("constraints")
    )
    if isinstance(expression, str):
        try:
            expression = json.loads(expression)
        except ValueError:
            return
    if _has_negation(expression):
        yield Case("", note="empty")
        yield Case("   \n", note="whitespace")
