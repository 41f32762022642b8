"""The knobs of the `math` reward, validated once when the spec is built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from ..._exceptions import ConfigError

__all__ = ["Fallback", "MathConfig", "MultipleAnswers"]

Fallback = Literal["last_number", "none"]
MultipleAnswers = Literal["reject", "last"]


@dataclass(frozen=True)
class MathConfig:
    """How strictly answers are extracted and compared."""

    fallback: Fallback = "last_number"
    """When no marked answer exists (no box, no "answer is", no "A:" line): `last_number` takes
    the last number of the final line (never a line that ends in "?"), `none` gives no answer."""
    multiple_answers: MultipleAnswers = "reject"
    """Several different final answers (two boxes that disagree): `reject` scores 0 (hedging),
    `last` keeps the last one."""
    symbolic: bool = True
    """Allow the sympy comparison for answers the exact fast path cannot decide."""

    def __post_init__(self) -> None:
        for name, allowed in (
            ("fallback", get_args(Fallback)),
            ("multiple_answers", get_args(MultipleAnswers)),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise ConfigError(f"math.{name}: {value!r} is not one of {', '.join(allowed)}")
        if not isinstance(self.symbolic, bool):
            raise ConfigError(f"math.symbolic: expected true or false, got {self.symbolic!r}")
