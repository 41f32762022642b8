"""Failed samples in group statistics: who is charged for a failure, and at what value.

A failure the completion caused (it made a verifier time out, crash or return a score
outside its declared range, or the combination overflow: `Result.cause == "completion"`)
must never be an escape. Left out of its group, it would get no advantage at all, which
beats the negative advantage of an honest wrong answer, and a policy learns to fail. So such
a sample is *charged*: it enters its group's statistics at

    min(on_error, the lowest reward of its group's scored samples, the lowest total the
        spec can produce)

(whichever exist; the lowest total includes a fired veto's `veto_value`, which counts even
when the components' lowest is unknown). When that total is unknown (a
component declares no range), the value is kept strictly below the group's lowest reward (by
the group's spread, at least 1): a charge equal to the group's lowest would tie a group whose
scored samples are all correct (advantage 0) where an honest wrong answer in their place gets
a negative advantage. The advantage is then capped at the lowest advantage of the group's
scored samples. A failure
the dataset or the infrastructure caused (a bad reference, a judge server that is down) is
not the policy's doing: the sample stays out of the statistics, with a null advantage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._advantages import Entry
from ._base import Counted
from ._bounds import component_bounds, lowest_total, veto_total
from ._stats import saturated

if TYPE_CHECKING:
    from ..spec import RewardSpec

__all__ = ["cap_charged", "charged_counted", "charged_value"]


def charged_value(spec: RewardSpec, group: Sequence[float]) -> float | None:
    """The value a charged failure enters its group's statistics with (None: unknown).

    `group` holds the rewards of the group's scored samples (empty when none scored; trainer
    adapters that see no group pass it empty): the value is then `on_error`, or the lowest
    total the spec can produce. A fired veto's `veto_value` counts even when the components'
    lowest is unknown: a crash must not escape a veto. The engine and the trainer adapters
    (`integrations._component_values.charged_rewards`) both charge through this function.
    """
    floor = lowest_total(spec)
    candidates = (spec.on_error, floor, veto_total(spec), min(group, default=None))
    known = [v for v in candidates if v is not None]
    if not known:
        return None
    value = min(known)
    if floor is None and group and value >= min(group):
        value = saturated(min(group) - max(1.0, max(group) - min(group)))
    return value


def charged_counted(spec: RewardSpec, scored: Sequence[Entry]) -> tuple[Counted, ...]:
    """A charged (or vetoed) sample's components for per-component statistics (GDPO), from
    the group's `scored` samples whose components are their own: every component that
    counted in them, at its lowest weighted value among them or the low end of its range,
    whichever is lower (strictly below the group's lowest when the range is unknown, as for
    the total)."""
    cells: dict[str, list[Counted]] = {}
    for entry in scored:
        for c in entry.counted:
            cells.setdefault(c.name, []).append(c)
    worst: list[Counted] = []
    for name, column in cells.items():
        first = column[0]
        if first.weight == 0:
            worst.append(first)
            continue
        values = [c.weight * c.score for c in column]
        floor = component_bounds(spec, name).weighted(first.weight).low
        if math.isfinite(floor):
            value = min(min(values), floor)
        else:  # unknown range (-inf would make every z-score nan)
            value = saturated(min(values) - max(1.0, max(values) - min(values)))
        worst.append(first._replace(score=saturated(value / first.weight)))
    return tuple(sorted(worst, key=lambda c: c.position))


def cap_charged(group: Sequence[Entry], values: list[float]) -> list[float]:
    """`values` with each charged entry's value at most the lowest of the scored entries'."""
    scored = [v for e, v in zip(group, values, strict=True) if not e.charged]
    if not scored:
        return values
    floor = min(scored)
    return [min(v, floor) if e.charged else v for e, v in zip(group, values, strict=True)]
