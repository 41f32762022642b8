"""The `sql` reward: execution accuracy of a predicted query against the gold query.

Both queries run against the sample's SQLite database and their results are compared: as
multisets of rows (or sets, as SkyRL and BIRD do), in order only when the gold query sorts
its result (a top-level ``ORDER BY``). 1 when they match, 0 when they do not or when the
predicted query fails (the error is in `detail`), `bad_format_score` (-1, as in SkyRL-SQL)
when the answer holds no query in the expected format.

The predicted query is untrusted. Each query runs in the worker's query process
(`sql_exec`), killed when a query outruns `time_limit_s`, on its own connection, opened
read-only (``mode=ro``) with ``query_only`` on, under an authorizer that allows only reading
(SELECT, reads of tables and columns, functions, recursive CTEs) and denies everything else:
writes, DDL, ``ATTACH`` (which would otherwise create files: ``mode=ro`` covers only the main
database), PRAGMAs, transactions, ``VACUUM INTO`` and ``load_extension``. At most `max_rows` +
1 rows are fetched, a value is at most 1 MB, the rows at most `memory_mb` of Python objects,
and SQLite's heap is capped at `memory_mb`. The query process digests the rows in batches
as they are fetched (`sql_exec.row_digest`, within the query's limits) and sends back only
the 16-byte digests: results are compared, and gold results cached, as digests, never as
rows. The reward declares its worst case (`registry.timed`), so a spec whose `timeout_s`
would kill it first is refused.
"""

from __future__ import annotations

import os
import re
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..._exceptions import ConfigError
from ...models import Sample, Score
from ...registry import RewardFn, bounded, checks_references, problem_of, reward, timed
from .._completion_parts import answer_part
from .sql_exec import DIGEST_BYTES, QueryFailed, run_digests, run_query, worst_case_s

__all__ = [
    "QueryFailed",
    "fenced_blocks",
    "order_matters",
    "run_query",
    "sql",
    "sql_prediction",
]

_GOLD_CACHE_SIZE = 64
"""Gold results kept per worker (a group's completions share one gold query)."""


_QUOTED = r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?(?:\*/|\Z)"
_HIDDEN = re.compile(_QUOTED + r"|\[[^\]]*(?:\]|\Z)", re.DOTALL)
_HIDDEN_AFTER_LAST_BRACKET = re.compile(_QUOTED, re.DOTALL)
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def _hide(match: re.Match[str]) -> str:
    """A space for a string, identifier or comment; an unclosed ``[`` stays, and the text
    after it (where no ``]`` is left to close any bracket) is hidden without brackets.

    Reading an unclosed ``[`` to the end, instead of failing there and retrying from the next
    ``[``, keeps the scan linear (``[`` repeated 100,000 times took seconds)."""
    span = match.group()
    if span.startswith("[") and not span.endswith("]"):
        return "[" + _HIDDEN_AFTER_LAST_BRACKET.sub(" ", span[1:])
    return " "


def order_matters(query: str) -> bool:
    """Whether `query` sorts its result: an ``ORDER BY`` outside strings, comments and
    parentheses (one inside a subquery or a window does not order the result)."""
    text = _HIDDEN.sub(_hide, query)
    depth, top = 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        top.append(char if depth == 0 and char not in "()" else " ")
    return _ORDER_BY.search("".join(top)) is not None


_FENCE_OPEN = re.compile(r"[ \t]*```[ \t]*([\w+#.-]*)")
_FENCE_CLOSE = re.compile(r"[ \t]*```[ \t]*")
_SQL_TAGS = frozenset({"sql", "sqlite"})
_SKYRL_TAGS = re.compile(r"</?(think|sql|observation)\b", re.IGNORECASE)
_AFTER_OBSERVATION = re.compile(r"</observation>\s*", re.IGNORECASE)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """The Markdown code blocks of `text` as ``(language, body)``, in one pass over its lines.

    A block opens on a line that starts with ```` ``` ```` (its language after it) and is not
    the last line, and closes at the next line that is only ```` ``` ````; an opening line with
    no closing line after it opens nothing, and then neither does any later line.
    """
    lines = text.split("\n")
    next_close, after = [len(lines)] * len(lines), len(lines)
    for k in range(len(lines) - 1, -1, -1):
        next_close[k] = after
        if _FENCE_CLOSE.fullmatch(lines[k]):
            after = k
    blocks, k = [], 0
    while k < len(lines) - 1:
        opening = _FENCE_OPEN.match(lines[k])
        if opening is None:
            k += 1
            continue
        end = next_close[k]
        if end == len(lines):
            break
        blocks.append((opening[1].lower(), "\n".join(lines[k + 1 : end])))
        k = end + 1
    return blocks


def _markdown(text: str) -> str | None:
    """The last ```sql block, else the last untagged block, else the answer text."""
    answer = answer_part(text)
    blocks = fenced_blocks(answer)
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
    think = text.find("<think>")
    if _SKYRL_TAGS.search(solution) or think < 0 or text.find("</think>", think + 7) < 0:
        return None
    for closing in _AFTER_OBSERVATION.finditer(before):
        if before[closing.end() : closing.end() + len("<think>")].lower() != "<think>":
            return None
    return solution.strip() or None


Extract = Literal["markdown", "skyrl"]
_EXTRACTORS: dict[str, Callable[[str], str | None]] = {"markdown": _markdown, "skyrl": _skyrl}


def sql_prediction(text: str, extract: Extract) -> str | None:
    """The predicted query of a completion, or None when it is not in the expected format."""
    return _EXTRACTORS[extract](text)


_GOLD: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()


def _digests(db: Path, query: str, limits: dict[str, Any]) -> bytes:
    """The digests of `query`'s rows, in order, one after another: no row is kept whole."""
    return run_digests(db, query, **limits)


def _gold_digests(db: Path, query: str, limits: dict[str, Any]) -> bytes:
    """The gold result's digests, cached per worker by database file version and query."""
    stat = db.stat()
    key = (str(db), stat.st_ino, stat.st_mtime_ns, stat.st_size, query, *limits.values())
    if key in _GOLD:
        _GOLD.move_to_end(key)
        return _GOLD[key]
    rows = _digests(db, query, limits)
    _GOLD[key] = rows
    if len(_GOLD) > _GOLD_CACHE_SIZE:
        _GOLD.popitem(last=False)
    return rows


def _split(digests: bytes) -> list[bytes]:
    return [digests[i : i + DIGEST_BYTES] for i in range(0, len(digests), DIGEST_BYTES)]


def _same(gold: bytes, predicted: bytes, ordered: bool, compare: str) -> bool:
    if ordered:
        return gold == predicted
    if compare == "set":
        return set(_split(gold)) == set(_split(predicted))
    return Counter(_split(gold)) == Counter(_split(predicted))


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
    and the prediction each get `time_limit_s` (and 0.25 s before the kill): a spec whose
    `timeout_s` is not above twice that plus `sql_exec.START_UP_S` is refused.
    """
    if time_limit_s <= 0 or max_rows < 1 or memory_mb < 8:
        raise ConfigError("time_limit_s must be > 0, max_rows >= 1 and memory_mb >= 8")
    limits = {"time_limit_s": time_limit_s, "max_rows": max_rows, "memory_mb": memory_mb}
    root = Path(db_root) if db_root is not None else None

    def located(reference: Any) -> Path | str:
        """The reference's database file, or what makes the reference invalid."""
        if not isinstance(reference, dict) or not isinstance(reference.get("query"), str):
            return "reference must be {'db': path, 'query': 'SELECT ...'}"
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
        db = located(reference)
        if isinstance(db, str):
            return Score.failed("invalid", db)
        query = sql_prediction(sample.text, extract)
        if query is None:
            return Score.ok(bad_format_score, reason=f"no query in the {extract} format")
        try:
            gold = _gold_digests(db, reference["query"], limits)
        except QueryFailed as exc:
            return Score.failed("invalid", f"the gold query fails: {exc}", query=query)
        ordered = order_matters(reference["query"])
        gold_rows = len(gold) // DIGEST_BYTES
        detail: dict[str, Any] = {"query": query, "ordered": ordered, "gold_rows": gold_rows}
        try:
            predicted = _digests(db, query, limits)
        except QueryFailed as exc:
            return Score.ok(0.0, reason="the predicted query fails", error=str(exc), **detail)
        same = _same(gold, predicted, ordered, compare)
        detail["rows"] = len(predicted) // DIGEST_BYTES
        if not same:
            detail["reason"] = "different result"
        return Score.ok(1.0 if same else 0.0, **detail)

    scored = bounded(score, min(0.0, bad_format_score), max(1.0, bad_format_score))
    scored = timed(scored, worst_case_s(time_limit_s, queries=2))  # the gold, the prediction
    return checks_references(scored, problem_of(located))
