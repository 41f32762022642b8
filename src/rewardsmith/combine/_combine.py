"""Combination of component scores into the total reward of one sample.

The order of decisions is fixed, and it is what keeps failures honest:

1. A component that failed (`timeout`, `error`, `invalid`) decides the total: the spec's
   `on_error` value (None by default, so the reward is null), with the failing status. Each
   failed component's `detail.cause` says who caused it (`Score.cause`), which decides
   whether the sample is charged in its group (see `_groups`). An `ok` score outside the
   range its reward declares is such a failure (`in_range`, checked before any transform).
2. Components that do not apply do not count. A component whose gate (`only_if`) is closed
   counts at its lowest weighted value (`gated_off_score`), so failing a gate never pays
   under any combiner. A gate is open when its component passes with its own gate open:
   gates read the gated value, so a chain `bonus -> correct -> safe` closes when `safe` fails.
3. A counted component marked `veto: true` that did not pass (score <= 0: a failed hard rule)
   gives the lowest total the spec can produce (`veto_value` when the spec sets one; never
   more than the other components would have given), status `ok`.
4. The remaining components go to the combiner named by `combine:`.
   Nothing left to count means the sample is `not_applicable`.

Gates and vetoes judge a component on its own score, before any `transform:` (the
`detail.raw_score` the engine writes on a shaped score, never one a reward wrote): shaping
changes magnitudes, not whether a rule passed. `first_pass` members take no transform.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..models import FAILURE_STATUSES, Score, Status
from ._base import Choice, Counted, withdrawn
from ._bounds import Bounds, gated_off_score, lowest_total, sum_floor
from ._ensemble import ensemble_mean
from ._renorm import ReNorm
from ._stats import exact_sum

if TYPE_CHECKING:
    from ..spec import RewardSpec

__all__ = [
    "COMBINERS",
    "Combined",
    "Simple",
    "checked",
    "combine",
    "combine_scores",
    "combine_shaped",
    "counted",
    "fired_veto",
    "gate_open",
    "passes",
]

Weighted = Sequence[Counted]
"""The components that count, in spec order."""


def weighted_sum(items: Weighted) -> float:
    """Sum of weight * score (+-inf when it overflows: the total is then `error`)."""
    return exact_sum(c.weight * c.score for c in items)


def minimum(items: Weighted) -> float:
    """The worst weighted score: every component must be good for the total to be.

    As an ensemble of reward sources this is worst-case optimisation (WCO, Coste et al. 2024).
    """
    return min(c.weight * c.score for c in items)


def product(items: Weighted) -> float:
    """Product of weighted scores: multiplicative penalties (a 0 anywhere zeroes the total).

    Defined for non-negative members only (the spec is refused otherwise): there the product
    never falls when a member rises. With two negative members it would be a bonus.
    """
    return math.prod(c.weight * c.score for c in items)


def first_pass(items: Weighted) -> float:
    """A cascade: the weighted score of the first component that passes, else of the last.

    It pays the decider's score, so members should share one scale (0/1 verifiers): a member
    that can pass with less than a later member pays teaches failing it. Members take no
    `only_if` or `transform` (`check_combination`): each passes on its own score.
    """
    decider = next((c for c in items if c.passed), items[-1])
    return decider.weight * decider.score


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
        return COMBINERS[self.type](items)

    def lowest(self, members: Sequence[tuple[str, Bounds]]) -> float:
        """A total no sample scores below, given each component's weighted range."""
        if self.type == "weighted_sum":
            return sum_floor([b for _, b in members])
        if self.type == "product":  # members are non-negative (`check_combination`)
            return 0.0
        return min(b.low for _, b in members)  # min, average, first_pass: one of them


@dataclass(frozen=True, slots=True)
class Combined:
    """One sample's combination, with what group transforms and the output need."""

    reward: float | None
    status: Status
    components: dict[str, Score]
    """The scores, as shown in the output (ReNorm may withdraw its process component's)."""
    counted: tuple[Counted, ...] = ()
    """Components that counted."""
    steps: tuple[float, ...] | None = None
    """Per-step rewards (ReNorm)."""
    vetoed: bool = False
    """A veto fired: GDPO counts the components as a charged failure's (`charged_counted`)."""


def own_score(spec: RewardSpec, name: str, score: Score) -> float | None:
    """The score component `name`'s reward returned, before its transforms: for a component
    with a transform, the `detail.raw_score` the engine wrote (`_shaping.recorded`)."""
    raw = score.detail.get("raw_score", score.score) if spec.rewards[name].transform else None
    return score.score if raw is None else raw


def passed(spec: RewardSpec, name: str, score: Score) -> bool:
    """Whether a component passed on its own score (before its transforms): ok and > 0."""
    own = own_score(spec, name, score)
    return score.status == "ok" and score.score is not None and own is not None and own > 0


RANGE_REL_TOL = 1e-9
RANGE_ABS_TOL = 1e-12
"""How far past a declared bound a score may land by float rounding (`in_range`)."""


def _near(value: float, bound: float) -> bool:
    return math.isclose(value, bound, rel_tol=RANGE_REL_TOL, abs_tol=RANGE_ABS_TOL)


def in_range(spec: RewardSpec, name: str, score: Score) -> Score:
    """`score`, or an `error` caused by the `completion` when it is `ok` outside the range its
    reward declares: the reward broke its own contract on this completion, as a crash on it
    does, and is charged as a crash is (left out, it would pay more than an honest wrong
    answer); the spec's checks (a product's non-negative members, a veto's floor) trusted
    that range. A score past a bound by float rounding only (`math.isclose`, rel 1e-9, abs
    1e-12) is clamped to it. Undeclared ranges: unchecked."""
    bounds = spec.rewards[name].bounds
    own = own_score(spec, name, score)
    if score.status != "ok" or bounds is None or own is None or bounds[0] <= own <= bounds[1]:
        return score
    for bound in bounds:
        if _near(own, bound):
            return _clamped(score, own, bound)
    reason = f"score {own!r} outside the range [{bounds[0]:g}, {bounds[1]:g}] its reward declares"
    return withdrawn(score, "error", reason, cause="completion")


def _clamped(score: Score, own: float, bound: float) -> Score:
    """`score` with its own value `own` (and the engine's `raw_score` record of it) at `bound`."""
    detail = score.detail
    if detail.get("raw_score") == own:
        detail = {**detail, "raw_score": bound}
    value = bound if score.score == own else score.score
    return score.model_copy(update={"score": value, "detail": detail})


def checked(spec: RewardSpec, scores: Mapping[str, Score]) -> dict[str, Score]:
    """Every component's score through `in_range`: the one range check, which `shape` runs
    before any transform reads a score, and `combine_scores` on scores given directly."""
    return {name: in_range(spec, name, scores[name]) for name in spec.rewards}


def passes(spec: RewardSpec, name: str, scores: Mapping[str, Score]) -> bool:
    """Whether component `name` opens a gate: it counts (its own gate is open) and passed."""
    return passed(spec, name, scores[name]) and gate_open(spec, name, scores)


def gate_open(spec: RewardSpec, name: str, scores: Mapping[str, Score]) -> bool:
    """Whether component `name`'s `only_if` gate (if any) is open on `scores` (as received:
    recorded and range-checked): the one gate reading, for the total (`counted`), a group's
    statistics (`_shaping.Row`) and a group-scoped reward's group step (`_groups`)."""
    gate = spec.rewards[name].only_if
    return gate is None or passes(spec, gate, scores)


def counted(spec: RewardSpec, scores: Mapping[str, Score]) -> tuple[Counted, ...]:
    """The components that count for one sample: every `ok` one, at its score when its gate
    (if any) is open, else at its lowest weighted value (`gated_off_score`), never passing."""
    return tuple(
        _counted(spec, name, position, score, scores)
        for position, name in enumerate(spec.rewards)
        if (score := scores[name]).status == "ok" and score.score is not None
    )


def _counted(
    spec: RewardSpec, name: str, position: int, score: Score, scores: Mapping[str, Score]
) -> Counted:
    component = spec.rewards[name]
    if gate_open(spec, name, scores):
        return Counted(name, position, component.weight, score.score, passed(spec, name, score))
    return Counted(name, position, component.weight, gated_off_score(spec, name), False)


def fired_veto(
    spec: RewardSpec, scores: Mapping[str, Score], items: Sequence[Counted]
) -> str | None:
    """The first counted component marked `veto` that did not pass, or None."""
    return next(
        (
            c.name
            for c in items
            if spec.rewards[c.name].veto and not passed(spec, c.name, scores[c.name])
        ),
        None,
    )


def _with_causes(components: dict[str, Score]) -> dict[str, Score]:
    """The scores, each failure carrying its resolved `detail.cause` for the output."""
    return {
        name: score
        if score.cause is None or "cause" in score.detail
        else score.model_copy(update={"detail": {**score.detail, "cause": score.cause}})
        for name, score in components.items()
    }


def _vetoed(spec: RewardSpec, items: tuple[Counted, ...]) -> float:
    """A fired veto's total: the lowest the spec can produce (or `veto_value`), and never
    more than the counted components would have given: a veto only ever takes reward away.
    A spec whose lowest total is unknown and sets no `veto_value` is refused at load; built
    without that check, it gets at most 0.
    """
    floor = spec.veto_value if spec.veto_value is not None else lowest_total(spec)
    total = spec.combiner.total(items)  # type: ignore[union-attr]  # no veto under renorm
    return min(0.0 if floor is None else floor, total)


def combine_scores(spec: RewardSpec, scores: Mapping[str, Score]) -> Combined:
    """The total reward of one sample from its component scores, given directly (shaped or
    without transforms): their ranges checked here."""
    return combine_shaped(spec, checked(spec, scores))


def combine_shaped(spec: RewardSpec, components: dict[str, Score]) -> Combined:
    """The total reward of one sample from the scores `shape` returned (ranges checked)."""
    for score in components.values():
        if score.status in FAILURE_STATUSES:
            return Combined(spec.on_error, score.status, _with_causes(components))
    items = counted(spec, components)
    if not items:
        return Combined(None, "not_applicable", components)
    if fired_veto(spec, components, items) is not None:
        return Combined(_vetoed(spec, items), "ok", components, items, vetoed=True)
    combiner = spec.combiner
    if isinstance(combiner, ReNorm):
        return _renorm(spec, combiner, components, items)
    total = combiner.total(items)
    if not math.isfinite(total):  # the combination overflowed on these scores
        return Combined(spec.on_error, "error", components, items)
    return Combined(total, "ok", components, items)


def _renorm(
    spec: RewardSpec, renorm: ReNorm, components: dict[str, Score], counted: tuple[Counted, ...]
) -> Combined:
    names = {c.name for c in counted}
    if renorm.process not in names or renorm.outcome not in names:
        return Combined(None, "not_applicable", components, counted)
    steps = renorm.steps(components[renorm.process], components[renorm.outcome])
    if isinstance(steps, str):  # the rewards' output, read from this completion: charged
        failed = withdrawn(components[renorm.process], "error", steps, cause="completion")
        return Combined(spec.on_error, "error", {**components, renorm.process: failed})
    outcome = components[renorm.outcome].score
    assert outcome is not None  # `steps` checked it
    return Combined(renorm.reward(steps, outcome), "ok", components, counted, tuple(steps))


def combine(spec: RewardSpec, scores: Mapping[str, Score]) -> tuple[float | None, Status]:
    """The total reward and status of one sample from its component scores."""
    combined = combine_scores(spec, scores)
    return combined.reward, combined.status
