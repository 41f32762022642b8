"""Attacks on the text rewards (`f1`, `exact_match`, `choice`): hedges, several candidates at
once, which a policy finds as soon as a partial match pays more than a committed guess."""

from __future__ import annotations

from collections.abc import Iterator

from ..evaluate._attacks import Case, Target, attack

__all__: list[str] = []

_DISTRACTOR = "none of the above"
"""A wrong candidate sharing no token with a typical gold answer."""


@attack("f1_hedge", family="text", targets=("f1", "exact_match"))
def f1_hedge(target: Target) -> Iterator[Case]:
    """The gold among other candidates: k candidates earn F1 2/(k+1), a guess only 1/k."""
    if target.gold is None or _DISTRACTOR in target.gold.lower():
        return
    yield Case(f"{target.gold} or {_DISTRACTOR}", note="two candidates")
    yield Case(f"Either {_DISTRACTOR}, maybe, or {target.gold}", note="gold last")


@attack("choice_hedge", family="text", targets=("choice",))
def choice_hedge(target: Target) -> Iterator[Case]:
    """Several letters committed at once, the gold first or last."""
    gold = (target.gold or "").strip().strip("()").upper()
    if len(gold) != 1 or not gold.isalpha():
        return
    other = "B" if gold == "A" else "A"
    yield Case(f"Answer: {gold}, {other}", note="comma")
    yield Case(f"Answer: {gold}; {other}", note="semicolon")
    yield Case(f"\\boxed{{{gold}, {other}}}", note="one box")
    yield Case(f"The answer is ({gold}), also ({other})", note="also")
    yield Case(f"The answer is ({other})\nAnswer: {gold}", note="two commitments")
