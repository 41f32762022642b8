"""Strict and loose evaluation of instruction checks, as IFEval's `evaluation_lib` does it.

Strict: a check passes when the response is not blank and the check holds. Loose: it passes
when it holds on any of eight variants of the response: as is, without its first line,
without its last line, without both, and each of those with every ``*`` removed. The
variants are built once per response, and each instruction's check is built once (with the
same kwargs) and tried on all of them; nothing is re-drawn per variant.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from ._base import Check, Text

__all__ = ["Evaluator", "loose_variants"]

Mode = Literal["strict", "loose"]


def loose_variants(response: str) -> list[str]:
    """The official eight loose variants, in the official order, duplicates dropped."""
    lines = response.split("\n")
    first = "\n".join(lines[1:]).strip()
    last = "\n".join(lines[:-1]).strip()
    both = "\n".join(lines[1:-1]).strip()
    variants = [
        response,
        response.replace("*", ""),
        first,
        last,
        both,
        first.replace("*", ""),
        last.replace("*", ""),
        both.replace("*", ""),
    ]
    return list(dict.fromkeys(variants))


class Evaluator:
    """Runs checks on one response, sharing per-text work across checks and variants."""

    def __init__(self, response: str, mode: Mode) -> None:
        texts = [response] if mode == "strict" else loose_variants(response)
        # A blank variant never passes (`if r.strip() and check(r)` upstream).
        self._texts = [Text(t) for t in texts if t.strip()]
        self.errors: list[str] = []

    def holds(self, check: Check, label: str = "") -> bool:
        """True when `check` holds on the response (strict) or on any variant (loose).

        A check raising on a text counts as not followed there (the official code would
        crash the whole run); the error is recorded in `errors`.
        """
        for text in self._texts:
            try:
                if check(text):
                    return True
            except Exception as exc:  # a checker bug must never become a pass
                self.errors.append(f"{label}: {type(exc).__name__}: {exc}")
        return False

    def all(self, checks: Iterable[tuple[str, Check]]) -> list[bool]:
        return [self.holds(check, label) for label, check in checks]


def follow_list(response: str, checks: Sequence[tuple[str, Check]], mode: Mode) -> list[bool]:
    """Per-instruction verdicts, same order as `checks` (repeated ids kept)."""
    return Evaluator(response, mode).all(checks)
