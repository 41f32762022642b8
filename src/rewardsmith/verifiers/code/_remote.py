"""The remote backend: run each program on a SandboxFusion server (``sandbox: remote``).

For clusters that already run SandboxFusion (bytedance/SandboxFusion). One documented call
per execution: ``POST {url}/run_code`` with ``{"code", "language", "stdin", "run_timeout",
"compile_timeout"}``; the answer is ``{"status": "Success" | "Failed" | "SandboxError",
"message", "compile_result", "run_result": {"status": "Finished" | "Error" |
"TimeLimitExceeded", "return_code", "stdout", "stderr", "execution_time"}}``.

What is sent. The same referee and candidate processes as a local run (`_runtime`, its
``remote`` entry), shipped as source in the code with a small loader (`WRAPPER`). The
request and the program travel on **stdin** first; the private configuration (the referee's
tests and token, or a stdin/stdout run's start token) follows. The wrapper makes itself
non-dumpable, then copies that section into a memory file (never into its own memory)
before any run process exists, so the candidate's process neither inherits it nor can read
or drain it from the wrapper's stdin; the referee (or the run's init, for the start record)
reads it from the memory file.
HumanEval/asserts suites: the verdict records go to stdout, read by the host with the token
check and the duplicate check of a local run. The program's stdout and stderr never reach
the server: the wrapper keeps them (capped) and ends its stdout with one line
(`_runtime.OUTPUT_MARKER`, the run's token, then base64 of the program's output, exit status
and whether the run's own wall clock struck, in plain data), so the server relays ASCII only,
whatever bytes the program wrote. A last line with the marker but without the run's token is
not the wrapper's: the run was tampered with (0). stdin/stdout cases: the ``start`` record
is the first line of stderr.

Time and processes. The wrapper enforces the run's own wall clock (`timeout_s`), then kills
the run's process group itself; the server's ``run_timeout`` is 1 s longer (the wrapper's
start-up). The run's processes are tied to the wrapper's life (``PR_SET_PDEATHSIG``) and
run under ``RLIMIT_CPU``, so a wrapper killed by the server or by the candidate takes the run
down with it; only processes the candidate itself starts and detaches (it is not filtered
there) can outlive it, as far as the server's deployment allows.

Mapping. Anything that is not a well-formed answer (connection refused, HTTP error, time-out
of the HTTP call, a body that is not the documented JSON, ``status: SandboxError``, no
``run_result``, a run that never wrote its ``start`` record) is an infrastructure failure:
the sample's status is ``error``, never 0. ``run_result.status: TimeLimitExceeded`` is a
timeout of the program (0); ``Failed`` with a run result is a program that failed (its tests
decide, as locally).

What the remote side can and cannot guarantee. Isolation (filesystem, network, processes,
memory) is whatever the server's deployment gives: rewardsmith sets only the run timeout
and RLIMIT_CPU, none of its other local rlimits, no namespaces and no seccomp filter, and
cannot check any of it.
The wrapper, the referee and the candidate are processes of the same user there: the
candidate's process never holds the tests, the token or the verdict pipe, and the wrapper and
the referee are non-dumpable (their ``/proc`` entries are closed to it), but a candidate
running as root (or with ``CAP_SYS_PTRACE``) on the server can still read or write their
memory and forge their records. Remote verdicts are as
trustworthy as the server's isolation of one process from another. The server (and the
network path to it) is trusted to relay output faithfully; it may truncate it.
"""

from __future__ import annotations

import base64
import json
import marshal
import math
import time
import urllib.error
import urllib.request
from typing import Any

from ._codec import decode
from ._runtime import OUTPUT_MARKER
from ._sandbox import RunResult, SandboxUnavailable
from ._zygote import Job, shipped_sources

__all__ = ["WRAPPER", "RemoteBackend"]

_HTTP_SLACK_S = 30.0
"""HTTP timeout on top of the run timeout when `remote_timeout_s` is not set."""
_SERVER_SLACK_S = 1.0
"""The server's run timeout beyond the run's own wall clock (the wrapper's start-up): the
wrapper's deadline strikes first and kills the run's process group itself."""

WRAPPER = r"""
import base64, marshal, sys, types
def _rewardsmith_remote(sources):
    for name, source in marshal.loads(base64.b64decode(sources)):
        module = types.ModuleType(name)
        module.__package__ = name.rpartition(".")[0]
        sys.modules[name] = module
        exec(compile(source, "<%s>" % name, "exec"), module.__dict__)
    sys.modules[name].remote()
_rewardsmith_remote(SOURCES)
"""
"""Run by the server: loads the shipped modules, then `_runtime.remote`."""


class RemoteBackend:
    """Runs the referee and the candidate on a SandboxFusion server."""

    def __init__(self, url: str, language: str = "python", timeout_s: float | None = None):
        self.url = url.rstrip("/") + "/run_code"
        self.language = language
        self.timeout_s = timeout_s
        sources = base64.b64encode(marshal.dumps(shipped_sources())).decode()
        self._code = WRAPPER.replace("SOURCES", repr(sources))

    def run(self, job: Job, *, run_timeout_s: float, max_output_bytes: int) -> RunResult:
        """One execution; raises `SandboxUnavailable` for anything but a well-formed answer."""
        style_io = not job.tests
        # at least 1 s of CPU beyond the wall clock, which must strike first (a run now gets
        # what is left of the sample's timeout_s, e.g. 2.9 s: int() + 1 left a 0.1 s margin)
        cpu = [("RLIMIT_CPU", math.ceil(run_timeout_s) + 1)]
        request = {
            "isolate": False,
            "timeout": run_timeout_s,
            "rlimits_candidate": cpu,
            "rlimits_referee": cpu,
            "seccomp": None,
            "style": "io" if style_io else "suite",
            "base64": True,
            "max_output": max_output_bytes,
        }
        head = base64.b64encode(marshal.dumps((request, job.program)))
        private = base64.b64encode(job.private())
        rest = job.stdin.decode("utf-8", "replace")
        body = {
            "code": self._code,
            "language": self.language,
            "stdin": f"{len(head)}\n{head.decode()}{len(private)}\n{private.decode()}{rest}",
            "run_timeout": run_timeout_s + _SERVER_SLACK_S,
            "compile_timeout": run_timeout_s + _SERVER_SLACK_S,
        }
        started = time.monotonic()
        answer = self._post(body, run_timeout_s)
        token = marshal.loads(job.tests)["token"] if job.tests else job.start_token
        duration = time.monotonic() - started
        return _to_result(answer, style_io, duration, max_output_bytes, token)

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


def _to_result(
    answer: dict[str, Any], style_io: bool, duration_s: float, max_output_bytes: int, token: str
) -> RunResult:
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
    records, own, tampered = _split_report(stdout, token)
    code = run.get("return_code")
    result = RunResult(
        exit_code=code if isinstance(code, int) else None,
        timed_out=run_status == "TimeLimitExceeded",
        channel=stderr.partition(b"\n")[0] + b"\n" if style_io else records,
        duration_s=duration_s,
        extra={"remote_status": status, "remote_run_status": run_status},
        tampered=tampered,
    )
    if own is not None:  # the wrapper's report: the program's own output and exit
        if own.get("error"):
            raise SandboxUnavailable(f"the remote run failed: {str(own['error'])[:300]}")
        result.timed_out = result.timed_out or own.get("timed_out") is True
        exit_code = own.get("exit")
        result.exit_code = exit_code if isinstance(exit_code, int) else None
        for name in ("stdout", "stderr"):
            data = own.get(name)
            data = data if isinstance(data, bytes) else b""
            setattr(result, name, data[:max_output_bytes])
            setattr(result, f"{name}_truncated", len(data) > max_output_bytes)
    if result.timed_out:
        result.exit_code = None
    return result


def _split_report(stdout: bytes, token: str) -> tuple[bytes, dict[str, Any] | None, str | None]:
    """The verdict records, the wrapper's report (its last line) if it wrote one, and why the
    last line cannot be trusted: a report line without the run's token is not the wrapper's."""
    head, _, last = stdout.rstrip(b"\n").rpartition(b"\n")
    if not last.startswith(OUTPUT_MARKER + b" "):
        return stdout, None, None
    _, signed, data = [*last.split(b" "), b"", b""][:3]
    if signed != token.encode():
        return stdout, None, "a report line without the run's token"
    try:
        report = decode(base64.b64decode(data, validate=True))
    except ValueError:  # not base64, or not plain data (`NotPlain`)
        return stdout, None, None
    return head + b"\n", report if isinstance(report, dict) else None, None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
