"""Length control as transforms of a length component: cosine, Kimi group reward, GRPO-lambda.

The length itself is measured by the `length` reward type (DAPO's soft overlong penalty lives
there, and is not repeated here): these transforms read the `detail.length` it reports and
replace its score. Each names the component that says whether the answer is correct
(`correct:`), judged on that component's raw score: correct when it reaches `correct_threshold`
(default: the top of that reward's range, 1.0 for the 0-1 rewards). A partial score is not a
correct answer: with `correct: f1`, the hedge "Paris or London" (F1 0.67 against "Paris") is
on the wrong branch, where any score > 0 would have paid it as correct.

    rewards:
      correct: {type: math}
      brevity:
        type: length
        max_length: 4096
        cache_length: 512
        transform: [{type: kimi, correct: correct}, {type: grpo_lambda, correct: correct}]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from ..models import Score
from ._base import Choice, Finite, shaped, withdrawn
from ._bounds import Bounds
from ._shaping import PerSample, Row, replaced

__all__ = ["Cosine", "GrpoLambda", "Kimi"]


def _length(score: Score, transform: str) -> int | Score:
    """The length a `length` component reported, or the `invalid` score saying it is missing."""
    n = score.detail.get("length")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        return withdrawn(
            score, "invalid", f"{transform} needs the component's detail.length (a `length` reward)"
        )
    return n


def _unknown(score: Score, correct: str, transform: str) -> Score:
    return withdrawn(score, "not_applicable", f"{transform}: component {correct!r} has no score")


class Cosine(PerSample):
    """Cosine length-scaled reward: correct answers gain by being short, wrong ones by being long.

    Yeo et al. 2025, "Demystifying Long Chain-of-Thought Reasoning in LLMs", eq. 1:
    ``CosFn(t, T, r_0, r_T) = r_T + (r_0 - r_T) * (1 + cos(t * pi / T)) / 2`` for a completion
    of length t <= T = `max_length`, going from r_0 at length 0 to r_T at `max_length`, with
    (r_0, r_T) = (`correct_at_0`, `correct_at_max`) for a correct answer and (`wrong_at_0`,
    `wrong_at_max`) for a wrong one; past `max_length` the reward is `exceed`. Defaults are
    those of open-r1's ``get_cosine_scaled_reward``.
    """

    type: Literal["cosine"] = "cosine"
    correct: str
    correct_threshold: Finite | None = None
    max_length: int = Field(gt=0)
    correct_at_0: Finite = 1.0
    correct_at_max: Finite = 0.5
    wrong_at_0: Finite = -1.0
    wrong_at_max: Finite = -0.5
    exceed: Finite = -1.0

    def bounds(self, given: Bounds) -> Bounds:
        values = (
            self.correct_at_0,
            self.correct_at_max,
            self.wrong_at_0,
            self.wrong_at_max,
            self.exceed,
        )
        return Bounds(min(values), max(values))

    def one(self, score: Score, row: Row) -> Score:
        n = _length(score, "cosine")
        if isinstance(n, Score):
            return n
        correct = row.correct(self.correct, self.correct_threshold)
        if correct is None:
            return _unknown(score, self.correct, "cosine")
        if n > self.max_length:
            return shaped(score, self.exceed, correct=correct)
        at_0, at_max = (
            (self.correct_at_0, self.correct_at_max)
            if correct
            else (self.wrong_at_0, self.wrong_at_max)
        )
        value = at_max + (at_0 - at_max) * (1 + math.cos(n * math.pi / self.max_length)) / 2
        return shaped(score, value, correct=correct)


class Kimi(Choice):
    """Kimi k1.5 group length reward, in [-0.5, 0.5].

    Kimi Team 2025, "Kimi k1.5: Scaling Reinforcement Learning with LLMs", sec. 2.3.3 (length
    penalty): within a group, ``lambda = 0.5 - (len - min_len) / (max_len - min_len)``; a correct
    answer gets lambda, a wrong one ``min(0, lambda)`` (short wrong answers are not rewarded for
    being short). When every length in the group is the same, lambda is 0 for all.
    """

    type: Literal["kimi"] = "kimi"
    correct: str
    correct_threshold: Finite | None = None

    def bounds(self, given: Bounds) -> Bounds:
        return Bounds(-0.5, 0.5)

    @property
    def group_scoped(self) -> bool:
        """min_len and max_len are the group's."""
        return True

    def apply(self, name: str, rows: Sequence[Row]) -> list[Score]:
        new: dict[int, Score] = {}
        known: list[tuple[int, int, bool]] = []
        for i, row in enumerate(rows):
            score = row.scores[name]
            if score.status != "ok" or not row.counts(name):
                continue
            n = _length(score, "kimi")
            correct = row.correct(self.correct, self.correct_threshold)
            if isinstance(n, Score):
                new[i] = n
            elif correct is None:
                new[i] = _unknown(score, self.correct, "kimi")
            else:
                known.append((i, n, correct))
        if known:
            low = min(n for _, n, _ in known)
            high = max(n for _, n, _ in known)
            for i, n, correct in known:
                lam = 0.0 if high == low else 0.5 - (n - low) / (high - low)
                new[i] = shaped(rows[i].scores[name], lam if correct else min(0.0, lam))
        return replaced(name, rows, new)


class GrpoLambda(Choice):
    """GRPO-lambda switch: the length reward counts only in groups that are mostly correct.

    Dai, Liu and Si 2025, "Stable Reinforcement Learning for Efficient Reasoning" (GRPO-lambda,
    arXiv 2505.18086): a length penalty applied to every group collapses accuracy early in
    training; applying it only where the group's correctness ratio is high (here: at least
    `threshold`) and falling back to the plain 0/1 reward elsewhere keeps training stable.
    In a group below the threshold this component becomes `not_applicable` (it does not count;
    the reason names the ratio). The ratio is over the samples whose correctness is known and
    whose component counts (`Row.counts`: one behind a closed gate is left as it is).
    """

    type: Literal["grpo_lambda"] = "grpo_lambda"
    correct: str
    correct_threshold: Finite | None = None
    threshold: Finite = Field(default=0.5, ge=0, le=1)

    def bounds(self, given: Bounds) -> Bounds:
        return given

    @property
    def group_scoped(self) -> bool:
        """The correctness ratio is the group's."""
        return True

    def apply(self, name: str, rows: Sequence[Row]) -> list[Score]:
        verdicts = [
            v
            for row in rows
            if row.counts(name)
            and (v := row.correct(self.correct, self.correct_threshold)) is not None
        ]
        ratio = sum(verdicts) / len(verdicts) if verdicts else 0.0
        if verdicts and ratio >= self.threshold:
            return replaced(name, rows, {})
        reason = f"grpo_lambda: group correctness ratio {ratio:g} < threshold {self.threshold:g}"
        return [
            withdrawn(score, "not_applicable", reason)
            if (score := row.scores[name]).status == "ok" and row.counts(name)
            else score
            for row in rows
        ]
