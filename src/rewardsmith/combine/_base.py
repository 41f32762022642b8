"""What the combination pieces share: the config base class and its number type, and a scored
sample."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from ..models import Cause, Sample, Score, Status

__all__ = ["Choice", "Counted", "Finite", "Scored", "shaped", "withdrawn"]

Finite = Annotated[float, Field(allow_inf_nan=False)]
"""A number of the spec: infinite or NaN is refused at load, naming its key (one would make
rewards or advantages NaN, infinite or 0 for every sample, with status `ok`)."""


class Choice(BaseModel):
    """One spec choice (`type:` plus its parameters): frozen, validated, picklable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


@dataclass(frozen=True, slots=True)
class Scored:
    """A sample with every component's score, before transforms and combination."""

    sample: Sample
    scores: Mapping[str, Score]


class Counted(NamedTuple):
    """A component that counts in one sample's combination."""

    name: str
    position: int
    """Index of the component in the spec (its rank for lexicographic order)."""
    weight: float
    score: float
    passed: bool
    """Its own verdict, on its score before shaping (as gates and vetoes read it)."""


def shaped(score: Score, value: float, **detail: object) -> Score:
    """`score` with a new value; its detail (the engine's `raw_score` among it) is kept."""
    return Score(score=value, status="ok", detail={**score.detail, **detail})


def withdrawn(score: Score, status: Status, reason: str, cause: Cause | None = None) -> Score:
    """`score` without a value (`status`, with the reason and, for a failure, who caused
    it); its detail (the engine's `raw_score` among it) is kept."""
    detail = {**score.detail, "reason": reason}
    if cause is not None:
        detail["cause"] = cause
    return Score(score=None, status=status, detail=detail)
