"""ReNorm: per-step process rewards calibrated by the outcome."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..models import Score
from ._base import Choice, Finite
from ._bounds import Bounds

__all__ = ["ReNorm"]


class ReNorm(Choice):
    """Reward Normalization of process and outcome rewards.

    Xu et al. 2025, "Hybrid Reward Normalization for Process-supervised Non-verifiable Agentic
    Tasks" (PPR, arXiv 2509.25598): with a process reward r_p,t in [0, 1] for each step t and
    an outcome r_o in {0, 1}, a step before the last gets ``r_t = r_p,t + r_o - beta`` and the
    last (answer) step gets ``r_T = r_o``. With beta = 1 a wrong trajectory's steps land in
    [-1, 0] and a right one's in [0, 1]: no step of a wrong answer is rewarded above a step of a
    right one, however good the process model thinks it is.

    One departure from the paper: a trajectory of a single step keeps its process term,
    ``r_1 = r_p,1 + r_o - beta``. With ``r_T = r_o`` a lone step would be the outcome alone, so
    an answer written as one paragraph (one step for a paragraph-splitting PRM) would escape
    the process model: a wrong one would earn 0, the best any wrong trajectory can, and a right
    one 1, the maximum, whatever the process model thinks of it.

    Where the numbers come from: the `process` component reports one reward per step of the
    trajectory, in order, the answer step last, as ``detail.steps`` (its own score is not
    used); the `outcome` component's score is r_o (a score in [0, 1] is accepted). The last
    step's process reward is replaced by the outcome, as above, unless it is the only step.

    Output: the per-step rewards are the result's `steps` list. Its `reward`, the scalar a
    trainer without per-step credit uses (ours; the paper gives only per-step rewards), is
    ``(min of the process terms + r_o) / 2``: the process terms are the steps before the last
    (a lone step's own), so the outcome weighs one half whatever the number of steps. The mean
    of all k steps would weigh it 1/k, and a wrong answer's penalty would shrink with fewer
    steps (red team rtsel: -0.05 in 2 steps, -0.09 in 10, at 0.9 per step). The min, not the
    mean, of the process terms, so that padding with easy steps can only lower the reward
    (red team rt22: one bad step at 0.1 in a wrong answer gives -0.45; with a mean, nine
    trivially true steps beside it would give -0.045). Like a PRM's `min`, it rewards fewer
    steps: each added step can only lower it. With beta = 1 a right answer's reward is in
    [1/2, 1] and a wrong one's in [-1/2, 0].
    """

    type: Literal["renorm"] = "renorm"
    process: str
    outcome: str
    beta: Finite = 1.0

    def steps(self, process: Score, outcome: Score) -> list[float] | str:
        """The per-step rewards, or why they cannot be computed."""
        raw = process.detail.get("steps")
        if not isinstance(raw, list) or not raw:
            return f"renorm: component {self.process!r} must report detail.steps, a non-empty list"
        if not all(
            isinstance(r, int | float) and not isinstance(r, bool) and 0 <= r <= 1 for r in raw
        ):
            return f"renorm: {self.process}.detail.steps must be numbers in [0, 1]"
        r_o = outcome.score
        if r_o is None or not 0 <= r_o <= 1:
            return f"renorm: outcome {self.outcome!r} must score in [0, 1], got {r_o!r}"
        if len(raw) == 1:
            return [raw[0] + r_o - self.beta]
        return [r + r_o - self.beta for r in raw[:-1]] + [r_o]

    @staticmethod
    def reward(steps: list[float], outcome: float) -> float:
        """The scalar reward of a trajectory: half its worst process term, half the outcome."""
        process = steps[:-1] if len(steps) > 1 else steps
        return (min(process) + outcome) / 2

    def lowest(self, members: Sequence[tuple[str, Bounds]]) -> float:
        """A reward no trajectory scores below: a process term is at least ``-beta``, the
        outcome at least 0."""
        return min(0.0, -self.beta / 2)
