"""The `code` reward: run the completion's program against the reference's tests, sandboxed.

Outcomes:

* reference missing -> `not_applicable`; reference that is not a test suite, or tests that
  cannot run or judge (they do not compile, pass the candidate a function, call only
  builtins, several of them, or the HumanEval prompt's code raises) -> `invalid`;
* the sandbox could not start (bwrap missing or broken, setup failed) or the referee failed
  -> `error`, never 0;
* otherwise `ok`: 1.0 when every test passed (``mode: all``) or the fraction passed
  (``mode: fraction``). Whatever the completion does (no program, a crash, an early exit, a
  timeout, a blown limit, a value that is not plain data) it fails its tests: 0 with the
  reason in `detail`, never `invalid` or `error`.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from ..._exceptions import ConfigError
from ...models import Sample, Score
from ...registry import RewardFn, bounded, reward, timed
from .._completion_parts import answer_part
from . import _seccomp
from ._extract import Extract, extract_code
from ._harness import (
    Suite,
    new_token,
    outputs_match,
    parse_channel,
    parse_reference,
    program_config,
    tests_config,
)
from ._remote import RemoteBackend
from ._sandbox import (
    BWRAP_MISSING,
    Limits,
    RunResult,
    SandboxUnavailable,
    bwrap_path,
    memory_rule,
    plan_bwrap,
    plan_plain,
    site_packages,
    tail,
)
from ._zygote import Job, WarmPool, run_cold

__all__ = ["CodeConfig", "code"]

log = logging.getLogger(__name__)

Backend = Literal["bwrap", "none", "remote"]
Mode = Literal["all", "fraction"]
Compare = Literal["whitespace", "exact"]

MAX_PROGRAM_CHARS = 200_000
"""Longest program that is run; longer ones score 0."""
MAX_TESTS = 1_000
"""Most tests (assertions or io cases) one reference may ask for (-> `invalid`)."""
MAX_TIMEOUT_S = 60.0
"""Largest `timeout_s` a spec may set."""
START_UP_S = 1.0
"""What a sample may take beyond `timeout_s`, which counts from its start (sandbox start-up
included): collecting what a run left in flight (at most `_runtime._COLLECT_S`, 0.5 s) and
reading the results. The spec's own `timeout_s` must be above `timeout_s` + this
(`registry.timed`)."""
_MIN_RUN_S = 0.05
"""Least time left of a sample worth starting one more stdin/stdout case for."""
_OUTPUT_MARGIN = 65_536
"""What a stdin/stdout case's output cap leaves beyond twice its largest expected output."""
_DETAIL_CASES = 20
"""Per-test outcomes reported in `detail` (the counts always cover all)."""
_NO_SANDBOX_WARNING = (
    "rewardsmith code reward: `sandbox: none` RUNS MODEL-WRITTEN CODE UNSANDBOXED on this "
    "host, with your files, network and processes. Use it only for trusted code."
)

_NO_FILTER_WARNING = (
    "rewardsmith code reward: this machine has no seccomp filter table (only x86-64 has "
    "one): sandboxed programs run WITHOUT the filter (debugging, keyrings, mounts, new "
    "processes... are not refused), so memory_mb holds each process, not the sample."
)


@dataclass(frozen=True)
class CodeConfig:
    """Everything `code` was configured with, validated."""

    sandbox: Backend
    mode: Mode
    extract: Extract
    prepend_prompt: bool
    compare: Compare
    limits: Limits
    parallelism: int
    python: str
    warm: bool = True
    url: str | None = None
    strip_think: bool = True


@reward("code")
def code(
    *,
    sandbox: Backend = "bwrap",
    mode: Mode = "all",
    extract: Extract = "auto",
    prepend_prompt: bool = False,
    compare: Compare = "whitespace",
    timeout_s: float = 3.0,
    memory_mb: int = 1024,
    max_processes: int = 32,
    max_output_bytes: int = 1_000_000,
    parallelism: int | None = None,
    python: str | None = None,
    warm: bool = True,
    url: str | None = None,
    remote_language: str = "python",
    remote_timeout_s: float | None = None,
    strip_think: bool = True,
) -> RewardFn:
    """Unit-test reward for Python: 1 when the program passes every test (or the fraction).

    Tests come from the reference: HumanEval ``{test, entry_point}``, assert lists
    ``{tests, setup}``, or stdin/stdout ``{io: [{input, output}]}``. `sandbox`: ``bwrap``
    (default; bubblewrap must be installed) or ``none`` (no isolation, trusted code only).
    `extract`: which fenced block is the program. `prepend_prompt`: run
    ``prompt + program`` (HumanEval completions). `timeout_s`: the sample's wall clock (a
    test suite's run; all stdin/stdout cases together, each run getting what is left); the
    spec's `timeout_s` must be above it plus `START_UP_S`. `max_processes` (tasks),
    `max_output_bytes`: limits of one execution; `memory_mb`: the sample's memory budget
    (see `_sandbox.memory_rule`). `parallelism`: concurrent stdin/stdout cases (default:
    cores). `warm` (default true): warm sandboxes (a preloaded interpreter that forks each
    run's referee and candidate processes, see `_runtime`), kept by the reward for its next
    samples, one per concurrent run, instead of a new sandbox per run.
    ``sandbox: remote`` sends each program to a SandboxFusion server at `url` (see `_remote`);
    `remote_language` is its language name, `remote_timeout_s` the HTTP timeout.
    `strip_think` (default true): look for the program in the answer part only, never in the
    ``<think>`` reasoning (an unclosed ``<think>`` leaves no answer: 0).
    """
    if not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise ConfigError(f"timeout_s: must be in (0, {MAX_TIMEOUT_S}], got {timeout_s}")
    if memory_mb < 64:
        raise ConfigError(f"memory_mb: must be at least 64 (the interpreter), got {memory_mb}")
    if max_processes < 1:
        raise ConfigError(f"max_processes: must be at least 1, got {max_processes}")
    if max_output_bytes < 1:
        raise ConfigError(f"max_output_bytes: must be positive, got {max_output_bytes}")
    if parallelism is not None and parallelism < 1:
        raise ConfigError(f"parallelism: must be at least 1, got {parallelism}")
    if sandbox == "remote":
        if not url or not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError("url: `sandbox: remote` needs the SandboxFusion server's http(s) url")
    elif url is not None:
        raise ConfigError("url: only used with `sandbox: remote`")
    if remote_timeout_s is not None and not 0 < remote_timeout_s <= 600:
        raise ConfigError(f"remote_timeout_s: must be in (0, 600], got {remote_timeout_s}")
    interpreter = python or sys.executable
    if not os.access(interpreter, os.X_OK):
        raise ConfigError(f"python: {interpreter!r} is not an executable")
    config = CodeConfig(
        sandbox=sandbox,
        mode=mode,
        extract=extract,
        prepend_prompt=prepend_prompt,
        compare=compare,
        limits=Limits(
            timeout_s=timeout_s,
            cpu_s=int(timeout_s) + 1,
            memory_mb=memory_mb,
            max_processes=max_processes,
            max_output_bytes=max_output_bytes,
        ),
        parallelism=parallelism or _cores(),
        python=interpreter,
        warm=warm,
        url=url,
        strip_think=strip_think,
    )
    if sandbox == "remote":
        backend = RemoteBackend(url or "", remote_language, remote_timeout_s)
        runner: _Runner = _RemoteRunner(config, backend)
    else:
        if sandbox == "none":
            warnings.warn(_NO_SANDBOX_WARNING, RuntimeWarning, stacklevel=2)
            log.warning(_NO_SANDBOX_WARNING)
        runner = _Runner(config)
    return timed(bounded(runner, 0.0, 1.0), timeout_s + START_UP_S)


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


_rule_said = False


def _say_memory_rule(filtered: bool) -> None:
    """Once per process: how a sample's memory is held on this machine."""
    global _rule_said
    if not _rule_said:
        _rule_said = True
        log.warning("rewardsmith code reward: %s", memory_rule(filtered))


class _Runner:
    """Scores samples with one configuration; the sandbox plan is made on first use."""

    def __init__(self, config: CodeConfig) -> None:
        self.config = config
        self._plan: Any = None
        self._site: list[str] | None = None
        self._pool: WarmPool | None = None
        self._seccomp = _seccomp.program(allow_fork=False)
        self._unfiltered = config.sandbox == "bwrap" and self._seccomp is None
        if self._unfiltered:
            warnings.warn(_NO_FILTER_WARNING, RuntimeWarning, stacklevel=3)
            log.warning(_NO_FILTER_WARNING)

    # -- the reward function ---------------------------------------------------------------

    def __call__(self, sample: Sample) -> Score:
        return self.score(sample)

    def score(self, sample: Sample) -> Score:
        config = self.config
        if sample.reference is None:
            return Score.failed("not_applicable", "no reference tests")
        suite = parse_reference(sample.reference)
        if isinstance(suite, str):
            return Score.failed("invalid", suite)
        if suite.size > MAX_TESTS:
            return Score.failed("invalid", f"{suite.size} tests, over the limit of {MAX_TESTS}")
        text = answer_part(sample.text) if config.strip_think else sample.text
        program = extract_code(text, config.extract)
        if program is None:
            return Score.ok(0.0, reason="no code block in the answer", style=suite.style)
        prompt = suite.prompt if suite.prompt is not None else sample.prompt
        if config.prepend_prompt:
            if not isinstance(sample.prompt, str):
                return Score.failed("invalid", "prepend_prompt needs a string prompt")
            program = sample.prompt + program
        if len(program) > MAX_PROGRAM_CHARS:
            return Score.ok(
                0.0, reason=f"program over {MAX_PROGRAM_CHARS} characters", style=suite.style
            )
        try:
            plan = self._sandbox_plan()
            if suite.style == "io":
                return self._score_io(plan, suite, program)
            return self._score_suite(
                plan, suite, program, prompt if isinstance(prompt, str) else ""
            )
        except SandboxUnavailable as exc:
            return Score.failed(
                "error",
                f"sandbox unavailable: {exc}",
                cause="infrastructure",
                sandbox=config.sandbox,
            )

    def _sandbox_plan(self) -> Any:
        if self._plan is None:
            if self.config.sandbox == "none":
                self._plan = plan_plain(self.config.python)
            else:
                if bwrap_path() is None:
                    raise SandboxUnavailable(BWRAP_MISSING)
                self._plan = plan_bwrap(self.config.python, self.config.limits)
                _say_memory_rule(filtered=self._seccomp is not None)
        return self._plan

    def _path(self) -> list[str]:
        if self._site is None:
            try:
                self._site = site_packages(self.config.python)
            except (OSError, subprocess.SubprocessError) as exc:
                raise SandboxUnavailable(f"cannot query {self.config.python!r}: {exc}") from exc
        return self._site

    def _execute(self, plan: Any, job: Job) -> RunResult:
        """One run: in a warm sandbox, or one of its own."""
        if self.config.warm:
            if self._pool is None:
                self._pool = WarmPool(plan, self.config.limits)
            return self._pool.run(job)
        return run_cold(plan, self.config.limits, job)

    def _no_start_is_error(self, run: RunResult) -> bool:
        """Whether a run without a start record is an infrastructure failure."""
        return True

    def sandbox_pids(self) -> set[int]:
        """Host pids of this reward's idle warm sandboxes (nothing else of a run remains)."""
        return self._pool.pids() if self._pool is not None else set()

    # -- HumanEval / asserts: the referee calls the candidate ------------------------------

    def _score_suite(self, plan: Any, suite: Suite, program: str, prompt: str) -> Score:
        token = new_token()
        started = time.monotonic()
        path = self._path()
        job = Job(
            program=program_config(program, path),
            tests=tests_config(suite, token, prompt, path),
            seccomp=self._seccomp,
            deadline=started + self.config.limits.timeout_s,
        )
        run = self._execute(plan, job)
        channel = parse_channel(run.channel, token, suite.size)
        # In bubblewrap the referee is out of the candidate's reach (another PID namespace):
        # a referee that fails or ends early is ours (`error`). Without one (`none`,
        # `remote`) the candidate's process can signal it or change its limits, though only
        # once the start record is written (the handshake): what it cuts short then is
        # scored like any failed run (0, with why).
        referee_safe = self.config.sandbox == "bwrap" or not channel.started
        if channel.aborted and referee_safe:
            raise SandboxUnavailable(f"the referee failed: {channel.aborted}")
        if not channel.started and self._no_start_is_error(run):
            raise SandboxUnavailable(_startup_failure(run))
        if channel.invalid:
            return Score.failed("invalid", channel.invalid, style=suite.style)
        cut_short = channel.started and not channel.done and not run.timed_out
        referee_exit = run.extra.get("referee_exit")
        if cut_short and not channel.tampered and referee_safe and referee_exit is not None:
            raise SandboxUnavailable(
                f"the referee ended early (status {referee_exit}): {tail(run.stderr, 500)}"
            )
        missing = _missing_reason(run)
        if channel.aborted:
            missing = f"not reported: the referee failed ({channel.aborted})"
        outcomes: list[dict[str, Any]] = []
        for i in range(suite.size):
            passed, error = channel.outcomes.get(i, (False, missing))
            outcomes.append({"passed": passed, **({"error": error} if error else {})})
        return self._verdict(
            suite,
            outcomes,
            complete=channel.done,
            tampered=channel.tampered or run.tampered,
            runtime_s=time.monotonic() - started,
            evidence=_evidence(run),
        )

    # -- stdin/stdout: one execution per case ------------------------------------------------

    def _score_io(self, plan: Any, suite: Suite, program: str) -> Score:
        """The cases share the sample's `timeout_s`: each run gets what is left of it, and a
        case that cannot start in time fails. In ``mode: all`` the first failed case stops
        the others (they could not change the score)."""
        started = time.monotonic()
        deadline = started + self.config.limits.timeout_s
        workers = min(self.config.parallelism, len(suite.cases))
        config = program_config(program, self._path())
        cap = _output_cap(self.config.limits, suite)
        failed = threading.Event()
        stop_early = self.config.mode == "all"

        def one(i: int) -> tuple[dict[str, Any], RunResult | None, str | None]:
            left = deadline - time.monotonic()
            if stop_early and failed.is_set():
                return {"passed": False, "error": "not run: an earlier case failed"}, None, None
            if left < _MIN_RUN_S:
                return {"passed": False, "error": "not run: timeout (the sample's)"}, None, None
            outcome, run, tampered = self._case(plan, suite.cases[i], config, deadline, cap)
            if not outcome["passed"]:
                failed.set()
            return outcome, run, tampered

        if workers <= 1:
            results = [one(i) for i in range(len(suite.cases))]
        else:
            with ThreadPoolExecutor(workers) as pool:
                results = list(pool.map(one, range(len(suite.cases))))
        outcomes = [r[0] for r in results]
        tampered = next((r[2] for r in results if r[2]), None)
        ran = [(o, r[1]) for o, r in zip(outcomes, results, strict=True) if r[1] is not None]
        shown = next((run for o, run in ran if not o["passed"]), ran[-1][1] if ran else None)
        return self._verdict(
            suite,
            outcomes,
            complete=True,
            tampered=tampered,
            runtime_s=time.monotonic() - started,
            evidence=_evidence(shown) if shown is not None else {},
        )

    def _case(
        self, plan: Any, case: Any, config: bytes, deadline: float, cap: int
    ) -> tuple[dict[str, Any], RunResult, str | None]:
        """One stdin/stdout case: (outcome, run, why the channel was tampered with)."""
        token = new_token()
        job = Job(
            program=config,
            stdin=case.input.encode(),
            start_token=token,
            seccomp=self._seccomp,
            deadline=deadline,
            max_output_bytes=cap,
        )
        run = self._execute(plan, job)
        channel = parse_channel(run.channel, token, 0)
        if not channel.started and self._no_start_is_error(run):
            raise SandboxUnavailable(_startup_failure(run))
        tampered = channel.tampered or run.tampered
        if tampered:
            return {"passed": False, "error": tampered}, run, tampered
        if run.timed_out:
            return {"passed": False, "error": "timeout"}, run, None
        if run.exit_code != 0:
            return {"passed": False, "error": _exit_reason(run)}, run, None
        if run.stdout_truncated:
            return {"passed": False, "error": "output limit exceeded"}, run, None
        got = run.stdout.decode("utf-8", errors="replace")
        ok = outputs_match(got, case.output, self.config.compare)
        outcome: dict[str, Any] = {"passed": ok}
        if not ok:
            outcome["error"] = "wrong output"
            outcome["got"] = tail(run.stdout, 300)
            outcome["expected"] = case.output[-300:]
        return outcome, run, None

    # -- scoring -----------------------------------------------------------------------------

    def _verdict(
        self,
        suite: Suite,
        outcomes: list[dict[str, Any]],
        *,
        complete: bool,
        tampered: str | None,
        runtime_s: float,
        evidence: dict[str, Any],
    ) -> Score:
        passed = sum(o["passed"] for o in outcomes)
        total = len(outcomes)
        detail: dict[str, Any] = {
            "style": suite.style,
            "passed": passed,
            "total": total,
            "tests": outcomes[:_DETAIL_CASES],
            "runtime_s": round(runtime_s, 4),
            "sandbox": self.config.sandbox,
            **({"seccomp": "none"} if self._unfiltered else {}),
            **evidence,
        }
        if tampered:
            return Score.ok(0.0, reason=f"result channel tampered with: {tampered}", **detail)
        if self.config.mode == "fraction":
            value = passed / total if total else 0.0
        else:
            value = 1.0 if complete and passed == total else 0.0
        if value < 1.0:
            first = next((o for o in outcomes if not o["passed"]), None)
            detail["reason"] = (first or {}).get("error") or "not every test reported"
        return Score.ok(value, **detail)


class _RemoteRunner(_Runner):
    """`sandbox: remote`: every execution is one call to a SandboxFusion server."""

    def __init__(self, config: CodeConfig, backend: RemoteBackend) -> None:
        super().__init__(config)
        self.backend = backend

    def _sandbox_plan(self) -> Any:
        return self.backend

    def _path(self) -> list[str]:
        return []  # the server's interpreter has its own site-packages

    def _no_start_is_error(self, run: RunResult) -> bool:
        # The server says it ran the program to its time limit: a timeout (0), even when it
        # returned none of the output.
        return not run.timed_out

    def _execute(self, plan: Any, job: Job) -> RunResult:
        limits = self.config.limits
        return self.backend.run(
            job,
            run_timeout_s=max(job.wall_clock(limits.timeout_s), _MIN_RUN_S),
            max_output_bytes=job.output_cap(limits),
        )


def _output_cap(limits: Limits, suite: Suite) -> int:
    """A stdin/stdout case's output cap: `max_output_bytes`, raised to twice the sample's
    largest expected output and a margin, so that a right program's output always fits."""
    largest = max(len(case.output.encode()) for case in suite.cases)
    return max(limits.max_output_bytes, 2 * largest + _OUTPUT_MARGIN)


def _missing_reason(run: RunResult) -> str:
    if run.timed_out:
        return "not run: timeout"
    return "not reported: the run ended before the referee finished"


def _exit_reason(run: RunResult) -> str:
    if run.exit_code is None:
        return "killed"
    if run.exit_code < 0:
        return f"killed by signal {-run.exit_code}"
    last = run.stderr.decode("utf-8", errors="replace").strip().splitlines()[-1:]
    return f"exit status {run.exit_code}" + (f": {last[0][:300]}" if last else "")


def _startup_failure(run: RunResult) -> str:
    why = tail(run.stderr, 500).strip() or f"exit status {run.exit_code}"
    if run.timed_out:
        why = f"timed out before the candidate's process was up; {why}"
    return f"the sandboxed processes did not start: {why}"


def _evidence(run: RunResult) -> dict[str, Any]:
    evidence: dict[str, Any] = {
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "stdout_tail": tail(run.stdout),
        "stderr_tail": tail(run.stderr),
    }
    if run.stdout_truncated or run.stderr_truncated:
        evidence["output_truncated"] = True
    return evidence
