"""The judge cache: keys, and concurrent use from several processes (WAL)."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from rewardsmith.judges._backends import JudgeReply, JudgeRequest
from rewardsmith.judges._cache import JudgeCache, cache_key

REQUEST = JudgeRequest(messages=(("system", "grade"), ("user", "x")), max_tokens=6)


def test_key_covers_backend_model_prompt_and_params() -> None:
    base = cache_key("openai", "m", REQUEST)
    assert base == cache_key("openai", "m", JudgeRequest(messages=REQUEST.messages, max_tokens=6))
    variants = [
        cache_key("local", "m", REQUEST),
        cache_key("openai", "m2", REQUEST),
        cache_key("openai", "m", JudgeRequest(messages=(("system", "grade"), ("user", "y")))),
        cache_key("openai", "m", JudgeRequest(messages=REQUEST.messages, temperature=0.7)),
        cache_key("openai", "m", JudgeRequest(messages=REQUEST.messages, seed=1)),
        cache_key("openai", "m", JudgeRequest(messages=REQUEST.messages, top_logprobs=5)),
        cache_key("openai", "m", JudgeRequest(messages=REQUEST.messages, schema={"a": 1})),
    ]
    assert len({base, *variants}) == 1 + len(variants)


def test_roundtrip_keeps_logprobs(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c.sqlite3")
    reply = JudgeReply("YES", [{"YES": -0.1, "NO": -2.3}], ["YES"], 10, 1)
    cache.put("k", reply)
    hit = cache.get("k")
    assert hit is not None and hit.cached
    assert (hit.text, hit.top_logprobs, hit.tokens, hit.prompt_tokens) == (
        "YES",
        [{"YES": -0.1, "NO": -2.3}],
        ["YES"],
        10,
    )
    assert cache.get("other") is None
    cache.close()


def _hammer(path: str, worker: int, n: int) -> None:
    cache = JudgeCache(path)
    for i in range(n):
        cache.put(f"{worker}-{i}", JudgeReply(f"r{worker}-{i}"))
        assert cache.get(f"{worker}-{i}") is not None
        cache.get(f"{(worker + 1) % 4}-{i}")  # read what another process may be writing
    cache.close()


def test_concurrent_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    first = JudgeCache(path)
    first.put("seed", JudgeReply("x"))
    first.close()
    context = mp.get_context("spawn")
    workers = [context.Process(target=_hammer, args=(path, w, 150)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    cache = JudgeCache(path)
    assert len(cache) == 1 + 4 * 150
    mode = cache._connection().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    cache.close()
