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

from ._base import Choice, Counted
from ._stats import centred, mean

__all__ = ["Uncertainty", "ensemble_mean"]


def ensemble_mean(items: Sequence[tuple[float, float]]) -> float:
    """Mean of the weighted scores (exactly the common value when all are equal)."""
    return mean([w * s for w, s in items])


class Uncertainty(Choice):
    """Uncertainty-weighted ensemble (UWO): ``mean(x) - lambda * var(x)``, ``x = w * s``.

    Coste et al. 2024, eq. for UWO, with the population variance (1/k over k members). It is
    never above the mean, and equals it exactly when the members agree.
    """

    type: Literal["uncertainty"] = "uncertainty"
    lambda_: float = Field(default=1.0, alias="lambda", ge=0)

    def total(self, items: Sequence[Counted]) -> float:
        """The combined reward of the counted components."""
        members = [c.weight * c.score for c in items]
        variance = math.fsum(d * d for d in centred(members)) / len(members)
        return mean(members) - self.lambda_ * variance
