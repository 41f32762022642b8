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

from .._words import as_read
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


def _texts(variants: list[str], training: bool) -> list[Text]:
    # A blank variant never passes (`if r.strip() and check(r)` upstream).
    return [Text(t, undecided_language_passes=not training) for t in variants if t.strip()]


class Evaluator:
    """Runs checks on one response, sharing per-text work across checks and variants.

    With `training`, a check must also hold on the response as a reader sees it (`as_read`:
    invisible characters removed, lookalikes folded), so "no commas" is not followed with
    U+201A; the checks whose verdicts differ on the two are listed in `lookalikes`.
    """

    def __init__(self, response: str, mode: Mode, training: bool = False) -> None:
        variants = [response] if mode == "strict" else loose_variants(response)
        self._texts = _texts(variants, training)
        seen = [as_read(v) for v in variants] if training else variants
        self._seen = self._texts if seen == variants else _texts(seen, training)
        self.errors: list[str] = []
        self.lookalikes: list[str] = []

    def _holds_on(self, texts: list[Text], check: Check, label: str) -> bool | None:
        raised = False
        for text in texts:
            try:
                if check(text):
                    return True
            except Exception as exc:  # a checker bug must never become a verdict
                raised = True
                self.errors.append(f"{label}: {type(exc).__name__}: {exc}")
        return None if raised else False

    def holds(self, check: Check, label: str = "") -> bool | None:
        """True when `check` holds on the response (strict) or on any variant (loose), and
        in training on its folded form too; None when it raised where it did not hold (the
        official code would crash the run).

        A checker that raised is never read as followed or not followed: the error is
        recorded in `errors`, and the reward reports it.
        """
        verdict = self._holds_on(self._texts, check, label)
        if self._seen is self._texts or verdict is None:
            return verdict
        seen = self._holds_on(self._seen, check, label)
        if seen is not None and seen != verdict:
            self.lookalikes.append(label)
        return None if seen is None else verdict and seen

    def all(self, checks: Iterable[tuple[str, Check]]) -> list[bool | None]:
        return [self.holds(check, label) for label, check in checks]
