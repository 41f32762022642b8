"""Paths of the real datasets in `../shared/data` and readers turning them into evaluation
rows (shared by the tests and `benchmarks/evaluate_bench.py`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
GSM8K = DATA / "gsm8k" / "test.jsonl"
GSM8K_SOLUTIONS = DATA / "gsm8k" / "example_model_solutions.jsonl"
MATH500 = DATA / "math500" / "test.jsonl"
HUMANEVAL = DATA / "humaneval" / "HumanEval.jsonl.gz"
JUDGEBENCH = DATA / "judgebench"
LLMBAR = DATA / "llmbar"
RMBENCH = DATA / "rmbench"


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return rows[:limit]


def labelled_gsm8k(limit: int, copies: int = 1) -> list[dict[str, Any]]:
    """GSM8K's human-labelled model solutions as labelled samples, one per solution, grouped
    by problem; with `copies` > 1 the 5,276 solutions repeat (each copy its own ids and
    groups) until `limit` rows."""
    rows: list[dict[str, Any]] = []
    problems = read_jsonl(GSM8K_SOLUTIONS)
    for copy in range(copies):
        for index, problem in enumerate(problems):
            for model, answer in problem.items():
                if isinstance(answer, dict) and "is_correct" in answer:
                    rows.append(
                        {
                            "id": str(len(rows)),
                            "group": f"q{index}-{copy}",
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
