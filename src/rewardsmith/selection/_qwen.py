"""Qwen2.5-Math's evaluation output (`math_eval.py`, `rm_maj_eval.py`) as candidate samples.

One input line is one problem with its k sampled solutions::

    {"idx": 3, "question": "...", "answer": "...", "code": [k completions],
     "pred": [k extracted answers], "score": [k verdicts], "pred_score": [[rm], ...]}

(`gt` is read when `answer` is missing, `response` when `code` is). One output line per
solution, the problem's solutions together as one group::

    {"id": "3-0", "group": "3", "prompt": question, "completion": code[0], "reference": answer,
     "metadata": {"k": 0, "pred": pred[0], "qwen_correct": score[0], "rm_score": 3.5}}

so that `rewardsmith select --answer-key metadata.pred --correct-key metadata.qwen_correct`
reproduces Qwen's numbers, and `--score-key metadata.rm_score` is the reward model's score.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._exceptions import InputError
from ..io import read_samples
from ..verifiers.instructions.convert import ConversionError

__all__ = ["convert_qwen_math"]


def _column(row: dict[str, Any], names: tuple[str, ...], where: str) -> Any:
    for name in names:
        if name in row:
            return row[name]
    raise ConversionError(f"{where}: needs {' or '.join(repr(n) for n in names)}")


def _samples(row: dict[str, Any], where: str) -> list[dict[str, Any]]:
    idx = _column(row, ("idx",), where)
    question = _column(row, ("question",), where)
    gold = _column(row, ("answer", "gt"), where)
    completions = _column(row, ("code", "response"), where)
    if not isinstance(completions, list):
        raise ConversionError(f"{where}: 'code' must be a list of completions")
    k = len(completions)
    extras = {"pred": "pred", "qwen_correct": "score", "rm_score": "pred_score"}
    columns = {ours: row.get(theirs) for ours, theirs in extras.items()}
    for ours, column in columns.items():
        if column is not None and (not isinstance(column, list) or len(column) != k):
            raise ConversionError(
                f"{where}: '{extras[ours]}' must list {k} values, one per solution"
            )
    samples = []
    for j, completion in enumerate(completions):
        metadata: dict[str, Any] = {"k": j}
        for ours, column in columns.items():
            if column is None:
                continue
            value = column[j]
            if ours == "rm_score":  # Qwen stores [score] per solution
                if not (isinstance(value, list) and len(value) == 1):
                    raise ConversionError(f"{where}: 'pred_score' item {j} is not [score]")
                value = value[0]
            metadata[ours] = value
        samples.append(
            {
                "id": f"{idx}-{j}",
                "group": str(idx),
                "prompt": question,
                "completion": completion,
                "reference": gold,
                "metadata": metadata,
            }
        )
    return samples


def convert_qwen_math(in_path: str | Path, out_path: str | Path) -> int:
    """Write one sample per solution of every problem; returns the number written."""
    in_path, out_path = Path(in_path), Path(out_path)
    written = 0
    with in_path.open("rb") as source, out_path.open("w", encoding="utf-8") as sink:
        for record in read_samples(source):  # a line without `id` gets its line number
            if isinstance(record, InputError):
                raise ConversionError(f"{in_path}: {record}")
            for sample in _samples(record, f"{in_path}: line {record['id']}"):
                sink.write(json.dumps(sample, ensure_ascii=False) + "\n")
                written += 1
    return written
