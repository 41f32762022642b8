"""Lexicographic combination: later components only break ties of earlier ones."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from ._base import Choice, Counted, Finite
from ._bounds import Bounds, sum_floor
from ._stats import exact_sum

__all__ = ["Lexicographic"]


class Lexicographic(Choice):
    """``sum_k tie_scale**k * w_k * s_k``, k the component's position in the spec (from 0).

    The classic reduction of a lexicographic (preemptive) objective to one weighted sum with
    geometrically decreasing weights (Sherali 1982, "Equivalent weights for lexicographic
    multi-objective programs: characterizations and computations", EJOR 11). The position is
    the component's place in the spec, not among the components that count, so a component
    that does not apply never promotes the next one to a higher rank.

    The order is exactly lexicographic when every weighted score lies in [-B, B] and distinct
    values of a component differ by at least D, with ``2 * B * tie_scale / (1 - tie_scale) < D``:
    e.g. 0/1 correctness first, scores in [-1, 1] after, and the default 1e-3. The spec is
    refused when the components after one could move the total by as much as that one's whole
    range (`problem`): on a 0/1 check a right answer always beats a wrong one; a smaller
    difference is kept only down to the D above. Ties are broken down to float resolution:
    secondary differences below about ``ulp(total) / tie_scale`` (~1e-13 for totals near 1)
    are lost.
    """

    type: Literal["lexicographic"] = "lexicographic"
    tie_scale: Finite = Field(default=1e-3, gt=0, lt=1)

    def total(self, items: Sequence[Counted]) -> float:
        """The combined reward of the counted components."""
        return exact_sum(self.tie_scale**c.position * c.weight * c.score for c in items)

    def lowest(self, members: Sequence[tuple[str, Bounds]]) -> float:
        """A total no sample scores below, given each component's weighted range."""
        scales = [self.tie_scale**position for position in range(len(members))]
        return sum_floor([b for _, b in members], scales)

    def problem(self, members: Sequence[tuple[str, Bounds]]) -> str | None:
        """Why a later component could outweigh a difference across an earlier one's whole
        range (right against wrong for a 0/1 check), or None. The later components, present
        or not (0), must move the total by less than that difference."""
        unknown = next((n for n, b in members[1:] if not b.known), None)
        if unknown is not None:
            return (
                f"combine: lexicographic needs the range of every component after the first, "
                f"and rewards.{unknown} declares none, so it could outweigh the ones before "
                "it: clip it (transform: {type: clip, min: ..., max: ...}) or squash it "
                "(transform: tanh)"
            )
        for k, (name, bounds) in enumerate(members[:-1]):
            width = bounds.high - bounds.low
            spread = exact_sum(
                self.tie_scale ** (j - k) * (max(0.0, b.high) - min(0.0, b.low))
                for j, (_, b) in enumerate(members[k + 1 :], start=k + 1)
            )
            if 0 < width <= spread and math.isfinite(width):
                return (
                    f"combine: lexicographic with tie_scale {self.tie_scale:g}: the components "
                    f"after rewards.{name} move the total by up to {spread:g} of its units, "
                    f"and rewards.{name} spans {width:g}, so they could outweigh it. Lower "
                    "tie_scale, or clip the later components to a narrower range"
                )
        return None
