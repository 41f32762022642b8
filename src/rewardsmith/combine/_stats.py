"""Exact group statistics: the arithmetic every normalisation shares.

Why not `statistics.mean` / `numpy.std`: a group whose values are all equal must come out
exactly centred (0.0), and a naive mean of a non-dyadic value such as ``[0.35] * 7`` is one
ulp off, which leaves a std of ~1e-17 that a division then blows up into advantages of +-1.
So equality is detected exactly first, and sums use `math.fsum` (correctly rounded).

`math.fsum` raises OverflowError when a partial sum leaves the float range, even where the
result is finite (the mean of ``[1e308, 1e308, 0]``). Nothing here raises: a sum is scaled by
a power of two (exact) when it overflows, a mean of finite values is always finite, and a sum
that truly leaves the range is +-inf, which a combination reports as `error`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from typing import Literal

__all__ = [
    "Std",
    "all_equal",
    "centred",
    "exact_sum",
    "mean",
    "root_mean_square",
    "saturated",
    "standardised",
]

_QUARTER_RANGE = sys.float_info.max / 4
"""Values up to this far from 0 have deviations from their mean inside the float range."""

Std = Literal["population", "unbiased"]
"""Denominator of the variance: n (population) or n - 1 (unbiased, as `torch.std`)."""


def all_equal(values: Sequence[float]) -> bool:
    """True for an empty or constant sequence (exact float comparison, on purpose)."""
    return all(v == values[0] for v in values)


def exact_sum(values: Iterable[float]) -> float:
    """Correctly rounded sum; +-inf (nan for inf - inf) where it leaves the float range, as
    float arithmetic does, never an exception out of a combination."""
    values = list(values)
    if len(values) == 1:  # one component, the usual case: `fsum`'s value (a float; -0.0
        return float(values[0]) + 0.0  # gives 0.0)
    return _divided_sum(values, 1)


def mean(values: Sequence[float]) -> float:
    """Correctly rounded mean; exactly the value itself when all values are equal."""
    if all_equal(values):
        return values[0]
    return _divided_sum(values, len(values))


def _divided_sum(values: Sequence[float], divisor: int) -> float:
    """``fsum(values) / divisor``, scaled by a power of two when a partial sum overflows."""
    if not all(math.isfinite(v) for v in values):
        return sum(values) / divisor
    try:
        return math.fsum(values) / divisor
    except OverflowError:
        exponent = max(math.frexp(v)[1] for v in values)
        scaled = math.fsum(math.ldexp(v, -exponent) for v in values) / divisor
        try:
            return math.ldexp(scaled, exponent)
        except OverflowError:
            return math.copysign(math.inf, scaled)


def centred(values: Sequence[float]) -> list[float]:
    """Each value minus the mean; exactly 0.0 everywhere when all values are equal."""
    if all_equal(values):
        return [0.0] * len(values)
    m = mean(values)
    return [saturated(v - m) for v in values]


def saturated(value: float) -> float:
    """`value` held inside the float range: a difference of two finite rewards that leaves it
    stays a finite advantage (of the right sign) instead of an infinite one."""
    return math.copysign(sys.float_info.max, value) if math.isinf(value) else value


def standardised(values: Sequence[float], *, std: Std, epsilon: float) -> list[float]:
    """``(v - mean) / (std + epsilon)``; exactly 0.0 everywhere when all values are equal."""
    largest = max((abs(v) for v in values), default=0.0)
    if _QUARTER_RANGE < largest < math.inf:  # a deviation could leave the float range:
        quarter = [v / 4 for v in values]  # scaled exactly, as the z-scores allow
        return standardised(quarter, std=std, epsilon=epsilon / 4)
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
