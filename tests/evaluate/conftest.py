"""Fixtures: rows of the real datasets in `../shared/data`, written where a test can read them."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
GSM8K = DATA / "gsm8k" / "test.jsonl"
GSM8K_SOLUTIONS = DATA / "gsm8k" / "example_model_solutions.jsonl"
MATH500 = DATA / "math500" / "test.jsonl"
HUMANEVAL = DATA / "humaneval" / "HumanEval.jsonl.gz"
JUDGEBENCH = DATA / "judgebench"
LLMBAR = DATA / "llmbar"
RMBENCH = DATA / "rmbench"

needs_data = pytest.mark.skipif(not DATA.exists(), reason=f"shared data absent: {DATA}")


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return rows[:limit]


def labelled_gsm8k(limit: int) -> list[dict[str, Any]]:
    """GSM8K's human-labelled model solutions as labelled samples (one per solution)."""
    rows = []
    for index, problem in enumerate(read_jsonl(GSM8K_SOLUTIONS)):
        for model, answer in problem.items():
            if isinstance(answer, dict) and "is_correct" in answer:
                rows.append(
                    {
                        "id": str(len(rows)),
                        "group": f"q{index}",
                        "prompt": problem["question"],
                        "completion": answer["solution"],
                        "reference": problem["ground_truth"],
                        "label": answer["is_correct"],
                        "subset": model,
                    }
                )
                if len(rows) == limit:
                    return rows
    return rows


@pytest.fixture
def write_rows(tmp_path: Path) -> Callable[[Iterable[dict[str, Any]], str], Path]:
    def write(rows: Iterable[dict[str, Any]], name: str = "rows.jsonl") -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    return write
