"""Running one untrusted SQLite query within limits, in a child process killed at the limit.

Why a child process: SQLite checks its progress handler between VM instructions, and one
instruction can run for as long as the query likes: ``instr(X, Y)`` and ``trim(X, Y)`` over
two 40,000-character strings are single calls of quadratic cost (30 s here), as is the sort
behind an ``ORDER BY``. Neither the progress handler nor ``Connection.interrupt()`` can stop
them. Each worker therefore keeps one query process (a fresh interpreter that imports only
the standard library) and sends it one query at a time; a query that has not answered
`_GRACE_S` after its time limit is killed with its process (SIGKILL), and the next query
starts a new one. A round trip costs a pipe message each way (see `benchmarks/sql_bench.py`);
the process starts once per worker and after each kill, and ends when its worker does (a
thread of it watches the worker's pid, as SQLite releases the GIL while a query runs).

Inside the query process each query runs on its own connection, opened read-only
(``mode=ro``) with ``query_only`` on, under an authorizer that allows only reading, with a
progress handler that stops ordinary long queries at the limit without a kill, a 1 MB cap on
any value, SQLite's heap capped at `memory_mb`, and the fetched rows capped at `max_rows` and
at `memory_mb` of Python objects (their real size: a four-byte character counts four bytes).
The rows go back in batches of about `_BATCH_BYTES` as SQLite yields them, or, for
`run_digests`, each row's 16-byte digest (`row_digest`), made there batch by batch: the
query's time limit and its kill cover digesting, which copies at most one value beyond the
row, and only digests cross the pipe. Neither process holds a result twice.

This file imports only the standard library: the query process runs it as a script.
"""

from __future__ import annotations

import atexit
import hashlib
import marshal
import os
import select
import sqlite3
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "DIGEST_BYTES",
    "START_UP_S",
    "QueryFailed",
    "Rows",
    "row_digest",
    "run_digests",
    "run_query",
    "run_query_here",
    "worst_case_s",
]

Rows = list[tuple[Any, ...]]

_MAX_VALUE_BYTES = 1_000_000
"""Longest string or blob a query may build (SQLITE_LIMIT_LENGTH)."""
_PROGRESS_OPS = 1_000
"""SQLite VM instructions between two checks of the time limit."""
_GRACE_S = 0.25
"""How long past its time limit a query (its rows sent back included) may take before its
process is killed."""
START_UP_S = 0.25
"""What a sample of `sql` may wait, beyond its queries' time limits and grace, for a query
process to be ready: one start after a kill or for a larger `memory_mb` than the process
ran under (about 0.03 s on an idle machine), or two when a process killed from outside is
replaced."""
_START_TIMEOUT_S = 60.0
"""A query process that is not ready in this time is broken, not slow."""
_WATCH_S = 0.2
"""How often the query process checks that its worker is alive."""
_HEADER = struct.Struct(">Q")
_BATCH_BYTES = 2**20
"""Rows (their Python objects' size) the query process sends in one message."""
DIGEST_BYTES = 16
"""Size of one row's digest (BLAKE2b)."""
_FLOAT = struct.Struct(">d")

_ALLOWED = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


class QueryFailed(Exception):
    """A query that could not run to a result within the limits (the reason is the text)."""


def _authorize(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    if action not in _ALLOWED:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def run_query_here(
    db: Path | str,
    query: str,
    send: Callable[[Rows], None],
    *,
    time_limit_s: float,
    max_rows: int,
    memory_mb: int,
) -> None:
    """`run_query` in this process, its rows handed to `send` in batches as they are
    fetched: every limit but the kill (one long SQLite call can outrun `time_limit_s`). Sets
    SQLite's process-wide heap limit, which a PRAGMA can lower but never raise again: a later
    query with a larger `memory_mb` needs a new process (`_QueryProcess` starts one)."""
    uri = f"file:{urllib.parse.quote(str(db))}?mode=ro"
    deadline = time.monotonic() + time_limit_s
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        conn.execute(f"PRAGMA hard_heap_limit={memory_mb * 2**20}")
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA temp_store=MEMORY")  # sorts stay under the heap limit, not on disk
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.set_authorizer(_authorize)
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_OPS)
        try:
            _fetch(conn.execute(query), max_rows, memory_mb * 2**20, send)
        except MemoryError:
            raise QueryFailed(f"out of memory: over the limit of {memory_mb} MB") from None
        except (sqlite3.Error, sqlite3.Warning, OverflowError, ValueError) as exc:
            if time.monotonic() > deadline:
                raise QueryFailed(f"stopped after the time limit of {time_limit_s:g} s") from None
            raise QueryFailed(f"{type(exc).__name__}: {exc}") from None
        finally:
            conn.set_authorizer(None)
            conn.set_progress_handler(None, 0)
    finally:
        conn.close()


def _fetch(
    cursor: sqlite3.Cursor, max_rows: int, max_bytes: int, send: Callable[[Rows], None]
) -> None:
    """The rows to `send` in batches of about `_BATCH_BYTES`, as SQLite yields them, so no
    process holds them all at once: at most `max_rows` rows holding at most `max_bytes` of
    Python objects in all (each row's tuple and its values at their real size), else
    `QueryFailed` (the batches sent before it are dropped by the receiver)."""
    batch: Rows = []
    size = batch_size = 0
    for count, row in enumerate(cursor):
        if count == max_rows:
            raise QueryFailed(f"returned more than max_rows ({max_rows}) rows")
        row_size = sys.getsizeof(row) + sum(sys.getsizeof(v) for v in row if v is not None)
        size += row_size
        if size > max_bytes:
            raise QueryFailed(f"returned more than {max_bytes // 2**20} MB of values")
        batch.append(row)
        batch_size += row_size
        if batch_size >= _BATCH_BYTES:
            send(batch)
            batch, batch_size = [], 0
    cursor.close()
    if batch:
        send(batch)


def _canonical(value: Any) -> Any:
    """`value` as Python's ``==`` sees it: an integral float is the int it equals."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _value_bytes(value: Any) -> tuple[bytes, bytes | memoryview]:
    """A value's type tag and bytes, the same for equal values of SQLite's types."""
    value = _canonical(value)
    if value is None:
        return b"n", b""
    if isinstance(value, int):  # as many bytes as it needs: an integral float can be 1e300
        return b"i", value.to_bytes(value.bit_length() // 8 + 1, "big", signed=True)
    if isinstance(value, float):
        return b"f", _FLOAT.pack(value)
    if isinstance(value, str):
        return b"s", value.encode("utf-8", "surrogatepass")
    return b"b", memoryview(value)


def row_digest(row: tuple[Any, ...]) -> bytes:
    """A digest of a row's values, equal for rows that are equal: each value's type tag,
    length and bytes go into one BLAKE2b in turn, so no copy of the whole row is made."""
    digest = hashlib.blake2b(digest_size=DIGEST_BYTES)
    for value in row:
        tag, data = _value_bytes(value)
        digest.update(tag + _HEADER.pack(len(data)))
        digest.update(data)
    return digest.digest()


# -- the query process ------------------------------------------------------------------------


def _send(fd: int, payload: bytes) -> None:
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]


def _receive(fd: int, deadline: float | None) -> bytes | None:
    """One message, or None on end of file or past `deadline` (None: wait for ever)."""
    header = _read(fd, _HEADER.size, deadline)
    if header is None:
        return None
    return _read(fd, _HEADER.unpack(header)[0], deadline)


def _read(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks, missing = [], size
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while missing:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                return None
        chunk = os.read(fd, min(missing, 2**20))
        if not chunk:
            return None
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _watch(parent: int) -> None:
    """End this process once `parent` is gone (a killed worker takes its query along). A
    thread, as SQLite releases the GIL while it runs a query."""
    while os.getppid() == parent:
        time.sleep(_WATCH_S)
    os._exit(1)


def _serve(parent: int) -> None:
    """The query process: answer queries from stdin on stdout until stdin closes."""
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
    _send(fd_out, b"ready")
    while (message := _receive(fd_in, None)) is not None:
        db, query, limits, digests = marshal.loads(message)
        try:
            run_query_here(db, query, _sender(fd_out, digests), **limits)
            reply: tuple[str, Any] = ("done", None)
        except QueryFailed as exc:
            reply = ("failed", str(exc))
        _send(fd_out, marshal.dumps(reply))


def _sender(fd: int, digests: bool) -> Callable[[Rows], None]:
    """What sends a batch of rows back: the rows, or their digests joined."""
    if digests:
        return lambda rows: _send(fd, marshal.dumps(("rows", b"".join(map(row_digest, rows)))))
    return lambda rows: _send(fd, marshal.dumps(("rows", rows)))


def _reply(fd: int, deadline: float) -> tuple[str, Any] | None:
    """One query's answer: ("done", its batches), ("failed", the reason), or None when it
    is not complete by `deadline`."""
    batches: list[Any] = []
    while (message := _receive(fd, deadline)) is not None:
        kind, value = marshal.loads(message)
        if kind != "rows":
            return (kind, batches) if kind == "done" else (kind, value)
        batches.append(value)
    return None


class _QueryProcess:
    """This process's query process, started on first use and after each kill."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = False
        self._owner = os.getpid()
        self._heap_mb: int | None = None
        """The lowest `memory_mb` the process has run a query under: its heap limit."""

    def run(self, db: Path | str, query: str, limits: dict[str, Any], digests: bool) -> list[Any]:
        """The batches of rows (or of their digests), or `QueryFailed`; `RuntimeError` when no
        query process can start. A process that dies before the time limit (killed from outside,
        say) gets one retry with a new process, within what is left of its time limit: only
        a query that kills its process twice fails for it."""
        request = marshal.dumps((str(db), query, limits, digests))
        with self._lock:
            deadline = None
            for attempt in (1, 2):
                proc = self._started(limits["memory_mb"])
                deadline = deadline or time.monotonic() + limits["time_limit_s"] + _GRACE_S
                try:
                    _send(proc.stdin.fileno(), request)  # type: ignore[union-attr]
                except OSError:
                    reply = None
                else:
                    reply = _reply(proc.stdout.fileno(), deadline)  # type: ignore[union-attr]
                if reply is not None:
                    break
                overran = time.monotonic() >= deadline
                self._discard()
                self._start()  # the next query finds its process starting or ready
                if overran:
                    limit = limits["time_limit_s"]
                    raise QueryFailed(f"stopped after the time limit of {limit:g} s")
                if attempt == 2:
                    raise QueryFailed(f"the query process died (exit status {proc.returncode})")
        kind, value = reply
        if kind == "failed":
            raise QueryFailed(value)
        return value  # type: ignore[no-any-return]

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", __file__, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._ready = False
        self._heap_mb = None

    def _started(self, memory_mb: int) -> subprocess.Popen[bytes]:
        """The query process, ready for a query under `memory_mb`: a new one when the old one
        is gone or its heap limit, lowered by an earlier query, is below `memory_mb`."""
        if self._owner != os.getpid():  # a fork of the process that started it: not ours
            for pipe in (self._proc.stdin, self._proc.stdout) if self._proc else ():
                if pipe is not None:
                    pipe.close()
            self._proc, self._owner = None, os.getpid()
        lowered = self._heap_mb is not None and self._heap_mb < memory_mb
        if self._proc is None or self._proc.poll() is not None or lowered:
            self._discard()
            self._start()
        self._heap_mb = min(memory_mb, self._heap_mb or memory_mb)
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        if not self._ready:
            if _receive(proc.stdout.fileno(), time.monotonic() + _START_TIMEOUT_S) != b"ready":
                self._discard()
                raise RuntimeError("the SQL query process did not start")
            self._ready = True
        return proc

    def close(self) -> None:
        """End the query process, if this process started one (at exit)."""
        with self._lock:
            if self._owner == os.getpid():
                self._discard()

    def _discard(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


_PROCESS = _QueryProcess()
atexit.register(_PROCESS.close)


def worst_case_s(time_limit_s: float, queries: int) -> float:
    """The longest `queries` queries in a row can take: each its time limit and grace, plus
    `START_UP_S`."""
    return queries * (time_limit_s + _GRACE_S) + START_UP_S


def run_query(
    db: Path | str, query: str, *, time_limit_s: float, max_rows: int, memory_mb: int
) -> Rows:
    """The rows `query` returns from `db`, read-only and within the limits, run in this
    process's query process; raises `QueryFailed` with the reason (SQLite's error, the time
    limit, too many rows or bytes)."""
    limits = {"time_limit_s": time_limit_s, "max_rows": max_rows, "memory_mb": memory_mb}
    return [row for batch in _PROCESS.run(db, query, limits, digests=False) for row in batch]


def run_digests(
    db: Path | str, query: str, *, time_limit_s: float, max_rows: int, memory_mb: int
) -> bytes:
    """`run_query`'s rows as their `row_digest`s, one after another, made in the query
    process: what `sql` compares, so no row crosses the pipe or is kept whole."""
    limits = {"time_limit_s": time_limit_s, "max_rows": max_rows, "memory_mb": memory_mb}
    return b"".join(_PROCESS.run(db, query, limits, digests=True))


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
