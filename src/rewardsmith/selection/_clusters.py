"""Answer clusters of one group: equal answers together, in order of first appearance.

Votes with the same key are one answer at once. In `math` mode two different keys may still be
one answer (`\\sqrt{12}`, `2\\sqrt{3}`): a key is compared with `same_answer` against each
earlier cluster whose representative (first answer) shares a bucket with it, and joins the
first where it is the same answer as every form already there (each key's first answer),
else starts a cluster (the greedy rule of Qwen2.5-Math's `group_pred`, with buckets instead
of every pair). Every form, not the representative alone, because answer equality is not
transitive across units: a bare `5` is `5 cm` and `5 m`, which differ, so after `5` and
`5 cm`, `5 m` starts its own cluster instead of joining theirs. The result still depends on
order, as Qwen's (`5 m` first, then `5` joins it). Comparisons are capped per group, in number
(`MAX_COMPARISONS_PER_VOTE` x votes with an answer) and in time (`GROUP_TIME_LIMIT_S` for
all of them: the group step runs in the engine's own process, outside any worker's hard
timeout, so answers built to make each comparison slow must not stall the batch). A
comparison still running at the time limit gives up, "not the same answer"; past either
cap, a key starts its own cluster, and the clustering says it was capped.
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
"""Pairwise comparisons a group may make, per vote with an answer (votes without one compare
nothing and must not buy comparisons for the others). Real groups need a handful in all (keys
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
    forms: list[str] = field(default_factory=list)
    """The first answer of each key in the cluster, the representative's first: a key joins
    only when it is the same answer as each of them."""

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


@dataclass
class _Budget:
    """What a group may still spend on comparisons, in number and in time."""

    most: int
    ends: float
    made: int = 0
    capped: bool = False

    def spend(self) -> bool:
        """Count one more comparison, or say (False) that none may start."""
        if self.made >= self.most or time.monotonic() >= self.ends:
            self.capped = True
            return False
        self.made += 1
        return True


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
    answered = sum(len(members) for members in by_key.values())
    budget = _Budget(MAX_COMPARISONS_PER_VOTE * answered, time.monotonic() + time_limit_s)
    with time_limit(time_limit_s):  # the numeric work of a comparison stops at `ends`
        for members in by_key.values():  # keys in order of first appearance
            answer = votes[members[0]].answer
            buckets = votes[members[0]].buckets
            assert answer is not None
            found = None
            if mode == "math":
                candidates = sorted({c for bucket in buckets for c in in_bucket.get(bucket, ())})
                for position in candidates:
                    forms = clusters[position].forms
                    if all(budget.spend() and same(answer, form) for form in forms):
                        found = position
                        clusters[position].forms.append(answer)
                        break
                    if budget.capped:
                        break
            if found is None:
                found = len(clusters)
                clusters.append(Cluster(answer, forms=[answer]))
                for bucket in buckets:
                    in_bucket.setdefault(bucket, []).append(found)
            clusters[found].members.extend(members)
    for item in clusters:
        item.members.sort()
    assignment: list[int | None] = [None] * len(votes)
    for position, item in enumerate(clusters):
        for member in item.members:
            assignment[member] = position
    return Clustering(clusters, assignment, budget.made, budget.capped)
