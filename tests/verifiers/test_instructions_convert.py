"""The official-file converter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.cli import main
from rewardsmith.models import Sample
from rewardsmith.verifiers.instructions import ifbench
from rewardsmith.verifiers.instructions.convert import ConversionError, convert


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_convert_joins_responses_and_drops_null_kwargs(tmp_path: Path) -> None:
    prompts = _write(tmp_path / "p.jsonl", [{
        "key": 7, "prompt": "Count. ", "instruction_id_list": ["count:numbers"],
        "kwargs": [{"N": 2, "keyword": None}],
    }])  # fmt: skip
    responses = _write(tmp_path / "r.jsonl", [{"prompt": "Count.", "response": "1 2"}])
    out = tmp_path / "out.jsonl"
    assert convert("ifbench", prompts, out, responses) == 1
    row = json.loads(out.read_text())
    assert row == {
        "id": "7", "prompt": "Count. ", "completion": "1 2",
        "reference": {"instruction_id_list": ["count:numbers"], "kwargs": [{"N": 2}]},
        "metadata": {"benchmark": "ifbench"},
    }  # fmt: skip
    assert ifbench()(Sample.model_validate(row)).score == 1.0


def test_convert_without_responses_makes_a_prompt_dataset(tmp_path: Path) -> None:
    prompts = _write(tmp_path / "p.jsonl", [
        {"key": 1, "prompt": "x", "instruction_id_list": ["format:no_whitespace"], "kwargs": [{}]},
    ])  # fmt: skip
    convert("ifbench", prompts, tmp_path / "o.jsonl")
    assert "completion" not in json.loads((tmp_path / "o.jsonl").read_text())


def test_convert_names_the_bad_line(tmp_path: Path) -> None:
    prompts = _write(tmp_path / "p.jsonl", [{"key": 1, "prompt": "x", "kwargs": []}])
    with pytest.raises(ConversionError, match=r"p.jsonl:1"):
        convert("ifbench", prompts, tmp_path / "o.jsonl")


def test_convert_command_writes_samples_score_can_read(tmp_path: Path) -> None:
    data = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ifeval"
    if not data.exists():
        pytest.skip(f"no IFEval data at {data}")
    out = tmp_path / "samples.jsonl"
    code = main(
        ["convert", "ifeval", str(data / "input_data.jsonl"), str(out),
         "--responses", str(data / "input_response_data_gpt4_20231107_145030.jsonl")]
    )  # fmt: skip
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 541
    assert {"id", "prompt", "completion", "reference"} <= rows[0].keys()
    assert main(["convert", "ifeval", str(tmp_path / "missing.jsonl"), str(out)]) != 0
