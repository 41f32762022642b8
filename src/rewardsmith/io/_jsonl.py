"""Streaming JSON Lines: one line in memory at a time, line numbers kept for errors."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .._exceptions import InputError
from ..models import Result

__all__ = ["count_lines", "read_samples", "resume_point", "write_result"]


def read_samples(stream: IO[str], skip: int = 0) -> Iterator[dict[str, Any] | InputError]:
    """Parsed input records, each a dict or an `InputError` carrying its line number.

    Blank lines are not samples and are passed over. A record without an `id` gets its
    1-based line number. The first `skip` records are passed over unparsed (for resume).
    """
    seen = 0
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        seen += 1
        if seen <= skip:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", line=number)
            continue
        if not isinstance(record, dict):
            yield InputError(f"a sample is a JSON object, got {type(record).__name__}", number)
            continue
        if "id" not in record:
            record["id"] = str(number)
        yield record


def count_lines(path: Path) -> int:
    """Non-blank lines of a file (the progress bar's total), read without keeping them."""
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def resume_point(output: Path, keep_lines: int | None = None) -> list[str]:
    """Ids already written to `output`, after cutting off a partly written last line.

    An interrupted run leaves complete lines plus, at worst, one truncated line; the file is
    truncated to its complete lines (or to its first `keep_lines`) so appending continues
    cleanly.
    """
    if not output.exists():
        return []
    ids: list[str] = []
    keep = 0
    with output.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n") or len(ids) == keep_lines:
                break
            try:
                ids.append(str(json.loads(raw)["id"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                break
            keep += len(raw)
    if keep != output.stat().st_size:
        with output.open("r+b") as handle:
            handle.truncate(keep)
            os.fsync(handle.fileno())
    return ids


def write_result(stream: IO[str], result: Result) -> None:
    """One result as one line (optional fields, such as `advantage`, only when set)."""
    stream.write(result.model_dump_json(exclude_unset=True))
    stream.write("\n")
