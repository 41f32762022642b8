"""`--compare SPEC2`: how far apart two rewards are on the same samples.

The STARC distance (Skalse et al., "STARC: A General Framework For Quantifying Differences
Between Reward Functions", ICLR 2024) is d(R1, R2) = m(s(R1), s(R2)) with s(R) = c(R) / n(c(R)):
a canonicalisation c that removes what cannot change the optimal policy, a norm n, a metric m.
Here there is no transition model, only scored samples, and we read them as a contextual
bandit: a prompt is a state, a completion an action, every episode ends after one action.
Then potential shaping, R + gamma*Phi(s') - Phi(s), reduces to subtracting a per-prompt
constant (Phi of the terminal state is 0), and STARC's value-adjusted levelling with a
uniform policy over the observed actions is

    c(R)(s, a) = R(s, a) - mean over the group's samples of R(s, .)

(groups are the samples' `group`s; when no group has two samples, all samples are treated as
one state and the global mean is subtracted). n is the L2 norm over the samples (the
empirical, uniformly weighted L2 norm of the paper; a zero vector stays zero), and m is the
L2 distance, halved so that the result lies in [0, 1]: 0 for rewards that differ only by
positive scaling and per-prompt shifts (the same GRPO ranking within every group), 1 for
opposite ones. Samples that failed under either spec are left out and counted.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..models import Result
from ._health import spearman
from ._metrics import reason_of

__all__ = ["compare", "starc_distance"]

_LISTED = 50


def _canonical(values: Sequence[float], groups: Sequence[str]) -> list[float]:
    members: dict[str, list[int]] = defaultdict(list)
    for i, group in enumerate(groups):
        members[group].append(i)
    if all(len(m) < 2 for m in members.values()):
        members = {"all": list(range(len(values)))}
    out = [0.0] * len(values)
    for indices in members.values():
        mean = math.fsum(values[i] for i in indices) / len(indices)
        for i in indices:
            out[i] = values[i] - mean
    return out


def _normalised(values: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(v * v for v in values))
    return values if norm == 0 else [v / norm for v in values]


def starc_distance(a: Sequence[float], b: Sequence[float], groups: Sequence[str]) -> float:
    """Half the L2 distance between the canonicalised, normalised reward vectors."""
    sa, sb = _normalised(_canonical(a, groups)), _normalised(_canonical(b, groups))
    return 0.5 * math.sqrt(math.fsum((x - y) ** 2 for x, y in zip(sa, sb, strict=True)))


def compare(
    samples: Sequence[dict[str, Any]],
    first: Sequence[Result],
    second: Sequence[Result],
    threshold: float,
) -> dict[str, Any]:
    """STARC distance, rank correlation and the samples the two rewards disagree on."""
    kept = [
        (s, x, y)
        for s, x, y in zip(samples, first, second, strict=True)
        if x.reward is not None and y.reward is not None
    ]
    groups = [str(s.get("group") if s.get("group") is not None else s["id"]) for s, _, _ in kept]
    a = [x.reward for _, x, _ in kept]
    b = [y.reward for _, _, y in kept]
    disagreements = [
        {
            "id": x.id,
            "reward": x.reward,
            "compared_reward": y.reward,
            "reason": reason_of(x),
            "compared_reason": reason_of(y),
        }
        for _, x, y in kept
        if (x.reward > threshold) != (y.reward > threshold)  # type: ignore[operator]
    ]
    return {
        "n": len(kept),
        "failed": len(samples) - len(kept),
        "starc_distance": starc_distance(a, b, groups) if kept else None,  # type: ignore[arg-type]
        "spearman": spearman(a, b),  # type: ignore[arg-type]
        "disagreements": len(disagreements),
        "disagreement_rows": disagreements[:_LISTED],
    }
