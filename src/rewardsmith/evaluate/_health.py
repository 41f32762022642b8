"""Reward health: is this reward a usable training signal, whatever its accuracy?

Status counts (failures are never zeros), Spearman correlation of reward with completion
length (a reward that grows with length will be gamed by padding), the share of groups
whose rewards are all equal (GRPO gets no learning signal from them), Spearman
correlation between components, and throughput.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from ..models import Result

__all__ = ["health", "ranks", "spearman"]


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def _pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    n = len(x)
    if n < 3:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None  # a constant side has no rank order to correlate
    return sxy / (sxx * syy) ** 0.5


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation (None under 3 pairs or with a constant side)."""
    return _pearson(ranks(x), ranks(y))


def health(
    samples: Sequence[dict[str, Any]], results: Sequence[Result], seconds: float
) -> dict[str, Any]:
    """The health section of the summary, over the evaluation's own samples."""
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    lengths, rewards = [], []
    groups: dict[str, list[float | None]] = defaultdict(list)
    columns: dict[str, dict[int, float]] = defaultdict(dict)
    for position, (sample, result) in enumerate(zip(samples, results, strict=True)):
        statuses["reward"][result.status] += 1
        for name, score in result.components.items():
            statuses[name][score.status] += 1
            if score.score is not None:
                columns[name][position] = score.score
        if result.reward is not None:
            completion = sample.get("completion")
            text = completion if isinstance(completion, str) else result.id
            lengths.append(float(len(text)))
            rewards.append(result.reward)
        if sample.get("group") is not None:
            groups[str(sample["group"])].append(result.reward)
    sized = [g for g in groups.values() if len(g) > 1]
    flat = [g for g in sized if None not in g and len(set(g)) == 1]
    correlations = {}
    for a, b in combinations(sorted(columns), 2):
        shared = sorted(columns[a].keys() & columns[b].keys())
        rho = spearman([columns[a][i] for i in shared], [columns[b][i] for i in shared])
        if rho is not None:
            correlations[f"{a}~{b}"] = rho
    return {
        "status_counts": {name: dict(counts) for name, counts in statuses.items()},
        "reward_length_spearman": spearman(rewards, lengths),
        "groups": len(sized),
        "all_equal_group_share": len(flat) / len(sized) if sized else None,
        "component_spearman": correlations,
        "seconds": seconds,
        "samples_per_s": len(results) / seconds if seconds > 0 else None,
        "mean_ms_per_sample": 1000 * seconds / len(results) if results else None,
    }
