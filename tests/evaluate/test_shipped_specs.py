"""The issue's must-show: on the shipped rewards, `--fail-on-attack` passes for the math spec
on GSM8K and MATH-500 rows and for the code spec on HumanEval rows."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import needs_data
from .real_data import GSM8K, HUMANEVAL, MATH500, read_jsonl

pytestmark = needs_data

ROOT = Path(__file__).resolve().parents[2]
CODE_SPEC = "rewards:\n  tests: {type: code}\ntimeout_s: 30\n"


def _fail_on_attack(spec: Path, data: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "rewardsmith.cli", "evaluate", "--spec", str(spec)]
    command += ["--data", str(data), "--fail-on-attack", "--workers", "2"]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("source", [GSM8K, MATH500], ids=["gsm8k", "math500"])
def test_math_spec_holds_against_every_attack(
    source: Path, write_rows: Callable[..., Path]
) -> None:
    done = _fail_on_attack(ROOT / "examples" / "math_spec.yaml", write_rows(read_jsonl(source, 25)))
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_code_spec_holds_against_every_attack(
    write_rows: Callable[..., Path], tmp_path: Path
) -> None:
    spec = tmp_path / "code.yaml"
    spec.write_text(CODE_SPEC)
    done = _fail_on_attack(spec, write_rows(read_jsonl(HUMANEVAL, 20)))
    assert done.returncode == 0, done.stderr[-3000:]
