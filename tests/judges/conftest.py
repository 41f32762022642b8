"""Fixtures: a real llama.cpp OpenAI-compatible server on loopback (SmolLM2-135M GGUF), a
counting, fault-injecting proxy in front of it, and a scripted backend for parser tests."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.judges import _judge
from rewardsmith.judges._backends import Backend, BackendConfig, JudgeReply, JudgeRequest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SLOW_S = 900.0
"""The judge deadline of tests on the embedded model: they check what it answers, not how
fast, on a 2-core machine other work shares (speed lives in benchmarks/judge_bench.py)."""

ON_LOCAL_MODEL = {
    "backend": "local",
    "cache": False,
    "n_ctx": 1024,
    "parse_retries": 1,
    "deadline_s": SLOW_S,
}
"""Judge settings of the tests that run the embedded model (add `runtime`)."""

RUNTIMES = {"transformers": "transformers", "llama_cpp": "llama_cpp"}
"""The embedded model's runtimes -> the module each needs."""


@pytest.fixture(scope="session")
def model_path() -> str:
    """The embedded model's GGUF file (the default runtime, transformers, installed)."""
    pytest.importorskip("transformers", reason="pip install torch==2.13.0 'rewardsmith[local]'")
    pytest.importorskip("gguf", reason="pip install 'rewardsmith[local]'")
    from rewardsmith.judges._backends import BackendError
    from rewardsmith.judges._local import default_local_model

    try:
        return default_local_model()
    except BackendError as exc:
        pytest.skip(str(exc))


@pytest.fixture(params=sorted(RUNTIMES))
def runtime(request: pytest.FixtureRequest, model_path: str) -> str:
    """Each runtime of the embedded model in turn."""
    pytest.importorskip(RUNTIMES[request.param], reason=f"runtime {request.param} not installed")
    return str(request.param)


@contextlib.contextmanager
def llama_cpp_server(model_path: str, n_ctx: int) -> Iterator[str]:
    """`python -m llama_cpp.server` with a context of `n_ctx` tokens on a free loopback
    port; yields its /v1 base URL."""
    pytest.importorskip("llama_cpp", reason="pip install 'rewardsmith[llama_cpp]'")
    pytest.importorskip("uvicorn", reason="pip install 'llama-cpp-python[server]'")
    port = _free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed at teardown)
    command = [sys.executable, "-m", "llama_cpp.server", "--model", model_path, "--host"]
    command += ["127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--verbose", "False"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(base + "/models", timeout=2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                log.seek(0)
                err = log.read().decode(errors="replace")[-2000:]
                log.close()
                pytest.fail(f"llama.cpp server did not start: {err}")
            time.sleep(0.5)
    try:
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture(scope="session")
def llama_server(model_path: str) -> Iterator[str]:
    """The llama.cpp server (a context of 2048 tokens); yields its /v1 base URL."""
    with llama_cpp_server(model_path, 2048) as base:
        yield base


@dataclass
class Proxy:
    """Counts chat-completion requests reaching the server; can inject failures."""

    url: str = ""
    calls: int = 0
    inflight: int = 0
    max_inflight: int = 0
    fail_with: list[int] = field(default_factory=list)
    """HTTP statuses returned (one per request, in order) instead of forwarding."""
    garbage: int = 0
    """Next requests answered with an unparseable reply (forwarded, content replaced)."""
    delay_s: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.calls = self.max_inflight = self.garbage = 0
            self.fail_with.clear()
            self.delay_s = 0.0


@pytest.fixture(scope="session")
def _proxy_server(llama_server: str) -> Iterator[Proxy]:
    target = llama_server.split("//", 1)[1].split("/", 1)[0]
    state = Proxy()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with state.lock:
                state.calls += 1
                state.inflight += 1
                state.max_inflight = max(state.max_inflight, state.inflight)
                fail = state.fail_with.pop(0) if state.fail_with else None
                garbage = state.garbage > 0
                state.garbage -= int(garbage)
                delay = state.delay_s
            try:
                if delay:
                    time.sleep(delay)
                if fail is not None:
                    self._send(fail, json.dumps({"error": f"injected {fail}"}).encode())
                    return
                conn = http.client.HTTPConnection(target, timeout=SLOW_S)
                try:
                    conn.request("POST", self.path, body, {"Content-Type": "application/json"})
                    response = conn.getresponse()
                    data = response.read()
                finally:
                    conn.close()
                if garbage and response.status == 200:
                    reply = json.loads(data)
                    reply["choices"][0]["message"]["content"] = "Hmm, it depends :)"
                    reply["choices"][0]["logprobs"] = None
                    data = json.dumps(reply).encode()
                self._send(response.status, data)
            finally:
                with state.lock:
                    state.inflight -= 1

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()  # the listening socket, else a ResourceWarning when collected


@pytest.fixture
def proxy(_proxy_server: Proxy) -> Proxy:
    _proxy_server.reset()
    return _proxy_server


class ScriptedBackend(Backend):
    """Replies computed by a function of the request (for parser and mode logic tests)."""

    name = "scripted"

    def __init__(self, script: Callable[[JudgeRequest], JudgeReply | str]) -> None:
        super().__init__(BackendConfig())
        self.script = script
        self.requests: list[JudgeRequest] = []

    async def _complete(self, request: JudgeRequest) -> JudgeReply:
        self.requests.append(request)
        reply = self.script(request)
        return JudgeReply(text=reply) if isinstance(reply, str) else reply


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ScriptedBackend]:
    """`scripted(fn)` makes every judge in this test use a backend replying `fn(request)`."""

    def install(script: Callable[[JudgeRequest], JudgeReply | str]) -> ScriptedBackend:
        backend = ScriptedBackend(script)
        monkeypatch.setattr(_judge, "make_backend", lambda config, cache_path: backend)
        return backend

    return install


@pytest.fixture(scope="session")
def canned_judges() -> Iterator[dict[str, str]]:
    """Two stand-in judge servers (`canned_judge.py`, not models), each its own process:
    one always says YES, the other NO. Yields verdict -> /v1 base URL."""
    script = str(Path(__file__).with_name("canned_judge.py"))
    processes: list[subprocess.Popen[str]] = []
    urls: dict[str, str] = {}
    try:
        for verdict in ("YES", "NO"):
            process = subprocess.Popen(
                [sys.executable, script, verdict], stdout=subprocess.PIPE, text=True
            )
            processes.append(process)
            assert process.stdout is not None
            urls[verdict] = f"http://127.0.0.1:{process.stdout.readline().strip()}/v1"
        yield urls
    finally:
        for process in processes:
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
