"""The three test styles, and the verdict channel the program cannot forge.

Test styles, chosen by the keys of the reference:

* ``{"test": "<code defining check(candidate)>", "entry_point": "<function>"}`` (HumanEval):
  the program, then the test code, run in one namespace (tests may use the prompt's helpers),
  then ``check(<entry_point>)``: one test;
* ``{"tests": ["assert ...", ...], "setup": "<optional code>"}`` (MBPP): the program, the
  setup, then each assertion on its own: one test each;
* ``{"io": [{"input": "...", "output": "..."}, ...]}`` (APPS / CodeContests): the program
  run as ``__main__`` once per case, the case's input on stdin; its stdout is compared on the
  host, whitespace-tolerantly (per line, runs of whitespace collapsed, blank lines at the
  ends ignored) or exactly.

The verdict. The in-sandbox harness (`RUNNER`, trusted code that runs before the program)
reads its configuration, with a fresh random token, from a memfd whose descriptor it closes
before the program runs. It reports on a pipe the host reads, separate from stdout/stderr:
a ``start`` record before the program runs (no start record = the sandbox did not start:
status `error`), one record per finished test, a ``done`` record after the last. Each record
carries the token; a line without it, or a test or ``done`` reported twice (a fork replaying
the harness), marks the channel as tampered with and scores 0. So ``sys.exit(0)`` or
``os._exit(0)`` before the tests, a killed harness, a program that prints a pass marker, or
one that defines its own ``check``, leaves tests unreported: 0. The exit code is never
read as a verdict.

What an in-process harness cannot stop: the program runs in the interpreter that runs the
tests, so code written against this harness could find the token in the harness's frames or
patch the tests' behaviour (``__eq__`` that always returns True, a trace function). The
stdin/stdout style has no such gap: the host compares what the program printed, and the
harness closes the result pipe before the program starts.
"""

from __future__ import annotations

import json
import marshal
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "RUNNER",
    "Case",
    "Channel",
    "Suite",
    "outputs_match",
    "parse_channel",
    "parse_reference",
    "program_config",
    "suite_config",
]

Style = Literal["humaneval", "asserts", "io"]

_MARSHAL_VERSION = 4
"""The configuration travels as `marshal` data (strings, lists, a dict): built into every
interpreter since 3.4, and unlike `json` it costs the harness no import (json pulls in `re`,
~10 ms of a ~25 ms run)."""

RUNNER = r"""
import sys, os, builtins
def _rewardsmith_harness():
    cfg_fd, res_fd = int(sys.argv[1]), int(sys.argv[2])
    del sys.argv[1:]
    import marshal
    with open(cfg_fd, "rb", closefd=True) as f:
        cfg = marshal.loads(f.read())
    token = cfg.pop("token")
    sys.path.extend(cfg.pop("path"))
    # Everything the harness uses after the program ran is bound here, before it runs.
    write, exc_info, bexc, run, compile_, dict_ = (
        os.write, sys.exc_info, BaseException, exec, compile, dict)
    pristine = dict(builtins.__dict__)
    def emit(line):
        data = (token + " " + line + "\n").encode()
        while data:
            data = data[write(res_fd, data):]
    def describe():
        try:
            e = exc_info()[1]
            text = ("%s: %s" % (e.__class__.__name__, e))[:500]
        except bexc:
            text = "unprintable exception"
        return text.encode("utf-8", "replace").hex()
    emit("start")
    if cfg["style"] == "program":
        os.close(res_fd)
        del emit, token, cfg["style"]
        code = cfg.pop("code")
        ns = {"__name__": "__main__", "__builtins__": builtins}
        exec(compile(code, "solution.py", "exec"), ns)
        return
    ns = {"__name__": "solution", "__builtins__": builtins}
    style, tests, n = cfg["style"], cfg["tests"], len(cfg["tests"])
    entry_point = cfg["entry_point"]
    try:
        run(compile_(cfg["code"], "solution.py", "exec"), ns)
        if cfg["setup"]:
            run(compile_(cfg["setup"], "setup.py", "exec"), ns)
        broken = None
    except bexc:
        broken = describe()
    i = 0
    while i < n:
        if broken is not None:
            emit("test %d 0 %s" % (i, broken))
            i += 1
            continue
        try:
            # Tests see the program's names, but builtins as they were before it ran.
            scope = dict_(ns)
            scope["__builtins__"] = pristine
            if style == "humaneval":
                candidate = ns[entry_point]
                run(compile_(tests[i], "test.py", "exec"), scope)
                scope["check"](candidate)
            else:
                run(compile_(tests[i], "test_%d.py" % i, "exec"), scope)
        except bexc:
            emit("test %d 0 %s" % (i, describe()))
        else:
            emit("test %d 1 -" % i)
        i += 1
    emit("done %d" % n)
_rewardsmith_harness()
"""
"""The harness: ``python -I -B -c RUNNER <config fd> <result fd>``."""


@dataclass(frozen=True)
class Case:
    """One stdin/stdout case."""

    input: str
    output: str


@dataclass(frozen=True)
class Suite:
    """The tests a reference asks for."""

    style: Style
    tests: tuple[str, ...] = ()
    """Test code: one `test` (HumanEval) or one assertion per test (asserts)."""
    entry_point: str = ""
    setup: str = ""
    cases: tuple[Case, ...] = ()

    @property
    def size(self) -> int:
        return len(self.cases) if self.style == "io" else len(self.tests)


def parse_reference(reference: Any) -> Suite | str:
    """The suite, or why the reference is not one (-> status `invalid`)."""
    if isinstance(reference, str):
        try:
            reference = json.loads(reference)
        except ValueError:
            return "reference is a string but not JSON"
    if not isinstance(reference, dict):
        return f"reference must be an object, got {type(reference).__name__}"
    if "test" in reference or "entry_point" in reference:
        test, entry = reference.get("test"), reference.get("entry_point")
        if not isinstance(test, str) or not isinstance(entry, str) or not entry.isidentifier():
            return "HumanEval reference needs string 'test' and identifier 'entry_point'"
        return Suite("humaneval", tests=(test,), entry_point=entry)
    if "tests" in reference:
        tests, setup = reference["tests"], reference.get("setup") or ""
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
            return "'tests' must be a non-empty list of strings"
        if not isinstance(setup, str):
            return "'setup' must be a string"
        return Suite("asserts", tests=tuple(tests), setup=setup)
    if "io" in reference:
        io = reference["io"]
        if not isinstance(io, list) or not io:
            return "'io' must be a non-empty list of {input, output}"
        cases = []
        for case in io:
            if not isinstance(case, dict) or not isinstance(case.get("output"), str):
                return "each 'io' case needs a string 'output' (and optional string 'input')"
            given = case.get("input", "")
            if not isinstance(given, str):
                return "each 'io' case's 'input' must be a string"
            cases.append(Case(given, case["output"]))
        return Suite("io", cases=tuple(cases))
    return "reference has none of 'test'+'entry_point', 'tests', 'io'"


def new_token() -> str:
    return secrets.token_hex(16)


def suite_config(suite: Suite, program: str, token: str, path: list[str]) -> bytes:
    """The harness configuration for a HumanEval or asserts suite."""
    return marshal.dumps(
        {
            "token": token,
            "path": path,
            "style": suite.style,
            "code": program,
            "tests": list(suite.tests),
            "entry_point": suite.entry_point,
            "setup": suite.setup,
        },
        _MARSHAL_VERSION,
    )


def program_config(program: str, token: str, path: list[str]) -> bytes:
    """The harness configuration for one stdin/stdout run."""
    config = {"token": token, "path": path, "style": "program", "code": program}
    return marshal.dumps(config, _MARSHAL_VERSION)


@dataclass
class Channel:
    """What the harness reported."""

    started: bool = False
    done: bool = False
    outcomes: dict[int, tuple[bool, str | None]] = field(default_factory=dict)
    tampered: str | None = None
    """Why the channel cannot be trusted, if it cannot."""


def parse_channel(data: bytes, token: str, size: int) -> Channel:
    """Read the result pipe: records must carry `token`, each test at most once."""
    channel = Channel()
    prefix = token + " "
    for raw in data.split(b"\n"):
        if not raw:
            continue
        line = raw.decode("utf-8", errors="replace")
        if not line.startswith(prefix):
            channel.tampered = "a record without the run's token on the result pipe"
            continue
        parts = line[len(prefix) :].split(" ")
        kind = parts[0]
        if kind == "start" and len(parts) == 1 and not channel.started:
            channel.started = True
        elif kind == "test" and len(parts) == 4 and parts[1].isdigit():
            i = int(parts[1])
            if i >= size or i in channel.outcomes or channel.done:
                channel.tampered = f"test {i} reported twice or out of range"
                continue
            error = None if parts[3] == "-" else _unhex(parts[3])
            channel.outcomes[i] = (parts[2] == "1", error)
        elif kind == "done" and len(parts) == 2 and not channel.done:
            channel.done = parts[1] == str(size) and len(channel.outcomes) == size
            if not channel.done:
                channel.tampered = "'done' before every test was reported"
        else:
            channel.tampered = f"unexpected record {kind!r} on the result pipe"
    return channel


def _unhex(text: str) -> str:
    try:
        return bytes.fromhex(text).decode("utf-8", errors="replace")
    except ValueError:
        return "?"


def _lines(text: str) -> list[str]:
    lines = [" ".join(line.split()) for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def outputs_match(got: str, expected: str, compare: Literal["whitespace", "exact"]) -> bool:
    """Whether a program's stdout matches the expected output."""
    if compare == "exact":
        return got == expected
    return _lines(got) == _lines(expected)
