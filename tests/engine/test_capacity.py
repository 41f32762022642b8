"""Pool sizes: a share of the node's cores among the live reward processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.engine import _capacity

ROOT = Path(__file__).resolve().parents[2]

REGISTERED = """
import sys, time
from pathlib import Path
import rewardsmith.engine._capacity as capacity
capacity._folder = lambda: Path(sys.argv[1])
capacity.register_process()
print("registered", flush=True)
time.sleep(120)
"""


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private registry folder on a node of 12 cores, this process not yet registered."""
    monkeypatch.setattr(_capacity, "_folder", lambda: tmp_path)
    monkeypatch.setattr(_capacity, "node_cores", lambda: 12)
    monkeypatch.setattr(_capacity, "_registration", None)
    monkeypatch.delenv(_capacity.WORKERS_ENV, raising=False)
    return tmp_path


def test_default_pools_share_the_cores_and_a_dead_process_frees_its_share(node: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    others = [
        subprocess.Popen(
            [sys.executable, "-c", REGISTERED, str(node)], stdout=subprocess.PIPE, env=env
        )
        for _ in range(3)
    ]
    try:
        for process in others:
            assert process.stdout is not None and process.stdout.readline() == b"registered\n"
        assert _capacity.default_workers() == 3  # 12 cores, 4 processes
        others[0].send_signal(signal.SIGKILL)  # however it dies, the kernel drops its lock
        others[0].wait()
        assert _capacity.default_workers() == 4  # 12 cores, 3 live processes
        assert len(list(node.iterdir())) == 3  # the dead one's file is gone
    finally:
        for process in others:
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()


def test_more_processes_than_cores_get_one_worker_each(node: Path) -> None:
    for pid in range(20):  # files of processes that died without cleaning up
        (node / f"dead-{pid}").touch()
    assert _capacity.default_workers() == 12  # dead registrations do not count
    assert _capacity.worker_count(1) == 1


def test_the_environment_variable_overrides_the_share(
    node: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_capacity.WORKERS_ENV, "5")
    assert _capacity.default_workers() == 5
    monkeypatch.setenv(_capacity.WORKERS_ENV, "0")
    with pytest.raises(ValueError, match="REWARDSMITH_WORKERS must be at least 1"):
        _capacity.default_workers()


def test_the_cpu_quota_caps_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_capacity, "_quota", lambda: 1.5)
    assert _capacity.node_cores() == min(2, len(os.sched_getaffinity(0)))
