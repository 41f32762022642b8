"""The three test styles, their configurations, and reading the verdict pipe.

Test styles, chosen by the keys of the reference:

* ``{"test": "<code defining check(candidate)>", "entry_point": "<function>"}`` (HumanEval),
  with an optional ``"prompt"`` (the problem's code prompt; else the sample's string prompt
  is used): one test, ``check(<entry_point>)``;
* ``{"tests": ["assert ...", ...], "setup": "<optional code>"}`` (MBPP): the setup, then each
  assertion on its own: one test each;
* ``{"io": [{"input": "...", "output": "..."}, ...]}`` (APPS / CodeContests): the program
  run as ``__main__`` once per case, the case's input on stdin; its stdout is compared on the
  host, whitespace-tolerantly (per line, runs of whitespace collapsed, blank lines at the
  ends ignored) or exactly.

The first two run in the referee process (`_referee`), which calls the candidate's process
over a pipe in plain data; the referee alone holds the verdict pipe and writes records
carrying a per-run random token: ``start`` once the candidate's process is up (no start
record = the sandbox did not work: status `error`), one ``test`` record per test,
``invalid`` when the dataset's tests cannot be run, ``abort`` when the referee itself failed
(`error`), ``done`` after the last. A stdin/stdout run has one record, ``start``, written by
the run's init process (`_runtime`) with a token only it reads. A record without the token,
or a test reported twice, marks the channel as tampered with (0). The exit code and stdout
are never read as a verdict.
"""

from __future__ import annotations

import json
import marshal
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Case",
    "Channel",
    "Suite",
    "new_token",
    "outputs_match",
    "parse_channel",
    "parse_reference",
    "program_config",
    "start_config",
    "tests_config",
]

Style = Literal["humaneval", "asserts", "io"]

_MARSHAL_VERSION = 4
"""Configurations travel as `marshal` data (strings, lists, a dict): read inside the sandbox
without importing anything."""


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
    prompt: str | None = None
    """HumanEval: the problem's code prompt from the reference, if it carries one."""

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
        prompt = reference.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            return "HumanEval reference's 'prompt' must be a string"
        return Suite("humaneval", tests=(test,), entry_point=entry, prompt=prompt)
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
            if not (_encodable(given) and _encodable(case["output"])):
                return "an 'io' case's 'input' or 'output' holds a lone surrogate (not UTF-8)"
            cases.append(Case(given, case["output"]))
        return Suite("io", cases=tuple(cases))
    return "reference has none of 'test'+'entry_point', 'tests', 'io'"


def _encodable(text: str) -> bool:
    """Whether the text encodes as UTF-8, as a case's stdin and expected output must (a lone
    surrogate, JSON's ``"\\ud800"``, does not)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def new_token() -> str:
    return secrets.token_hex(16)


def tests_config(suite: Suite, token: str, prompt: str, path: list[str]) -> bytes:
    """The referee's configuration for a HumanEval or asserts suite (never the program)."""
    return marshal.dumps(
        {
            "token": token,
            "path": path,
            "style": suite.style,
            "tests": list(suite.tests),
            "entry_point": suite.entry_point,
            "setup": suite.setup,
            "prompt": prompt,
        },
        _MARSHAL_VERSION,
    )


def start_config(token: str) -> bytes:
    """A stdin/stdout run's private configuration: its token, for the start record written
    by the run's init process (never the candidate's)."""
    return marshal.dumps({"token": token}, _MARSHAL_VERSION)


def program_config(program: str, path: list[str]) -> bytes:
    """The candidate's configuration: its program (never the tests)."""
    return marshal.dumps({"code": program, "path": path}, _MARSHAL_VERSION)


@dataclass
class Channel:
    """What the referee reported."""

    started: bool = False
    done: bool = False
    outcomes: dict[int, tuple[bool, str | None]] = field(default_factory=dict)
    tampered: str | None = None
    """Why the channel cannot be trusted, if it cannot."""
    invalid: str | None = None
    """Why the dataset's tests cannot be run (-> status `invalid`)."""
    aborted: str | None = None
    """Why the referee failed (-> status `error`)."""


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
        elif kind in ("invalid", "abort") and len(parts) == 2:
            setattr(channel, "invalid" if kind == "invalid" else "aborted", _unhex(parts[1]))
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
