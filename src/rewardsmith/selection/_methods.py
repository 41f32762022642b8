"""Selection methods: which of a group's candidates to answer with.

Each method sees the group's candidates (answer cluster, score, per-step scores, correctness)
and returns a `Pick`. Ties go to the candidate (or cluster) that appears first, as in
Qwen2.5-Math's `rm_maj_eval.py` (`list.index(max(...))`, `Counter.most_common`).

- `majority` (maj@k, self-consistency, Wang et al. 2023): the largest answer cluster; its
  first member.
- `best_of_n` (rm@k): the highest score.
- `weighted_majority`: the cluster with the largest sum of weights (`sigmoid` of the score,
  the default, `softmax` over the group at a temperature, or the score as it is, `raw`); its
  highest-weighted member. A sum is a vote only when every weight is positive: reward
  models' scores are signed (Qwen2.5-Math-RM's are logits), and a raw vote at a negative
  score would count against its own answer, so one more vote could make an answer lose.
  A vote (weighted or PRM `_vote`) below 0 therefore gives no pick, with the reason.
- PRM aggregations (Lightman et al. 2023; Wang et al. 2024, Math-Shepherd): per-step scores
  reduced to one value by `min`, `last`, `prod` or `mean`, then `_max` (the best single
  candidate) or `_vote` (summed per answer cluster): `prm_min_max`, `prm_prod_vote`...
  `prod` multiplies probabilities: a step score outside [0, 1] gives no pick, with the
  reason (two logits of -5 would multiply to 25 and beat two steps of 0.9).
- `oracle` (pass@k): a correct candidate when there is one (needs correctness); when none
  is correct and one is not judged, no pick: whether the group is solved is not known.

No method ends the run or picks with a value that is not finite: finite scores whose sum,
product or mean overflows a float give no pick, with the reason (an infinite score would win
every group, and the output line could not hold it as JSON).

A candidate without an answer votes for nothing; one without a score (its scoring failed) is
left out of score-based methods. When nothing can be picked the pick is empty, with the reason,
and says whether the group counts as answered wrong: no candidate has an answer (under a
voting method, decided before any value is weighed, refused or overflows), or every
missing score failed on what the candidate's completion wrote (cause `completion`: a scorer
that crashed or timed out on it). Leaving such a group out would let a model raise its
accuracy by making its scorer fail; a score missing for another reason (not in the data, a
bad reference, a judge server down) leaves the group ungraded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Literal

from ..combine._shaping import sigmoid
from ..models import Cause

__all__ = [
    "DEFAULT_WEIGHTS",
    "METHODS",
    "PRM_AGGREGATES",
    "Candidate",
    "Method",
    "Pick",
    "Weights",
]

Weights = Literal["raw", "softmax", "sigmoid"]
"""How `weighted_majority` turns scores into vote weights."""

DEFAULT_WEIGHTS: Weights = "sigmoid"
"""Positive for any score, increasing with it: every vote adds to its answer."""


@dataclass(frozen=True)
class Candidate:
    """One sample of a group, as a selection method sees it."""

    id: str
    answer: str | None
    cluster: int | None
    """Index of its answer cluster in the group (order of first appearance); None: no answer."""
    score: float | None = None
    """Its score (reward-model score, a component's score...); None when not scored."""
    steps: tuple[float, ...] | None = None
    """Per-step scores (PRM), in step order."""
    correct: bool | None = None
    """Whether its answer is right (None: unknown)."""
    failed_by: Cause | None = None
    """Who made its score (or step scores) fail, when its scoring failed."""


@dataclass(frozen=True)
class Pick:
    """A method's choice: an index into the candidates (None: no choice) and its value."""

    index: int | None
    score: float | None
    reason: str
    wrong: bool = False
    """No choice, and the group counts as answered wrong (no candidate has an answer, or
    every missing score failed on its completion). Any other empty pick is not graded."""


Chooser = Callable[[Sequence[Candidate], Weights, float], Pick]
"""A method's choice over a group's candidates, given the weights and the temperature."""


@dataclass(frozen=True)
class Method:
    """A selection method and what it needs of the candidates."""

    name: str
    needs: Literal["answers", "scores", "steps", "correct"]
    choose: Chooser


def _first_best(values: Sequence[tuple[int, float]]) -> tuple[int, float] | None:
    """The (index, value) with the largest value; the first one on a tie."""
    best = None
    for index, value in values:
        if best is None or value > best[1]:
            best = (index, value)
    return best


def _nothing_weighed(
    candidates: Sequence[Candidate], values: Sequence[float | None], reason: str
) -> Pick:
    """The empty pick of a method that found no value to weigh (`values`: the candidates
    that count, None where the value is missing): answered wrong when every missing value
    failed on its own completion, else not graded."""
    lacking = [c for c, v in zip(candidates, values, strict=True) if v is None]
    if lacking and all(c.failed_by == "completion" for c in lacking):
        return Pick(None, None, f"{reason}: scoring failed on every completion", wrong=True)
    return Pick(None, None, reason)


def _vote(candidates: Sequence[Candidate], weights: Sequence[float | None], what: str) -> Pick:
    """The cluster with the largest total weight (the first on a tie); its best member. No
    pick when a vote weighs less than 0: it would count against its own answer."""
    totals: dict[int, float] = {}
    for index, (candidate, weight) in enumerate(zip(candidates, weights, strict=True)):
        if candidate.cluster is None or weight is None:
            continue
        if weight < 0:
            return Pick(
                None,
                None,
                f"a vote's {what} must be >= 0 (candidate {index} has {weight:g}: its vote "
                "would count against its answer)",
            )
        totals[candidate.cluster] = totals.get(candidate.cluster, 0.0) + weight
    winner = _first_best(sorted(totals.items()))
    if winner is None:  # some candidate has an answer (`_voting`)
        answered = [c for c in candidates if c.cluster is not None]
        weighed = [w for c, w in zip(candidates, weights, strict=True) if c.cluster is not None]
        return _nothing_weighed(answered, weighed, f"no candidate with an answer has {what}")
    cluster, total = winner
    members = [
        (i, w)
        for i, (c, w) in enumerate(zip(candidates, weights, strict=True))
        if c.cluster == cluster and w is not None
    ]
    best = _first_best(members)
    assert best is not None
    return Pick(best[0], total, f"answer cluster {cluster} has the largest total {what}")


def _voting(choose: Chooser) -> Chooser:
    """`choose` for a voting method, where a group in which no candidate has an answer is
    answered wrong before anything is weighed: a refusal (a step outside [0, 1]) or an
    overflow on votes for nothing would leave it ungraded."""

    def voting(candidates: Sequence[Candidate], weights: Weights, temperature: float) -> Pick:
        if all(c.cluster is None for c in candidates):
            return Pick(None, None, "no candidate has an answer", wrong=True)
        return choose(candidates, weights, temperature)

    return voting


def _majority(candidates: Sequence[Candidate], weights: Weights, temperature: float) -> Pick:
    ones = [1.0 if c.cluster is not None else None for c in candidates]
    return _vote(candidates, ones, "votes")


def _best_of_n(candidates: Sequence[Candidate], weights: Weights, temperature: float) -> Pick:
    best = _first_best([(i, c.score) for i, c in enumerate(candidates) if c.score is not None])
    if best is None:
        scores = [c.score for c in candidates]
        return _nothing_weighed(candidates, scores, "no candidate was scored")
    return Pick(best[0], best[1], "the highest score")


def vote_weights(
    candidates: Sequence[Candidate], weights: Weights, temperature: float
) -> list[float | None]:
    """Each candidate's vote weight from its score (None when not scored)."""
    scores = [c.score for c in candidates]
    if weights == "raw":
        return scores
    if weights == "sigmoid":
        return [None if s is None else sigmoid(s) for s in scores]
    known = [s for s in scores if s is not None]
    if not known:
        return [None] * len(scores)
    top = max(known)  # exponents <= 0: no overflow, and the best weighs exp(0) = 1 before norm
    raw = [None if s is None else math.exp((s - top) / temperature) for s in scores]
    norm = math.fsum(w for w in raw if w is not None)
    return [None if w is None else w / norm for w in raw]


def _weighted(candidates: Sequence[Candidate], weights: Weights, temperature: float) -> Pick:
    return _vote(candidates, vote_weights(candidates, weights, temperature), f"{weights} weight")


def _oracle(candidates: Sequence[Candidate], weights: Weights, temperature: float) -> Pick:
    for index, candidate in enumerate(candidates):
        if candidate.correct:
            return Pick(index, 1.0, "a correct candidate")
    unknown = sum(c.correct is None for c in candidates)
    if unknown == len(candidates):
        return Pick(None, None, "no candidate was judged: oracle needs correctness (references)")
    if unknown:  # as pass@k: the unjudged one may be the correct one
        return Pick(None, None, f"no judged candidate is correct; {unknown} not judged")
    return Pick(0, 0.0, "no candidate is correct")


def _prod(steps: Sequence[float]) -> float:
    """The product of step probabilities; a ValueError for a score outside [0, 1] (a logit):
    two bad steps of -5 would multiply to 25 and beat two good ones of 0.9."""
    outside = next((s for s in steps if not 0 <= s <= 1), None)
    if outside is not None:
        raise ValueError(f"prod needs step scores in [0, 1] (probabilities), got {outside:g}")
    return math.prod(steps)


PRM_AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "min": min,
    "last": lambda steps: steps[-1],
    "prod": _prod,
    "mean": fmean,
}
"""How a PRM's per-step scores become one value per candidate (a ValueError: steps it
cannot aggregate)."""


def _prm(aggregate: str, vote: bool) -> Chooser:
    reduce = PRM_AGGREGATES[aggregate]

    def choose(candidates: Sequence[Candidate], weights: Weights, temperature: float) -> Pick:
        values: list[float | None] = []
        for index, candidate in enumerate(candidates):
            try:
                values.append(reduce(candidate.steps) if candidate.steps else None)
            except ValueError as exc:  # as a negative vote: no pick for the group
                return Pick(None, None, f"PRM {exc} (candidate {index})")
        if vote:
            return _vote(candidates, values, f"PRM {aggregate}")
        best = _first_best([(i, v) for i, v in enumerate(values) if v is not None])
        if best is None:
            return _nothing_weighed(candidates, values, "no candidate has step scores")
        return Pick(best[0], best[1], f"the highest PRM {aggregate}")

    return _voting(choose) if vote else choose


def _finite(choose: Chooser) -> Chooser:
    """`choose`, with no pick where the values overflow a float: an OverflowError would end
    the run, and an infinite (or NaN) value would win the group and is not JSON."""

    def finite(candidates: Sequence[Candidate], weights: Weights, temperature: float) -> Pick:
        try:
            pick = choose(candidates, weights, temperature)
        except OverflowError as exc:
            return Pick(None, None, f"the scores overflow a float ({exc})")
        if pick.score is not None and not math.isfinite(pick.score):
            return Pick(None, None, f"the pick's value is {pick.score} (the scores overflow)")
        return pick

    return finite


METHODS: dict[str, Method] = {
    method.name: Method(method.name, method.needs, _finite(method.choose))
    for method in [
        Method("majority", "answers", _voting(_majority)),
        Method("best_of_n", "scores", _best_of_n),
        Method("weighted_majority", "scores", _voting(_weighted)),
        *(
            Method(f"prm_{aggregate}_{mode}", "steps", _prm(aggregate, mode == "vote"))
            for aggregate in PRM_AGGREGATES
            for mode in ("max", "vote")
        ),
        Method("oracle", "correct", _oracle),
    ]
}
"""Every selection method, by name."""
