"""Turning component scores into one reward, and a group's rewards into advantages.

Per-component shaping (`transform:`) runs first, then the combination (`combine:`), then the
group transform (`group_transform:`). `ResultBuilder` runs all three over a stream of scored
samples for the engine.
"""

from ._advantages import DrGrpo, Entry, Gdpo, Grpo, Rank, Rloo, Whiten
from ._base import Counted, Finite, Scored
from ._bounds import Bounds, check_combination, component_bounds, lowest_total
from ._combine import (
    COMBINERS,
    Combined,
    Simple,
    combine,
    combine_scores,
    counted,
    fired_veto,
    passes,
)
from ._ensemble import Uncertainty
from ._failures import charged_value
from ._groups import GroupOrder, ResultBuilder
from ._length import Cosine, GrpoLambda, Kimi
from ._lexicographic import Lexicographic
from ._renorm import ReNorm
from ._shaping import Clip, MeanStd, MinMax, Par, Tanh
from ._tournament import Contestant, Tournament

COMBINE_TYPES = {
    **{name: Simple for name in COMBINERS},
    "uncertainty": Uncertainty,
    "lexicographic": Lexicographic,
    "renorm": ReNorm,
}
"""`combine:` names and their config classes."""

TRANSFORM_TYPES = {
    "clip": Clip,
    "tanh": Tanh,
    "min_max": MinMax,
    "mean_std": MeanStd,
    "par": Par,
    "cosine": Cosine,
    "kimi": Kimi,
    "grpo_lambda": GrpoLambda,
}
"""Per-component `transform:` names and their config classes."""

GROUP_TRANSFORM_TYPES = {
    "grpo": Grpo,
    "dr_grpo": DrGrpo,
    "rloo": Rloo,
    "whiten": Whiten,
    "rank": Rank,
    "gdpo": Gdpo,
    "tournament": Tournament,
}
"""`group_transform:` names and their config classes."""

Combiner = Simple | Uncertainty | Lexicographic | ReNorm
Transform = Clip | Tanh | MinMax | MeanStd | Par | Cosine | Kimi | GrpoLambda
GroupTransform = Grpo | DrGrpo | Rloo | Whiten | Rank | Gdpo | Tournament

__all__ = [
    "COMBINERS",
    "COMBINE_TYPES",
    "GROUP_TRANSFORM_TYPES",
    "TRANSFORM_TYPES",
    "Bounds",
    "Combined",
    "Combiner",
    "Contestant",
    "Counted",
    "Entry",
    "Finite",
    "GroupOrder",
    "GroupTransform",
    "ReNorm",
    "ResultBuilder",
    "Scored",
    "Simple",
    "Transform",
    "charged_value",
    "check_combination",
    "combine",
    "combine_scores",
    "component_bounds",
    "counted",
    "fired_veto",
    "lowest_total",
    "passes",
]
