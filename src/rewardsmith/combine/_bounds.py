"""The range of each component's score, and the lowest total a spec can produce.

A reward declares its range on its scoring function (`rewardsmith.registry.bounded`); each
`transform:` maps a range to the range of its output; a weight scales it. What nobody
declared is unknown: (-inf, inf). These rules need ranges and refuse a spec whose ranges
they cannot know (a `clip` transform makes any range known):

- a component behind a closed `only_if` gate counts at its lowest value (`gated_off_score`);

- a fired veto gives the lowest total the spec can produce (`lowest_total`), so breaking a
  hard rule never pays better than keeping it; a `veto_value` above the components' lowest
  total is refused (when that is unknown, the spec's `veto_value` is trusted); a veto on a
  component that never scores above 0 (a penalty) would fire on every sample and is refused;
- `combine: product` takes non-negative members only (a product of two penalties is a bonus);
- `combine: uncertainty` takes a `lambda` small enough that raising one member's score never
  lowers the total;
- `combine: lexicographic` takes later components that cannot outweigh an earlier one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ._stats import exact_sum

if TYPE_CHECKING:
    from ..spec import RewardSpec

__all__ = [
    "UNKNOWN",
    "Bounds",
    "check_combination",
    "component_bounds",
    "correct_threshold",
    "gated_off_score",
    "lowest_total",
    "raw_bounds",
    "veto_total",
]


class Bounds(NamedTuple):
    """A closed range of scores; an unknown side is infinite."""

    low: float
    high: float

    @property
    def known(self) -> bool:
        """Both ends are finite."""
        return math.isfinite(self.low) and math.isfinite(self.high)

    def weighted(self, weight: float) -> Bounds:
        """The range of ``weight * score``."""
        if weight == 0:
            return Bounds(0.0, 0.0)
        ends = (weight * self.low, weight * self.high)
        return Bounds(min(ends), max(ends))

    def mapped(self, f: Callable[[float], float]) -> Bounds:
        """The range after an increasing map `f`."""
        return Bounds(f(self.low), f(self.high))

    def __str__(self) -> str:
        return f"[{self.low:g}, {self.high:g}]"


UNKNOWN = Bounds(-math.inf, math.inf)
"""The range of a reward that declared none."""


def raw_bounds(spec: RewardSpec, name: str) -> Bounds:
    """The range the reward of component `name` declares for its own score (before shaping)."""
    declared = spec.rewards[name].bounds
    return UNKNOWN if declared is None else Bounds(*declared)


def component_bounds(spec: RewardSpec, name: str) -> Bounds:
    """The range of component `name`'s score after its `transform:` list (not weighted)."""
    bounds = raw_bounds(spec, name)
    for transform in spec.rewards[name].transform:
        bounds = transform.bounds(bounds)
    return bounds


def gated_off_score(spec: RewardSpec, name: str) -> float:
    """The score component `name` counts at when its `only_if` gate is closed: the one that
    gives its lowest weighted value (its range's low end, the high end for a negative
    weight). Failing a gate then never pays more than passing it with the component at its
    worst, under any combiner, and the component is a constant among closed-gate samples.
    Its range is known: `check_combination` refuses a gate on a component of unknown range."""
    bounds = component_bounds(spec, name)
    return bounds.low if spec.rewards[name].weight >= 0 else bounds.high


def members(spec: RewardSpec) -> list[tuple[str, Bounds]]:
    """Each component's name and weighted range, in spec order."""
    return [(n, component_bounds(spec, n).weighted(c.weight)) for n, c in spec.rewards.items()]


def veto_total(spec: RewardSpec) -> float | None:
    """The total a fired veto gives when the spec sets it (`veto_value`, with a veto)."""
    return spec.veto_value if any(c.veto for c in spec.rewards.values()) else None


def lowest_total(spec: RewardSpec) -> float | None:
    """A total no sample can score below, a fired veto's `veto_value` included (None when a
    component's range is unknown).

    Any component may not apply to a sample and not count, so in a sum each contributes at
    most its lowest weighted score and at least nothing.
    """
    value = spec.combiner.lowest(members(spec))
    if not math.isfinite(value):
        return None
    veto = veto_total(spec)
    return value if veto is None else min(value, veto)


def sum_floor(items: Sequence[Bounds], scales: Sequence[float] | None = None) -> float:
    """The lowest ``sum(scale * member)`` when any member may be absent (counted as 0)."""
    scales = scales if scales is not None else [1.0] * len(items)
    return exact_sum(s * min(0.0, b.low) for s, b in zip(scales, items, strict=True))


def correct_threshold(spec: RewardSpec, correct: str, given: float | None) -> float | None:
    """The score at which component `correct` counts as a correct answer: `given`, else the
    top of its declared range (1.0 for scores in [0, 1]); None when neither is known."""
    if given is not None:
        return given
    high = raw_bounds(spec, correct).high
    return high if math.isfinite(high) else None


def _withdrawing(spec: RewardSpec, name: str) -> str | None:
    """The type of a transform of component `name` that can make it `not_applicable`, or
    None: each one reading a `correct:` component does when that component has no score
    (`grpo_lambda` also in a group that is mostly wrong)."""
    return next(
        (t.type for t in spec.rewards[name].transform if getattr(t, "correct", None) is not None),
        None,
    )


def _first_pass_problem(spec: RewardSpec) -> str | None:
    """Why a `first_pass` member cannot keep the cascade honest, or None. The cascade pays
    the decider's score, so passing a rule must never pay less than failing it: a closed gate
    ("never passes") and a gated component at its worst (which may pass and decide) do not
    compose, and a transform could make a passing score pay less than a later member's."""
    for name, component in spec.rewards.items():
        if component.only_if is not None:
            return (
                f"rewards.{name}.only_if: under combine: first_pass a closed gate makes "
                f"rewards.{name} never pass, so the cascade falls through to a later member, "
                "which can pay more than passing the gate with it at its worst: drop only_if, "
                "or use weighted_sum"
            )
        if component.transform:
            return (
                f"rewards.{name}.transform: combine: first_pass decides on a member's own "
                "score and pays its shaped one, which could pay passing less than failing: "
                "drop the transform (members should share one scale, such as 0/1 verifiers)"
            )
    return None


def check_combination(spec: RewardSpec) -> str | None:
    """Why the spec's combination cannot keep its promises, naming the component; else None."""
    ranges = members(spec)
    if spec.veto_value is not None and not math.isfinite(spec.veto_value):
        return "veto_value must be a finite number"
    vetoes = [n for n, c in spec.rewards.items() if c.veto]
    for name in vetoes:
        if (withdrawing := _withdrawing(spec, name)) is not None:
            return (
                f"rewards.{name}: a veto fires only on a component that counts, and its "
                f"transform {withdrawing} can make it not_applicable, so the rule would not "
                "apply to every sample: veto on the unshaped rule, and shape a copy of it "
                "without veto"
            )
        high = raw_bounds(spec, name).high
        if high <= 0:
            return (
                f"rewards.{name}: a veto fires when its component scores <= 0, and "
                f"rewards.{name} (type {spec.rewards[name].type}) scores at most {high:g}, so it "
                "would fire on every sample and flatten every group. Veto on a component that "
                "scores above 0 when the rule holds, or use it as a (weighted) penalty"
            )
    low = spec.combiner.lowest(ranges)
    if vetoes and spec.veto_value is not None and math.isfinite(low) and spec.veto_value > low:
        return (
            f"veto_value {spec.veto_value:g} is above {low:g}, the lowest total the components "
            "can produce: breaking a hard rule would pay more than keeping it with the worst "
            f"answer. Set veto_value to at most {low:g}, or drop it (a fired veto then gives "
            "the lowest total)"
        )
    if vetoes and spec.veto_value is None and lowest_total(spec) is None:
        unknown = next(n for n, b in ranges if not math.isfinite(b.low))
        return (
            f"rewards.{vetoes[0]}: a fired veto gives the lowest total the spec can produce, "
            f"and rewards.{unknown} declares no range: set `veto_value`, or bound it "
            "(transform: {type: clip, min: ..., max: ...})"
        )
    for name, component in spec.rewards.items():
        if component.only_if is not None and not component_bounds(spec, name).known:
            return (
                f"rewards.{name}.only_if: a closed gate counts rewards.{name} at its lowest "
                f"value, and rewards.{name} (type {component.type}) declares no range: bound it "
                "(transform: {type: clip, min: ..., max: ...}), or drop only_if"
            )
    if spec.combine == "first_pass" and (refused := _first_pass_problem(spec)) is not None:
        return refused
    if spec.combine == "product":
        for name, component in spec.rewards.items():
            shaped = component_bounds(spec, name)
            if component.weight >= 0 and shaped.low >= 0:
                continue
            if component.weight < 0:
                why = "has a negative weight"
            elif math.isfinite(shaped.low):
                why = f"scores in {shaped}"
            else:
                why = "declares no range"
            return (
                f"combine: product needs non-negative members, and rewards.{name} (type "
                f"{component.type}) {why}: a product of two negative penalties is a bonus. "
                "Use weighted_sum, or map it into [0, 1] (transform: {type: min_max, min: "
                "..., max: ...}, or clip)"
            )
    problem = getattr(spec.combiner, "problem", None)
    if problem is not None and (found := problem(ranges)) is not None:
        return str(found)
    for name, component in spec.rewards.items():
        for i, transform in enumerate(component.transform):
            correct = getattr(transform, "correct", None)
            if correct is None or correct not in spec.rewards:
                continue
            if correct_threshold(spec, correct, transform.correct_threshold) is None:
                return (
                    f"rewards.{name}.transform[{i}]: rewards.{correct} declares no range, so "
                    "its correct answers cannot be told apart: set correct_threshold"
                )
    return None
