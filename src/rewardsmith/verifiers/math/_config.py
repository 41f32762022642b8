"""The knobs of the `math` reward, validated once when the spec is built.

Every default is the safe choice: the one a policy cannot exploit. Loosen one only when the
dataset's golds are written that way (e.g. `fractions: any` for golds left unreduced).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from ..._exceptions import ConfigError

__all__ = ["Fallback", "Fractions", "MathConfig", "MultipleAnswers", "Powers", "Radicals", "Units"]

Fallback = Literal["last_number", "none"]
MultipleAnswers = Literal["reject", "last"]
Fractions = Literal["reduced", "any"]
Powers = Literal["evaluated", "any"]
Radicals = Literal["simplified", "any"]
Units = Literal["compare", "ignore"]


@dataclass(frozen=True)
class MathConfig:
    """How strictly answers are extracted and compared."""

    fallback: Fallback = "last_number"
    """When no answer is marked (no box, "answer is", `Answer:`, `####`, `A:` line):
    `last_number` reads the final line (the value after its last "is"/"=", else its only math
    span or number, else its last number; never a line ending in "?"), `none` gives no answer."""
    multiple_answers: MultipleAnswers = "reject"
    """Several different committed answers (two boxes that disagree, a box and a different
    "the answer is"): `reject` scores 0 (a hedge) unless the gold has that many parts and they
    match it as a set; `last` keeps the last one."""
    symbolic: bool = True
    """Compare expressions by value (the numeric screen); off, only equal text and equal
    numbers match."""
    finished_form: bool = True
    """An answer must be as evaluated as the gold: `\\binom{31}{28}`, `5!`, `16-3-4` or a
    restated expression from the prompt do not answer 4495, 120 or 9."""
    fractions: Fractions = "reduced"
    """`reduced`: `\\frac{6}{4}` is not finished when the gold is `\\frac{3}{2}`; `any`
    accepts it."""
    powers: Powers = "evaluated"
    """`evaluated`: `2^{10}` is not finished when the gold is 1024; `any` accepts it."""
    radicals: Radicals = "simplified"
    """`simplified`: `\\sqrt{8}` is not finished when the gold is `2\\sqrt{2}`; `any` accepts it."""
    units: Units = "compare"
    """`compare`: units on both sides are converted (`500 cents` = `\\$5`) or differ (`5 cm` vs
    `5 m`); a unit on one side only is ignored. `ignore`: units are never read."""

    def __post_init__(self) -> None:
        for name, allowed in (
            ("fallback", get_args(Fallback)),
            ("multiple_answers", get_args(MultipleAnswers)),
            ("fractions", get_args(Fractions)),
            ("powers", get_args(Powers)),
            ("radicals", get_args(Radicals)),
            ("units", get_args(Units)),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise ConfigError(f"math.{name}: {value!r} is not one of {', '.join(allowed)}")
        for name in ("symbolic", "finished_form"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"math.{name}: expected true or false, got {getattr(self, name)!r}"
                )
