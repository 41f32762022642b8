"""A persistent judge cache: SQLite on disk, shared safely by every worker process.

The key is a SHA-256 over the backend kind, the model, the full prompt (every message) and
every sampling parameter, so a rerun of the same judgement makes no backend call while any
change (a word of the rubric, the temperature, a retry's seed) is a new entry. Only replies
are cached, never failures. WAL mode lets many processes read while one writes; writes wait
(``busy_timeout``) rather than fail when another process holds the lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from ._backends import Backend, JudgeReply, JudgeRequest

__all__ = ["CachedBackend", "JudgeCache", "cache_key", "default_cache_path"]

_BUSY_TIMEOUT_MS = 30_000


def default_cache_path() -> str:
    """``$REWARDSMITH_CACHE_DIR/judge.sqlite3``, else ``~/.cache/rewardsmith/judge.sqlite3``."""
    root = os.environ.get("REWARDSMITH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rewardsmith"
    )
    return os.path.join(root, "judge.sqlite3")


def cache_key(backend: str, model: str, request: JudgeRequest) -> str:
    """The entry's key: everything that decides the reply."""
    material = {
        "backend": backend,
        "model": model,
        "messages": [list(m) for m in request.messages],
        "params": request.params(),
    }
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class JudgeCache:
    """key -> reply, in one SQLite file. One connection per process (reopened after a fork)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS replies ("
                " key TEXT PRIMARY KEY, reply TEXT NOT NULL, created REAL NOT NULL)"
            )
            conn.commit()
            self._conn, self._pid = conn, os.getpid()
        return self._conn

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
            conn.execute(
                "INSERT OR REPLACE INTO replies (key, reply, created) VALUES (?, ?, ?)",
                (key, blob, time.time()),
            )
            conn.commit()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection().execute("SELECT COUNT(*) FROM replies").fetchone()[0])


class CachedBackend(Backend):
    """A backend whose replies are looked up in, and stored to, a `JudgeCache` first."""

    def __init__(self, inner: Backend, path: str | os.PathLike[str]) -> None:
        super().__init__(inner.config)
        self.inner = inner
        self.cache = JudgeCache(path)
        self.name = inner.name
        self.hits = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        key = cache_key(self.inner.name, self.inner.model_id, request)
        hit = self.cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        reply = await self.inner.complete(request)
        self.cache.put(key, reply)
        self.calls, self.prompt_tokens = self.inner.calls, self.inner.prompt_tokens
        self.completion_tokens = self.inner.completion_tokens
        return reply

    def usage(self) -> dict[str, int]:
        return {**self.inner.usage(), "cache_hits": self.hits}
