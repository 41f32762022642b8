"""A result as trainers take it: one value per component whose weighted sum is the total,
the charge for a failure the completion caused, and failure counts for their logs.

Conversions the reward server shares too (query -> completion, the always-a-float reward,
per-component logs) are in `rewardsmith.integrations._protocol`, which builds on this module.

Absolute imports only: verl loads `verl.py` by file path (as a module outside any package),
and that module imports this one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rewardsmith._exceptions import ConfigError
from rewardsmith.combine import charged_value, counted, fired_veto
from rewardsmith.models import FAILURE_STATUSES, Result
from rewardsmith.spec import RewardSpec

__all__ = [
    "charged_rewards",
    "check_split",
    "component_values",
    "failure_counts",
    "gated_scores",
    "group_low_values",
    "splits_into_components",
]


def gated_scores(spec: RewardSpec, result: Result) -> dict[str, float | None]:
    """Each component's value as the total used it: its (shaped) score when it counted, its
    lowest value when its `only_if` gate was closed (a gate reads the gated value: `bonus ->
    correct -> safe` is closed when `safe` fails), None when it did not apply or failed. Every
    adapter reports
    per-component values through this one function, so they agree with the engine's total."""
    values: dict[str, float | None] = dict.fromkeys(spec.rewards)
    for c in counted(spec, result.components):
        values[c.name] = c.score
    return values


def charged_rewards(
    spec: RewardSpec, results: Sequence[Result], groups: Sequence[Any] | None = None
) -> list[float | None]:
    """For each result whose failure the completion caused, the reward it is charged (see
    `rewardsmith.combine._failures`); None for every other result.

    The charge is ``min(on_error, the lowest reward of the sample's group, the lowest total
    the spec can produce)`` (whichever exist; strictly below the group's lowest when the
    spec's lowest total is unknown), so a failure never earns a trainer's group baseline more
    than the group's worst answer, even in a group whose other answers are all correct.
    `groups` gives each result's group (None: each result is a group of its own).
    """
    keys = list(groups) if groups is not None else [object() for _ in results]
    rewards: dict[Any, list[float]] = {}
    for key, result in zip(keys, results, strict=True):
        if result.status == "ok" and result.reward is not None:
            rewards.setdefault(key, []).append(result.reward)
    return [
        charged_value(spec, rewards.get(key, [])) if result.cause == "completion" else None
        for key, result in zip(keys, results, strict=True)
    ]


def _carried(spec: RewardSpec, first: Sequence[str], total: float | None) -> list[float | None]:
    """Values whose weighted sum is exactly `total`: ``total / weight`` on the first of
    `first` (then of all components) with a non-zero weight, None elsewhere."""
    names = list(spec.rewards)
    values: list[float | None] = [None] * len(names)
    carrier = next((n for n in [*first, *names] if spec.rewards[n].weight != 0), None)
    if total is not None and carrier is not None:
        values[names.index(carrier)] = total / spec.rewards[carrier].weight
    return values


def component_values(
    spec: RewardSpec, result: Result, charged: float | None = None
) -> list[float | None]:
    """The result split into one value per component, in spec order, for trainers that sum.

    Trainers such as TRL compute ``sum(weight_i * value_i)`` over the values that are not
    None. These values make that sum equal the spec's `weighted_sum` total:

    - a component that counted gives its (shaped) score, or its lowest value when its gate is
      closed (`gated_scores`);
    - a component that does not apply gives None (not counted);
    - when a `veto` fired, the total is the veto's (the lowest the spec can produce), carried
      by the veto component: ``total / weight`` there, None elsewhere;
    - a failed sample carries, on its first failed component, `charged` when the completion
      caused the failure (`charged_rewards`), else the spec's `on_error`; when that is None,
      every value is None and the trainer sees no reward for it at all.
    """
    components = result.components
    if result.status in FAILURE_STATUSES:
        failed = [n for n in spec.rewards if components[n].status in FAILURE_STATUSES]
        total = charged if result.cause == "completion" else spec.on_error
        return _carried(spec, failed, total)
    veto = fired_veto(spec, components, counted(spec, components))
    if veto is not None:
        return _carried(spec, [veto], result.reward)
    values = gated_scores(spec, result)
    return [values[name] for name in spec.rewards]


def group_low_values(
    spec: RewardSpec,
    results: Sequence[Result],
    values: Sequence[Sequence[float | None]],
    groups: Sequence[Any],
) -> list[list[float | None]]:
    """`component_values` for a trainer that normalises each component over the group before
    summing (TRL's `normalize_then_sum`, GDPO), where a None counts at the column's mean.

    There a failure carried on one component would sit at the mean of the other columns and
    beat the worst answer. So a row whose total is a failure's (a charge or `on_error`) or a
    fired veto's takes, on every component, the column's group low: the lowest value the
    group's other rows counted (the highest for a negative weight). A component that does not
    apply stays None; a failure with no reward stays None everywhere (left out).
    """
    weights = [component.weight for component in spec.rewards.values()]
    plain = [_plain(spec, result) for result in results]
    columns: dict[tuple[Any, int], list[float]] = {}
    for key, row, is_plain in zip(groups, values, plain, strict=True):
        for k, value in enumerate(row):
            if is_plain and value is not None:
                columns.setdefault((key, k), []).append(value)

    def low(key: Any, k: int) -> float | None:
        column = columns.get((key, k))
        if not column:
            return None
        return min(column) if weights[k] >= 0 else max(column)

    out: list[list[float | None]] = []
    for key, row, is_plain in zip(groups, values, plain, strict=True):
        if is_plain:
            out.append(list(row))
            continue
        rewarded = any(v is not None for v in row)
        out.append([low(key, k) if rewarded else None for k in range(len(row))])
    return out


def _plain(spec: RewardSpec, result: Result) -> bool:
    """Scored, and no veto fired: its values are its components' own."""
    if result.status in FAILURE_STATUSES:
        return False
    return fired_veto(spec, result.components, counted(spec, result.components)) is None


def splits_into_components(spec: RewardSpec) -> str | None:
    """None when `component_values` reproduces the spec's totals, else why not."""
    if spec.combine != "weighted_sum":
        return f"combine: {spec.combine} is not a weighted sum"
    return None


def check_split(
    spec: RewardSpec, result: Result, values: Sequence[float | None], charged: float | None = None
) -> None:
    """Fail loudly when the weighted sum of `values` is not the spec's total for `result`
    (for a charged failure: the charge)."""
    pairs = zip(spec.rewards.values(), values, strict=True)
    parts = [component.weight * v for component, v in pairs if v is not None]
    total = math.fsum(parts) if parts else None
    expected = result.reward if charged is None else charged
    if total is None and expected is None:
        return
    if (
        total is not None
        and expected is not None
        and math.isclose(total, expected, rel_tol=1e-9, abs_tol=1e-9)
    ):
        return
    raise ConfigError(
        f"sample {result.id}: the weighted sum of the per-component rewards ({total}) is not "
        f"the spec's total reward ({expected}); this spec does not split into weighted "
        "components (its combination or shaping is not a weighted sum). Use one reward "
        "function for the total instead (rewardsmith.integrations.trl.total_reward_func)."
    )


def failure_counts(spec: RewardSpec, results: Sequence[Result]) -> dict[str, dict[str, int]]:
    """Per component: how many results were `failed` (timeout/error/invalid), `not_applicable`."""
    counts = {name: {"failed": 0, "not_applicable": 0} for name in spec.rewards}
    for result in results:
        for name, score in result.components.items():
            if score.status in FAILURE_STATUSES:
                counts[name]["failed"] += 1
            elif score.status == "not_applicable":
                counts[name]["not_applicable"] += 1
    return counts
