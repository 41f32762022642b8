"""Per-component shaping (`transform:`): clip, tanh, min-max, mean-std and PAR.

A component's `transform:` is one transform or a list applied in order, to the component's
score, before combination, after its range is checked (`checked`: a score outside its
declared range is an `error` no transform reads). Only `ok` scores are shaped; a failed or
not-applicable score is left as it is. The engine writes the value a transformed component's
reward returned as its `detail.raw_score` (`recorded`, replacing any key of that name the
reward wrote), and gates, vetoes and `correct:` references judge that raw value: shaping
changes magnitudes, not whether a component passed.

Each transform also maps the range of its input to the range of its output (`bounds`), so
the spec knows every component's range after shaping (`_bounds`).

Transforms that need group statistics (min-max and mean-std without fixed bounds, and the
group length rewards in `_length`) see every sample of the sample's `group`; statistics are
over the samples whose component counts (`Row.counts`: `ok`, its `only_if` gate open). A
sample behind a closed gate is left out of them and unshaped by them: it counts at its lowest
value anyway, and its score must not move the others'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from ..models import Sample, Score
from ._base import Choice, Finite, Scored, shaped, withdrawn
from ._bounds import UNKNOWN, Bounds, correct_threshold
from ._combine import checked, gate_open
from ._stats import all_equal, standardised

if TYPE_CHECKING:
    from ..spec import RewardSpec

__all__ = [
    "Clip",
    "MeanStd",
    "MinMax",
    "Par",
    "PerSample",
    "Row",
    "Tanh",
    "counting_values",
    "recorded",
    "replaced",
    "shape",
    "sigmoid",
]


@dataclass(frozen=True, slots=True)
class Row:
    """One sample as transforms see it."""

    sample: Sample
    scores: dict[str, Score]
    """Current scores (transforms of earlier components already applied)."""
    raw: Mapping[str, Score]
    """Scores as the rewards returned them (`recorded`, range-checked)."""
    spec: RewardSpec

    def correct(self, name: str, threshold: float | None = None) -> bool | None:
        """Whether component `name`'s answer is correct: its raw score reaches `threshold`
        (default: the top of its range, 1.0 for scores in [0, 1], so a partial score such
        as F1's 0.67 for a hedge is not correct); None when it has no score. Behind a closed
        `only_if` gate it is not correct: a gated-off answer must not pay through a length
        transform what the gate took from it."""
        score = self.raw[name]
        if score.status != "ok" or score.score is None:
            return None
        if not gate_open(self.spec, name, self.raw):
            return False
        needed = correct_threshold(self.spec, name, threshold)
        assert needed is not None  # the spec was refused otherwise
        return score.score >= needed

    def counts(self, name: str) -> bool:
        """Whether component `name` enters its group's statistics: `ok`, its gate open."""
        score = self.raw[name]
        return (
            score.status == "ok"
            and score.score is not None
            and gate_open(self.spec, name, self.raw)
        )


def recorded(spec: RewardSpec, scores: Mapping[str, Score]) -> dict[str, Score]:
    """The scores, each `ok` one of a transformed component with its own value as
    `detail.raw_score`: the engine's record of what the reward returned, which gates and
    vetoes read after shaping (a reward's own `raw_score` key would forge it)."""
    return {
        name: score.model_copy(update={"detail": {**score.detail, "raw_score": score.score}})
        if spec.rewards[name].transform and score.status == "ok"
        else score
        for name, score in scores.items()
    }


def shape(spec: RewardSpec, items: Sequence[Scored]) -> list[dict[str, Score]]:
    """Every component's range checked, then its transforms applied, in spec order, over
    one group of samples."""
    received = [checked(spec, recorded(spec, item.scores)) for item in items]
    steps = [(name, t) for name, component in spec.rewards.items() for t in component.transform]
    if not steps:
        return received
    rows = [
        Row(item.sample, dict(scores), scores, spec)
        for item, scores in zip(items, received, strict=True)
    ]
    for name, transform in steps:
        for row, score in zip(rows, transform.apply(name, rows), strict=True):
            row.scores[name] = score
    return [row.scores for row in rows]


class PerSample(Choice):
    """A transform of one score at a time."""

    @property
    def group_scoped(self) -> bool:
        """Per-sample transforms need no group."""
        return False

    def apply(self, name: str, rows: Sequence[Row]) -> list[Score]:
        """The component's new score on each row (failed scores unchanged)."""
        return [
            self.one(row.scores[name], row) if row.scores[name].status == "ok" else row.scores[name]
            for row in rows
        ]

    def one(self, score: Score, row: Row) -> Score:
        """The new score of one `ok` score (each transform defines it)."""
        raise NotImplementedError


def counting_values(name: str, rows: Sequence[Row]) -> list[tuple[int, float]]:
    """(row index, current score) of the rows where component `name` counts (`Row.counts`)
    and is still `ok`: a group's statistics."""
    return [
        (i, row.scores[name].score)  # type: ignore[misc]
        for i, row in enumerate(rows)
        if row.counts(name)
        and row.scores[name].status == "ok"
        and row.scores[name].score is not None
    ]


def replaced(name: str, rows: Sequence[Row], new: Mapping[int, Score]) -> list[Score]:
    """The component's column with the rows in `new` replaced."""
    return [new.get(i, row.scores[name]) for i, row in enumerate(rows)]


class Clip(PerSample):
    """``min(max(x, min), max)``: bound a score (the "Clip" baseline of PAR, Fu et al. 2025)."""

    type: Literal["clip"] = "clip"
    min: Finite | None = None
    max: Finite | None = None

    @model_validator(mode="after")
    def _bounds(self) -> Clip:
        if self.min is None and self.max is None:
            raise ValueError("clip needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"clip: min ({self.min}) is above max ({self.max})")
        return self

    def clipped(self, value: float) -> float:
        if self.min is not None:
            value = max(value, self.min)
        if self.max is not None:
            value = min(value, self.max)
        return value

    def one(self, score: Score, row: Row) -> Score:
        assert score.score is not None
        return shaped(score, self.clipped(score.score))

    def bounds(self, given: Bounds) -> Bounds:
        return given.mapped(self.clipped)


class Tanh(PerSample):
    """``tanh(x / scale)``: a bounded, monotone squash into (-1, 1).

    Bounding the RL reward is the first design principle of Fu et al. 2025, "Reward Shaping
    to Mitigate Reward Hacking in RLHF" (PAR): an unbounded reward invites hacking.
    """

    type: Literal["tanh"] = "tanh"
    scale: Finite = Field(default=1.0, gt=0)

    def one(self, score: Score, row: Row) -> Score:
        assert score.score is not None
        return shaped(score, math.tanh(score.score / self.scale))

    def bounds(self, given: Bounds) -> Bounds:
        return given.mapped(lambda x: math.tanh(x / self.scale))


class MinMax(Choice):
    """``(x - min) / (max - min)`` into [0, 1] (the "Minmax" baseline of PAR, Fu et al. 2025).

    With `min` and `max` given, they are fixed bounds (per sample). Without them, they are the
    group's smallest and largest score; a group whose scores are all equal gets exactly 0.0
    (no spread, no signal).
    """

    type: Literal["min_max"] = "min_max"
    min: Finite | None = None
    max: Finite | None = None

    @model_validator(mode="after")
    def _bounds(self) -> MinMax:
        if (self.min is None) != (self.max is None):
            raise ValueError("min_max: give both min and max (fixed), or neither (per group)")
        if self.min is not None and self.max is not None and not self.min < self.max:
            raise ValueError(f"min_max: min ({self.min}) must be below max ({self.max})")
        return self

    @property
    def group_scoped(self) -> bool:
        """Statistics come from the group when no fixed bounds are given."""
        return self.min is None

    def bounds(self, given: Bounds) -> Bounds:
        if self.min is None or self.max is None:
            return Bounds(0.0, 1.0)
        low, high = self.min, self.max
        return given.mapped(lambda x: (x - low) / (high - low))

    def apply(self, name: str, rows: Sequence[Row]) -> list[Score]:
        values = counting_values(name, rows)
        if not values:
            return replaced(name, rows, {})
        xs = [x for _, x in values]
        if self.min is not None and self.max is not None:
            low, high = self.min, self.max
        elif all_equal(xs):
            return replaced(name, rows, {i: shaped(rows[i].scores[name], 0.0) for i, _ in values})
        else:
            low, high = min(xs), max(xs)
        return replaced(
            name,
            rows,
            {i: shaped(rows[i].scores[name], (x - low) / (high - low)) for i, x in values},
        )


class MeanStd(Choice):
    """``(x - mean) / (std + epsilon)`` (the "Meanstd" baseline of PAR, Fu et al. 2025).

    With `mean` and `std` given, they are fixed (per sample, e.g. running statistics of the
    reward model). Without them, they are the group's (population std); a group whose scores
    are all equal gets exactly 0.0.
    """

    type: Literal["mean_std"] = "mean_std"
    mean: Finite | None = None
    std: Finite | None = Field(default=None, gt=0)
    epsilon: Finite = Field(default=1e-6, ge=0)

    @model_validator(mode="after")
    def _stats(self) -> MeanStd:
        if (self.mean is None) != (self.std is None):
            raise ValueError("mean_std: give both mean and std (fixed), or neither (per group)")
        return self

    @property
    def group_scoped(self) -> bool:
        """Statistics come from the group when no fixed mean and std are given."""
        return self.mean is None

    def bounds(self, given: Bounds) -> Bounds:
        if self.mean is None or self.std is None:
            return UNKNOWN  # a z-score within a group is not bounded by a fixed number
        m, s = self.mean, self.std + self.epsilon
        return given.mapped(lambda x: (x - m) / s)

    def apply(self, name: str, rows: Sequence[Row]) -> list[Score]:
        values = counting_values(name, rows)
        if self.mean is not None and self.std is not None:
            m, s = self.mean, self.std
            new = {i: shaped(rows[i].scores[name], (x - m) / (s + self.epsilon)) for i, x in values}
            return replaced(name, rows, new)
        z = standardised([x for _, x in values], std="population", epsilon=self.epsilon)
        return replaced(
            name,
            rows,
            {i: shaped(rows[i].scores[name], v) for (i, _), v in zip(values, z, strict=True)},
        )


def sigmoid(x: float) -> float:
    """The logistic function, without overflow for large |x|."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class Par(PerSample):
    """Preference As Reward: ``mean over m of sigmoid(r - r_ref_m)``, in (0, 1).

    Fu et al. 2025, "Reward Shaping to Mitigate Reward Hacking in RLHF", eq. (PAR): the RL
    reward is the sigmoid of the reward centred on reference responses' rewards, averaged over
    the M references. It is bounded, grows fastest near the reference and saturates far above
    it, which is what takes the incentive out of hacking the reward model.

    The references' rewards r_ref come with the sample, in ``metadata[key]`` (default
    ``metadata.reference_rewards``): a non-empty list of numbers, scored by the same reward
    (e.g. the reward model on the SFT model's responses to the same prompt). Without them the
    component is `invalid` (PAR cannot be computed; it is never replaced by a guess).
    """

    type: Literal["par"] = "par"
    key: str = "reference_rewards"

    def bounds(self, given: Bounds) -> Bounds:
        return Bounds(0.0, 1.0)

    def one(self, score: Score, row: Row) -> Score:
        refs = row.sample.metadata.get(self.key)
        if (
            not isinstance(refs, list)
            or not refs
            or not all(isinstance(r, int | float) and not isinstance(r, bool) for r in refs)
            or not all(math.isfinite(r) for r in refs)
        ):
            return withdrawn(
                score,
                "invalid",
                f"par needs metadata.{self.key}: a non-empty list of finite reference rewards",
            )
        r = score.score
        assert r is not None
        value = math.fsum(sigmoid(r - ref) for ref in refs) / len(refs)
        return shaped(score, value, references=len(refs))
