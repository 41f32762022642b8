"""Build specs and run the result builder over hand-made scores, without worker processes."""

from __future__ import annotations

import json
from typing import Any

from rewardsmith import RewardSpec, Sample, Score
from rewardsmith.combine import ResultBuilder, Scored
from rewardsmith.models import Result

ECHO = "tests.combine.rewards_for_tests:echo"
UNIT = {"low": 0.0, "high": 1.0}
"""Component keys making an `echo` reward declare scores in [0, 1]."""


_SPECS: dict[str, RewardSpec] = {}


def spec(components: dict[str, dict[str, Any]], **top: Any) -> RewardSpec:
    """A spec whose components are all `echo` rewards (keyed by their own name); built once
    per distinct input (specs are frozen), so property tests stay within their deadline."""
    rewards = {name: {"type": ECHO, "key": name, **body} for name, body in components.items()}
    key = json.dumps([rewards, top], sort_keys=True, default=str)
    if key not in _SPECS:
        _SPECS[key] = RewardSpec.from_dict({"rewards": rewards, **top})
    return _SPECS[key]


def ok(value: float, **detail: Any) -> Score:
    return Score.ok(value, **detail)


def row(
    group: str | None, scores: dict[str, Score], sample_id: str = "", **metadata: Any
) -> Scored:
    sample = Sample(id=sample_id or "s", completion="x", group=group, metadata=metadata)
    return Scored(sample, scores)


def run(spec: RewardSpec, items: list[Scored | Result]) -> list[Result]:
    """Results for `items` in order, as the engine would emit them."""
    builder = ResultBuilder(spec, grouped=spec.needs_groups)
    out: list[Result] = []
    for i, item in enumerate(items):
        if isinstance(item, Scored) and item.sample.id == "s":
            item = Scored(item.sample.model_copy(update={"id": str(i)}), item.scores)
        out += builder.push(item)
    return out + builder.close()


def rewards_in_group(values: list[float], group: str = "g") -> list[Scored]:
    """One single-component (`r`) sample per value, all in `group`."""
    return [row(group, {"r": ok(v)}) for v in values]


def advantages(spec: RewardSpec, items: list[Scored | Result]) -> list[float | None]:
    return [r.advantage for r in run(spec, items)]
