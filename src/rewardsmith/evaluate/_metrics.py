"""Accuracy metrics of a reward on each data format. Pure functions: rewards in, numbers out.

* labelled: agreement with the labels at a threshold, precision, recall, F1, AUROC (no
  threshold), the confusion table, and the false positives / negatives with their reasons;
* pairs: chosen scored strictly above rejected (a tie counts 0), per subset and in total
  (`accuracy` weighs every pair alike, `accuracy_subset_mean` every subset alike); with k
  style variants per side (RM-Bench) the k x k matrix, whose lower triangle is `easy`,
  diagonal `normal` and upper triangle `hard` (RM-Bench's `compute_accuracy`: row i is the
  chosen response's style, column j the rejected's, styles in increasing fanciness);
* best_of_n: 1 / (candidates tied at the maximum) when a chosen candidate is at it, else 0
  (RewardBench 2); a failed rejected candidate is never beaten, as a failure in pairs;
* every format that scores samples counts the ones that failed (`timeout`, `error`,
  `invalid`) and the ones the reward did not apply to (`not_applicable`) apart;
* judgments: JudgeBench's `compute_final_metrics` -- each of the two stored verdicts (the
  second in swapped order, flipped back) counts +1 for the label, -1 for its opposite; a pair
  is correct when the sum is positive.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import FAILURE_STATUSES, Result
from ._data import BestOfNRow, JudgmentRow, LabelledRow, PairRow

__all__ = [
    "Measured",
    "auroc",
    "best_of_n_metrics",
    "judgment_metrics",
    "labelled_metrics",
    "pair_metrics",
    "reason_of",
    "unscored_counts",
]

_LISTED = 100
"""Most false positives (and as many false negatives) listed in the summary."""


@dataclass
class Measured:
    """What one data format measured."""

    metrics: dict[str, float] = field(default_factory=dict)
    subsets: dict[str, dict[str, float]] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)
    """Extra structures for the report: confusion table, RM-Bench matrix, listed errors."""


def reason_of(result: Result) -> str:
    """The first reason a component gives (`detail.reason`), else its status."""
    for name, score in result.components.items():
        reason = score.detail.get("reason")
        if reason:
            return f"{name}: {reason}"
    return result.status


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """Probability that a random positive outscores a random negative (ties count half)."""
    if not positives or not negatives:
        return None
    ranked = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # average 1-based rank of the tied block
        rank_sum += mid * sum(1 for _, pos in ranked[i:j] if pos)
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def _binary(labels: list[bool], predicted: list[bool]) -> dict[str, float]:
    tp = sum(lab and pre for lab, pre in zip(labels, predicted, strict=True))
    fp = sum(pre and not lab for lab, pre in zip(labels, predicted, strict=True))
    fn = sum(lab and not pre for lab, pre in zip(labels, predicted, strict=True))
    tn = len(labels) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "agreement": (tp + tn) / len(labels) if labels else 0.0,
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "true_positives": tp,
        "false_positives": fp,
        "true_negatives": tn,
        "false_negatives": fn,
    }


def unscored_counts(results: Sequence[Result]) -> dict[str, int]:
    """Samples without a reward: `failed` (timeout, error, invalid) and `not_applicable`
    apart, since a reward that has nothing to grade is not broken."""
    unscored = [r.status for r in results if r.reward is None]
    return {
        "failed": sum(status in FAILURE_STATUSES for status in unscored),
        "not_applicable": sum(status == "not_applicable" for status in unscored),
    }


def labelled_metrics(
    rows: Sequence[LabelledRow], results: Sequence[Result], threshold: float
) -> Measured:
    """Agreement of `reward > threshold` with the labels; unscored samples are counted apart,
    per subset too (a subset the reward always fails on is the one to see)."""
    measured = Measured()
    by_subset: dict[str, tuple[list[bool], list[bool], list[Result]]] = defaultdict(
        lambda: ([], [], [])
    )
    scored: list[tuple[bool, float]] = []
    listed: dict[str, list[dict[str, Any]]] = {
        "false_positives": [],
        "false_negatives": [],
        "failed": [],
        "not_applicable": [],
    }
    for row, result in zip(rows, results, strict=True):
        labels, predictions, unscored = by_subset[row.subset or "all"]
        if result.reward is None:
            unscored.append(result)
            kind = "failed" if result.status in FAILURE_STATUSES else "not_applicable"
            listed[kind].append(
                {"id": row.id, "status": result.status, "reason": reason_of(result)}
            )
            continue
        predicted = result.reward > threshold
        scored.append((row.label, result.reward))
        labels.append(row.label)
        predictions.append(predicted)
        if predicted != row.label:
            kind = "false_positives" if predicted else "false_negatives"
            if len(listed[kind]) < _LISTED:
                listed[kind].append(
                    {"id": row.id, "reward": result.reward, "reason": reason_of(result)}
                )
    labels = [lab for lab, _ in scored]
    predicted = [value > threshold for _, value in scored]
    measured.metrics = _labelled_rates(labels, predicted, results)
    area = auroc([v for lab, v in scored if lab], [v for lab, v in scored if not lab])
    if area is not None:
        measured.metrics["auroc"] = area
    if len(by_subset) > 1:
        measured.subsets = {
            name: {"n": len(parts[0]), **_labelled_rates(*parts)}
            for name, parts in sorted(by_subset.items())
        }
    measured.tables = {"confusion": _confusion(measured.metrics), **listed} if scored else listed
    return measured


def _labelled_rates(
    labels: list[bool], predictions: list[bool], unscored: Sequence[Result]
) -> dict[str, float]:
    """The unscored counts, and the rates only when something was scored (no silent 0)."""
    counts: dict[str, float] = {**unscored_counts(unscored)}
    return {**_binary(labels, predictions), **counts} if labels else counts


def _confusion(metrics: dict[str, float]) -> dict[str, int]:
    keys = ("true_positives", "false_positives", "true_negatives", "false_negatives")
    return {k: int(metrics[k]) for k in keys}


def _accuracy(per_subset: dict[str, list[float]]) -> Measured:
    """Mean per-row accuracy over all rows and per subset (with the mean of the subsets)."""
    values = [v for vs in per_subset.values() for v in vs]
    measured = Measured(metrics={"accuracy": sum(values) / len(values) if values else 0.0})
    if len(per_subset) > 1:
        means = {name: sum(vs) / len(vs) for name, vs in sorted(per_subset.items())}
        measured.subsets = {
            name: {"accuracy": means[name], "n": len(per_subset[name])} for name in means
        }
        measured.metrics["accuracy_subset_mean"] = sum(means.values()) / len(means)
    return measured


def pair_metrics(rows: Sequence[PairRow], cells: Sequence[dict[tuple[int, int], bool]]) -> Measured:
    """Accuracy from each row's cells: (i, j) -> chosen i scored strictly above rejected j."""
    per_subset: dict[str, list[float]] = defaultdict(list)
    size = max((len(r.chosen) for r in rows), default=1)
    matrix = [[0.0] * size for _ in range(size)]
    matrix_rows = 0
    wrong: list[dict[str, Any]] = []
    for row, row_cells in zip(rows, cells, strict=True):
        value = sum(row_cells.values()) / len(row_cells) if row_cells else 0.0
        per_subset[row.subset or "all"].append(value)
        if len(row.chosen) == size and size > 1:
            matrix_rows += 1
            for (i, j), won in row_cells.items():
                matrix[i][j] += won
        if value < 1 and len(wrong) < _LISTED:
            wrong.append({"id": row.id, "subset": row.subset, "accuracy": value})
    measured = _accuracy(per_subset)
    if matrix_rows:
        matrix = [[cell / matrix_rows for cell in line] for line in matrix]
        off = size * (size - 1) / 2
        measured.metrics["hard"] = (
            sum(matrix[i][j] for i in range(size) for j in range(i + 1, size)) / off
        )
        measured.metrics["normal"] = sum(matrix[i][i] for i in range(size)) / size
        measured.metrics["easy"] = sum(matrix[i][j] for i in range(size) for j in range(i)) / off
        measured.tables["rmbench_matrix"] = matrix
    measured.tables["incorrect"] = wrong
    return measured


def best_of_n_metrics(
    rows: Sequence[BestOfNRow], rewards: Sequence[tuple[list[float | None], list[float | None]]]
) -> Measured:
    """RewardBench 2's best-of-N score; a failure counts 0, as in pairs (see
    `best_of_n_score`; the caller counts the failures)."""
    per_subset: dict[str, list[float]] = defaultdict(list)
    for row, (chosen, rejected) in zip(rows, rewards, strict=True):
        per_subset[row.subset or "all"].append(best_of_n_score(chosen, rejected))
    return _accuracy(per_subset)


def best_of_n_score(chosen: Sequence[float | None], rejected: Sequence[float | None]) -> float:
    """1 / (number of candidates tied at the maximum) if a chosen one is at it, else 0.

    A failed (None) candidate stays in the comparison as it does in pairs: a failed chosen one
    is never at the maximum, and a failed rejected one is never beaten (the row counts 0), so
    a reward cannot win a row by crashing on its hard negatives.
    """
    if any(v is None for v in rejected):
        return 0.0
    values = [v for v in (*chosen, *rejected) if v is not None]
    if not values:
        return 0.0
    best = max(values)
    if not any(v == best for v in chosen if v is not None):
        return 0.0
    return 1.0 / sum(1 for v in values if v == best)


def _flip(decision: str | None) -> str | None:
    return {"A>B": "B>A", "B>A": "A>B"}.get(decision or "", decision)


def judgment_metrics(rows: Sequence[JudgmentRow]) -> Measured:
    """JudgeBench's scoring of stored verdicts (both orders), overall and per category."""
    per_subset: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for row in rows:
        per_subset[row.subset or "all"].append(judge_pair(row))
    everything = [p for ps in per_subset.values() for p in ps]
    measured = Measured(metrics=_judged(everything))
    measured.subsets = {name: _judged(ps) for name, ps in sorted(per_subset.items())}
    return measured


def judge_pair(row: JudgmentRow) -> dict[str, bool]:
    """One pair's outcome: `correct` when the verdicts sum in favour of the label."""
    first = row.decisions[0] if row.decisions else None
    second = _flip(row.decisions[1]) if len(row.decisions) > 1 else None
    decisions = [first, second] if len(row.decisions) > 1 else [first]
    counter = sum(1 if d == row.label else -1 if d == _flip(row.label) else 0 for d in decisions)
    return {
        "correct": counter > 0,
        "incorrect": counter < 0,
        "inconsistent": len(decisions) > 1 and first != second,
        "null": any(d is None for d in decisions),
    }


def _judged(pairs: list[dict[str, bool]]) -> dict[str, float]:
    n = len(pairs) or 1
    return {
        "accuracy": sum(p["correct"] for p in pairs) / n,
        "incorrect": sum(p["incorrect"] for p in pairs) / n,
        "tie": sum(not p["correct"] and not p["incorrect"] for p in pairs) / n,
        "inconsistent": sum(p["inconsistent"] for p in pairs) / n,
        "n": len(pairs),
    }
