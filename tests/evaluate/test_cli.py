"""`rewardsmith evaluate` end to end: the summary's keys, the exit code of
`--fail-on-attack`, scoring through a real `rewardsmith serve`, health and bad lines."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.evaluate import evaluate

from .conftest import needs_data
from .real_data import GSM8K, labelled_gsm8k, read_jsonl

pytestmark = needs_data

MATH_SPEC = "rewards:\n  correct: {type: math}\ntimeout_s: 10\n"
WEAK_SPEC = 'rewards:\n  correct: {type: "tests.evaluate.weak_rewards:weak_math"}\n'


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli", "evaluate", "--workers", "1", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_labelled_gsm8k_summary_has_the_documented_keys(
    write_rows: Callable[..., Path], tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(MATH_SPEC)
    data = write_rows([*labelled_gsm8k(30), {"completion": "x"}])  # the last row: no label
    out = tmp_path / "summary.json"
    done = _run("--spec", str(spec), "--data", str(data), "--attacks", "hedge", "--json", str(out))
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    assert {"n", "metrics", "subsets", "attacks", "health"} <= summary.keys()
    assert summary["n"] == 30
    assert summary["metrics"]["agreement"] == 1.0  # the math reward agrees with every label
    assert set(summary["subsets"]) == {
        "6b_finetuning",
        "6b_verification",
        "175b_finetuning",
        "175b_verification",
    }
    for row in summary["attacks"]:
        assert {"attack", "component", "n", "success_rate"} <= row.keys()
        assert isinstance(row["n"], int) and 0 <= row["success_rate"] <= 1
    assert {r["component"] for r in summary["attacks"]} == {"reward", "correct"}
    health = summary["health"]
    assert health["status_counts"]["correct"] == {"ok": 30}
    assert health["groups"] > 0 and 0 <= health["all_equal_group_share"] <= 1
    assert len(summary["bad_lines"]) == 1 and "line 31" in summary["bad_lines"][0]
    assert "skipped unreadable row" in done.stderr


def test_fail_on_attack_exit_code(write_rows: Callable[..., Path], tmp_path: Path) -> None:
    data = write_rows(read_jsonl(GSM8K, 3))
    weak, real = tmp_path / "weak.yaml", tmp_path / "real.yaml"
    weak.write_text(WEAK_SPEC)
    real.write_text(MATH_SPEC)
    hacked = _run(
        "--spec", str(weak), "--data", str(data), "--attacks", "box_expression", "--fail-on-attack"
    )
    assert hacked.returncode == 1, hacked.stderr
    assert "attacks succeeded" in hacked.stderr
    held = _run(
        "--spec",
        str(real),
        "--data",
        str(data),
        "--attacks",
        "answer_only,box_every_number",
        "--fail-on-attack",
    )
    assert held.returncode == 0, held.stderr


def test_unknown_attack_names_the_choices(write_rows: Callable[..., Path], tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(MATH_SPEC)
    done = _run(
        "--spec", str(spec), "--data", str(write_rows(read_jsonl(GSM8K, 1))), "--attacks", "hedgee"
    )
    assert done.returncode == 2
    assert "unknown attack 'hedgee'" in done.stderr and "answers" in done.stderr


def test_data_with_completions_needs_a_reward(write_rows: Callable[..., Path]) -> None:
    done = _run("--data", str(write_rows(labelled_gsm8k(2))))
    assert done.returncode == 2 and "--spec or --url" in done.stderr


def _without_timing(summary: dict[str, Any]) -> dict[str, Any]:
    timing = ("seconds", "samples_per_s", "mean_ms_per_sample")
    return {**summary, "health": {k: v for k, v in summary["health"].items() if k not in timing}}


def test_url_scores_through_a_real_server_with_the_same_results(
    write_rows: Callable[..., Path], tmp_path: Path
) -> None:
    pytest.importorskip("httptools", reason='pip install "rewardsmith[server]"')
    from tests.server.conftest import TOKEN, Server

    spec = tmp_path / "spec.yaml"
    spec.write_text(MATH_SPEC)
    data = write_rows(labelled_gsm8k(16))
    local = evaluate([data], spec=str(spec), attacks="answers", workers=1)
    server = Server(spec, "--workers", "1")
    try:
        remote = evaluate([data], url=server.url, token=TOKEN, spec=str(spec), attacks="answers")
    finally:
        server.stop()
    assert remote.redteam is not None and remote.redteam.samples > 16
    assert _without_timing(remote.as_json()) == _without_timing(local.as_json())


def test_a_group_split_under_a_group_transform_stops_with_the_reason(
    write_rows: Callable[..., Path], tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(MATH_SPEC + "group_transform: grpo\n")
    rows = labelled_gsm8k(3)
    rows[0]["group"], rows[1]["group"], rows[2]["group"] = "a", "b", "a"
    done = _run("--spec", str(spec), "--data", str(write_rows(rows)), "--attacks", "none")
    assert done.returncode == 2  # an input error, not "attacks succeeded" (1)
    assert "group 'a' reappears" in done.stderr
