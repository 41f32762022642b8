"""Convert the official IFEval / IFBench files into rewardsmith's data contract.

Input: the official prompt file (one JSON object per line with ``key``, ``prompt``,
``instruction_id_list``, ``kwargs``), and optionally the official response file (``prompt``,
``response`` per line, matched by prompt exactly, else by the stripped prompt, as IFBench's
evaluation does). Rows that already carry a ``response`` need no response file.

Output, one line per prompt, in input order::

    {"id": "1000", "prompt": "...", "completion": "...",
     "reference": {"instruction_id_list": [...], "kwargs": [...]},
     "metadata": {"benchmark": "ifeval"}}

Null kwargs are dropped (the official evaluation ignores them). Without responses the rows
have no ``completion``: a prompt dataset for a trainer, which generates the completions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

__all__ = ["ConversionError", "convert"]

Benchmark = Literal["ifeval", "ifbench"]


class ConversionError(ValueError):
    """An input line is not in the official format (message names file and line)."""


def _read(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ConversionError(f"{path}:{number}: not JSON: {exc}") from None
            if not isinstance(row, dict):
                raise ConversionError(f"{path}:{number}: a line must be a JSON object")
            yield number, row


def _responses(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for number, row in _read(path):
        if not isinstance(row.get("prompt"), str) or not isinstance(row.get("response"), str):
            raise ConversionError(f"{path}:{number}: needs string 'prompt' and 'response'")
        found[row["prompt"]] = row["response"]
        found.setdefault(row["prompt"].strip(), row["response"])
    return found


def convert(
    benchmark: Benchmark,
    in_path: str | Path,
    out_path: str | Path,
    responses: str | Path | None = None,
) -> int:
    """Write the converted file; returns the number of rows written."""
    in_path, out_path = Path(in_path), Path(out_path)
    answers = _responses(Path(responses)) if responses is not None else None
    rows = []
    for number, row in _read(in_path):
        where = f"{in_path}:{number}"
        ids, kwargs, prompt = row.get("instruction_id_list"), row.get("kwargs"), row.get("prompt")
        if not isinstance(prompt, str):
            raise ConversionError(f"{where}: needs a string 'prompt'")
        if not isinstance(ids, list) or not isinstance(kwargs, list) or len(ids) != len(kwargs):
            raise ConversionError(
                f"{where}: needs 'instruction_id_list' and 'kwargs' lists of equal length"
            )
        clean = [{k: v for k, v in (kw or {}).items() if v is not None} for kw in kwargs]
        out: dict[str, Any] = {"id": str(row.get("key", number)), "prompt": prompt}
        response = row.get("response")
        if answers is not None:
            response = answers.get(prompt, answers.get(prompt.strip()))
            if response is None:
                raise ConversionError(f"{where}: no response for this prompt in {responses}")
        if response is not None:
            out["completion"] = response
        out["reference"] = {"instruction_id_list": ids, "kwargs": clean}
        out["metadata"] = {"benchmark": benchmark}
        rows.append(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as handle:
        for out in rows:
            handle.write(json.dumps(out, ensure_ascii=False) + "\n")
    return len(rows)
