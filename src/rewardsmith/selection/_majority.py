"""The `majority_vote` reward: label-free, 1 for agreeing with the group's majority answer.

Test-time RL without labels (TTRL, Zuo et al. 2025, "TTRL: Test-Time Reinforcement Learning")
rewards each sampled answer by whether it agrees with the majority answer of its group: the
majority stands in for the missing label. The reward needs the whole group, so it is a
group-scoped type: workers read each sample's answer (`_votes`), then the engine clusters
the group's answers (`_clusters`) and scores every sample once the group is complete.

A sample scores 1 when its answer is in the majority cluster, else 0. A sample without an
answer (none committed, a hedge, an unfinished form) votes for nothing and scores 0. When
clusters tie for the most votes, `ties` decides: `none` (the default) gives every tied
cluster 0 (no majority, no signal), `all` gives each 1, `first` gives the cluster that
appeared first 1 (as Qwen2.5-Math's maj@k picks). A group of one sample (or a sample with no
`group`) has no majority to agree with: `not_applicable`.

`detail` carries the sample's `answer`, its `cluster` (index in order of first appearance)
and that cluster's `votes`; the group's `majority` answer (None on a tie without a winner),
its `share` of the samples that were read (those without an answer count), the `entropy`
(nats) of the answer distribution over the samples with an answer, and `clusters` (the
sizes). Consensus rewards can be earned by collapse: a policy that always gives the same
answer wins every vote. Watch `entropy` and accuracy on labelled data while training on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from ..models import Sample, Score
from ..registry import reward
from ._clusters import cluster_votes
from ._votes import ClusterMode, Vote, metadata_path, read_vote

__all__ = ["MajorityVote", "Ties", "majority_vote"]

Ties = Literal["none", "all", "first"]
"""Who wins when clusters tie for the most votes: nobody, all of them, the first to appear."""


def entropy(sizes: Sequence[int]) -> float:
    """Shannon entropy (nats) of the distribution given by cluster sizes."""
    total = sum(sizes)
    return max(0.0, -math.fsum(n / total * math.log(n / total) for n in sizes if n))


class MajorityVote:
    """The `majority_vote` reward: `__call__` reads a vote, `group` scores a whole group."""

    bounds = (0.0, 1.0)
    """Its scores' range, declared as `registry.bounded` does (vetoes, `product`... read it)."""

    def __init__(self, cluster: ClusterMode, answer_key: str | None, ties: Ties) -> None:
        self.cluster = cluster
        self.answer_from = metadata_path(answer_key) if answer_key is not None else None
        self.ties = ties

    def __call__(self, sample: Sample) -> Score:
        """The sample's vote; the score is set by `group`."""
        return Score.ok(0.0, **read_vote(sample, self.cluster, self.answer_from).detail())

    def group(self, samples: Sequence[Sample], scores: Sequence[Score]) -> list[Score]:
        """Each sample's reward from the votes of its whole group."""
        read = [i for i, score in enumerate(scores) if score.status == "ok"]
        votes = [Vote.from_detail(scores[i].detail) for i in read]
        if len(samples) < 2:
            reason = "majority_vote needs the other samples of its group (a group of one)"
            out = list(scores)
            for i, vote in zip(read, votes, strict=True):
                cluster = None if vote.answer is None else 0
                out[i] = Score.failed("not_applicable", reason, answer=vote.answer, cluster=cluster)
            return out
        clustering = cluster_votes(votes, self.cluster)
        sizes = [c.size for c in clustering.clusters]
        top = max(sizes, default=0)
        leaders = [c for c, size in enumerate(sizes) if size == top]
        winners = set(leaders)
        if len(leaders) > 1 and self.ties == "none":
            winners = set()
        elif self.ties == "first":
            winners = set(leaders[:1])
        majority = clustering.clusters[leaders[0]].answer if len(winners) == 1 else None
        common: dict[str, Any] = {
            "majority": majority,
            "share": top / len(votes) if votes else 0.0,
            "entropy": entropy(sizes),
            "clusters": sizes,
        }
        if len(leaders) > 1:
            common["tied"] = [clustering.clusters[c].answer for c in leaders]
        if clustering.capped:
            common["comparisons_capped"] = True
        out = list(scores)
        for i, vote, position in zip(read, votes, clustering.assignment, strict=True):
            if position is None:
                out[i] = Score.ok(0.0, answer=None, reason=vote.reason, **common)
                continue
            won = position in winners
            out[i] = Score.ok(
                1.0 if won else 0.0,
                answer=vote.answer,
                cluster=position,
                votes=sizes[position],
                reason=self._reason(won, sizes[position], top, len(leaders), len(votes)),
                **common,
            )
        return out

    def _reason(self, won: bool, votes: int, top: int, leaders: int, read: int) -> str:
        if leaders > 1 and votes == top:
            outcome = "wins the tie" if won else "no majority"
            return (
                f"{outcome}: {leaders} answers tied with {top} of {read} votes (ties: {self.ties})"
            )
        if won:
            return f"the majority answer ({votes} of {read} votes)"
        return f"not the majority answer ({votes} of {read} votes; the majority has {top})"


@reward("majority_vote", preload=("mpmath",), group_scoped=True)
def majority_vote(
    *, cluster: ClusterMode = "math", answer_key: str | None = None, ties: Ties = "none"
) -> MajorityVote:
    """Label-free (TTRL): 1 when the sample's answer is the majority answer of its group.

    `cluster`: how answers are told apart (`math`: the math reward's equivalence; `exact`;
    `normalized`). `answer_key`: take each answer from `metadata.KEY` instead of reading the
    completion. `ties`: `none` (tied clusters get 0), `all` (each gets 1), `first` (the first
    to appear gets 1). No reference is needed.
    """
    return MajorityVote(cluster, answer_key, ties)
