"""From per-criterion verdicts to one score.

* `healthbench` (HealthBench, Arora et al. 2025): sum of the points of the met criteria over
  the sum of the positive points; negative-point criteria (pitfalls) that are met subtract.
  Per-tag scores the same way over each tag's criteria (tags with no positive points are
  left out, as HealthBench does). Not clipped per sample (HealthBench clips the mean over a
  dataset); a sample can score below 0.
* `explicit` (Rubrics as Rewards, explicit aggregation): sum_j w_j c_j / sum_j w_j with
  c_j in {0, 1}, or c_j = P(met) with `soft`. With pitfalls (negative w_j) the denominator
  sums the positive weights only, so meeting every positive item and no pitfall scores 1.
* `implicit` (RaR implicit): one holistic 1-10 judgement over the whole rubric, (s - 1) / 9.
* The gate, before any of them: every `hard_rule` must pass (a pitfall-phrased hard rule
  passes when not met); when one fails the score is 0 and `detail.gate` names it.
* With no positive weight (`unweighted`: hard rules and pitfalls), an answer the gate passed
  scores 1 less the weight share of the pitfalls it hits: a rubric of rules and pitfalls
  checks answers as any other does, and rewards the one that passes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._rubric import Criterion

__all__ = ["Verdict", "explicit", "gate", "healthbench", "implicit", "unweighted"]


@dataclass(frozen=True)
class Verdict:
    """The judge's finding on one criterion."""

    met: bool
    probability: float | None = None
    """P(met) from the judge's logprobs, when the backend gave them."""


def gate(criteria: Sequence[Criterion], verdicts: Sequence[Verdict]) -> list[int]:
    """Indices of the hard rules that fail."""
    return [
        i
        for i, (c, v) in enumerate(zip(criteria, verdicts, strict=True))
        if c.kind == "hard_rule" and not c.passes(v.met)
    ]


def _met(verdict: Verdict, soft: bool) -> float:
    """How far a criterion is met: P(met) when `soft` and known, else 1 or 0."""
    if soft and verdict.probability is not None:
        return verdict.probability
    return float(verdict.met)


def _weighted(
    criteria: Sequence[Criterion], verdicts: Sequence[Verdict], soft: bool
) -> tuple[float, float]:
    achieved = possible = 0.0
    for c, v in zip(criteria, verdicts, strict=True):
        if c.kind != "principle":
            continue
        achieved += c.points * _met(v, soft)
        possible += max(c.points, 0.0)
    return achieved, possible


def healthbench(
    criteria: Sequence[Criterion], verdicts: Sequence[Verdict]
) -> tuple[float | None, dict[str, Any]]:
    """(score, detail with `tag_scores`); score None when no criterion has positive points."""
    achieved, possible = _weighted(criteria, verdicts, soft=False)
    tags = sorted({t for c in criteria if c.kind == "principle" for t in c.tags})
    tag_scores: dict[str, float] = {}
    for tag in tags:
        pairs = [(c, v) for c, v in zip(criteria, verdicts, strict=True) if tag in c.tags]
        a, p = _weighted([c for c, _ in pairs], [v for _, v in pairs], soft=False)
        if p > 0:
            tag_scores[tag] = a / p
    detail = {"achieved": achieved, "possible": possible, "tag_scores": tag_scores}
    return (achieved / possible if possible > 0 else None), detail


def explicit(
    criteria: Sequence[Criterion], verdicts: Sequence[Verdict], soft: bool = False
) -> tuple[float | None, dict[str, Any]]:
    """RaR explicit: (sum w_j c_j / sum of positive w_j, detail)."""
    achieved, possible = _weighted(criteria, verdicts, soft)
    detail = {"achieved": achieved, "possible": possible}
    return (achieved / possible if possible > 0 else None), detail


def unweighted(
    criteria: Sequence[Criterion], verdicts: Sequence[Verdict], soft: bool = False
) -> float | None:
    """The score of a rubric with no positive weight, once the gate passed: 1 less the weight
    share of the pitfalls hit (1 with hard rules alone); None when it has neither pitfalls
    nor hard rules (nothing that could tell answers apart)."""
    hit = total = 0.0
    for c, v in zip(criteria, verdicts, strict=True):
        if c.kind != "principle" or c.points >= 0:
            continue
        hit += abs(c.points) * _met(v, soft)
        total += abs(c.points)
    if total > 0:
        return 1.0 - hit / total
    return 1.0 if any(c.kind == "hard_rule" for c in criteria) else None


def implicit(rating: float, low: int = 1, high: int = 10) -> float:
    """RaR implicit: a holistic rating s in [low, high] as (s - low) / (high - low)."""
    return (rating - low) / (high - low)
