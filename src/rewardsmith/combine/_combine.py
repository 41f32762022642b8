"""Combination of component scores into the total reward of one sample.

The order of decisions is fixed, and it is what keeps failures honest:

1. A component that failed (`timeout`, `error`, `invalid`) decides the total: the spec's
   `on_error` value (None by default, so the reward is null), with the failing status.
2. Components that do not apply, and components whose gate (`only_if`) did not pass,
   do not count.
3. A counted component marked `veto: true` that did not pass (score <= 0: a failed hard rule)
   zeroes the total: reward 0.0, status `ok`.
4. The remaining components go to the combiner named by `combine:`.
   Nothing left to count means the sample is `not_applicable`.

Gates and vetoes judge a component on its own score, before any `transform:` (the
`detail.raw_score` of a shaped score): shaping changes magnitudes, not whether a rule passed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..models import FAILURE_STATUSES, Score, Status
from ._base import Choice, Counted, withdrawn
from ._ensemble import ensemble_mean
from ._renorm import ReNorm

if TYPE_CHECKING:
    from ..spec import RewardSpec

__all__ = ["COMBINERS", "Combined", "Simple", "combine", "combine_scores"]

Weighted = Sequence[tuple[float, float]]
"""(weight, score) pairs of the components that count, in spec order."""


def weighted_sum(items: Weighted) -> float:
    """Sum of weight * score."""
    return math.fsum(w * s for w, s in items)


def minimum(items: Weighted) -> float:
    """The worst weighted score: every component must be good for the total to be.

    As an ensemble of reward sources this is worst-case optimisation (WCO, Coste et al. 2024).
    """
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


COMBINERS: dict[str, Callable[[Weighted], float]] = {
    "weighted_sum": weighted_sum,
    "min": minimum,
    "product": product,
    "first_pass": first_pass,
    "average": ensemble_mean,
}
"""The combiners without parameters, by name."""


class Simple(Choice):
    """A combiner without parameters (`COMBINERS`)."""

    type: Literal["weighted_sum", "min", "product", "first_pass", "average"] = "weighted_sum"

    def total(self, items: Sequence[Counted]) -> float:
        """The combined reward of the counted components."""
        return COMBINERS[self.type]([(c.weight, c.score) for c in items])


@dataclass(frozen=True, slots=True)
class Combined:
    """One sample's combination, with what group transforms and the output need."""

    reward: float | None
    status: Status
    components: dict[str, Score]
    """The scores, as shown in the output (ReNorm may mark its process component invalid)."""
    counted: tuple[Counted, ...] = ()
    """Components that counted (all scored 0.0 when a veto fired)."""
    steps: tuple[float, ...] | None = None
    """Per-step rewards (ReNorm)."""


def passed(spec: RewardSpec, name: str, score: Score) -> bool:
    """Whether a component passed on its own score (before its transforms): ok and > 0."""
    if score.status != "ok" or score.score is None:
        return False
    raw = score.detail.get("raw_score", score.score) if spec.rewards[name].transform else None
    return (score.score if raw is None else raw) > 0


def combine_scores(spec: RewardSpec, scores: Mapping[str, Score]) -> Combined:
    """The total reward of one sample from its (shaped) component scores."""
    components = {name: scores[name] for name in spec.rewards}
    for score in components.values():
        if score.status in FAILURE_STATUSES:
            return Combined(spec.on_error, score.status, components)
    counted = tuple(
        Counted(name, position, component.weight, score.score)
        for position, (name, component) in enumerate(spec.rewards.items())
        if (score := components[name]).status == "ok"
        and score.score is not None
        and (
            component.only_if is None or passed(spec, component.only_if, scores[component.only_if])
        )
    )
    if not counted:
        return Combined(None, "not_applicable", components)
    if any(
        spec.rewards[c.name].veto and not passed(spec, c.name, components[c.name]) for c in counted
    ):
        return Combined(0.0, "ok", components, tuple(c._replace(score=0.0) for c in counted))
    combiner = spec.combiner
    if isinstance(combiner, ReNorm):
        return _renorm(spec, combiner, components, counted)
    total = combiner.total(counted)
    if not math.isfinite(total):
        return Combined(spec.on_error, "invalid", components, counted)
    return Combined(total, "ok", components, counted)


def _renorm(
    spec: RewardSpec, renorm: ReNorm, components: dict[str, Score], counted: tuple[Counted, ...]
) -> Combined:
    names = {c.name for c in counted}
    if renorm.process not in names or renorm.outcome not in names:
        return Combined(None, "not_applicable", components, counted)
    steps = renorm.steps(components[renorm.process], components[renorm.outcome])
    if isinstance(steps, str):
        failed = withdrawn(components[renorm.process], "invalid", steps)
        return Combined(spec.on_error, "invalid", {**components, renorm.process: failed})
    return Combined(renorm.reward(steps), "ok", components, counted, tuple(steps))


def combine(spec: RewardSpec, scores: Mapping[str, Score]) -> tuple[float | None, Status]:
    """The total reward and status of one sample from its component scores."""
    combined = combine_scores(spec, scores)
    return combined.reward, combined.status
