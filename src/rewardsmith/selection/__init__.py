"""Test-time selection among a group's samples, and the label-free `majority_vote` reward.

    selection = rewardsmith.select(samples, "majority", cluster="math")
    selection.choices[0].answer, selection.summary["maj@k"]

`select` picks one candidate per group (`METHODS`: majority, best-of-N, weighted majority,
PRM aggregations, oracle) from answers clustered by the math reward's own equivalence (or
exactly, or normalised), scores from a spec or stored with the samples, and, when
correctness can be judged, summarises accuracy (`pass@1`, `mean_accuracy`, `maj@k`, `pass@k`).
`majority_vote` is the group-scoped reward type built on the same clustering.
"""

from ._clusters import GROUP_TIME_LIMIT_S, Cluster, Clustering, cluster_votes
from ._majority import MajorityVote, Ties, majority_vote
from ._methods import DEFAULT_WEIGHTS, METHODS, PRM_AGGREGATES, Candidate, Method, Pick, Weights
from ._metrics import GroupOutcome, summarize
from ._select import ANSWER_COMPONENT, Choice, Selection, Selector, select
from ._votes import ClusterMode, Vote, read_vote

__all__ = [
    "ANSWER_COMPONENT",
    "DEFAULT_WEIGHTS",
    "GROUP_TIME_LIMIT_S",
    "METHODS",
    "PRM_AGGREGATES",
    "Candidate",
    "Choice",
    "Cluster",
    "ClusterMode",
    "Clustering",
    "GroupOutcome",
    "MajorityVote",
    "Method",
    "Pick",
    "Selection",
    "Selector",
    "Ties",
    "Vote",
    "Weights",
    "cluster_votes",
    "majority_vote",
    "read_vote",
    "select",
    "summarize",
]
