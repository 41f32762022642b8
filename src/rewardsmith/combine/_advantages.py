"""Group transforms (`group_transform:`): rewards of a group of samples become advantages.

A group is the samples sharing `group` (a sample without one is a group of its own). Samples
whose status is `ok` take part with their reward; a sample whose failure the completion
caused takes part too, charged at a value no better than the group's worst (see
`_failures`); a not-applicable sample, or one failed by the dataset or the infrastructure, is
left out of every statistic and its `advantage` is null. A group whose values are all equal
gets exactly 0.0 (see `_stats`).

Batch-level steps (REINFORCE++ whitening, GDPO's final normalisation) run over a batch: the
samples of one engine call (what a trainer passes), or runs of at least `batch_size` samples
ending at a group boundary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ..models import Result, Sample
from ._base import Choice, Counted, Finite
from ._stats import Std, centred, root_mean_square, saturated, standardised

__all__ = [
    "BatchStep",
    "DrGrpo",
    "Entry",
    "Gdpo",
    "GroupTransform",
    "Grpo",
    "Rank",
    "Rloo",
    "Whiten",
    "centred_ranks",
]


@dataclass(frozen=True, slots=True)
class Entry:
    """One sample taking part in its group's statistics."""

    sample: Sample
    result: Result
    counted: tuple[Counted, ...]
    """The components that counted (for a charged or vetoed sample: each at the lower of the
    group's lowest and its range's low end, `_failures.charged_counted`)."""
    reward: float
    """The value the statistics see: the combined reward, or a charged failure's value."""
    charged: bool = False
    """A failure the completion caused (its result has no reward of its own)."""


@dataclass(frozen=True, slots=True)
class BatchStep:
    """Whitening over a batch after the per-group step."""

    size: int | None
    """Samples per batch (closed at the next group boundary); None: one engine call."""
    centred: bool
    """The group step already centred every group, so the batch mean is 0 by construction and
    is not subtracted (subtracting its float residue would move all-equal groups off 0)."""
    epsilon: float

    def apply(self, values: Sequence[float]) -> list[float]:
        """The batch's values whitened."""
        if not self.centred:
            return standardised(values, std="population", epsilon=self.epsilon)
        if not any(values):
            return [0.0] * len(values)
        spread = root_mean_square(values, len(values))
        return [v / (spread + self.epsilon) for v in values]


class GroupTransform(Choice):
    """A group transform: `advantages` per group, then an optional batch step."""

    @property
    def batch(self) -> BatchStep | None:
        """The batch-level step that follows the group step, if any."""
        return None


class Grpo(GroupTransform):
    """GRPO: ``A_i = (r_i - mean(r)) / (std(r) + epsilon)`` within the group.

    Shao et al. 2024, "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open
    Language Models", sec. 4.1.2 (outcome supervision). `std: population` divides the variance
    by n; `unbiased` by n - 1, as TRL and verl do (``torch.std``).
    """

    type: Literal["grpo"] = "grpo"
    std: Std = "population"
    epsilon: Finite = Field(default=1e-6, ge=0)

    def advantages(self, group: Sequence[Entry]) -> list[float]:
        """One advantage per entry."""
        return standardised([e.reward for e in group], std=self.std, epsilon=self.epsilon)


class DrGrpo(GroupTransform):
    """Dr. GRPO: ``A_i = r_i - mean(r)``, no division by the std.

    Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical Perspective": dividing by
    the group std weights too-easy and too-hard questions up (a question-level difficulty bias).
    """

    type: Literal["dr_grpo"] = "dr_grpo"

    def advantages(self, group: Sequence[Entry]) -> list[float]:
        """One advantage per entry."""
        return centred([e.reward for e in group])


class Rloo(GroupTransform):
    """RLOO: ``A_i = r_i - (sum_{j != i} r_j) / (n - 1)``, the leave-one-out baseline.

    Ahmadian et al. 2024, "Back to Basics: Revisiting REINFORCE Style Optimization for Learning
    from Human Feedback in LLMs" (eq. RLOO). Equivalently ``n / (n - 1) * (r_i - mean(r))``. A
    group of one has no other sample to be its baseline: its advantage is 0.0.
    """

    type: Literal["rloo"] = "rloo"

    def advantages(self, group: Sequence[Entry]) -> list[float]:
        """One advantage per entry."""
        n = len(group)
        deviations = centred([e.reward for e in group])
        if n == 1:
            return [0.0]
        return [saturated(n / (n - 1) * d) for d in deviations]


def centred_ranks(values: Sequence[float]) -> list[float]:
    """``(rank - (n + 1) / 2) / (n - 1)`` in [-0.5, 0.5]; ties share their average rank."""
    n = len(values)
    if n == 1:
        return [0.0]
    order = sorted(range(n), key=lambda i: values[i])
    ranks = [0.0] * n
    start = 0
    while start < n:
        end = start
        while end + 1 < n and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    middle = (n + 1) / 2
    return [(r - middle) / (n - 1) for r in ranks]


class Rank(GroupTransform):
    """Centred ranks: ``A_i = (rank_i - (n + 1) / 2) / (n - 1)`` in [-0.5, 0.5].

    The centred-rank fitness shaping of Salimans et al. 2017, "Evolution Strategies as a
    Scalable Alternative to Reinforcement Learning" (sec. 2.2): only the order of rewards
    matters, so the advantage is invariant to any increasing map of the reward (reward-model
    scale drift, outliers). Tied rewards share their average rank; advantages sum to 0.
    """

    type: Literal["rank"] = "rank"

    def advantages(self, group: Sequence[Entry]) -> list[float]:
        """One advantage per entry."""
        return centred_ranks([e.reward for e in group])


class Whiten(GroupTransform):
    """REINFORCE++: ``A = (r - mean_batch) / (std_batch + epsilon)`` over the batch.

    Hu 2025, "REINFORCE++: A Simple and Efficient Approach for Aligning Large Language Models":
    global (batch) advantage normalisation instead of per-prompt statistics. With `baseline:
    group_mean` (REINFORCE++-baseline in the same work) the group mean is subtracted first and
    the batch step only rescales. Without a group baseline the normalisation is global by
    design, so an all-equal group is not forced to 0.
    """

    type: Literal["whiten"] = "whiten"
    baseline: Literal["none", "group_mean"] = "none"
    epsilon: Finite = Field(default=1e-6, ge=0)
    batch_size: int | None = Field(default=None, gt=0)

    def advantages(self, group: Sequence[Entry]) -> list[float]:
        """The group step: the rewards, or the rewards minus the group mean."""
        rewards = [e.reward for e in group]
        return centred(rewards) if self.baseline == "group_mean" else rewards

    @property
    def batch(self) -> BatchStep:
        """Whitening over the batch."""
        return BatchStep(self.batch_size, self.baseline == "group_mean", self.epsilon)


class Gdpo(GroupTransform):
    """GDPO: normalise each component within the group, then sum (weighted), then whiten.

    Liu et al. 2026, "GDPO: Group reward-Decoupled Normalization Policy Optimization for
    Multi-reward RL Optimization": ``A_i = sum_k w_k (s_ik - mean_k) / (std_k + epsilon)``,
    each component k normalised over the group's samples where it counts, so distinct reward
    combinations do not collapse onto one advantage as they do when GRPO normalises the sum.
    With `batch_whiten` (the paper's default) the sums are then rescaled by their batch std.

    A component that does not apply to a sample adds 0 for it. A component scored but gated
    off (`only_if` closed) enters its normalisation at its lowest value, as it counts in the
    total (`_bounds.gated_off_score`): at the group mean (0) a wrong answer whose `format` is
    gated off would beat a correct one badly formatted. A vetoed sample counts its components
    as a charged failure does (`_failures.charged_counted`). The `combine:` mode does not enter
    the advantage (the `reward` field is still the combined reward).
    """

    type: Literal["gdpo"] = "gdpo"
    epsilon: Finite = Field(default=1e-6, ge=0)
    batch_whiten: bool = True
    batch_size: int | None = Field(default=None, gt=0)

    def advantages(self, group: Sequence[Entry]) -> list[float]:
        """One advantage per entry: the weighted sum of per-component normalised scores."""
        sums = [[0.0] for _ in group]
        names = dict.fromkeys(c.name for e in group for c in e.counted)
        for name in names:
            cells = [(i, c) for i, e in enumerate(group) for c in e.counted if c.name == name]
            z = standardised([c.score for _, c in cells], std="population", epsilon=self.epsilon)
            for (i, c), value in zip(cells, z, strict=True):
                sums[i].append(c.weight * value)
        return [math.fsum(parts) for parts in sums]

    @property
    def batch(self) -> BatchStep | None:
        """Rescaling over the batch (the sums are centred per group already)."""
        return BatchStep(self.batch_size, True, self.epsilon) if self.batch_whiten else None
