"""The trap and recall tables, and math-verify's published tables.

Traps (`math_cases/traps.json`): wrong, unfinished, hedged or pathological answers, one or more
per reward hack class; each must score 0 with status `ok` (a completion never earns a null).
Recall (`math_cases/recall.json`): correct answers in the forms the reward must recognise;
each must score 1. math-verify's rows (`benchmarks/math_verify_tables.json`): where we mean to
decide as math-verify does we must agree with the table, and where we differ on purpose the
difference must hold (a change either way is a decision to review, not a drift).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.models import Sample
from rewardsmith.verifiers.math import math

CASES = Path(__file__).parent / "math_cases"
TRAPS = json.loads((CASES / "traps.json").read_text())["cases"]
RECALL = json.loads((CASES / "recall.json").read_text())["cases"]
MATH_VERIFY = json.loads(
    (Path(__file__).parents[2] / "benchmarks" / "math_verify_tables.json").read_text()
)["rows"]
KNOWN_MISSES = {"yujianll/string_extraction/5"}
"""Same-policy rows we still get wrong: a gold with `\\sum` (we do not evaluate sums)."""


def _score(row: dict[str, Any]) -> Any:
    sample = Sample(
        id=row["id"], completion=row["completion"], reference=row["gold"], prompt=row.get("prompt")
    )
    return math(**row.get("config", {}))(sample)


@pytest.mark.parametrize("row", TRAPS, ids=[r["id"] for r in TRAPS])
def test_trap_scores_zero(row: dict[str, Any]) -> None:
    result = _score(row)
    assert (result.status, result.score) == ("ok", 0.0), (row["why"], result.detail)
    assert result.detail["reason"]
    assert not result.detail.get("internal_error")


@pytest.mark.parametrize("row", RECALL, ids=[r["id"] for r in RECALL])
def test_recall_scores_one(row: dict[str, Any]) -> None:
    result = _score(row)
    assert (result.status, result.score) == ("ok", 1.0), (row["why"], result.detail)


def test_tables_cover_every_hack_class() -> None:
    classes = {row["id"].split("/")[0] for row in TRAPS}
    assert {"unevaluated", "restated", "hedge", "units", "escape"} <= classes
    assert len(TRAPS) >= 60 and len(RECALL) >= 60
    assert len({r["id"] for r in TRAPS + RECALL}) == len(TRAPS) + len(RECALL)


@pytest.mark.parametrize("row", MATH_VERIFY, ids=[r["id"] for r in MATH_VERIFY])
def test_math_verify_rows(row: dict[str, Any]) -> None:
    result = math()(Sample(id=row["id"], completion=row["pred"], reference=row["gold"]))
    ours = int(result.status == "ok" and result.score == 1.0)
    if row["policy"] == "same" and row["id"] not in KNOWN_MISSES:
        assert ours == row["expected"], result.detail
    else:
        assert ours != row["expected"], (row["policy"], result.detail)
