"""Streaming JSON Lines: one line in memory at a time, line numbers kept for errors.

Input is read as bytes and split on `\n` only: a bare `\r` inside a line is JSON
whitespace, not a line break. Each line is decoded on its own, so a line that is not UTF-8
(or is binary) is one `InputError` with its line number and the lines after it are read as
usual.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .._exceptions import InputError
from ..models import MAX_NESTING, Result, nested_deeper_than, result_json

__all__ = ["Record", "count_lines", "read_samples", "resume_point", "write_result"]

_BOM = b"\xef\xbb\xbf"


class Record(dict[str, Any]):
    """One input line's JSON object, still a plain dict to its readers, with the line it was
    on: a reader that finds it is not a valid sample can name the line in the file."""

    __slots__ = ("line",)

    def __init__(self, fields: dict[str, Any], line: int) -> None:
        super().__init__(fields)
        self.line = line


def read_samples(stream: IO[bytes], skip: int = 0) -> Iterator[Record | InputError]:
    """Parsed input records, each a dict (`Record`) or an `InputError`, with its line number.

    `stream` is binary (a file opened with "rb", `sys.stdin.buffer`). Blank lines are not
    samples and are passed over. A record without an `id` gets its 1-based line number. The
    first `skip` records are passed over unparsed (for resume).
    """
    seen = 0
    for number, raw in enumerate(stream, start=1):
        raw = _without_bom(raw, number)
        if not raw.strip():
            continue
        seen += 1
        if seen <= skip:
            continue
        yield _parse(raw, number)


def _without_bom(raw: bytes, number: int) -> bytes:
    """Line `number` without the BOM an editor may put before line 1, so that a line holding
    only a BOM is blank, as every other blank line is."""
    return raw.removeprefix(_BOM) if number == 1 else raw


def _parse(raw: bytes, number: int) -> Record | InputError:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"not UTF-8 text: {exc.reason} at byte {exc.start + 1}", number)
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", number)
    except RecursionError:
        return InputError(f"JSON nested more than {MAX_NESTING} levels deep", number)
    if not isinstance(record, dict):
        return InputError(f"a sample is a JSON object, got {type(record).__name__}", number)
    if nested_deeper_than(record):
        sample_id = record.get("id")
        return InputError(
            f"JSON nested more than {MAX_NESTING} levels deep",
            number,
            sample_id if isinstance(sample_id, str) else None,
        )
    if "id" not in record:
        record["id"] = str(number)
    return Record(record, number)


def count_lines(path: Path) -> int | None:
    """Non-blank lines of a file (the progress bar's total), read without keeping them.

    None when `path` is not a regular file: a pipe, a FIFO or `/dev/stdin` can be read only
    once, and that read is the scoring's.
    """
    if not stat.S_ISREG(path.stat().st_mode):
        return None
    with path.open("rb") as handle:
        return sum(1 for number, line in enumerate(handle, 1) if _without_bom(line, number).strip())


def resume_point(output: Path, keep_lines: int | None = None, *, cut: bool = True) -> list[str]:
    """Ids already written to `output`, after cutting off a partly written last line.

    An interrupted run leaves complete lines plus, at worst, one truncated line; the file is
    truncated to its complete lines (or to its first `keep_lines`) so appending continues
    cleanly. A line that is not a JSON object with an `id` (not UTF-8, not JSON, nested too
    deep: a disk or a copy gone wrong) is cut off the same way, with every line after it: those
    samples are scored again. With `cut=False` the ids are read and the file is left as it is
    (to check them before anything is cut).
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
            except (ValueError, KeyError, TypeError, RecursionError):  # ValueError: JSON, UTF-8
                break
            keep += len(raw)
    if cut and keep != output.stat().st_size:
        with output.open("r+b") as handle:
            handle.truncate(keep)
            os.fsync(handle.fileno())
    return ids


def write_result(stream: IO[str], result: Result) -> None:
    """One result as one line (optional fields, such as `advantage`, only when set; a lone
    surrogate a reward echoed as its JSON escape: see `result_json`)."""
    stream.write(result_json(result))
    stream.write("\n")
