"""JudgeBench's published scores, reproduced from its stored verdicts without a judge.

The expected numbers are what JudgeBench's own `compute_final_metrics` (utils/metrics.py,
ScalerLab/JudgeBench) returns on these files, overall and with `run_judge.py`'s category
filters (`source` starting with mmlu-pro / livebench-reasoning / livebench-math /
livecodebench); o1-mini's 65.71 is the leaderboard's number for this run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.evaluate import evaluate

from .conftest import needs_data
from .real_data import JUDGEBENCH

pytestmark = needs_data

O1_MINI = (
    "outputs_response_model-gpt-4o-2024-05-13_judge_name-arena_hard_judge_model-"
    "o1-mini-2024-09-12.jsonl"
)
HAIKU = (
    "outputs_response_model-claude-3-5-sonnet-20240620_judge_name-arena_hard_judge_model-"
    "claude-3-haiku-20240307.jsonl"
)


@pytest.mark.parametrize(
    ("name", "n", "overall", "categories"),
    [
        (
            O1_MINI,
            350,
            65.71,
            {"knowledge": 58.44, "reasoning": 62.24, "math": 82.14, "coding": 78.57},
        ),
        (
            HAIKU,
            270,
            32.22,
            {"knowledge": 37.66, "reasoning": 29.41, "math": 32.35, "coding": 9.68},
        ),
    ],
)
def test_stored_verdicts_reproduce_judgebench(
    name: str, n: int, overall: float, categories: dict[str, float]
) -> None:
    summary = evaluate([JUDGEBENCH / name])
    assert summary.format == "judgments" and summary.n == n
    assert round(100 * summary.measured.metrics["accuracy"], 2) == overall
    got = {k: round(100 * v["accuracy"], 2) for k, v in summary.measured.subsets.items()}
    assert got == categories


def test_stored_verdicts_through_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rewardsmith.cli",
            "evaluate",
            "--data",
            str(JUDGEBENCH / O1_MINI),
            "--json",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    assert summary["n"] == 350 and summary["format"] == "judgments"
    assert round(100 * summary["metrics"]["accuracy"], 2) == 65.71
    assert summary["attacks"] == []
