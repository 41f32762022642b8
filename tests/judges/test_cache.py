"""The judge cache: what its key covers (two servers never share verdicts), a cold cache
opened by many worker processes at once, and failures that never fail a score."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from rewardsmith import Sample
from rewardsmith.judges import _cache, rubric
from rewardsmith.judges._backends import BackendConfig, JudgeReply, JudgeRequest, OpenAIBackend
from rewardsmith.judges._cache import JudgeCache, cache_key
from rewardsmith.judges._local import LocalBackend

REQUEST = JudgeRequest(messages=(("system", "grade"), ("user", "x")), max_tokens=6)
IDENTITY = {
    "backend": "openai",
    "base_url": "http://127.0.0.1:8001/v1/chat/completions",
    "model": "m",
    "structured_output": "auto",
}
SAMPLE = Sample(id="s", prompt="What is 2 + 2?", completion="It is 4.")


def test_key_covers_backend_endpoint_model_prompt_and_params(monkeypatch) -> None:
    base = cache_key(IDENTITY, REQUEST)
    assert base == cache_key(dict(IDENTITY), JudgeRequest(messages=REQUEST.messages, max_tokens=6))
    messages = REQUEST.messages
    variants = [
        cache_key({**IDENTITY, "backend": "local"}, REQUEST),
        cache_key({**IDENTITY, "base_url": "http://127.0.0.1:8002/v1/chat/completions"}, REQUEST),
        cache_key({**IDENTITY, "model": "m2"}, REQUEST),
        cache_key({**IDENTITY, "structured_output": "json_object"}, REQUEST),
        cache_key(IDENTITY, JudgeRequest(messages=(("system", "grade"), ("user", "y")))),
        cache_key(IDENTITY, JudgeRequest(messages=messages, max_tokens=7)),
        cache_key(IDENTITY, JudgeRequest(messages=messages, max_tokens=6, temperature=0.7)),
        cache_key(IDENTITY, JudgeRequest(messages=messages, max_tokens=6, seed=1)),
        cache_key(IDENTITY, JudgeRequest(messages=messages, max_tokens=6, top_logprobs=5)),
        cache_key(IDENTITY, JudgeRequest(messages=messages, max_tokens=6, schema={"a": 1})),
        cache_key(IDENTITY, JudgeRequest(messages=messages, max_tokens=6, choices=("1", "2"))),
    ]
    monkeypatch.setattr(_cache, "PROMPT_VERSION", -1)
    variants.append(cache_key(IDENTITY, REQUEST))
    assert len({base, *variants}) == 1 + len(variants)


def test_identity_names_the_endpoint_and_the_model_file(tmp_path: Path) -> None:
    first = OpenAIBackend(BackendConfig(kind="openai", base_url="http://127.0.0.1:8001/v1"))
    second = OpenAIBackend(BackendConfig(kind="openai", base_url="http://127.0.0.1:8002/v1"))
    assert first.identity() != second.identity()
    # local models are named by their bytes: a copy elsewhere is the same model, the same
    # name with other bytes is not
    paths = [tmp_path / d / "model.gguf" for d in ("a", "b", "c")]
    for path, data in zip(paths, (b"weights", b"weights", b"other weights"), strict=True):
        path.parent.mkdir()
        path.write_bytes(data)
    local = [LocalBackend(BackendConfig(model=str(p))).identity() for p in paths]
    assert local[0] == local[1] != local[2]
    llama = LocalBackend(BackendConfig(model=str(paths[0]), runtime="llama_cpp")).identity()
    assert llama["model_sha256"] == local[0]["model_sha256"] and llama != local[0]


def _judge(url: str, cache: str) -> dict:
    result = rubric(rubric=["The answer is correct."], backend="openai", base_url=url, cache=cache)
    score = result(SAMPLE)
    assert score.status == "ok", score.detail
    return {"score": score.score, "cached": score.detail["criteria"][0]["cached"]}


def test_two_servers_never_share_verdicts(canned_judges: dict[str, str], tmp_path: Path) -> None:
    cache = str(tmp_path / "judge.sqlite3")
    assert _judge(canned_judges["YES"], cache) == {"score": 1.0, "cached": False}
    assert _judge(canned_judges["NO"], cache) == {"score": 0.0, "cached": False}
    assert _judge(canned_judges["YES"], cache) == {"score": 1.0, "cached": True}
    assert _judge(canned_judges["NO"], cache) == {"score": 0.0, "cached": True}


def test_two_servers_through_the_cli(canned_judges: dict[str, str], tmp_path: Path) -> None:
    """End to end: the same input scored against each server by `rewardsmith score` (worker
    processes, the default cache folder) gets each server's own verdicts."""
    samples = tmp_path / "in.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"id": str(i), "prompt": "Q?", "completion": f"A{i}"}) + "\n"
            for i in range(4)
        )
    )
    env = {**os.environ, "REWARDSMITH_CACHE_DIR": str(tmp_path / "cache")}
    rewards = {}
    for verdict in ("YES", "NO", "YES"):
        spec = tmp_path / f"{verdict}.yaml"
        quality = {"type": "rubric", "rubric": ["Is correct."], "backend": "openai"}
        spec.write_text(
            yaml.safe_dump({"rewards": {"q": {**quality, "base_url": canned_judges[verdict]}}})
        )
        out = tmp_path / f"out-{verdict}.jsonl"
        subprocess.run(
            [sys.executable, "-m", "rewardsmith.cli", "score", "--spec", str(spec), "--input",
             str(samples), "--output", str(out), "--workers", "2", "--quiet"],
            check=True, env=env, timeout=120,
        )  # fmt: skip
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        rewards[verdict] = [r["reward"] for r in rows]
    assert rewards == {"YES": [1.0] * 4, "NO": [0.0] * 4}


def test_roundtrip_keeps_logprobs_and_choices(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c.sqlite3")
    reply = JudgeReply("YES", [{"YES": -0.1, "NO": -2.3}], ["YES"], 10, 1)
    reply.choice_logprobs = {"1": -0.5, "10": -1.5}
    cache.put("k", reply)
    hit = cache.get("k")
    assert hit is not None and hit.cached
    assert (hit.text, hit.top_logprobs, hit.tokens, hit.prompt_tokens, hit.choice_logprobs) == (
        "YES",
        [{"YES": -0.1, "NO": -2.3}],
        ["YES"],
        10,
        {"1": -0.5, "10": -1.5},
    )
    assert cache.get("other") is None
    cache.close()


def _cold_open(path: str, barrier, worker: int) -> None:
    barrier.wait()  # every process opens the new file at the same moment
    cache = JudgeCache(path)
    for i in range(10):
        cache.put(f"{worker}-{i}", JudgeReply(f"r{worker}-{i}"))
        assert cache.get(f"{worker}-{i}") is not None
    cache.close()


def test_cold_cache_while_another_connection_writes(tmp_path: Path) -> None:
    """Switching a new file to WAL while another connection holds its write lock fails at
    once (`database is locked`, SQLite's deadlock rule skips the busy timeout): what two
    workers opening a cold cache together sometimes did. The cache waits for the lock."""
    path = tmp_path / "judge.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.5, writer.execute, ("COMMIT",))
    release.start()
    try:
        cache = JudgeCache(path)
        cache.put("k", JudgeReply("x"))
        assert cache.get("k") is not None
        cache.close()
    finally:
        release.join()
        writer.close()


def test_cold_cache_opened_by_many_processes_at_once(tmp_path: Path) -> None:
    context = mp.get_context("fork")
    failures = []
    for trial in range(10):
        path = str(tmp_path / f"t{trial}" / "judge.sqlite3")
        barrier = context.Barrier(8)
        workers = [context.Process(target=_cold_open, args=(path, barrier, w)) for w in range(8)]
        for process in workers:
            process.start()
        for process in workers:
            process.join(60)
        failures += [p.exitcode for p in workers if p.exitcode != 0]
    assert failures == []


def _hammer(path: str, worker: int, n: int) -> None:
    cache = JudgeCache(path)
    for i in range(n):
        cache.put(f"{worker}-{i}", JudgeReply(f"r{worker}-{i}"))
        assert cache.get(f"{worker}-{i}") is not None
        cache.get(f"{(worker + 1) % 4}-{i}")  # read what another process may be writing
    cache.close()


def test_concurrent_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    context = mp.get_context("spawn")
    workers = [context.Process(target=_hammer, args=(path, w, 150)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    cache = JudgeCache(path)
    assert len(cache) == 4 * 150
    mode = cache._connection().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    cache.close()


@pytest.mark.parametrize("broken", ["not a database", "parent is a file", "corrupt entry"])
def test_a_broken_cache_never_fails_a_score(
    canned_judges: dict[str, str], tmp_path: Path, caplog, broken: str
) -> None:
    path = tmp_path / "judge.sqlite3"
    if broken == "not a database":
        path.write_bytes(b"this is not an SQLite file" * 100)
    elif broken == "parent is a file":
        (tmp_path / "file").write_text("x")
        path = tmp_path / "file" / "judge.sqlite3"
    else:  # an entry under the very key of the call, whose reply is not JSON
        cache = JudgeCache(path)
        cache.put(_key_of_first_call(canned_judges["NO"]), JudgeReply("x"))
        cache._connection().execute("UPDATE replies SET reply = 'not json'").connection.commit()
        cache.close()
    fn = rubric(
        rubric=["Is correct."], backend="openai", base_url=canned_judges["NO"], cache=str(path)
    )
    with caplog.at_level(logging.WARNING, logger="rewardsmith.judges"):
        result = fn(SAMPLE)
    assert result.status == "ok" and result.score == 0.0, result.detail
    assert result.detail["usage"]["calls"] == 1  # judged anyway
    assert result.detail["usage"]["cache_errors"] >= 1
    assert "judge cache" in caplog.text


def _key_of_first_call(url: str) -> str:
    """The cache key of the first judge call the rubric makes for SAMPLE (recorded through a
    cache that stores it)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.sqlite3"
        rubric(rubric=["Is correct."], backend="openai", base_url=url, cache=str(path))(SAMPLE)
        cache = JudgeCache(path)
        (key,) = [row[0] for row in cache._connection().execute("SELECT key FROM replies")]
        cache.close()
        return key
