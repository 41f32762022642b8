"""Answer clusters of one group: equal answers together, in order of first appearance.

Votes with the same key are one answer at once. In `math` mode two different keys may still be
one answer (`\\sqrt{12}`, `2\\sqrt{3}`): a key is compared with `same_answer` against the
representative (first answer) of each earlier cluster it shares a bucket with, and joins the
first that is equal, else starts a cluster (the greedy rule of Qwen2.5-Math's `group_pred`,
with buckets instead of every pair). Comparisons are capped per group, in number
(`MAX_COMPARISONS_PER_VOTE` x votes) and in time (`GROUP_TIME_LIMIT_S` for all of them: the
group step runs in the engine's own process, outside any worker's hard timeout, so answers
built to make each comparison slow must not stall the batch). A comparison still running at
the time limit gives up, "not the same answer"; past either cap, a key starts its own
cluster, and the clustering says it was capped. Answer equality is not transitive across
units (`5` is `5 cm` and `5 m`, which differ): the greedy rule makes the result depend on
order, as Qwen's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..verifiers.math import same_answer, time_limit
from ._votes import ClusterMode, Vote

__all__ = [
    "GROUP_TIME_LIMIT_S",
    "MAX_COMPARISONS_PER_VOTE",
    "Cluster",
    "Clustering",
    "cluster_votes",
]

MAX_COMPARISONS_PER_VOTE = 8
"""Pairwise comparisons a group may make, per vote. Real groups need a handful in all (keys
that share a bucket are nearly always equal); only answers built to collide reach the cap."""

GROUP_TIME_LIMIT_S = 3.0
"""Wall-clock seconds all of a group's comparisons may take together: one comparison at the
math reward's numeric limit both ways, under the spec's default `timeout_s` (5). Real groups
take milliseconds."""


@dataclass
class Cluster:
    """One answer and the votes for it."""

    answer: str
    """The representative: the first vote's answer."""
    members: list[int] = field(default_factory=list)
    """Indices of the votes in the cluster, in input order."""

    @property
    def size(self) -> int:
        """Votes for this answer."""
        return len(self.members)


@dataclass(frozen=True)
class Clustering:
    """The clusters of a group and each vote's cluster."""

    clusters: list[Cluster]
    """In order of first appearance (a cluster starts with the first vote of its first key,
    and keys are taken in order of first appearance)."""
    assignment: list[int | None]
    """Each vote's cluster index; None for a vote without an answer."""
    comparisons: int = 0
    """Pairwise answer comparisons made."""
    capped: bool = False
    """Whether the comparison cap (in number or in time) left keys unmerged."""


def cluster_votes(
    votes: Sequence[Vote],
    mode: ClusterMode,
    same: Callable[[str, str], bool] = same_answer,
    time_limit_s: float = GROUP_TIME_LIMIT_S,
) -> Clustering:
    """Cluster a group's votes (`same` decides two math answers; injectable for tests) in at
    most `time_limit_s` of comparisons."""
    by_key: dict[str, list[int]] = {}
    for index, vote in enumerate(votes):
        if vote.answer is not None and vote.key is not None:
            by_key.setdefault(vote.key, []).append(index)
    clusters: list[Cluster] = []
    in_bucket: dict[str, list[int]] = {}  # bucket -> clusters whose representative is in it
    budget = MAX_COMPARISONS_PER_VOTE * len(votes)
    comparisons, capped = 0, False
    ends = time.monotonic() + time_limit_s
    with time_limit(time_limit_s):  # the numeric work of a comparison stops at `ends`
        for members in by_key.values():  # keys in order of first appearance
            first = votes[members[0]]
            assert first.answer is not None
            found = None
            if mode == "math":
                buckets = first.buckets
                candidates = sorted({c for bucket in buckets for c in in_bucket.get(bucket, ())})
                for position in candidates:
                    if comparisons >= budget or time.monotonic() >= ends:
                        capped = True
                        break
                    comparisons += 1
                    if same(first.answer, clusters[position].answer):
                        found = position
                        break
            if found is None:
                found = len(clusters)
                clusters.append(Cluster(first.answer))
                for bucket in first.buckets:
                    in_bucket.setdefault(bucket, []).append(found)
            clusters[found].members.extend(members)
    for item in clusters:
        item.members.sort()
    assignment: list[int | None] = [None] * len(votes)
    for position, item in enumerate(clusters):
        for member in item.members:
            assignment[member] = position
    return Clustering(clusters, assignment, comparisons, capped)
