"""Strict and loose evaluation of instruction checks, as IFEval's `evaluation_lib` does it.

Strict: a check passes when the response is not blank and the check holds. Loose: it passes
when it holds on any of eight variants of the response: as is, without its first line,
without its last line, without both, and each of those with every ``*`` removed. The
variants are built once per response, and each instruction's check is built once (with the
same kwargs) and tried on all of them; nothing is re-drawn per variant.
"""

from __future__ import annotations

from collections.abc import Iterable
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

    def __init__(self, response: str, mode: Mode, training: bool = False) -> None:
        texts = [response] if mode == "strict" else loose_variants(response)
        # A blank variant never passes (`if r.strip() and check(r)` upstream).
        self._texts = [Text(t, undecided_language_passes=not training) for t in texts if t.strip()]
        self.errors: list[str] = []

    def holds(self, check: Check, label: str = "") -> bool | None:
        """True when `check` holds on the response (strict) or on any variant (loose); None
        when it raised where it did not hold (the official code would crash the run).

        A checker that raised is never read as followed or not followed: the error is
        recorded in `errors`, and the reward reports it as `error`.
        """
        raised = False
        for text in self._texts:
            try:
                if check(text):
                    return True
            except Exception as exc:  # a checker bug must never become a verdict
                raised = True
                self.errors.append(f"{label}: {type(exc).__name__}: {exc}")
        return None if raised else False

    def all(self, checks: Iterable[tuple[str, Check]]) -> list[bool | None]:
        return [self.holds(check, label) for label, check in checks]
