"""A real `rewardsmith serve` process on a free loopback port, for end-to-end tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token-123"
STARTUP_S = 180.0
"""How long a server may take to answer /health (a bound, not a speed target: a loaded
machine starts sympy-preloading workers slowly)."""
SPEC = """\
rewards:
  s: {type: "tests.engine.rewards_for_tests:scripted"}
timeout_s: 1
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """`rewardsmith serve` in a subprocess; `url` once /health answers."""

    def __init__(
        self, spec: Path, *args: str, token: str | None = TOKEN, launcher: list[str] | None = None
    ) -> None:
        """`launcher`: what runs the CLI (default `python -m rewardsmith.cli`)."""
        import httpx

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # this checkout's sources, not whatever rewardsmith is installed
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
        env.pop("REWARDSMITH_TOKEN", None)
        command = [*(launcher or [sys.executable, "-m", "rewardsmith.cli"])]
        command += ["serve", "--spec", str(spec)]
        command += ["--port", str(self.port), "--log-level", "warning", *args]
        if token:
            command += ["--token", token]
        self.log = tempfile.NamedTemporaryFile("w+", prefix="rewardsmith-serve-")  # noqa: SIM115
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited {self.process.returncode}: {self.output()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not become healthy in {STARTUP_S:g} s")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def terminate(self) -> None:
        self.process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@dataclass
class Servers:
    """A module's servers, started by name as its rows need them, beside a scratch folder;
    `close` stops them all (the red-team modules' `World`s build on it)."""

    tmp: Path
    started: dict[str, Server] = field(default_factory=dict)

    def close(self) -> None:
        for running in self.started.values():
            running.stop()


@pytest.fixture(scope="session")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spec") / "spec.yaml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def server(spec_path: Path) -> Iterator[Server]:
    """Token auth, a 100 kB body limit, a queue of 8 samples, 2 workers."""
    running = Server(spec_path, "--max-body-bytes", "100000", "--max-queue", "8", "--workers", "2")
    yield running
    running.stop()


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    import httpx

    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
        yield http


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The red-team servers a module's rows run against (`_raw_http.World`), started as
    rows need them and stopped after the module."""
    from ._raw_http import World

    made = World(tmp_path_factory.mktemp("redteam"))
    yield made
    made.close()


@contextmanager
def served_in_thread(app: Any) -> Iterator[str]:
    """`app` served over HTTP in a thread of this process (so a test can reach into its
    engine), with its own body limits, 30 s for headers; yields its base URL."""
    import asyncio

    from rewardsmith.server._http import Limits, new_loop, serve_http

    port = free_port()
    loop = new_loop()
    until: asyncio.Future[None] = loop.create_future()
    ready = threading.Event()
    limits = Limits(30.0, app.body_timeout_s, 5.0, app.max_body_bytes)
    serving = serve_http(
        app, "127.0.0.1", port, limits, until=until, graceful_timeout_s=30, ready=ready.set
    )
    thread = threading.Thread(target=loop.run_until_complete, args=(serving,), daemon=True)
    thread.start()
    try:
        assert ready.wait(120)
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(until.set_result, None)
        thread.join(timeout=60)
        loop.close()
