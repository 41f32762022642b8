"""sql: execution accuracy on a real SQLite database built here, and hostile queries that must
be refused or stopped within their limits, the database file byte-identical afterwards."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine
from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Sample, Score
from rewardsmith.registry import declared_bounds, declared_time
from rewardsmith.verifiers.agents import sql_exec
from rewardsmith.verifiers.agents.sql import (
    QueryFailed,
    order_matters,
    run_query,
    sql,
    sql_prediction,
)

SINGERS = [
    # id, name, country, age (duplicates names and NULLs on purpose)
    (1, "Joe Sharp", "Netherlands", 52),
    (2, "Timbaland", "United States", 32),
    (3, "Justin Brown", "France", 29),
    (4, "Rose White", "France", 41),
    (5, "John Nizinik", "France", 43),
    (6, "Tribal King", "France", 25),
    (7, "Rose White", "France", None),
    (8, "Ana Lima", None, 30),
    (9, "Ana Lima", "Brazil", 30),
    (10, "Kim Lee", "South Korea", 19),
]
CONCERTS = [(1, "Auditions", 2014), (2, "Super bootcamp", 2014), (3, "Home Visits", 2015)]
PERFORMED = [(1, 2), (1, 3), (2, 3), (2, 5), (3, 6), (3, 9)]


def build(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
        CREATE TABLE concert (id INTEGER PRIMARY KEY, name TEXT, year INTEGER);
        CREATE TABLE singer_in_concert (concert_id INTEGER, singer_id INTEGER);
        CREATE TABLE digits (d INTEGER);
        CREATE INDEX singer_name ON singer (name);
        """
    )
    conn.executemany("INSERT INTO singer VALUES (?, ?, ?, ?)", SINGERS)
    conn.executemany("INSERT INTO concert VALUES (?, ?, ?)", CONCERTS)
    conn.executemany("INSERT INTO singer_in_concert VALUES (?, ?)", PERFORMED)
    conn.executemany("INSERT INTO digits VALUES (?)", [(d,) for d in range(10)])
    conn.commit()
    conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("sql")
    path = folder / "concerts.sqlite"
    build(path)
    before, files = digest(path), sorted(p.name for p in folder.iterdir())
    yield path
    assert digest(path) == before, "the database file changed"
    assert sorted(p.name for p in folder.iterdir()) == files, "files appeared beside it"


def run(db: Path, gold: str, predicted: str, **options: Any) -> Score:
    reference = {"db": str(db), "query": gold}
    completion = f"<think>Let me write it.</think>\n```sql\n{predicted}\n```"
    return sql(**options)(Sample(id="q", completion=completion, reference=reference))


PAIRS = [
    # (gold, predicted, expected)  -- equivalent queries written differently: 1
    ("SELECT name FROM singer WHERE age > 30", "select NAME from SINGER where not age <= 30", 1),
    ("SELECT count(*) FROM singer", "SELECT COUNT(id) FROM singer", 1),
    (
        "SELECT name FROM singer ORDER BY id DESC",
        "SELECT name FROM (SELECT id, name FROM singer) AS s ORDER BY s.id DESC",
        1,
    ),
    (
        "SELECT DISTINCT s.name FROM singer s JOIN singer_in_concert c ON s.id = c.singer_id",
        "SELECT DISTINCT name FROM singer WHERE id IN (SELECT singer_id FROM singer_in_concert)",
        1,
    ),
    (
        "SELECT country, count(*) FROM singer GROUP BY country",
        "SELECT country AS c, COUNT(1) AS n FROM singer GROUP BY c ORDER BY n",
        1,
    ),
    (  # duplicate names kept on both sides
        "SELECT name FROM singer WHERE country = 'France'",
        "SELECT name FROM singer WHERE country IN ('France') ORDER BY age",
        1,
    ),
    (
        "SELECT name FROM singer WHERE age IS NULL",
        "SELECT name FROM singer WHERE coalesce(age, -1) = -1",
        1,
    ),
    (
        "SELECT name FROM singer WHERE country = 'France' "
        "UNION SELECT name FROM singer WHERE age < 20",
        "SELECT DISTINCT name FROM singer WHERE country = 'France' OR age < 20",
        1,
    ),
    (
        "SELECT max(age) FROM singer",
        "SELECT age FROM singer WHERE age IS NOT NULL ORDER BY age DESC LIMIT 1",
        1,
    ),
    (  # ORDER BY inside a window does not order the result
        "SELECT name, rank() OVER (ORDER BY age) FROM singer WHERE age IS NOT NULL",
        "SELECT name, RANK() OVER (ORDER BY age) AS r FROM singer WHERE age NOT NULL ORDER BY name",
        1,
    ),
    (
        "WITH old AS (SELECT * FROM singer WHERE age > 40) SELECT count(*) FROM old",
        "SELECT count(*) FROM singer WHERE age > 40;",
        1,
    ),
    (
        "SELECT c.name, count(*) FROM concert c JOIN singer_in_concert s ON c.id = s.concert_id "
        "GROUP BY c.id",
        "SELECT name, (SELECT count(*) FROM singer_in_concert WHERE concert_id = concert.id) "
        "FROM concert",
        1,
    ),
    (
        "SELECT avg(age) FROM singer WHERE country = 'France'",
        "SELECT sum(age) * 1.0 / count(age) FROM singer WHERE country = 'France'",
        1,
    ),
    # values compare as Python's == does (rows are compared by digest): 1 is 1.0, -0.0 is 0
    ("SELECT 1, 0", "SELECT 1.0, -0.0", 1),
    # -- wrong results: 0
    ("SELECT 1", "SELECT '1'", 0),
    ("SELECT '1'", "SELECT x'31'", 0),
    ("SELECT NULL", "SELECT 'None'", 0),
    ("SELECT 1.5", "SELECT 1", 0),
    # values are hashed one by one with their type and length: no value runs into the next
    ("SELECT 'ab', 'c'", "SELECT 'a', 'bc'", 0),
    ("SELECT 'a', NULL", "SELECT 'a', ''", 0),
    ("SELECT x'01', 1", "SELECT x'0101'", 0),
    ("SELECT 1e300", "SELECT 1e300 + 0", 1),
    (
        "SELECT name FROM singer WHERE country = 'France'",
        "SELECT DISTINCT name FROM singer WHERE country = 'France'",
        0,
    ),
    ("SELECT name FROM singer ORDER BY id DESC", "SELECT name FROM singer ORDER BY id", 0),
    ("SELECT name FROM singer WHERE age > 30", "SELECT name FROM singer WHERE age >= 30", 0),
    ("SELECT name FROM singer WHERE age IS NOT 30", "SELECT name FROM singer WHERE age != 30", 0),
    ("SELECT name, age FROM singer", "SELECT age, name FROM singer", 0),
    ("SELECT name FROM singer WHERE age > 30", "SELECT name FROM singer WHERE age > 300", 0),
    ("SELECT count(*) FROM singer", "SELECT count(age) FROM singer", 0),  # NULL ages not counted
    ("SELECT name FROM singer", "SELEC name FROM singer", 0),  # syntax error
    ("SELECT name FROM singer", "SELECT name FROM singers", 0),  # no such table
]


@pytest.mark.parametrize(("gold", "predicted", "expected"), PAIRS)
def test_execution_accuracy(db: Path, gold: str, predicted: str, expected: int) -> None:
    result = run(db, gold, predicted)
    assert result.status == "ok"
    assert result.score == expected, result.detail


def test_failing_queries_carry_the_error(db: Path) -> None:
    result = run(db, "SELECT name FROM singer", "SELECT name FROM singers")
    assert result.score == 0 and "no such table: singers" in result.detail["error"]


def test_set_comparison_ignores_duplicates(db: Path) -> None:
    gold = "SELECT name FROM singer WHERE country = 'France'"
    assert run(db, gold, "SELECT DISTINCT name FROM singer WHERE country = 'France'").score == 0
    assert (
        run(
            db, gold, "SELECT DISTINCT name FROM singer WHERE country = 'France'", compare="set"
        ).score
        == 1
    )


HOSTILE = [
    # (query, what stops it)
    ("DROP TABLE singer", "not authorized"),
    ("DELETE FROM singer", "not authorized"),
    ("INSERT INTO singer VALUES (11, 'x', 'y', 1)", "not authorized"),
    ("UPDATE singer SET age = 0", "not authorized"),
    ("CREATE TABLE t (x)", "not authorized"),
    ("CREATE TEMP TABLE t (x)", "not authorized"),
    ("ATTACH DATABASE '{dir}/stolen.sqlite' AS s", "not authorized"),
    ("VACUUM INTO '{dir}/copy.sqlite'", "authorization denied"),
    ("SELECT load_extension('{dir}/evil.so')", "not authorized"),
    ("PRAGMA writable_schema = ON", "not authorized"),
    ("PRAGMA journal_mode = WAL", "not authorized"),
    ("SELECT * FROM pragma_table_info('singer')", "not authorized"),
    ("BEGIN IMMEDIATE", "not authorized"),
    ("ANALYZE", "not authorized"),
    ("REINDEX", "not authorized"),
    ("SELECT 1; DROP TABLE singer", "one statement at a time"),
    ("SELECT randomblob(1000000000)", "too big"),
    # a recursive CTE that never ends: the time limit
    (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r",
        "time limit",
    ),
    # a 10-million-row cross join: the row limit; aggregated over 1,000 million rows (10
    # million sum in under 1 s on a quiet machine): the time limit
    (
        "SELECT * FROM digits a, digits b, digits c, digits d, digits e, digits f, digits g",
        "max_rows",
    ),
    (
        "SELECT sum(a.d + i.d) FROM digits a, digits b, digits c, digits d, digits e, digits f, "
        "digits g, digits h, digits i",
        "time limit",
    ),
    # a sort that grows without end: the heap limit
    (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
        "SELECT n, randomblob(1000) FROM r ORDER BY n DESC",
        "out of memory",
    ),
]


@pytest.mark.parametrize(("query", "stopped_by"), HOSTILE)
def test_hostile_queries_are_refused_or_stopped(db: Path, query: str, stopped_by: str) -> None:
    query = query.format(dir=db.parent)
    result = run(db, "SELECT name FROM singer", query, time_limit_s=1.0, memory_mb=32)
    assert result.status == "ok" and result.score == 0
    assert stopped_by in result.detail["error"], result.detail
    assert not (db.parent / "stolen.sqlite").exists() and not (db.parent / "copy.sqlite").exists()


def test_hostile_queries_under_the_engine(db: Path) -> None:
    """Through the engine's worker pool: the query stops itself well before the hard timeout
    (`ok`, 0); a time limit whose worst case (gold and prediction, each killed 0.25 s past
    it, and a start-up) is not under the timeout is refused when the spec is loaded."""
    endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r"
    samples = [
        {
            "id": str(i),
            "completion": f"```sql\n{q}\n```",
            "reference": {"db": str(db), "query": "SELECT name FROM singer"},
        }
        for i, q in enumerate([endless, "DROP TABLE singer", "SELECT name FROM singer"])
    ]
    bounded = {"rewards": {"sql": {"type": "sql", "time_limit_s": 1.0}}, "timeout_s": 20}
    with Engine(bounded, workers=1) as engine:
        results = engine.score(samples)
    assert [r.reward for r in results] == [0.0, 0.0, 1.0]
    assert [r.status for r in results] == ["ok", "ok", "ok"]
    assert declared_time(sql(time_limit_s=1.0)) == 2 * 1.25 + sql_exec.START_UP_S
    for timeout_s in (2, 2 * 1.25 + sql_exec.START_UP_S):
        unbounded = {
            "rewards": {"sql": {"type": "sql", "time_limit_s": 1.0}},
            "timeout_s": timeout_s,
        }
        with pytest.raises(ConfigError, match=r"timeout_s above 2\.75"):
            Engine(unbounded, workers=1)


# One SQLite function call doing quadratic work: the progress handler, which runs between VM
# instructions, never fires inside it (about 30 s here without the kill).
ONE_CALL_HANG = (
    "WITH s(a) AS (SELECT replace(hex(zeroblob(20000)), '0', 'a')) "
    "SELECT length(trim(a, replace(hex(zeroblob(20000)), '0', 'b') || 'a')) FROM s"
)
ENDLESS = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r"


def test_one_long_sqlite_call_is_killed_at_the_time_limit(db: Path) -> None:
    limits = {"time_limit_s": 0.5, "max_rows": 10, "memory_mb": 64}
    assert run_query(db, "SELECT count(*) FROM singer", **limits) == [(10,)]
    first = sql_exec._PROCESS._proc
    assert first is not None
    with pytest.raises(QueryFailed, match=r"time limit of 0\.5 s"):
        run_query(db, ONE_CALL_HANG, **limits)
    assert first.returncode == -signal.SIGKILL  # killed, not finished
    assert run_query(db, "SELECT count(*) FROM singer", **limits) == [(10,)]
    second = sql_exec._PROCESS._proc
    assert second is not None and second.pid != first.pid
    assert run_query(db, "SELECT 1", **limits) == [(1,)]
    assert sql_exec._PROCESS._proc is second  # one process serves query after query


def test_a_query_process_killed_from_outside_is_replaced(db: Path) -> None:
    """Killed between two queries, or during one (e.g. by the OOM killer): the query runs
    again in a new process, so only a query that kills its process twice fails for it."""
    limits = {"time_limit_s": 1.0, "max_rows": 10, "memory_mb": 64}
    run_query(db, "SELECT 1", **limits)
    idle = sql_exec._PROCESS._proc
    assert idle is not None
    idle.kill()
    idle.wait()
    assert run_query(db, "SELECT count(*) FROM singer", **limits) == [(10,)]
    busy = sql_exec._PROCESS._proc
    assert busy is not None and busy.pid != idle.pid
    threading.Timer(0.3, busy.kill).start()
    with pytest.raises(QueryFailed, match="time limit"):  # ran again in full, not "died"
        run_query(db, ENDLESS, **limits)
    assert busy.returncode == -signal.SIGKILL


@pytest.mark.parametrize("query", [ENDLESS, ONE_CALL_HANG])
def test_the_query_process_dies_with_its_worker(db: Path, tmp_path: Path, query: str) -> None:
    """A worker killed by the engine's hard timeout takes its running query with it, even
    one inside a single long SQLite call."""
    script = tmp_path / "worker.py"
    script.write_text(
        "import sys\n"
        "from rewardsmith.verifiers.agents.sql_exec import run_query\n"
        "print('started', flush=True)\n"
        "run_query(sys.argv[1], sys.argv[2], time_limit_s=600, max_rows=10, memory_mb=64)\n"
    )
    worker = subprocess.Popen(
        [sys.executable, str(script), str(db), query], stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None and worker.stdout.readline() == "started\n"
    children: list[int] = []
    for _ in range(600):  # the query process starts; wait until it is there
        children = [
            int(pid)
            for task in Path(f"/proc/{worker.pid}/task").iterdir()
            for pid in (task / "children").read_text().split()
        ]
        if children:
            break
        time.sleep(0.1)
    (child,) = children
    time.sleep(0.5)
    assert _alive(child)
    worker.kill()
    worker.wait()
    worker.stdout.close()
    for _ in range(300):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return status.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.parametrize(
    ("value", "fails"),
    [
        ("replace(hex(zeroblob(120000)), '0', char(128512))", True),  # 4 bytes a character
        ("replace(hex(zeroblob(120000)), '0', 'a')", False),  # 1 byte a character
    ],
)
def test_the_row_budget_counts_real_bytes(db: Path, value: str, fails: bool) -> None:
    """Ten rows of 240,000 characters under memory_mb=8: 9.6 MB of four-byte characters
    fail; 2.4 MB of ASCII pass."""
    query = (
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10) "
        f"SELECT {value}, i FROM c"
    )
    limits = {"time_limit_s": 30.0, "max_rows": 100, "memory_mb": 8}
    if fails:
        with pytest.raises(QueryFailed, match="more than 8 MB"):
            run_query(db, query, **limits)
    else:
        assert len(run_query(db, query, **limits)) == 10


def test_a_larger_memory_mb_gets_a_new_heap_limit(db: Path) -> None:
    """SQLite's heap limit can only be lowered: after a query under 8 MB, one building 32 MB
    under 256 MB runs in a new query process instead of failing at the old limit."""
    run_query(db, "SELECT 1", time_limit_s=5, max_rows=10, memory_mb=8)
    wide = "SELECT " + ", ".join(["length(printf('%.*c', 999000, 'a'))"] * 32)
    assert run_query(db, wide, time_limit_s=5, max_rows=10, memory_mb=256) == [(999000,) * 32]


def test_sql_declares_its_range() -> None:
    assert declared_bounds(sql()) == (-1.0, 1.0)
    assert declared_bounds(sql(bad_format_score=0)) == (0.0, 1.0)


def test_the_gold_query_failing_is_invalid(db: Path) -> None:
    assert run(db, "SELECT nope FROM singer", "SELECT 1").status == "invalid"
    assert run(db, "DROP TABLE singer", "SELECT 1").status == "invalid"


@pytest.mark.parametrize(
    "reference",
    [{"query": "SELECT 1"}, {"db": "/nonexistent.sqlite", "query": "SELECT 1"}, {"db": "x"}, "x"],
)
def test_bad_references_are_invalid(reference: Any) -> None:
    result = sql()(Sample(id="r", completion="SELECT 1", reference=reference))
    assert result.status == "invalid"


def test_relative_paths_resolve_under_db_root(db: Path) -> None:
    reference = {"db": db.name, "query": "SELECT count(*) FROM singer"}
    sample = Sample(id="r", completion="SELECT 10", reference=reference)
    assert sql(db_root=str(db.parent))(sample).score == 1.0
    assert sql()(sample).status == "invalid"


@pytest.mark.parametrize(
    ("text", "extract", "expected"),
    [
        ("```sql\nSELECT 1\n```", "markdown", "SELECT 1"),
        ("first\n```sql\nSELECT 1\n```\nthen\n```SQL\nSELECT 2\n```", "markdown", "SELECT 2"),
        ("```\nSELECT 3\n```", "markdown", "SELECT 3"),
        ("```python\nprint(1)\n```\nthen\n```sql\nSELECT 7\n```", "markdown", "SELECT 7"),
        ("```python\nprint(1)\n```", "markdown", "```python\nprint(1)\n```"),
        ("  SELECT 4  ", "markdown", "SELECT 4"),
        ("<think>```sql\nSELECT 5\n```</think>", "markdown", None),  # only reasoning
        ("", "markdown", None),
        ("<think>plan</think><solution>SELECT 6</solution>", "skyrl", "SELECT 6"),
        ("<solution>SELECT 6</solution>", "skyrl", None),  # no think
        (
            "<think>a</think><solution>SELECT 1</solution><solution>SELECT 2</solution>",
            "skyrl",
            None,
        ),
        ("<think>a</think><solution><sql>SELECT 1</sql></solution>", "skyrl", None),
        (
            "<think>a</think><sql>SELECT 1</sql><observation>1</observation>"
            "<solution>SELECT 1</solution>",
            "skyrl",
            None,
        ),
        (
            "<think>a</think><sql>SELECT 1</sql><observation>1</observation>\n<think>b</think>"
            "<solution>SELECT 1</solution>",
            "skyrl",
            "SELECT 1",
        ),
    ],
)
def test_prediction_extraction(text: str, extract: Any, expected: str | None) -> None:
    assert sql_prediction(text, extract) == expected


def test_bad_format_scores_minus_one(db: Path) -> None:
    reference = {"db": str(db), "query": "SELECT 1"}
    skyrl = sql(extract="skyrl")
    assert skyrl(Sample(id="f", completion="SELECT 1", reference=reference)).score == -1.0
    assert sql(bad_format_score=0.0)(Sample(id="f", completion="", reference=reference)).score == 0
    good = "<think>easy</think><solution>SELECT 1</solution>"
    assert skyrl(Sample(id="f", completion=good, reference=reference)).score == 1.0


@pytest.mark.parametrize(
    ("query", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("select a from t order\n  by a limit 3", True),
        ("SELECT * FROM (SELECT a FROM t ORDER BY a)", False),
        ("SELECT a, row_number() OVER (ORDER BY a) FROM t", False),
        ("SELECT 'order by' FROM t", False),
        ("SELECT a FROM t -- order by a", False),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),
        ('SELECT "order by" FROM t', False),
    ],
)
def test_order_matters_only_for_a_top_level_order_by(query: str, ordered: bool) -> None:
    assert order_matters(query) is ordered


def test_config_errors() -> None:
    with pytest.raises(ConfigError):
        sql(time_limit_s=0)
