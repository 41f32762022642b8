"""Tiny models built once per session, stand-in servers started on demand, and every model
host stopped at the end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(scope="session", autouse=True)
def _hosts() -> Iterator[None]:
    yield
    from rewardsmith.reward_models import stop_hosts

    stop_hosts()


@pytest.fixture(scope="session")
def tiny_rm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny sequence-classification RM whose tokenizer doubles the template's BOS."""
    pytest.importorskip("transformers")
    from .tiny_models import save_reward_model

    return save_reward_model(tmp_path_factory.mktemp("rm"))


@pytest.fixture(scope="session")
def tiny_prm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny token-classification PRM (step tag ``<extra_0>``)."""
    pytest.importorskip("transformers")
    from .tiny_models import save_process_model

    return save_process_model(tmp_path_factory.mktemp("prm"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Start = Callable[..., str]


@pytest.fixture(scope="session")
def standin() -> Iterator[Start]:
    """Start stand-in servers (kind, model folder, flags), one per distinct set; all stopped
    at the end."""
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []
    started: dict[tuple[str, ...], str] = {}

    def start(kind: str, folder: Path, *flags: str) -> str:
        key = (kind, str(folder), *flags)
        if key in started:
            return started[key]
        port = free_port()
        log = tempfile.TemporaryFile()  # noqa: SIM115 (closed at teardown)
        logs.append(log)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.reward_models.standin_server",
                "--kind",
                kind,
                "--model",
                str(folder),
                "--port",
                str(port),
                *flags,
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        processes.append(process)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(base + "/v1/models", timeout=2):
                    started[key] = base
                    return base
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"stand-in server did not start: {log.read()[-2000:]!r}")
                time.sleep(0.2)

    yield start
    for process in processes:
        process.kill()
        process.wait()
    for log in logs:
        log.close()
