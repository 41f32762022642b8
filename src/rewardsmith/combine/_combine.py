"""Combination of component scores into the total reward of one sample.

The order of decisions is fixed, and it is what keeps failures honest:

1. A component that failed (`timeout`, `error`, `invalid`) decides the total: the spec's
   `on_error` value (None by default, so the reward is null), with the failing status.
2. Components that do not apply, and components whose gate (`only_if`) did not pass,
   do not count.
3. The remaining `(weight, score)` pairs go to the combiner named by `combine:`.
   Nothing left to count means the sample is `not_applicable`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from ..models import FAILURE_STATUSES, Score, Status
from ..spec import CombineMode, RewardSpec

__all__ = ["COMBINERS", "combine"]

Weighted = Sequence[tuple[float, float]]
"""(weight, score) pairs of the components that count, in spec order."""


def weighted_sum(items: Weighted) -> float:
    """Sum of weight * score."""
    return math.fsum(w * s for w, s in items)


def minimum(items: Weighted) -> float:
    """The worst weighted score: every component must be good for the total to be."""
    return min(w * s for w, s in items)


def product(items: Weighted) -> float:
    """Product of weighted scores: multiplicative penalties (a 0 anywhere zeroes the total)."""
    return math.prod(w * s for w, s in items)


def first_pass(items: Weighted) -> float:
    """A cascade: the weighted score of the first component that passes (score > 0).

    When none passes, the last counted component has the final word.
    """
    for w, s in items:
        if s > 0:
            return w * s
    w, s = items[-1]
    return w * s


COMBINERS: dict[CombineMode, Callable[[Weighted], float]] = {
    "weighted_sum": weighted_sum,
    "min": minimum,
    "product": product,
    "first_pass": first_pass,
}


def combine(spec: RewardSpec, scores: Mapping[str, Score]) -> tuple[float | None, Status]:
    """The total reward and status of one sample from its component scores."""
    for name in spec.rewards:
        status = scores[name].status
        if status in FAILURE_STATUSES:
            return spec.on_error, status
    counted = []
    for name, component in spec.rewards.items():
        score = scores[name]
        if score.status != "ok" or score.score is None:
            continue
        if component.only_if is not None and not scores[component.only_if].passed:
            continue
        counted.append((component.weight, score.score))
    if not counted:
        return None, "not_applicable"
    total = COMBINERS[spec.combine](counted)
    if not math.isfinite(total):
        return spec.on_error, "invalid"
    return total, "ok"
