"""What running each predicted SQL query in a query process costs, per query and per sample.

    python benchmarks/sql_bench.py [--queries 2000] [--samples 2000] [--write BENCHMARKS.md]

The `sql` reward runs every query in the worker's query process (`sql_exec`), which is killed
when a query outruns its time limit: one SQLite call (``trim``, ``instr``, a sort) can run
for seconds between two checks of the progress handler. Per query, in the same run, on a
Spider-like database (1,000 singers, 200 concerts, 5,000 performances), eight typical
queries (filters, joins, GROUP BY, ORDER BY) in turn:

- plain sqlite3: connect read-only, execute, fetch all; no limit at all (the peer
  baseline: what an RL SQL reward without a sandbox does);
- in process: `run_query_here`, every limit but the kill (what the reward did before);
- query process: `run_digests`, the reward's path (the rows' digests made in the query
  process, a pipe message each way).

Then the reward end to end: `rewardsmith.score` over `--samples` samples (groups of 8
completions sharing a gold query) with 2 workers, and the kill path: a one-call ``trim``
query under `time_limit_s: 0.5` (killed), then the next query (a new process starts).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import write_section

import rewardsmith
from rewardsmith.verifiers.agents.sql_exec import QueryFailed, run_digests, run_query_here

QUERIES = [
    "SELECT name FROM singer WHERE age = 30",
    "SELECT country, count(*) FROM singer GROUP BY country",
    "SELECT name, age FROM singer WHERE country = 'France' ORDER BY age DESC LIMIT 10",
    "SELECT c.name, count(*) FROM concert c JOIN performs p ON p.concert_id = c.id "
    "GROUP BY c.id ORDER BY 2 DESC LIMIT 5",
    "SELECT avg(age), max(age), min(age) FROM singer",
    "SELECT s.name FROM singer s WHERE s.id IN (SELECT singer_id FROM performs "
    "WHERE concert_id < 10)",
    "SELECT year, count(*) FROM concert GROUP BY year ORDER BY year",
    "SELECT DISTINCT s.country FROM singer s JOIN performs p ON p.singer_id = s.id",
]
LIMITS = {"time_limit_s": 2.0, "max_rows": 10_000, "memory_mb": 256}
TRIM_HANG = (
    "WITH s(a) AS (SELECT replace(hex(zeroblob(20000)), '0', 'a')) "
    "SELECT length(trim(a, replace(hex(zeroblob(20000)), '0', 'b') || 'a')) FROM s"
)


def build(path: Path) -> None:
    rng = random.Random(0)
    countries = ["France", "Brazil", "Korea", "Japan", "Kenya", "Peru", None]
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);"
        "CREATE TABLE concert (id INTEGER PRIMARY KEY, name TEXT, year INTEGER);"
        "CREATE TABLE performs (concert_id INTEGER, singer_id INTEGER);"
    )
    conn.executemany(
        "INSERT INTO singer VALUES (?, ?, ?, ?)",
        [(i, f"singer {i}", rng.choice(countries), rng.randint(18, 70)) for i in range(1000)],
    )
    conn.executemany(
        "INSERT INTO concert VALUES (?, ?, ?)",
        [(i, f"concert {i}", rng.randint(2000, 2025)) for i in range(200)],
    )
    conn.executemany(
        "INSERT INTO performs VALUES (?, ?)",
        [(rng.randrange(200), rng.randrange(1000)) for _ in range(5000)],
    )
    conn.commit()
    conn.close()


def plain(db: Path, query: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{urllib.parse.quote(str(db))}?mode=ro", uri=True)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def per_query_us(run: Callable[[str], object], n: int) -> float:
    """Median over 5 rounds of the mean time of one query, in microseconds."""
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for k in range(n // 5):
            run(QUERIES[k % len(QUERIES)])
        rounds.append((time.perf_counter() - started) / (n // 5) * 1e6)
    return statistics.median(rounds)


def reward_throughput(db: Path, n: int) -> float:
    samples = []
    for k in range(n):
        gold = QUERIES[(k // 8) % len(QUERIES)]
        predicted = gold if k % 3 else QUERIES[(k // 8 + 1) % len(QUERIES)]
        reference = {"db": str(db), "query": gold}
        samples.append(
            {"id": str(k), "completion": f"```sql\n{predicted}\n```", "reference": reference}
        )
    spec = {"rewards": {"sql": {"type": "sql"}}, "timeout_s": 10}
    started = time.perf_counter()
    results = rewardsmith.score(samples, spec, workers=2)
    elapsed = time.perf_counter() - started
    assert all(r.status == "ok" for r in results)
    return n / elapsed


def kill_path(db: Path) -> tuple[float, float]:
    run_digests(db, "SELECT 1", **LIMITS)  # the process is up
    started = time.perf_counter()
    with contextlib.suppress(QueryFailed):
        run_digests(db, TRIM_HANG, time_limit_s=0.5, max_rows=10, memory_mb=64)
    killed = time.perf_counter() - started
    started = time.perf_counter()
    run_digests(db, "SELECT 1", **LIMITS)
    return killed, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "concerts.sqlite"
        build(db)
        run_digests(db, "SELECT 1", **LIMITS)  # start the query process outside the timing
        ours = per_query_us(lambda q: run_digests(db, q, **LIMITS), args.queries)
        here = per_query_us(lambda q: run_query_here(db, q, [].extend, **LIMITS), args.queries)
        peer = per_query_us(lambda q: plain(db, q), args.queries)
        throughput = reward_throughput(db, args.samples)
        killed, restart = kill_path(db)
    body = f"""## SQL execution: the query process

Per query (median of 5 rounds of {args.queries // 5} queries; 8 typical queries on a
1,000-singer database), `python benchmarks/sql_bench.py`:

| path | us per query |
|---|---|
| plain sqlite3, no limits (peer baseline) | {peer:.0f} |
| in process, every limit but the kill (`run_query_here`) | {here:.0f} |
| query process, killed at the limit (`run_digests`, the reward's path) | {ours:.0f} |

The `sql` reward end to end: {throughput:.0f} samples/s ({args.samples} samples, groups of 8
sharing a gold query, 2 workers, gold results cached per worker). A one-call `trim` query
under `time_limit_s: 0.5` is killed after {killed:.2f} s; the next query, which starts a
new query process, takes {restart * 1000:.0f} ms."""
    write_section(args.write, "sql", body)


if __name__ == "__main__":
    main()
