"""Data formats are detected from the columns; unreadable rows are reported, not fatal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import ConfigError
from rewardsmith.evaluate import detect_format, load_dataset
from rewardsmith.evaluate._data import BestOfNRow, JudgmentRow, LabelledRow, PairRow, PromptRow

from .conftest import needs_data
from .real_data import GSM8K, HUMANEVAL, JUDGEBENCH, LLMBAR, MATH500, RMBENCH, read_jsonl


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"prompt": "1+1?", "completion": "2", "reference": "2", "label": 1}, "labelled"),
        ({"prompt": "1+1?", "completion": "3", "reference": "2", "is_correct": False}, "labelled"),
        ({"completion": "2", "answer": "2", "expected": True}, "labelled"),
        ({"prompt": "p", "chosen": "a", "rejected": "b"}, "pairs"),
        ({"prompt": "p", "chosen": ["a", "b", "c"], "rejected": ["d", "e", "f"]}, "pairs"),
        ({"prompt": "p", "chosen": ["a"], "rejected": ["b", "c", "d"]}, "best_of_n"),
        ({"prompt": "p", "chosen": ["a"], "rejected": ["b"], "num_correct": 1}, "best_of_n"),
        ({"question": "q", "response_A": "a", "response_B": "b", "label": "A>B"}, "pairs"),
        ({"input": "q", "output_1": "a", "output_2": "b", "label": 2}, "pairs"),
        ({"question": "q", "label": "A>B", "judgments": []}, "judgments"),
        ({"question": "q", "answer": "#### 4"}, "prompts"),
        ({"prompt": "def f():", "test": "...", "entry_point": "f"}, "prompts"),
    ],
)
def test_format_is_detected_from_columns(row: dict[str, Any], expected: str) -> None:
    assert detect_format(row) == expected


def test_a_completion_without_label_is_refused_with_the_way_out() -> None:
    with pytest.raises(ConfigError, match="rewardsmith score"):
        detect_format({"completion": "2", "reference": "2"})


def test_label_keeps_its_contract_meaning_when_not_a_label(write_rows: Callable[..., Path]) -> None:
    """`label` is a reference alias of the data contract; 0/1 makes it the label instead."""
    path = write_rows([{"completion": "x", "label": 1, "answer": "4"}])
    (row,) = load_dataset([path]).rows
    assert isinstance(row, LabelledRow) and row.label is True
    assert row.base == {"answer": "4"}


def test_bad_lines_are_reported_with_their_number_and_the_rest_is_read(
    write_rows: Callable[..., Path], tmp_path: Path
) -> None:
    good = '{"prompt": "p", "chosen": "a", "rejected": "b"}\n'
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        good + "{not json\n" + "[1, 2]\n" + '{"prompt": "p", "chosen": 3, "rejected": "b"}\n' + good
    )
    dataset = load_dataset([path])
    assert len(dataset.rows) == 2
    lines = [str(e) for e in dataset.bad_lines]
    assert [line.split("line ")[1].split(":")[0] for line in lines] == ["2", "3", "4"]


@needs_data
def test_llmbar_files_are_pairs_with_the_file_as_subset() -> None:
    paths = sorted(LLMBAR.glob("*.json"))
    dataset = load_dataset(paths)
    assert dataset.format == "pairs"
    assert len(dataset.rows) == 419
    assert {r.subset for r in dataset.rows} == {p.stem for p in paths}
    first = dataset.rows[0]
    assert isinstance(first, PairRow) and first.base["prompt"]
    assert len({r.id for r in dataset.rows}) == 419  # ids made unique across files


@needs_data
def test_rmbench_rows_are_three_by_three_pairs() -> None:
    dataset = load_dataset([RMBENCH / "chat_filtered.json"])
    assert dataset.format == "pairs"
    row = dataset.rows[0]
    assert isinstance(row, PairRow) and len(row.chosen) == len(row.rejected) == 3


@needs_data
def test_judgebench_pairs_put_the_labelled_winner_first_and_categorise_by_source() -> None:
    path = JUDGEBENCH / "data_response_model-gpt-4o-2024-05-13.jsonl"
    raw = read_jsonl(path, 5)
    dataset = load_dataset([path])
    for data, row in zip(raw, dataset.rows, strict=False):
        assert isinstance(row, PairRow)
        better = data["response_A"] if data["label"] == "A>B" else data["response_B"]
        assert row.chosen == (better,)
        assert row.subset in {"knowledge", "reasoning", "math", "coding"}


@needs_data
def test_judgebench_outputs_are_stored_judgments() -> None:
    path = next(JUDGEBENCH.glob("outputs_*o1-mini*.jsonl"))
    dataset = load_dataset([path])
    assert dataset.format == "judgments" and len(dataset.rows) == 350
    row = dataset.rows[0]
    assert isinstance(row, JudgmentRow) and len(row.decisions) == 2


@needs_data
@pytest.mark.parametrize("path", [GSM8K, MATH500, HUMANEVAL])
def test_published_problem_files_are_prompt_rows(
    path: Path, write_rows: Callable[..., Path]
) -> None:
    source = write_rows(read_jsonl(path, 3))
    dataset = load_dataset([source])
    assert dataset.format == "prompts"
    row = dataset.rows[0]
    assert isinstance(row, PromptRow) and row.base["prompt"]
    if path == HUMANEVAL:
        assert set(row.base["reference"]) == {"test", "entry_point"}


def test_best_of_n_rows_keep_every_candidate(write_rows: Callable[..., Path]) -> None:
    path = write_rows(
        [{"prompt": "p", "chosen": ["a"], "rejected": ["b", "c", "d"], "subset": "s"}]
    )
    (row,) = load_dataset([path]).rows
    assert isinstance(row, BestOfNRow) and row.rejected == ("b", "c", "d") and row.subset == "s"


def test_a_one_line_json_array_names_the_bad_item(tmp_path: Path) -> None:
    """Every item of a compact array is on line 1: the item number says which one."""
    items = [{"input": "a", "output_1": "x", "output_2": "y", "label": n} for n in (1, 3, 2)]
    path = tmp_path / "llmbar.json"
    path.write_text(json.dumps(items))
    dataset = load_dataset([path])
    assert [r.id for r in dataset.rows] == ["1", "3"]
    assert "line 1: item 2: LLMBar label" in str(dataset.bad_lines[0])
