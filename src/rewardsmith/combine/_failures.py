"""Failed samples in group statistics: who is charged for a failure, and at what value.

A failure the completion caused (it made a verifier time out or crash, or the combination
overflow: `Result.cause == "completion"`) must never be an escape. Left out of its group, it
would get no advantage at all, which beats the negative advantage of an honest wrong answer,
and a policy learns to fail. So such a sample is *charged*: it enters its group's statistics
at

    min(on_error, the lowest reward of its group's scored samples)

(whichever of the two exists; with neither, the lowest total the spec can produce), and its
advantage is then capped at the lowest advantage of the group's scored samples. A failure
the dataset or the infrastructure caused (a bad reference, a judge server that is down) is
not the policy's doing: the sample stays out of the statistics, with a null advantage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._advantages import Entry
from ._base import Counted
from ._bounds import lowest_total

if TYPE_CHECKING:
    from ..spec import RewardSpec

__all__ = ["cap_charged", "charged_counted", "charged_value"]


def charged_value(spec: RewardSpec, group_lowest: float | None) -> float | None:
    """The value a charged failure enters its group's statistics with (None: unknown).

    `group_lowest` is the lowest reward among the group's scored samples (None when none
    scored). Trainer adapters that see no group pass None: the value is then `on_error`, or
    the lowest total the spec can produce.
    """
    known = [v for v in (spec.on_error, group_lowest) if v is not None]
    return min(known) if known else lowest_total(spec)


def charged_counted(scored: Sequence[Entry]) -> tuple[Counted, ...]:
    """A charged sample's components for per-component statistics (GDPO): every component
    that counted in the group, at its lowest weighted value among the scored samples."""
    worst: dict[str, Counted] = {}
    for entry in scored:
        for c in entry.counted:
            known = worst.get(c.name)
            if known is None or c.weight * c.score < known.weight * known.score:
                worst[c.name] = c
    return tuple(sorted(worst.values(), key=lambda c: c.position))


def cap_charged(group: Sequence[Entry], values: list[float]) -> list[float]:
    """`values` with each charged entry's value at most the lowest of the scored entries'."""
    scored = [v for e, v in zip(group, values, strict=True) if not e.charged]
    if not scored:
        return values
    floor = min(scored)
    return [min(v, floor) if e.charged else v for e, v in zip(group, values, strict=True)]
