"""A persistent judge cache: SQLite on disk, shared safely by every worker process.

The key is a SHA-256 over the backend's identity (kind, `base_url`, served model; for the
embedded model the runtime, its version and the model file's SHA-256), the prompt template
version, the full prompt (every message) and every sampling parameter. A rerun of the same
judgement makes no backend call; any change (another server, another model file, a word of
the rubric, the temperature, a retry's seed) is a new entry. Only replies are cached, never
failures.

WAL mode lets many processes read while one writes, and writes wait (``busy_timeout``)
rather than fail. Switching a new file to WAL while another process writes it fails at once
whatever the busy timeout (SQLite refuses what could deadlock), so opening retries, with
backoff, for as long as the busy timeout. Whatever still goes wrong
(a locked or corrupt file, a full disk) never fails a score: the reply is judged anyway,
the failure is logged once per process and counted in ``detail.usage.cache_errors``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ._backends import Backend, JudgeReply, JudgeRequest
from ._prompts import PROMPT_VERSION

__all__ = ["CachedBackend", "JudgeCache", "cache_key", "cache_root", "default_cache_path"]

_BUSY_TIMEOUT_MS = 30_000
_log = logging.getLogger("rewardsmith.judges")


def cache_root() -> Path:
    """``$REWARDSMITH_CACHE_DIR``, else ``$XDG_CACHE_HOME/rewardsmith`` (``~/.cache``)."""
    root = os.environ.get("REWARDSMITH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rewardsmith"
    )
    return Path(root)


def default_cache_path() -> str:
    """``<cache_root()>/judge.sqlite3``."""
    return str(cache_root() / "judge.sqlite3")


def cache_key(identity: dict[str, Any], request: JudgeRequest) -> str:
    """The entry's key: everything that decides the reply."""
    material = {
        "judge": identity,
        "prompt_version": PROMPT_VERSION,
        "messages": [list(m) for m in request.messages],
        "params": request.params(),
    }
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class JudgeCache:
    """key -> reply, in one SQLite file. One connection per process (reopened after a fork).
    Raises `sqlite3.Error` (and `OSError`) like SQLite does; `CachedBackend` absorbs them."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
            delay = 0.01
            while True:
                try:
                    conn = self._open()
                    break
                except sqlite3.OperationalError as exc:
                    # switching a new file to WAL while another connection writes to it
                    # fails at once, without the busy timeout (SQLite's deadlock rule)
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(random.uniform(0, delay))
                    delay = min(delay * 2, 0.5)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS replies ("
                " key TEXT PRIMARY KEY, reply TEXT NOT NULL, created REAL NOT NULL)"
            )
            conn.commit()
        except BaseException:
            conn.close()
            raise
        return conn

    def get(self, key: str) -> JudgeReply | None:
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT reply FROM replies WHERE key = ?", (key,))
                .fetchone()
            )
        return JudgeReply.from_json(json.loads(row[0]), cached=True) if row else None

    def put(self, key: str, reply: JudgeReply) -> None:
        blob = json.dumps(reply.to_json(), ensure_ascii=False)
        with self._lock:
            conn = self._connection()
            try:
                conn.execute(
                    "INSERT OR REPLACE INTO replies (key, reply, created) VALUES (?, ?, ?)",
                    (key, blob, time.time()),
                )
                conn.commit()
            except BaseException:
                conn.rollback()
                raise

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection().execute("SELECT COUNT(*) FROM replies").fetchone()[0])


_CACHE_FAILURES = (sqlite3.Error, OSError, ValueError, KeyError, TypeError)
"""What a cache read or write may raise (the last three: a stored reply that is not one)."""


class CachedBackend(Backend):
    """A backend whose replies are looked up in, and stored to, a `JudgeCache` first. A
    cache failure is counted (`errors`) and logged, never raised: the judge is asked."""

    def __init__(self, inner: Backend, path: str | os.PathLike[str]) -> None:
        super().__init__(inner.config)
        self.inner = inner
        self.cache = JudgeCache(path)
        self.name = inner.name
        self.supports_choices = inner.supports_choices
        self.hits = 0
        self.errors = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def prepare(self) -> None:
        self.inner.prepare()

    def loading_s(self) -> float:
        return self.inner.loading_s()

    def _failed(self, action: str, exc: BaseException) -> None:
        self.errors += 1
        level = logging.WARNING if self.errors == 1 else logging.DEBUG
        _log.log(
            level,
            "judge cache %s failed (%s: %s); judging without it (counted in "
            "detail.usage.cache_errors)",
            action,
            type(exc).__name__,
            exc,
        )

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        key = cache_key(self.inner.identity(), request)
        try:
            hit = self.cache.get(key)
        except _CACHE_FAILURES as exc:
            self._failed(f"read of {self.cache.path}", exc)
            hit = None
        if hit is not None:
            self.hits += 1
            return hit
        reply = await self.inner.complete(request)
        try:
            self.cache.put(key, reply)
        except _CACHE_FAILURES as exc:
            self._failed(f"write to {self.cache.path}", exc)
        self.calls, self.prompt_tokens = self.inner.calls, self.inner.prompt_tokens
        self.completion_tokens = self.inner.completion_tokens
        return reply

    def usage(self) -> dict[str, int]:
        return {**self.inner.usage(), "cache_hits": self.hits, "cache_errors": self.errors}
