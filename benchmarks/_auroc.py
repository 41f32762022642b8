"""AUROC, for the benchmarks that measure how well a reward separates labelled answers."""

from __future__ import annotations

__all__ = ["auroc"]


def auroc(scores: list[tuple[float, bool]]) -> float:
    """P(a positive scores above a negative), ties counting half (Mann-Whitney U)."""
    positives = [s for s, p in scores if p]
    negatives = [s for s, p in scores if not p]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))
