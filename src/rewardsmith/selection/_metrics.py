"""Accuracy of a selection over many groups, when the candidates' correctness is known.

All values are percentages over the groups that can be graded (each metric's count is in
`graded`). A candidate whose judge failed on its completion is wrong (`Selector._correct`);
one without a verdict for another reason is not judged. Per group:

- `accuracy`: the chosen method's candidate is correct; a group where a voting method finds
  no candidate with an answer, or where every missing score failed on its completion,
  counts as wrong; one whose scores are missing for another reason (the data, a dataset or
  infrastructure failure) is not graded;
- `pass@1`: the first candidate is correct;
- `mean_accuracy`: the share of correct candidates (of those judged), averaged over groups;
- `maj@k`: the majority answer (`majority`, ties to the first answer) is correct;
- `pass@k`: at least one candidate is correct (oracle); not graded when none judged is and
  one is not judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from ._methods import Candidate, Pick

__all__ = ["GroupOutcome", "summarize"]


@dataclass(frozen=True)
class GroupOutcome:
    """One group's candidates, the chosen method's pick and the majority pick."""

    candidates: Sequence[Candidate]
    pick: Pick
    majority: Pick


def _picked(outcome: GroupOutcome, pick: Pick) -> bool | None:
    if pick.index is None:
        return False if pick.wrong else None
    return outcome.candidates[pick.index].correct


def _any_correct(candidates: Sequence[Candidate]) -> bool | None:
    verdicts = [c.correct for c in candidates]
    if any(verdicts):
        return True
    return False if verdicts and None not in verdicts else None


def _mean(candidates: Sequence[Candidate]) -> float | None:
    judged = [c.correct for c in candidates if c.correct is not None]
    return fmean(judged) if judged else None


def summarize(
    outcomes: Sequence[GroupOutcome], *, method: str, cluster: str, k: int | None
) -> dict[str, Any] | None:
    """The summary of a run, or None when no candidate's correctness is known."""
    if not any(c.correct is not None for o in outcomes for c in o.candidates):
        return None
    columns: dict[str, list[float | bool | None]] = {
        "accuracy": [_picked(o, o.pick) for o in outcomes],
        "pass@1": [o.candidates[0].correct if o.candidates else None for o in outcomes],
        "mean_accuracy": [_mean(o.candidates) for o in outcomes],
        "maj@k": [_picked(o, o.majority) for o in outcomes],
        "pass@k": [_any_correct(o.candidates) for o in outcomes],
    }
    summary: dict[str, Any] = {
        "groups": len(outcomes),
        "method": method,
        "cluster": cluster,
        "k": k if k is not None else max((len(o.candidates) for o in outcomes), default=0),
    }
    graded: dict[str, int] = {}
    for name, values in columns.items():
        known = [float(v) for v in values if v is not None]
        summary[name] = 100 * fmean(known) if known else None
        graded[name] = len(known)
    summary["graded"] = graded
    return summary
