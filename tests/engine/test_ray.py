"""The Ray backend against a real local Ray cluster (2 CPUs, loopback): same results as local."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith import Engine, Sample
from rewardsmith.cli import main

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
SOURCES = f"{ROOT}{os.pathsep}{ROOT / 'src'}"
"""This checkout's sources, for subprocesses and actors (not whatever is installed)."""
SPEC = {
    "rewards": {
        "s": {"type": "tests.engine.rewards_for_tests:scripted"},
        "c": {"type": "tests.engine.rewards_for_tests:constant", "value": 0.5, "weight": 2},
    },
    "timeout_s": 1,
}
SPEC_YAML = """\
rewards:
  s: {type: "tests.engine.rewards_for_tests:scripted"}
  c: {type: "tests.engine.rewards_for_tests:constant", value: 0.5, weight: 2}
timeout_s: 1
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster on loopback with 2 CPUs; yields its address."""
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        runtime_env={"env_vars": {"PYTHONPATH": SOURCES}},
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def samples() -> list[dict[str, object]]:
    texts = ["x" * (i % 11) or "abc" for i in range(200)]
    for at, text in [(3, "hang"), (50, "raise"), (77, "die"), (120, "n/a"), (150, "hang")]:
        texts[at] = text
    texts[10] = "sleep 0.05"
    return [{"id": f"s{i}", "completion": t} for i, t in enumerate(texts)]


def as_json(results: list) -> list[dict]:
    """Results as `rewardsmith score` writes them, tracebacks aside (they name processes)."""
    rows = [json.loads(r.model_dump_json(exclude_unset=True)) for r in results]
    for row in rows:
        for component in row["components"].values():
            component["detail"].pop("traceback", None)
    return rows


def test_ray_results_are_identical_to_local_including_timeouts_and_order(cluster: str) -> None:
    with Engine(SPEC, workers=2) as local:
        expected = as_json(local.score(samples()))
    with Engine(SPEC, backend="ray") as remote:
        got = as_json(remote.score(samples()))
        assert remote.pool.size == 2  # one actor per cluster CPU
    assert got == expected
    assert [r["id"] for r in got] == [f"s{i}" for i in range(200)]
    by_id = {r["id"]: r for r in got}
    assert by_id["s3"]["status"] == by_id["s150"]["status"] == "timeout"
    assert by_id["s3"]["components"]["s"]["detail"]["reason"] == "exceeded 1s; worker killed"
    assert by_id["s3"]["components"]["c"] == {"score": 0.5, "status": "ok", "detail": {}}
    assert by_id["s77"]["components"]["s"]["detail"]["reason"] == "worker died (exit code 3)"
    assert by_id["s1"]["reward"] == 1.0 + 2 * 0.5


def test_a_lost_actor_is_replaced_and_its_tasks_rerun(cluster: str) -> None:
    with Engine(SPEC, backend="ray", workers=2) as engine:
        pool = engine.pool
        ray.kill(pool._slots[0].handle, no_restart=True)
        results = engine.score([{"completion": "x" * n} for n in range(1, 41)])
        assert [r.reward for r in results] == [n + 1.0 for n in range(1, 41)]
        assert pool.replaced >= 1


def test_cli_score_backend_ray_joins_the_cluster(cluster: str, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC_YAML)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(s) + "\n" for s in samples()[:60]))
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    common = ["score", "--spec", str(spec), "--input", str(source), "--quiet"]
    assert main([*common, "--output", str(local)]) == 0
    env = {**os.environ, "PYTHONPATH": SOURCES}
    command = [sys.executable, "-m", "rewardsmith.cli", *common, "--output", str(remote)]
    command += ["--backend", "ray", "--ray-address", cluster]
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=240)

    def rows(path: Path) -> list[dict]:
        out = [json.loads(line) for line in path.read_text().splitlines()]
        for row in out:
            for component in row["components"].values():
                component["detail"].pop("traceback", None)
        return out

    assert rows(remote) == rows(local)


def test_the_engine_front_drives_ray_from_its_own_thread(cluster: str) -> None:
    import asyncio

    engine = Engine(SPEC, backend="ray")
    engine.start()  # the pool starts on the front's driver thread, not this one
    try:
        results = asyncio.run(engine.ascore([Sample(id="1", completion="abcd")]))
    finally:
        engine.close()
    assert [r.reward for r in results] == [4.0 + 2 * 0.5]
