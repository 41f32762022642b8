"""`REWARDSMITH_URL`: adapters scoring on a real `rewardsmith serve` on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import ConfigError, Engine, load_spec
from rewardsmith.integrations._remote import RemoteEngine
from rewardsmith.integrations.trl import TRLRewards
from tests.server.conftest import TOKEN, Server, free_port

from .conftest import MATH_SPEC

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")

SPEC_YAML = """\
rewards:
  s: {type: "tests.engine.rewards_for_tests:scripted", weight: 2}
  c: {type: "tests.engine.rewards_for_tests:constant", value: 0.5}
timeout_s: 1
on_error: -1.0
"""
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("remote") / "spec.yaml"
    path.write_text(SPEC_YAML)
    return path


@pytest.fixture(scope="module")
def server(spec_path: Path) -> Iterator[Server]:
    """A queue of 3 samples, so that a fourth waits for room (503, then a retry)."""
    running = Server(spec_path, "--workers", "1", "--max-queue", "3")
    yield running
    running.stop()


def rows(results: list) -> list[dict]:
    return [json.loads(r.model_dump_json(exclude_unset=True)) for r in results]


def test_results_are_those_of_the_engine_byte_for_byte(server: Server, spec_path: Path) -> None:
    samples = [
        {"completion": "abc"},
        {"id": "h", "completion": "hang"},
        {"completion": "raise"},
        {"completion": "n/a"},
        {"completion": "invalid"},
        {"prompt": "no completion"},
        "not an object",
        {"completion": [{"role": "assistant", "content": "four"}], "metadata": {"k": [1, 2]}},
    ]
    remote = RemoteEngine(server.url, load_spec(str(spec_path)), token=TOKEN)
    try:
        got = remote.score(samples[:3]) + remote.score(samples[3:])
    finally:
        remote.close()
    with Engine(str(spec_path), workers=1) as engine:
        expected = engine.score(samples[:3]) + engine.score(samples[3:])
    assert {"ok", "timeout", "error", "invalid"} <= {r.status for r in got}
    assert json.dumps(rows(got)) == json.dumps(rows(expected))


def test_an_unreachable_server_is_an_error_for_its_samples_never_a_hang() -> None:
    spec = load_spec(SPEC_YAML)
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with RemoteEngine(url, spec, retries=2, backoff_s=0.01) as remote:
        results = remote.score([{"completion": "abc"}, {"completion": "de"}])
    assert time.monotonic() - started < 30  # a bound on the retries, not a speed target
    assert [(r.status, r.reward, r.cause) for r in results] == [
        ("error", -1.0, "infrastructure")
    ] * 2
    assert "unavailable" in results[0].components["s"].detail["reason"]


def test_a_connect_timeout_is_retried_as_a_connection_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listener whose accept queue is full drops new connections' SYNs: the client's
    connect times out, which is retried like a refused connection (not "no answer")."""
    import socket

    from rewardsmith.integrations import _remote

    monkeypatch.setattr(_remote, "_CONNECT_TIMEOUT_S", 0.2)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued = [socket.socket() for _ in range(3)]
    for sock in queued:
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
    try:
        with RemoteEngine(f"http://127.0.0.1:{port}", load_spec(SPEC_YAML), retries=2) as remote:
            [result] = remote.score([{"completion": "abc"}])
    finally:
        for sock in [*queued, listener]:
            sock.close()
    assert (result.status, result.reward, result.cause) == ("error", -1.0, "infrastructure")
    reason = result.components["s"].detail["reason"]
    assert "ConnectTimeout: no connection within 0.2 s" in reason, reason


def test_a_server_with_another_spec_or_token_is_refused(server: Server) -> None:
    other = load_spec({"rewards": {"s": {"type": "tests.engine.rewards_for_tests:scripted"}}})
    with (
        RemoteEngine(server.url, other, token=TOKEN) as remote,
        pytest.raises(ConfigError, match="another spec"),
    ):
        remote.score([{"completion": "a"}])
    with (
        RemoteEngine(server.url, load_spec(SPEC_YAML), token="wrong") as remote,
        pytest.raises(ConfigError, match="refused the token"),
    ):
        remote.score([{"completion": "a"}])


def test_a_lone_surrogate_in_a_sample_is_sent_and_scored(server: Server) -> None:
    """UTF-8 cannot encode "\\ud800": the body is ASCII JSON, where it is a valid escape."""
    with RemoteEngine(server.url, load_spec(SPEC_YAML), token=TOKEN) as remote:
        (result,) = remote.score([{"id": "s", "completion": "ab \ud800"}])
    assert (result.id, result.status, result.reward) == ("s", "ok", 8.5)  # 2 * 4 + 0.5


def test_a_full_queue_is_retried_until_there_is_room(server: Server) -> None:
    spec = load_spec(SPEC_YAML)
    remote = RemoteEngine(server.url, spec, token=TOKEN, backoff_s=0.05)
    held: list[Any] = []
    filler = threading.Thread(
        target=lambda: held.extend(remote.score([{"completion": "sleep 0.6"}] * 3))
    )
    filler.start()
    time.sleep(0.3)  # the three samples fill the queue
    (result,) = remote.score([{"completion": "abcd"}])
    filler.join()
    remote.close()
    assert result.status == "ok" and result.reward == 8.5
    assert [r.status for r in held] == ["ok"] * 3
    metrics = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert 'rewardsmith_rejected_total{reason="queue_full"}' in metrics.text


def test_trl_rewards_are_the_same_through_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    spec_file = tmp_path / "math.yaml"
    spec_file.write_text(yaml.safe_dump(MATH_SPEC))
    completions = ["<think>2 and 2</think> \\boxed{4}", "\\boxed{5}", "<think>x</think>\\boxed{4}"]
    kwargs = {
        "prompts": ["What is 2+2?"] * 3,
        "completions": completions,
        "completion_ids": [[7] * 3, [7] * 6, [7] * 10],
        "answer": ["4"] * 3,
        "trainer_state": object(),
    }
    with TRLRewards(str(spec_file), workers=1) as local:
        expected = [f(**kwargs) for f in local.funcs] + [local.total(**kwargs)]
    server = Server(spec_file, "--workers", "1")
    try:
        monkeypatch.setenv("REWARDSMITH_URL", server.url)
        monkeypatch.setenv("REWARDSMITH_TOKEN", TOKEN)
        with TRLRewards(str(spec_file)) as remote:
            assert isinstance(remote.engine, RemoteEngine)
            got = [f(**kwargs) for f in remote.funcs] + [remote.total(**kwargs)]
    finally:
        server.stop()
    assert got == expected


VERL_ACTOR = """
import os, sys
import rewardsmith.integrations.verl as verl
out = verl.compute_score(data_source="gsm8k", solution_str=sys.argv[1], ground_truth="4")
def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return None
children = [p for p in os.listdir("/proc") if p.isdigit() and parent(p) == os.getpid()]
print(out["score"], len(children), flush=True)
"""


def test_eight_verl_reward_actors_share_one_pool_on_the_node(tmp_path: Path) -> None:
    """verl's reward-loop manager starts one reward actor per worker (8 here); with
    `REWARDSMITH_URL` set none of them starts a pool (no child process: no fork server, no
    worker), and the rewards are those of the adapter in-process."""
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        "rewards:\n  correct: {type: math}\n  format: {type: think_format, weight: 0.2}\n"
    )
    answers = ["\\boxed{4}", "<think>2+2</think> \\boxed{4}", "\\boxed{5}", "4"] * 2
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    env["REWARDSMITH_SPEC"] = str(spec_file)
    server = Server(spec_file, "--workers", "2", token=None)
    try:
        env["REWARDSMITH_URL"] = server.url
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", VERL_ACTOR, answer],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for answer in answers
        ]
        shared = []
        for proc in procs:
            stdout, _ = proc.communicate(timeout=300)
            assert proc.returncode == 0
            score, children = stdout.split()
            shared.append((float(score), int(children)))
        pool = [p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == server.process.pid]
    finally:
        server.stop()
    with Engine(str(spec_file), workers=1) as engine:
        results = engine.score([{"completion": a, "reference": "4"} for a in answers])
    alone = [r.reward for r in results]
    assert [score for score, _ in shared] == alone
    assert [children for _, children in shared] == [0] * len(answers)  # no actor has a pool
    assert len(pool) >= 1  # the node's one pool: the server's fork server (and its workers)


def _parent(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return None
