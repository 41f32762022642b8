"""Reward hacks in how components combine, one row per attack (issue 17 items 1-6, 11.23).

A row is a spec (components are `echo` rewards: each scores what the sample says) and one
group of samples, each a dict of component scores (a string is a failure status). The rule
every row checks: the `gaming` sample's reward, where it has one, and its advantage are never
above the `honest` sample's. The table is data so that `rewardsmith evaluate` can replay it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .helpers import UNIT

__all__ = ["COMBINATION_HACKS", "GATE_CHAIN_SPEC", "CombinationHack"]

PENALTY = {"low": -1.0, "high": 0.0}


@dataclass(frozen=True)
class CombinationHack:
    item: str
    name: str
    components: dict[str, dict[str, Any]]
    """Component name -> spec keys beside the `echo` type (weight, veto, only_if, ranges...)."""
    group: dict[str, dict[str, Any]]
    """Sample role -> component scores; the roles `gaming` and `honest` are compared."""
    top: dict[str, Any]
    """Spec keys beside `rewards` (combine, group_transform, on_error...)."""


GRPO = {"group_transform": {"type": "grpo", "epsilon": 0}}
MATH_JSON = {"correct": UNIT, "json": UNIT}
VETO = {
    "correct": UNIT,
    "format": {"veto": True, "weight": 0.2, **UNIT},
    "overlong": PENALTY,
}
CHAIN = {
    "safe": UNIT,
    "correct": {"only_if": "safe", **UNIT},
    "bonus": {"only_if": "correct", "weight": 0.5, **UNIT},
}
COSINE = {"type": "cosine", "correct": "correct", "max_length": 100}


def length(n: int) -> dict[str, Any]:
    """A `length` component's score: the overlong penalty 0 with the length it measured."""
    return {"score": 0.0, "detail": {"length": n}}


COMBINATION_HACKS: list[CombinationHack] = [
    # 17.1: a failure the completion caused is no escape from a wrong answer's advantage
    CombinationHack(
        "17.1",
        "timeout instead of a wrong answer",
        MATH_JSON,
        {
            "right": {"correct": 1.0, "json": 1.0},
            "honest": {"correct": 0.0, "json": 1.0},
            "gaming": {"correct": 0.0, "json": "timeout"},
        },
        GRPO,
    ),
    CombinationHack(
        "17.1",
        "crash instead of a wrong answer, on_error above the worst",
        MATH_JSON,
        {
            "right": {"correct": 1.0, "json": 1.0},
            "honest": {"correct": 0.0, "json": 0.0},
            "gaming": {"correct": 0.0, "json": "error"},
        },
        {**GRPO, "on_error": 0.5},
    ),
    CombinationHack(
        "17.1",
        "timeout under GDPO",
        MATH_JSON,
        {
            "right": {"correct": 1.0, "json": 1.0},
            "honest": {"correct": 0.0, "json": 1.0},
            "gaming": {"correct": 0.0, "json": "timeout"},
        },
        {"group_transform": {"type": "gdpo", "batch_whiten": False}},
    ),
    CombinationHack(
        "17.1",
        "timeout in a tournament",
        MATH_JSON,
        {
            "right": {"correct": 1.0, "json": 1.0},
            "honest": {"correct": 0.0, "json": 0.0},
            "gaming": {"correct": 0.0, "json": "timeout"},
        },
        {"group_transform": {"type": "tournament"}},
    ),
    # 17.2: a fired veto must not erase the other penalties
    CombinationHack(
        "17.2",
        "truncated overlong answer fires the format veto",
        VETO,
        {
            "right": {"correct": 1.0, "format": 1.0, "overlong": 0.0},
            "honest": {"correct": 0.0, "format": 1.0, "overlong": -0.9},
            "gaming": {"correct": 0.0, "format": 0.0, "overlong": -1.0},
        },
        GRPO,
    ),
    # 17.5: a gate reads the gated value
    CombinationHack(
        "17.5",
        "bonus opens on a correct that is itself gated off",
        CHAIN,
        {
            "honest": {"safe": 1.0, "correct": 0.0, "bonus": 1.0},
            "gaming": {"safe": 0.0, "correct": 1.0, "bonus": 1.0},
        },
        {},
    ),
    # 17.6: a partial score is not a correct answer for the length transforms
    CombinationHack(
        "17.6",
        "cosine: an F1 hedge on the correct branch",
        {"correct": {"weight": 0.0, **UNIT}, "len": {"transform": COSINE}},
        {
            "honest": {"correct": 0.0, "len": length(10)},
            "gaming": {"correct": 0.67, "len": length(10)},
        },
        {},
    ),
    CombinationHack(
        "17.6",
        "kimi: an F1 hedge on the correct branch",
        {
            "correct": {"weight": 0.0, **UNIT},
            "len": {"transform": {"type": "kimi", "correct": "correct"}},
        },
        {
            "right": {"correct": 1.0, "len": length(50)},
            "honest": {"correct": 0.0, "len": length(10)},
            "gaming": {"correct": 0.67, "len": length(10)},
        },
        {},
    ),
]

GATE_CHAIN_SPEC = {
    "rewards": {
        "safe": {"type": "regex", "pattern": "safe"},
        "correct": {"type": "regex", "pattern": "42", "only_if": "safe"},
        "bonus": {"type": "regex", "pattern": "bonus", "only_if": "correct", "weight": 0.5},
    }
}
"""17.5 with real rewards: "42 bonus" is unsafe, so its correct answer and its bonus count
for nothing; "safe 42 bonus" earns all three (2.5)."""
