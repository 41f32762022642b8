"""Evaluation data: the four formats of `rewardsmith evaluate`, detected from the columns.

* **labelled** -- the data contract plus a label (`label`, `is_correct` or `expected`, 0/1 or
  bool): ``{"prompt": ..., "completion": ..., "reference": "18", "label": 1}``;
* **pairs** -- ``{"prompt", "chosen", "rejected", "subset"?}``; also JudgeBench
  (`question`, `response_A`, `response_B`, `label` "A>B"/"B>A", `source`), LLMBar (`input`,
  `output_1`, `output_2`, `label` 1/2) and RM-Bench (`chosen` and `rejected`: k style variants
  each, scored as a k x k matrix);
* **best_of_n** -- ``{"prompt", "chosen": [...], "rejected": [...]}`` (RewardBench 2);
* **judgments** -- stored verdicts of an external judge (JudgeBench's `outputs/` files).

Rows with a prompt and a reference but no completion (GSM8K, MATH-500, HumanEval as
published) are **prompts**: they measure nothing on their own, but the attacks are built from
them. Files are JSON Lines or JSON arrays (LLMBar, RM-Bench; several one after the other
too), UTF-8 with or without a BOM, lines ended by LF, CRLF or CR; a malformed line is reported
with its number and the rest is read; an array is read item by item, up to one that is not
valid JSON (an item that is not UTF-8 is one bad item).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Literal, NamedTuple, get_args

from .._exceptions import ConfigError, InputError

__all__ = [
    "BestOfNRow",
    "Dataset",
    "Format",
    "JudgmentRow",
    "LabelledRow",
    "PairRow",
    "PromptRow",
    "Row",
    "detect_format",
    "load_dataset",
]

Format = Literal["labelled", "pairs", "best_of_n", "judgments", "prompts"]
"""The data formats (`prompts`: no completion, only for attacks)."""

LABEL_KEYS = ("label", "is_correct", "expected")
"""Columns read as the label of a labelled sample, in order."""
PROMPT_KEYS = ("prompt", "question", "problem", "input", "instruction")
"""Columns read as the prompt, in order (datasets name it differently)."""
JUDGEBENCH_CATEGORIES = (
    ("mmlu-pro", "knowledge"),
    ("livebench-reasoning", "reasoning"),
    ("livebench-math", "math"),
    ("livecodebench", "coding"),
)
"""JudgeBench's categories, by prefix of the row's `source` (as its `run_judge.py` groups)."""


@dataclass(frozen=True)
class Row:
    """One data row: where it came from, its subset, and the sample fields it shares."""

    id: str
    line: int
    """1-based line of its file where the row starts."""
    subset: str | None
    base: dict[str, Any]
    """Data-contract fields other than the completion: prompt, reference, metadata."""

    def sample(self, completion: str, suffix: str, **metadata: Any) -> dict[str, Any]:
        """A data-contract sample of this row with `completion`, id ``<row id>/<suffix>``."""
        sample = {**self.base, "id": f"{self.id}/{suffix}", "completion": completion}
        if metadata:
            sample["metadata"] = {**self.base.get("metadata", {}), **metadata}
        return sample


@dataclass(frozen=True)
class LabelledRow(Row):
    completion: str | list[Any] = ""
    label: bool = False


@dataclass(frozen=True)
class PairRow(Row):
    """`chosen[i]` should beat `rejected[j]`; one of each for a plain pair, k for RM-Bench."""

    chosen: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()


@dataclass(frozen=True)
class BestOfNRow(Row):
    chosen: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgmentRow(Row):
    """A stored verdict pair: `decisions` in the order (A, B), then (B, A) as given."""

    label: str = ""
    decisions: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class PromptRow(Row):
    """A prompt with its reference and no completion."""


@dataclass
class Dataset:
    """The rows of every `--data` file in one format, and the lines that could not be read."""

    format: Format
    rows: list[Row] = field(default_factory=list)
    bad_lines: list[InputError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    """What the reader did that the rows do not show (a file given twice, read once)."""


def load_dataset(paths: Sequence[str | Path], format: Format | Literal["auto"] = "auto") -> Dataset:
    """Read every file; the format is detected from the first row that decides it unless given.

    When several files are given and rows carry no subset, each file's name is its subset
    (LLMBar's five files are its five subsets; see `_file_names`). Unreadable rows, and rows
    that cannot decide the format, are reported and skipped, so one bad line cannot hide the
    file; data with no readable row at all is an error.
    """
    if format != "auto" and format not in get_args(Format):
        raise ConfigError(f"--format: unknown format {format!r}")
    paths, notices = _distinct(paths)
    dataset: Dataset | None = None
    bad: list[InputError] = []
    seen: set[str] = set()
    for path, name in zip(paths, _file_names(paths), strict=True):
        subset = name if len(paths) > 1 else None
        for record in _records(Path(path)):
            if isinstance(record, InputError):
                bad.append(InputError(f"{path}: {record}"))
                continue
            try:
                if dataset is None:
                    dataset = Dataset(detect_format(record.data) if format == "auto" else format)
                row = _row(dataset.format, record, subset)
            except (KeyError, TypeError, ValueError) as exc:  # ConfigError: decides no format
                bad.append(InputError(f"{path}: line {record.line}: {record.where}{exc}"))
                continue
            row = replace(row, id=_unique_id(row.id, name, seen))
            seen.add(row.id)
            dataset.rows.append(row)
    names = ", ".join(map(str, paths))
    if dataset is None and not bad:
        raise InputError(f"--data: no rows in {names}")
    if dataset is None or not dataset.rows:
        raise InputError(
            f"--data: no readable row in {names}; {len(bad)} unreadable, the first: {bad[0]}"
        )
    dataset.bad_lines, dataset.notices = bad, notices
    return dataset


def _distinct(paths: Sequence[str | Path]) -> tuple[list[str | Path], list[str]]:
    """Each file once (by its resolved path: `a.jsonl`, `./a.jsonl`, a symlink to it), and a
    notice per repeat: a file read twice would count every row twice, under renamed ids."""
    first: dict[Path, str | Path] = {}
    notices = []
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in first:
            notices.append(f"--data: {path} is {first[resolved]} again; read once")
        else:
            first[resolved] = path
    return list(first.values()), notices


def _file_names(paths: Sequence[str | Path]) -> list[str]:
    """Each file's name without its extension, with as many of its folders as tell it from
    the other files (`Natural/dataset`, `Neighbor/dataset`); the path as given when nothing
    does (one name, two extensions)."""
    parts = [(*Path(p).absolute().parent.parts, Path(p).stem) for p in paths]

    def name(index: int) -> str:
        mine = parts[index]
        others = [other for at, other in enumerate(parts) if at != index]
        for depth in range(1, len(mine) + 1):
            if all(other[-depth:] != mine[-depth:] for other in others):
                return "/".join(mine[-depth:])
        return str(paths[index])

    return [name(i) for i in range(len(paths))]


def _unique_id(row_id: str, file: str, seen: set[str]) -> str:
    """`row_id`, else `<file>:<row_id>`, else `<file>:<row_id>#2`, ...: the summary's tables
    and the attack pass name rows by id, so two rows must never share one."""
    if row_id not in seen:
        return row_id
    renamed, count = f"{file}:{row_id}", 1
    while renamed in seen:
        count += 1
        renamed = f"{file}:{row_id}#{count}"
    return renamed


def detect_format(data: dict[str, Any]) -> Format:
    """The format a row's columns say (see the module docstring); a ConfigError when they
    say none (a completion without a label, half a pair, neither a prompt nor a completion)."""
    if "judgments" in data:
        return "judgments"
    if {"response_A", "response_B"} <= data.keys() or {"output_1", "output_2"} <= data.keys():
        return "pairs"
    if "chosen" in data and "rejected" in data:
        chosen, rejected = data["chosen"], data["rejected"]
        if isinstance(chosen, list) and isinstance(rejected, list):
            same = len(chosen) == len(rejected) and "num_correct" not in data
            return "pairs" if same else "best_of_n"
        return "pairs"
    if "completion" in data and any(_is_label(data.get(k)) for k in LABEL_KEYS):
        return "labelled"
    if "completion" in data:
        raise ConfigError(
            "--data: rows have a completion but no label (label / is_correct / expected, 0/1 "
            "or bool); to score unlabelled samples use `rewardsmith score`"
        )
    if data.keys() & set(_RESPONSE_KEYS):
        raise ConfigError("--data: a pair needs both its responses (chosen and rejected, ...)")
    if _prompt_text(data) is None:
        raise ConfigError("--data: no prompt, completion or pair: the row says no format")
    return "prompts"


def _is_label(value: Any) -> bool:
    return isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))


class _Record(NamedTuple):
    """A readable JSON object, with the line it starts on and, in a JSON array, its position."""

    line: int
    item: int | None
    data: dict[str, Any]

    @property
    def number(self) -> int:
        """The row's default id: its line, or its position in a JSON array."""
        return self.item if self.item is not None else self.line

    @property
    def where(self) -> str:
        """How a message names the row beside its line."""
        return _item_prefix(self.item)


def _item_prefix(item: int | None) -> str:
    """The `item N: ` that names a row of a JSON array (its line alone does not), else ""."""
    return f"item {item}: " if item is not None else ""


_BOM = b"\xef\xbb\xbf"
_BREAK = re.compile(r"\r\n?|\n")
"""A line end as `bytes.splitlines` reads one (JSON strings cannot hold a raw CR or LF)."""
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
"""A byte that is not UTF-8, as `surrogateescape` decodes it."""


def _records(path: Path) -> Iterator[_Record | InputError]:
    """The file's rows. JSON Lines are streamed line by line; a file whose first line opens
    a JSON array that runs past it (a pretty-printed one) or is one array of objects (or an
    empty one) is read whole, value by value. A UTF-8 BOM is skipped at the start of the file
    and of each line or array (`cat` of files saved with one leaves one before each)."""
    with path.open("rb") as handle:
        start = len(_BOM) if handle.read(len(_BOM)) == _BOM else 0
        handle.seek(start)
        first = next((raw for raw in _lines(handle) if raw.strip()), b"")
        handle.seek(start)
        if _is_array_file(first.decode("utf-8", "surrogateescape").strip()):
            yield from _stream_records(handle.read().decode("utf-8", "surrogateescape"))
            return
        for number, line in enumerate(_lines(handle), start=1):
            raw = line.removeprefix(_BOM)
            if raw.strip():
                yield _line_record(raw.decode("utf-8", "surrogateescape"), number)


def _lines(handle: IO[bytes]) -> Iterator[bytes]:
    """The file's lines, as `bytes.splitlines` cuts them (`\n`, `\r\n` or a bare `\r`),
    one read chunk in memory at a time."""
    for chunk in handle:
        yield from chunk.splitlines()


def _is_array_file(first: str) -> bool:
    """Whether the first non-blank line starts JSON that spans lines (`[` of a pretty-printed
    array: its JSON runs out at the line end) or is one array of objects (or empty); any
    other first line, a header `["prompt", "completion"]` included, starts JSON Lines."""
    if not first.startswith("["):
        return False
    try:
        value = json.loads(first)
    except json.JSONDecodeError as exc:
        return exc.pos >= len(first)
    except RecursionError:
        return False
    return isinstance(value, list) and (not value or any(isinstance(v, dict) for v in value))


def _line_record(text: str, number: int) -> _Record | InputError:
    if _NOT_UTF8.search(text):
        return InputError("not UTF-8 text", number)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", number)
    except RecursionError:
        return InputError("not valid JSON: nested too deep", number)
    return _as_record(value, number, None)


def _as_record(value: Any, line: int, item: int | None) -> _Record | InputError:
    """A JSON object is a row; anything else is one bad row."""
    if isinstance(value, dict):
        return _Record(line, item, value)
    kind = type(value).__name__
    return InputError(f"{_item_prefix(item)}a row is a JSON object, got {kind}", line)


_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return match.end() if match else pos


class _Stream:
    """A position in a file read whole, and the line it is on (line ends counted as
    `bytes.splitlines` counts them)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line, self.item = text, 0, 1, 0
        self.move(0)

    def move(self, pos: int) -> None:
        """Go to `pos`, then past the whitespace there."""
        end = _skip_space(self.text, pos)
        self.line, self.pos = self.line_of(end), end

    def line_of(self, pos: int) -> int:
        return self.line + len(_BREAK.findall(self.text, self.pos, pos))

    def at(self, char: str) -> bool:
        return self.text.startswith(char, self.pos)


def _stream_records(text: str) -> Iterator[_Record | InputError]:
    """Every JSON value of the file in turn (`cat a.json b.json` gives two arrays): an
    array's items one by one, so each keeps the line it starts on and its item number
    (counted through the file); an object is a row. A value that is not valid JSON is
    reported by line, and nothing after it can be told apart, so reading stops there."""
    stream, decoder = _Stream(text), json.JSONDecoder()
    while stream.pos < len(text):
        if stream.at(_BOM.decode()):  # the start of a file `cat` appended
            stream.move(stream.pos + 1)
            continue
        opened = stream.at("[")
        if opened:
            stream.move(stream.pos + 1)
        while not (opened and stream.at("]")):
            stream.item += 1
            try:
                value, end = decoder.raw_decode(text, stream.pos)
            except (json.JSONDecodeError, RecursionError) as exc:
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
                pos = exc.pos if isinstance(exc, json.JSONDecodeError) else stream.pos
                message = f"item {stream.item}: not valid JSON ({why}); the rest is not read"
                yield InputError(message, stream.line_of(pos))
                return
            if _NOT_UTF8.search(text, stream.pos, end):
                yield InputError(f"item {stream.item}: not UTF-8 text", stream.line)
            else:
                yield _as_record(value, stream.line, stream.item)
            stream.move(end)
            if not opened:
                break
            if stream.at(","):
                stream.move(stream.pos + 1)
            elif not stream.at("]"):
                message = "not a valid JSON array: ',' or ']' expected; the rest is not read"
                yield InputError(message, stream.line)
                return
        if opened:
            stream.move(stream.pos + 1)


def _row(format: Format, record: _Record, file_subset: str | None) -> Row:
    data, line = record.data, record.line
    row_id = str(data.get("id", data.get("pair_id", data.get("task_id", record.number))))
    subset = data.get("subset")
    if subset is None and isinstance(data.get("source"), str):
        subset = _judgebench_category(data["source"])
    subset = str(subset) if subset is not None else file_subset
    if format == "judgments":
        decisions = tuple(
            (j or {}).get("decision") if isinstance(j, dict | None) else None
            for j in data["judgments"]
        )
        label = data["label"]
        if label not in ("A>B", "B>A"):
            raise ValueError(f"label must be 'A>B' or 'B>A', got {label!r}")
        return JudgmentRow(row_id, line, subset, {}, label=label, decisions=decisions)
    if format == "pairs":
        chosen, rejected = _pair(data)
        return PairRow(row_id, line, subset, _base(data, exclude=_PAIR_KEYS), chosen, rejected)
    if format == "best_of_n":
        chosen, rejected = _texts(data["chosen"], "chosen"), _texts(data["rejected"], "rejected")
        return BestOfNRow(row_id, line, subset, _base(data, exclude=_PAIR_KEYS), chosen, rejected)
    if format == "labelled":
        key = next((k for k in LABEL_KEYS if _is_label(data.get(k))), None)
        if key is None:
            raise ValueError("no 0/1 or bool label in label / is_correct / expected")
        completion = data["completion"]
        if not isinstance(completion, str | list):
            raise TypeError("completion must be a string or a list of messages")
        base = _base(data, exclude=(key, "completion"))
        return LabelledRow(row_id, line, subset, base, completion, bool(data[key]))
    return PromptRow(row_id, line, subset, _prompt_base(data))


_RESPONSE_KEYS = ("chosen", "rejected", "response_A", "response_B", "output_1", "output_2")
"""The columns of a pair's responses, in every format that has pairs."""
_PAIR_KEYS = (
    *_RESPONSE_KEYS,
    "label",
    "num_correct",
    "num_incorrect",
    "num_rejected",
)


def _judgebench_category(source: str) -> str:
    return next(
        (name for prefix, name in JUDGEBENCH_CATEGORIES if source.startswith(prefix)), source
    )


def _pair(data: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if "response_A" in data:
        a, b, label = data["response_A"], data["response_B"], data.get("label")
        if label not in ("A>B", "B>A"):
            raise ValueError(f"JudgeBench label must be 'A>B' or 'B>A', got {label!r}")
        better, worse = (a, b) if label == "A>B" else (b, a)
        return _texts(better, "response"), _texts(worse, "response")
    if "output_1" in data:
        label = str(data.get("label"))
        if label not in ("1", "2"):
            raise ValueError(f"LLMBar label must be 1 or 2, got {data.get('label')!r}")
        one, two = data["output_1"], data["output_2"]
        better, worse = (one, two) if label == "1" else (two, one)
        return _texts(better, "output"), _texts(worse, "output")
    chosen, rejected = _texts(data["chosen"], "chosen"), _texts(data["rejected"], "rejected")
    if len(chosen) != len(rejected):
        raise ValueError(f"{len(chosen)} chosen but {len(rejected)} rejected (use best_of_n)")
    return chosen, rejected


def _texts(value: Any, name: str) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) for v in items):
        raise TypeError(f"{name} must be a string or a non-empty list of strings")
    return tuple(items)


def _prompt_text(data: dict[str, Any]) -> Any:
    return next((data[k] for k in PROMPT_KEYS if data.get(k) is not None), None)


def _base(data: dict[str, Any], exclude: Sequence[str]) -> dict[str, Any]:
    """The contract fields: prompt from its aliases, the rest as `Sample` reads them."""
    base = {k: v for k, v in data.items() if k not in exclude and k not in PROMPT_KEYS}
    base.pop("id", None)
    base.pop("completion", None)
    prompt = _prompt_text(data)
    if prompt is not None:
        base["prompt"] = prompt
    extra = {
        k: v for k, v in data.items() if k in PROMPT_KEYS and k != "prompt" and v is not prompt
    }
    if extra:
        base.setdefault("metadata", {})
        base["metadata"] = {**extra, **base["metadata"]}
    return base


def _prompt_base(data: dict[str, Any]) -> dict[str, Any]:
    """A prompt row's fields; HumanEval's `test` + `entry_point` become the code reference."""
    base = _base(data, exclude=())
    if "test" in data and "entry_point" in data and "reference" not in data:
        base.pop("test", None)
        base.pop("entry_point", None)
        base["reference"] = {"test": data["test"], "entry_point": data["entry_point"]}
    return base
