"""The `sql` reward: execution accuracy of a predicted query against the gold query.

Both queries run against the sample's SQLite database and their results are compared: as
multisets of rows (or sets, as SkyRL and BIRD do), in order only when the gold query sorts
its result (a top-level ``ORDER BY``). 1 when they match, 0 when they do not or when the
predicted query fails (the error is in `detail`), `bad_format_score` (-1, as in SkyRL-SQL)
when the answer holds no query in the expected format.

The predicted query is untrusted. Each query runs on its own connection, opened read-only
(``mode=ro``) with ``query_only`` on, under an authorizer that allows only reading (SELECT,
reads of tables and columns, functions, recursive CTEs) and denies everything else: writes,
DDL, ``ATTACH`` (which would otherwise create files: ``mode=ro`` covers only the main
database), PRAGMAs, transactions, ``VACUUM INTO`` and ``load_extension``. A progress handler
stops a query past `time_limit_s`, at most `max_rows` + 1 rows are fetched, a value is at most
1 MB, and SQLite's heap is capped at `memory_mb` while the query runs (a process-wide SQLite
setting, restored afterwards). The engine's hard timeout bounds the whole sample as well.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
import urllib.parse
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..._exceptions import ConfigError
from ...models import Sample, Score
from ...registry import RewardFn, reward
from .._common import answer_part

__all__ = ["QueryFailed", "order_matters", "run_query", "sql", "sql_prediction"]

Rows = list[tuple[Any, ...]]

_MAX_VALUE_BYTES = 1_000_000
"""Longest string or blob a query may build (SQLITE_LIMIT_LENGTH)."""
_PROGRESS_OPS = 1_000
"""SQLite VM instructions between two checks of the time limit."""
_GOLD_CACHE_SIZE = 64
"""Gold results kept per worker (a group's completions share one gold query)."""

_ALLOWED = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


def _authorize(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    if action not in _ALLOWED:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class QueryFailed(Exception):
    """A query that could not run to a result within the limits (the reason is the text)."""


def run_query(db: Path, query: str, *, time_limit_s: float, max_rows: int, memory_mb: int) -> Rows:
    """The rows `query` returns from `db`, read-only and within the limits; raises
    `QueryFailed` with the reason (SQLite's error, the time limit, too many rows)."""
    uri = f"file:{urllib.parse.quote(str(db))}?mode=ro"
    deadline = time.monotonic() + time_limit_s
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        previous = conn.execute("PRAGMA hard_heap_limit").fetchone()[0]
        conn.execute(f"PRAGMA hard_heap_limit={memory_mb * 2**20}")
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA temp_store=MEMORY")  # sorts stay under the heap limit, not on disk
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.set_authorizer(_authorize)
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_OPS)
        try:
            return _fetch(conn.execute(query), max_rows, memory_mb * 2**20)
        except MemoryError:
            raise QueryFailed(f"out of memory: over the limit of {memory_mb} MB") from None
        except (sqlite3.Error, sqlite3.Warning, OverflowError, ValueError) as exc:
            if time.monotonic() > deadline:
                raise QueryFailed(f"stopped after the time limit of {time_limit_s:g} s") from None
            raise QueryFailed(f"{type(exc).__name__}: {exc}") from None
        finally:
            conn.set_authorizer(None)
            conn.set_progress_handler(None, 0)
            conn.execute(f"PRAGMA hard_heap_limit={previous}")
    finally:
        conn.close()


def _fetch(cursor: sqlite3.Cursor, max_rows: int, max_bytes: int) -> Rows:
    """At most `max_rows` rows holding at most `max_bytes` of values, else `QueryFailed`."""
    rows: Rows = []
    size = 0
    for row in cursor:
        if len(rows) == max_rows:
            raise QueryFailed(f"returned more than max_rows ({max_rows}) rows")
        size += sum(len(v) if isinstance(v, str | bytes) else 8 for v in row)
        if size > max_bytes:
            raise QueryFailed(f"returned more than {max_bytes // 2**20} MB of values")
        rows.append(tuple(row))
    cursor.close()
    return rows


_HIDDEN = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL
)
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def order_matters(query: str) -> bool:
    """Whether `query` sorts its result: an ``ORDER BY`` outside strings, comments and
    parentheses (one inside a subquery or a window does not order the result)."""
    text = _HIDDEN.sub(" ", query)
    depth, top = 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        top.append(char if depth == 0 and char not in "()" else " ")
    return _ORDER_BY.search("".join(top)) is not None


_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?P<lang>[\w+#.-]*)[^\n]*\n(?P<body>.*?)^[ \t]*```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_SQL_TAGS = frozenset({"sql", "sqlite"})
_SKYRL_TAGS = re.compile(r"</?(think|sql|observation)\b", re.IGNORECASE)


def _markdown(text: str) -> str | None:
    """The last ```sql block, else the last untagged block, else the answer text."""
    answer = answer_part(text)
    blocks = [(m["lang"].lower(), m["body"]) for m in _FENCE.finditer(answer)]
    tagged = [body for lang, body in blocks if lang in _SQL_TAGS]
    untagged = [body for lang, body in blocks if not lang]
    query = (tagged or untagged or [answer])[-1].strip()
    return query or None


def _skyrl(text: str) -> str | None:
    """SkyRL-SQL's format: one ``<solution>`` block (no think/sql/observation tag inside), at
    least one ``<think>`` block, and a ``<think>`` after every ``</observation>``."""
    if text.count("<solution>") != 1:
        return None
    before, tail = text.split("<solution>", 1)
    if tail.count("</solution>") != 1:
        return None
    solution = tail.split("</solution>", 1)[0]
    if _SKYRL_TAGS.search(solution) or not re.search(r"<think>.*?</think>", text, re.DOTALL):
        return None
    for closing in re.finditer(r"</observation>", before, re.IGNORECASE):
        if not before[closing.end() :].lstrip().lower().startswith("<think>"):
            return None
    return solution.strip() or None


Extract = Literal["markdown", "skyrl"]
_EXTRACTORS: dict[str, Callable[[str], str | None]] = {"markdown": _markdown, "skyrl": _skyrl}


def sql_prediction(text: str, extract: Extract) -> str | None:
    """The predicted query of a completion, or None when it is not in the expected format."""
    return _EXTRACTORS[extract](text)


_GOLD: OrderedDict[tuple[Any, ...], Rows] = OrderedDict()


def _gold_rows(db: Path, query: str, limits: dict[str, Any]) -> Rows:
    """The gold result, cached per worker by database file version and query."""
    stat = db.stat()
    key = (str(db), stat.st_ino, stat.st_mtime_ns, stat.st_size, query, *limits.values())
    if key in _GOLD:
        _GOLD.move_to_end(key)
        return _GOLD[key]
    rows = run_query(db, query, **limits)
    _GOLD[key] = rows
    if len(_GOLD) > _GOLD_CACHE_SIZE:
        _GOLD.popitem(last=False)
    return rows


def _same(gold: Rows, predicted: Rows, ordered: bool, compare: str) -> bool:
    if ordered:
        return gold == predicted
    if compare == "set":
        return set(gold) == set(predicted)
    return Counter(gold) == Counter(predicted)


@reward("sql")
def sql(
    *,
    extract: Extract = "markdown",
    compare: Literal["multiset", "set"] = "multiset",
    bad_format_score: float = -1.0,
    time_limit_s: float = 2.0,
    max_rows: int = 10_000,
    memory_mb: int = 256,
    db_root: str | None = None,
) -> RewardFn:
    """Execution accuracy: 1 when the predicted query returns the gold query's result.

    Reference: ``{"db": "path/to/file.sqlite", "query": "SELECT ..."}`` (a relative `db` is
    found under `db_root`, default the working directory). `extract`: ``markdown`` (the last
    ```` ```sql ```` block, else the last untagged block, else the answer text; bad format is
    an empty answer) or ``skyrl`` (SkyRL-SQL's ``<think>``/``<solution>`` format). The gold
    and the prediction each get `time_limit_s`: keep the spec's `timeout_s` above twice it.
    """
    if time_limit_s <= 0 or max_rows < 1 or memory_mb < 8:
        raise ConfigError("time_limit_s must be > 0, max_rows >= 1 and memory_mb >= 8")
    limits = {"time_limit_s": time_limit_s, "max_rows": max_rows, "memory_mb": memory_mb}
    root = Path(db_root) if db_root is not None else None

    def database(reference: dict[str, Any]) -> Path | str:
        db = reference.get("db")
        if not isinstance(db, str) or not db:
            return "reference 'db' must be the path of a SQLite file"
        path = Path(db)
        if not path.is_absolute():
            path = (root or Path(os.getcwd())) / path
        return path if path.is_file() else f"database not found: {path}"

    def score(sample: Sample) -> Score:
        reference = sample.reference
        if reference is None:
            return Score.failed("not_applicable", "no reference query")
        if not isinstance(reference, dict) or not isinstance(reference.get("query"), str):
            return Score.failed("invalid", "reference must be {'db': path, 'query': 'SELECT ...'}")
        db = database(reference)
        if isinstance(db, str):
            return Score.failed("invalid", db)
        query = sql_prediction(sample.text, extract)
        if query is None:
            return Score.ok(bad_format_score, reason=f"no query in the {extract} format")
        try:
            gold = _gold_rows(db, reference["query"], limits)
        except QueryFailed as exc:
            return Score.failed("invalid", f"the gold query fails: {exc}", query=query)
        ordered = order_matters(reference["query"])
        detail: dict[str, Any] = {"query": query, "ordered": ordered, "gold_rows": len(gold)}
        try:
            predicted = run_query(db, query, **limits)
        except QueryFailed as exc:
            return Score.ok(0.0, reason="the predicted query fails", error=str(exc), **detail)
        same = _same(gold, predicted, ordered, compare)
        detail["rows"] = len(predicted)
        if not same:
            detail["reason"] = "different result"
        return Score.ok(1.0 if same else 0.0, **detail)

    return score
