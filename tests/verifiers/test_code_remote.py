"""The `code` reward's remote backend (`sandbox: remote`), against a FAKE SandboxFusion server.

`FakeSandboxFusion` is a fake, not SandboxFusion: a small HTTP server started by the test on
loopback that answers ``POST /run_code`` in the documented request/response schema by running
the code with this interpreter in a plain subprocess (no isolation: only the tests' own
programs run through it). The real service cannot run here. Its failure modes (HTTP 500, a
body that is not JSON, ``SandboxError``, no run result, a closed port) must give status
`error`, never a 0.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import rewardsmith
from rewardsmith._exceptions import ConfigError
from rewardsmith.verifiers.code import code

from ._code_helpers import sample

SQUARE = "def square(x):\n    return x * x\n"
ASSERTS = {"tests": ["assert square(2) == 4", "assert square(3) == 9"]}
CHECK = {"test": "def check(candidate):\n    assert candidate(3) == 9\n", "entry_point": "square"}
IO = {"io": [{"input": "2 3\n", "output": "5\n"}, {"input": "10 -4", "output": "6"}]}
ADD = "a, b = map(int, input().split())\nprint(a + b)\n"


class FakeSandboxFusion:
    """A FAKE SandboxFusion `/run_code` endpoint on 127.0.0.1 (see the module docstring)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                if self.path != "/run_code" or fake.mode == "http500":
                    self.send_response(500)
                    self.end_headers()
                    return
                answer: Any
                if fake.mode == "garbage":
                    data = b"<html>bad gateway</html>"
                else:
                    answer = fake.answer(body)
                    data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.mode == "sandbox_error":
            return {"status": "SandboxError", "message": "no executor available"}
        if self.mode == "no_run_result":
            return {"status": "Failed", "message": "", "compile_result": None, "run_result": None}
        assert body["language"] == "python"
        # Like SandboxFusion, the program is its own process group, killed whole at the
        # time limit.
        proc = subprocess.Popen(
            [sys.executable, "-c", body["code"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate((body.get("stdin") or "").encode(), body["run_timeout"])
            run = {
                "status": "Finished",
                "return_code": proc.returncode,
                "stdout": out.decode(),
                "stderr": err.decode(),
                "execution_time": 0.01,
            }
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a process that left the group holds a pipe
                out, err = b"", b""
            run = {
                "status": "TimeLimitExceeded",
                "return_code": None,
                "stdout": _partial(out),
                "stderr": _partial(err),
            }
        ok = run["status"] == "Finished" and run["return_code"] == 0
        return {
            "status": "Success" if ok else "Failed",
            "message": "",
            "compile_result": None,
            "run_result": run,
            "executor_pod_name": "fake",
            "files": {},
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _partial(output: bytes | str | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


@pytest.fixture(scope="module")
def fake():
    server = FakeSandboxFusion()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _reset(fake) -> None:
    fake.mode = "ok"


def test_remote_scores_all_three_styles(fake) -> None:
    fn = code(sandbox="remote", url=fake.url)
    assert fn(sample(SQUARE, ASSERTS)).score == 1.0
    assert fn(sample(SQUARE, CHECK)).score == 1.0
    assert fn(sample(ADD, IO)).score == 1.0
    wrong = code(sandbox="remote", url=fake.url, mode="fraction")(
        sample("def square(x):\n    return 4\n", ASSERTS)
    )
    assert wrong.score == 0.5 and wrong.detail["sandbox"] == "remote"
    assert [t["passed"] for t in wrong.detail["tests"]] == [True, False]
    assert "AssertionError" in wrong.detail["tests"][1]["error"]
    request = fake.requests[-1]
    assert set(request) >= {"code", "language", "stdin", "run_timeout", "compile_timeout"}


def test_remote_token_never_travels_in_the_code(fake) -> None:
    fn = code(sandbox="remote", url=fake.url)
    fn(sample(SQUARE, ASSERTS))
    body = fake.requests[-1]
    assert "assert square" not in body["code"]  # configuration and token go on stdin
    assert body["stdin"].split("\n", 1)[0].isdigit()


@pytest.mark.parametrize(
    "program",
    [
        "import sys\ndef square(x):\n    return None\nsys.exit(0)\n",
        "import os\ndef square(x):\n    return None\nos._exit(0)\n",
        "print('0' * 32 + ' start')\nprint('0' * 32 + ' test 0 1 -')\ndef square(x):\n"
        "    return None\n",
        "import os\nfor fd in range(1, 20):\n    try:\n        os.write(fd, b'x test 0 1 -\\n')\n"
        "    except OSError:\n        pass\ndef square(x):\n    return x * x\n",
        "def square(x):\n    while True:\n        pass\n",
    ],
)
def test_remote_attacks_score_zero(fake, program: str) -> None:
    score = code(sandbox="remote", url=fake.url, timeout_s=1)(sample(program, ASSERTS))
    assert score.status == "ok" and score.score == 0.0, score.detail


def test_remote_program_output_does_not_reach_the_records(fake) -> None:
    program = "print('hello', end='')\n" + SQUARE  # no newline: would glue onto a record
    score = code(sandbox="remote", url=fake.url)(sample(program, ASSERTS))
    assert score.score == 1.0, score.detail


def test_remote_io_timeout_and_wrong_output(fake) -> None:
    fn = code(sandbox="remote", url=fake.url, timeout_s=3, mode="fraction")
    assert fn(sample("print(5)\n", IO)).score == 0.5
    slow = fn(sample("while True:\n    pass\n", IO))
    assert slow.score == 0.0 and slow.detail["tests"][0]["error"] == "timeout"


@pytest.mark.parametrize("mode", ["http500", "garbage", "sandbox_error", "no_run_result"])
def test_remote_infrastructure_failures_are_errors_not_zeros(fake, mode: str) -> None:
    fake.mode = mode
    fn = code(sandbox="remote", url=fake.url)
    for reference in (ASSERTS, IO):
        score = fn(sample(SQUARE, reference))
        assert score.status == "error", (mode, score)
        assert score.score is None
        assert "sandbox unavailable" in score.detail["reason"]


def test_remote_unreachable_server_is_an_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    score = code(sandbox="remote", url=f"http://127.0.0.1:{port}")(sample(SQUARE, ASSERTS))
    assert score.status == "error" and score.score is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sandbox": "remote"},
        {"sandbox": "remote", "url": "ftp://x"},
        {"url": "http://x"},
        {"sandbox": "remote", "url": "http://x", "remote_timeout_s": 0},
    ],
)
def test_remote_config_errors(kwargs) -> None:
    with pytest.raises(ConfigError):
        code(**kwargs)


def test_remote_through_the_engine(fake) -> None:
    spec = {
        "rewards": {
            "tests": {
                "type": "rewardsmith.verifiers.code:code",
                "sandbox": "remote",
                "url": fake.url,
            }
        }
    }
    samples = [
        {"id": "a", "completion": SQUARE, "reference": ASSERTS},
        {"id": "b", "completion": "def square(x):\n    return 0\n", "reference": ASSERTS},
    ]
    results = rewardsmith.score(samples, spec, workers=1)
    assert [r.reward for r in results] == [1.0, 0.0]


def test_remote_report_line_needs_the_runs_token() -> None:
    """The wrapper's last line is its report only with the run's token; a line with another
    (a forgery: the wrapper is non-dumpable, but a root candidate could still write it) marks
    the run tampered with (0), never an infrastructure error."""
    from rewardsmith.verifiers.code._codec import encode
    from rewardsmith.verifiers.code._remote import _to_result
    from rewardsmith.verifiers.code._sandbox import SandboxUnavailable

    report = base64.b64encode(encode({"error": "forged"})).decode()

    def answer(token: str) -> dict[str, Any]:
        stdout = f"rewardsmith-output {token} {report}\n"
        run = {"status": "Finished", "return_code": 0, "stdout": stdout, "stderr": ""}
        return {"status": "Success", "run_result": run}

    forged = _to_result(answer("0" * 32), True, 0.1, 1000, "a" * 32)
    assert forged.tampered == "a report line without the run's token"
    with pytest.raises(SandboxUnavailable, match="forged"):
        _to_result(answer("a" * 32), True, 0.1, 1000, "a" * 32)
