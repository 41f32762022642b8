"""Rubrics: one criterion model, and loaders for the published formats.

A criterion is a statement the judge marks met or not met. Its `weight` may be negative; its
`polarity` says which way "met" points: a `pitfall` is phrased so that "met" means the bad
thing happened ("Recommends antibiotics for a viral infection"), and its effective weight is
always negative (`points`). `kind`: `principle` is weighted, `hard_rule` gates (every hard
rule must pass, else the score is 0), `verifiable` is left to a rule reward of the engine
(the judge skips it).

Accepted forms (`load_rubric` detects which):

* HealthBench: ``[{"criterion": str, "points": int, "tags": [...]}]`` (or an item holding
  them under ``rubrics``); negative points are pitfalls.
* Rubrics as Rewards: ``[{"title": str, "description": "Essential Criteria: ...",
  "weight": 5}]``; the category prefix (Essential / Important / Optional / Pitfall) becomes a
  tag, and a Pitfall (or a negative weight) a pitfall.
* OpenRubrics: text, one numbered criterion per line tagged ``[Hard Rule]`` or
  ``[Principle]`` (``1. The response must be in French. [Hard Rule]``).
* Plain: ``[{criterion: str, weight: float, kind: hard_rule|principle|verifiable,
  polarity: positive|pitfall, tags: [...]}]`` (also a list of bare strings), in YAML or JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = ["Criterion", "Rubric", "RubricError", "load_rubric", "parse_openrubrics"]

RubricFormat = Literal["auto", "plain", "healthbench", "rar", "openrubrics"]


class RubricError(ValueError):
    """A rubric that cannot be read; the message says where."""


class Criterion(BaseModel):
    """One rubric item."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    """What the judge checks, phrased so that "met" is a yes."""
    weight: float = 1.0
    """Magnitude of the item (HealthBench points, RaR weight); a pitfall counts negatively."""
    kind: Literal["hard_rule", "principle", "verifiable"] = "principle"
    polarity: Literal["positive", "pitfall"] = "positive"
    tags: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _sign(cls, data: Any) -> Any:
        """A negative weight without a polarity is a pitfall; with `positive` it is an error."""
        weight = data.get("weight") if isinstance(data, dict) else None
        if isinstance(weight, int | float) and weight < 0:
            if data.get("polarity", "pitfall") != "pitfall":
                raise ValueError(
                    "a negative weight means a pitfall: set polarity: pitfall "
                    "(or give the weight as positive)"
                )
            data = {**data, "polarity": "pitfall"}
        return data

    @property
    def points(self) -> float:
        """The signed contribution when the criterion is met."""
        return -abs(self.weight) if self.polarity == "pitfall" else self.weight

    def passes(self, met: bool) -> bool:
        """For a hard rule: met, or for a pitfall-phrased rule, not met."""
        return met != (self.polarity == "pitfall")


class Rubric(BaseModel):
    """An ordered list of criteria."""

    model_config = ConfigDict(frozen=True)

    criteria: tuple[Criterion, ...]


_RAR_CATEGORY = re.compile(
    r"^\s*(essential|important|optional|pitfall)(?:\s+criteri(?:a|on))?\s*:\s*", re.IGNORECASE
)
_OPEN_LINE = re.compile(r"^\s*(?:\d+\s*[.):]|[-*])\s*(?P<body>.+?)\s*$")
_OPEN_TAG = re.compile(r"\[\s*(hard\s*rule|principle)\s*\]\s*:?", re.IGNORECASE)


def parse_openrubrics(text: str) -> list[Criterion]:
    """OpenRubrics numbered lines; the ``[Hard Rule]`` / ``[Principle]`` tag may lead or trail."""
    criteria: list[Criterion] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _OPEN_LINE.match(line)
        tag = _OPEN_TAG.search(line)
        if match is None or tag is None:
            raise RubricError(
                f"rubric line {number}: expected a numbered criterion tagged [Hard Rule] or "
                f"[Principle], got {line.strip()[:80]!r}"
            )
        body = _OPEN_TAG.sub("", match.group("body")).strip(" :-")
        kind = "hard_rule" if "hard" in tag.group(1).lower() else "principle"
        criteria.append(Criterion(text=body, kind=kind))
    return criteria


def _one(item: Any, fmt: str, index: int) -> Criterion:
    if isinstance(item, str) and fmt in ("auto", "plain"):
        return Criterion(text=item)
    if not isinstance(item, dict):
        raise RubricError(f"rubric item {index}: expected a mapping, got {item!r:.80}")
    if fmt == "auto":
        if "points" in item:
            fmt = "healthbench"
        elif "description" in item or "title" in item:
            fmt = "rar"
        else:
            fmt = "plain"
    if fmt == "healthbench":
        points = item.get("points")
        if not isinstance(points, int | float) or isinstance(points, bool):
            raise RubricError(f"rubric item {index}: HealthBench 'points' must be a number")
        return Criterion(
            text=item.get("criterion", ""),
            weight=abs(points),
            polarity="pitfall" if points < 0 else "positive",
            tags=tuple(item.get("tags") or ()),
        )
    if fmt == "rar":
        description = str(item.get("description") or item.get("title") or "")
        category = _RAR_CATEGORY.match(description) or _RAR_CATEGORY.match(
            str(item.get("title") or "")
        )
        weight = item.get("weight", 1.0)
        if not isinstance(weight, int | float) or isinstance(weight, bool):
            raise RubricError(f"rubric item {index}: RaR 'weight' must be a number")
        name = category.group(1).lower() if category else None
        pitfall = name == "pitfall" or weight < 0
        text = _RAR_CATEGORY.sub("", description, count=1).strip()
        return Criterion(
            text=text,
            weight=abs(weight),
            polarity="pitfall" if pitfall else "positive",
            tags=(name,) if name else (),
        )
    data = dict(item)
    if "criterion" in data:
        data["text"] = data.pop("criterion")
    if "tags" in data and data["tags"] is not None:
        data["tags"] = tuple(data["tags"])
    return Criterion.model_validate(data)


def load_rubric(source: Any, fmt: RubricFormat = "auto") -> Rubric:
    """A rubric from a list of items, an item holding ``rubrics``/``rubric``/``criteria``,
    OpenRubrics text, or a path to a ``.yaml``/``.yml``/``.json``/``.txt`` file."""
    if isinstance(source, Rubric):
        return source
    if isinstance(source, Path) or (
        isinstance(source, str)
        and "\n" not in source
        and source.endswith((".yaml", ".yml", ".json", ".txt", ".md"))
    ):
        path = Path(source)
        if not path.is_file():
            raise RubricError(f"rubric file not found: {path}")
        text = path.read_text(encoding="utf-8")
        source = (
            text
            if path.suffix in (".txt", ".md")
            else (json.loads(text) if path.suffix == ".json" else yaml.safe_load(text))
        )
    if isinstance(source, dict):
        for key in ("rubrics", "rubric", "criteria"):
            if key in source:
                return load_rubric(source[key], fmt)
        raise RubricError("a rubric mapping needs a 'rubrics', 'rubric' or 'criteria' list")
    try:
        if isinstance(source, str):
            if fmt not in ("auto", "openrubrics"):
                raise RubricError(f"rubric text is only read as openrubrics, not {fmt}")
            criteria = parse_openrubrics(source)
        elif isinstance(source, list | tuple):
            criteria = [_one(item, fmt, i) for i, item in enumerate(source, 1)]
        else:
            raise RubricError(f"not a rubric: {source!r:.80}")
    except ValidationError as exc:
        error = exc.errors()[0]
        raise RubricError(f"rubric: {error['msg']} ({'.'.join(map(str, error['loc']))})") from exc
    if not criteria:
        raise RubricError("the rubric has no criteria")
    return Rubric(criteria=tuple(criteria))
