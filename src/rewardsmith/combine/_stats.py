"""Exact group statistics: the arithmetic every normalisation shares.

Why not `statistics.mean` / `numpy.std`: a group whose values are all equal must come out
exactly centred (0.0), and a naive mean of a non-dyadic value such as ``[0.35] * 7`` is one
ulp off, which leaves a std of ~1e-17 that a division then blows up into advantages of +-1.
So equality is detected exactly first, and sums use `math.fsum` (correctly rounded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

__all__ = ["Std", "all_equal", "centred", "mean", "root_mean_square", "standardised"]

Std = Literal["population", "unbiased"]
"""Denominator of the variance: n (population) or n - 1 (unbiased, as `torch.std`)."""


def all_equal(values: Sequence[float]) -> bool:
    """True for an empty or constant sequence (exact float comparison, on purpose)."""
    return all(v == values[0] for v in values)


def mean(values: Sequence[float]) -> float:
    """Correctly rounded mean; exactly the value itself when all values are equal."""
    if all_equal(values):
        return values[0]
    return math.fsum(values) / len(values)


def centred(values: Sequence[float]) -> list[float]:
    """Each value minus the mean; exactly 0.0 everywhere when all values are equal."""
    if all_equal(values):
        return [0.0] * len(values)
    m = mean(values)
    return [v - m for v in values]


def standardised(values: Sequence[float], *, std: Std, epsilon: float) -> list[float]:
    """``(v - mean) / (std + epsilon)``; exactly 0.0 everywhere when all values are equal."""
    deviations = centred(values)
    if not any(deviations):
        return deviations
    denominator = len(values) - (1 if std == "unbiased" else 0)
    spread = root_mean_square(deviations, denominator)
    return [d / (spread + epsilon) for d in deviations]


def root_mean_square(values: Sequence[float], denominator: int) -> float:
    """``sqrt(sum(v**2) / denominator)``, scaled first so tiny values do not underflow to 0."""
    largest = max(abs(v) for v in values)
    if largest == 0:
        return 0.0
    return largest * math.sqrt(math.fsum((v / largest) ** 2 for v in values) / denominator)
