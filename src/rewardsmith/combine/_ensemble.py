"""Ensembles of reward sources: mean (`average`), worst case (`min`), uncertainty-weighted.

Coste et al. 2024, "Reward Model Ensembles Help Mitigate Overoptimization" (ICLR): with the
components as the ensemble's members, the mean, the worst case (WCO, `combine: min`) and the
uncertainty-weighted optimisation (UWO, mean minus lambda times the members' variance) all
penalise what the members disagree on, which is where a policy overoptimises one of them.
Members are the weighted scores ``w * s``, as for every other combiner.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from ._base import Choice, Counted, Finite
from ._bounds import Bounds, sum_floor
from ._stats import centred, exact_sum, mean

__all__ = ["Uncertainty", "ensemble_mean"]


def ensemble_mean(items: Sequence[Counted]) -> float:
    """Mean of the weighted scores (exactly the common value when all are equal)."""
    return mean([c.weight * c.score for c in items])


class Uncertainty(Choice):
    """Uncertainty-weighted ensemble (UWO): ``mean(x) - lambda * var(x)``, ``x = w * s``.

    Coste et al. 2024, eq. for UWO, with the population variance (1/k over k members). UWO is
    defined over an ensemble: members that estimate the same reward, whose disagreement is
    uncertainty. `members` names them (default: every component); the other components (a
    length penalty, a format check) are added to the UWO value as a weighted sum, outside the
    variance. The UWO value is never above the members' mean, and equals it when they agree.

    The domain: ``d/dx_i = (1 - 2 * lambda * (x_i - mean)) / k`` is negative once a member is
    more than ``1 / (2 * lambda)`` above the mean, so a large lambda pays a policy for
    *lowering* its best member (a wrong answer beating a right one). Over k members in a range
    of width W, a member is at most ``(k - 1) / k * W`` above the mean, so the spec is refused
    unless ``lambda <= k / (2 * (k - 1) * W)``: raising any member never lowers the total.
    """

    type: Literal["uncertainty"] = "uncertainty"
    lambda_: Finite = Field(default=1.0, alias="lambda", ge=0)
    members: tuple[str, ...] | None = None

    def _member(self, name: str) -> bool:
        return self.members is None or name in self.members

    def total(self, items: Sequence[Counted]) -> float:
        """The combined reward of the counted components."""
        rest = exact_sum(c.weight * c.score for c in items if not self._member(c.name))
        values = [c.weight * c.score for c in items if self._member(c.name)]
        if not values:
            return rest
        variance = exact_sum(d * d for d in centred(values)) / len(values)
        return mean(values) - self.lambda_ * variance + rest

    def lowest(self, members: Sequence[tuple[str, Bounds]]) -> float:
        """A total no sample scores below: the members' lowest minus the largest variance
        penalty their range allows, plus the other components' lowest sum."""
        inside = [b for n, b in members if self._member(n)]
        rest = sum_floor([b for n, b in members if not self._member(n)])
        if not inside:
            return rest
        low, high = min(b.low for b in inside), max(b.high for b in inside)
        return min(0.0, low - self.lambda_ * (high - low) ** 2 / 4) + rest

    def problem(self, members: Sequence[tuple[str, Bounds]]) -> str | None:
        """Why this lambda could make a higher member score lower the total, or None."""
        names = [n for n, _ in members]
        unknown = [n for n in self.members or () if n not in names]
        if unknown:
            return f"combine.members: {unknown[0]!r} is not a component"
        inside = [(n, b) for n, b in members if self._member(n)]
        k = len(inside)
        if k < 2 or self.lambda_ == 0:
            return None
        unbounded = next((n for n, b in inside if not b.known), None)
        if unbounded is not None:
            return (
                f"combine: uncertainty needs the range of every member to check lambda, and "
                f"rewards.{unbounded} declares none: clip it (transform: {{type: clip, min: "
                "..., max: ...}) or squash it (transform: tanh)"
            )
        width = max(b.high for _, b in inside) - min(b.low for _, b in inside)
        limit = k / (2 * (k - 1) * width) if width > 0 else math.inf
        if self.lambda_ > limit:
            return (
                f"combine: uncertainty lambda {self.lambda_:g} is above {limit:g}: with "
                f"{k} members in a range of width {width:g}, raising one member's score could "
                "lower the total (a wrong answer would beat a right one). Lower lambda, or "
                "list the ensemble in `members:` (the other components then add outside the "
                "variance)"
            )
        return None
