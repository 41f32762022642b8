"""The engine-wide attack: failure as an escape (issue 17, item 1).

A completion that makes a component fail (`timeout`, `error`, `invalid`) gets a null reward
unless the spec sets `on_error`; a null is left out of group statistics, so under group
advantages it scores better than the honest wrong answer. These texts are built to trip the
limits of the reward types: deep nesting, one huge line, a huge number, deep LaTeX.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..evaluate._attacks import Case, Target, attack

__all__: list[str] = []

PATHOLOGICAL = (
    ("[" * 1000 + "]" * 1000, "brackets nested 1,000 deep"),
    ("[" * 45_000, "45,000 '[' on one line"),
    ("\\boxed{" + "{" * 3000 + "1" + "}" * 3000 + "}", "a box nested 3,000 deep"),
    ("\\boxed{" + "9" * 50_000 + "}", "a 50,000-digit number"),
    ("\\boxed{" + "\\frac{1}{" * 400 + "2" + "}" * 400 + "}", "fractions nested 400 deep"),
    ("word " * 60_000, "60,000 words"),
)


@attack("failure_escape", family="failure", targets=("*",), rows=20, by_failure=True)
def failure_escape(target: Target) -> Iterator[Case]:
    """Texts that make a reward fail; a failure must not score above the honest wrong answer."""
    for text, note in PATHOLOGICAL:
        yield Case(text, note=note)
