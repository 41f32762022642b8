"""The remote backend: run each program on a SandboxFusion server (``sandbox: remote``).

For clusters that already run SandboxFusion (bytedance/SandboxFusion). One documented call
per execution: ``POST {url}/run_code`` with ``{"code", "language", "stdin", "run_timeout",
"compile_timeout"}``; the answer is ``{"status": "Success" | "Failed" | "SandboxError",
"message", "compile_result", "run_result": {"status": "Finished" | "Error" |
"TimeLimitExceeded", "return_code", "stdout", "stderr", "execution_time"}}``.

What is sent. The same harness as a local run (`_harness.RUNNER`) behind a small wrapper
(`WRAPPER`). The harness configuration, with the per-run token, travels on **stdin** (a
length line, then the bytes), never in the code: the wrapper reads exactly that much, so a
stdin/stdout case's input follows untouched. HumanEval/asserts suites: the records go to
stdout, the program's own stdout is redirected to stderr, so the host reads the records
alone, with the token check and the duplicate check of a local run. stdin/stdout cases: the
``start`` record is the first line of stderr and the host compares the program's stdout.

Mapping. Anything that is not a well-formed answer (connection refused, HTTP error, time-out
of the HTTP call, a body that is not the documented JSON, ``status: SandboxError``, no
``run_result``, a harness that never wrote its ``start`` record) is an infrastructure
failure: the sample's status is ``error``, never 0. ``run_result.status:
TimeLimitExceeded`` is a timeout of the program (0); ``Failed`` with a run result is a
program that failed (its tests decide, as locally).

What the remote side can and cannot guarantee. Isolation (filesystem, network, processes,
memory) is whatever the server's deployment gives: rewardsmith sets only the run timeout,
none of its local rlimits, and cannot check any of it. The verdict is still read from token
records, so a program that exits early, prints a fake pass marker or replays the harness
scores 0 as locally; but the server (and the network path to it) is trusted to relay the
program's output faithfully, and the in-process gap of the harness (a program written
against it may find the token in the harness's frames) is the same as locally. Output is
what the server returns (it may truncate it).
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from typing import Any

from ._sandbox import RunResult, SandboxUnavailable

__all__ = ["WRAPPER", "RemoteBackend"]

_HTTP_SLACK_S = 30.0
"""HTTP timeout on top of the run timeout when `remote_timeout_s` is not set."""

WRAPPER = r"""
import os, sys, base64
def _rewardsmith_remote(style_io, runner):
    head = b""
    while not head.endswith(b"\n"):
        c = os.read(0, 1)
        if not c:
            raise SystemExit("rewardsmith: no configuration on stdin")
        head += c
    size, data = int(head), b""
    while len(data) < size:
        chunk = os.read(0, size - len(data))
        if not chunk:
            raise SystemExit("rewardsmith: short configuration on stdin")
        data += chunk
    data = base64.b64decode(data)
    cfg_r, cfg_w = os.pipe()
    if len(data) > 60000:  # more than a pipe holds: a file that is gone before the program
        import tempfile
        f = tempfile.TemporaryFile()
        f.write(data)
        f.seek(0)
        cfg_r = os.dup(f.fileno())
        f.close()
        os.close(cfg_w)
    else:
        os.write(cfg_w, data)
        os.close(cfg_w)
    if style_io:
        res = os.dup(2)
    else:
        sys.stdout.flush()
        res = os.dup(1)
        os.dup2(2, 1)
    sys.argv[1:] = [str(cfg_r), str(res)]
    exec(compile(runner, "<rewardsmith>", "exec"), {"__name__": "__main__"})
_rewardsmith_remote(%(style_io)r, base64.b64decode(%(runner)r).decode())
"""
"""Run by the server: reads the configuration from stdin, then runs the harness."""


class RemoteBackend:
    """Runs the harness on a SandboxFusion server."""

    def __init__(self, url: str, language: str = "python", timeout_s: float | None = None):
        self.url = url.rstrip("/") + "/run_code"
        self.language = language
        self.timeout_s = timeout_s

    def run(
        self, runner: str, *, config: bytes, stdin: bytes, style_io: bool, run_timeout_s: float
    ) -> RunResult:
        """One execution; raises `SandboxUnavailable` for anything but a well-formed answer."""
        code = WRAPPER % {
            "style_io": style_io,
            "runner": base64.b64encode(runner.encode()).decode(),
        }
        encoded = base64.b64encode(config)  # marshal data is binary; the stdin field is text
        stdin_text = str(len(encoded)) + "\n" + encoded.decode() + stdin.decode("utf-8")
        body = {
            "code": code,
            "language": self.language,
            "stdin": stdin_text,
            "run_timeout": run_timeout_s,
            "compile_timeout": run_timeout_s,
        }
        started = time.monotonic()
        answer = self._post(body, run_timeout_s)
        return _to_result(answer, style_io, time.monotonic() - started)

    def _post(self, body: dict[str, Any], run_timeout_s: float) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        timeout = self.timeout_s or run_timeout_s + _HTTP_SLACK_S
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise SandboxUnavailable(f"SandboxFusion at {self.url}: HTTP {exc.code}") from exc
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            raise SandboxUnavailable(f"SandboxFusion at {self.url}: {exc}") from exc
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise SandboxUnavailable(f"SandboxFusion at {self.url}: answer is not JSON") from exc
        if not isinstance(answer, dict):
            raise SandboxUnavailable(f"SandboxFusion at {self.url}: answer is not an object")
        return answer


def _to_result(answer: dict[str, Any], style_io: bool, duration_s: float) -> RunResult:
    status = answer.get("status")
    message = str(answer.get("message") or "")[:300]
    if status not in ("Success", "Failed"):
        raise SandboxUnavailable(f"SandboxFusion status {status!r}: {message}")
    run = answer.get("run_result")
    if not isinstance(run, dict):
        compiled = answer.get("compile_result")
        why = compiled.get("stderr") if isinstance(compiled, dict) else None
        raise SandboxUnavailable(
            f"SandboxFusion returned no run result ({status}: {message or why or 'no reason'})"
        )
    run_status = run.get("status")
    if run_status not in ("Finished", "Error", "TimeLimitExceeded"):
        raise SandboxUnavailable(f"SandboxFusion run status {run_status!r}")
    stdout = _text(run.get("stdout")).encode()
    stderr = _text(run.get("stderr")).encode()
    timed_out = run_status == "TimeLimitExceeded"
    code = run.get("return_code")
    exit_code = None if timed_out or not isinstance(code, int) else code
    if style_io:
        first, _, rest = stderr.partition(b"\n")
        channel, stderr = first + b"\n", rest
    else:
        channel, stdout = stdout, b""
    return RunResult(
        exit_code=exit_code,
        timed_out=timed_out,
        stdout=stdout,
        stderr=stderr,
        channel=channel,
        duration_s=duration_s,
        extra={"remote_status": status, "remote_run_status": run_status},
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
