"""The `code` reward: test styles, modes, extraction, config, infrastructure failures, engine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rewardsmith
from rewardsmith._exceptions import ConfigError
from rewardsmith.verifiers.code import _reward as reward_module
from rewardsmith.verifiers.code import code, extract_code, outputs_match, parse_reference
from rewardsmith.verifiers.code._candidate import _exit_status
from rewardsmith.verifiers.code._referee import _task_builtins, _Unsupported
from rewardsmith.verifiers.code._sandbox import _HOST_UID_BASE, _HOST_UID_SPAN

from ._code_helpers import needs_bwrap, sample

SQUARE = "def square(x):\n    return x * x\n"
ASSERTS = {"tests": ["assert square(2) == 4", "assert square(3) == 9", "assert square(-1) == 1"]}
IO = {"io": [{"input": "2 3\n", "output": "5\n"}, {"input": "10 -4", "output": "6"}]}
ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
IO_SQUARE = {"io": [{"input": "3\n", "output": "9\n"}]}


# -- pure parts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "how", "expected"),
    [
        ("x = 1", "auto", "x = 1"),
        ("Sure:\n```python\nx = 1\n```\nthen\n```python\nx = 2\n```", "auto", "x = 2\n"),
        ("```python\nx = 1\n```\n```python\nx = 2\n```", "first", "x = 1\n"),
        ("```python\nx = 1\n```\n```\nx = 2\n```", "all", "x = 1\n\nx = 2\n"),
        ("```bash\nrm -rf /\n```\n```\nx = 3\n```", "auto", "x = 3\n"),
        ("```bash\nrm -rf /\n```", "auto", None),
        ("no code", "last", None),
        ("```python\nx = 1\n```", "raw", "```python\nx = 1\n```"),
        ("so:\r\n```python\r\nx = 1\r\n```\r\n", "auto", "x = 1\r\n"),
        ("1. so:\n   ```python\n   if x:\n       y = 1\n\n   ```", "auto", "if x:\n    y = 1\n\n"),
        ("  ```python\nif x:\n    y = 1\n  ```", "auto", "if x:\n    y = 1\n"),
        ("x = 1  # ~~~ and ``` ~~~\n", "auto", "x = 1  # ~~~ and ``` ~~~\n"),
        ("```python\nx = 1\n", "auto", "```python\nx = 1\n"),
        ("```python\nx = 1\n`````\n", "auto", "x = 1\n"),
        ("~~~python\nx = 1\n````\n~~~~\n", "auto", "x = 1\n````\n"),
        ("````python\nx = 1\n```\n````\n", "auto", "x = 1\n```\n"),
    ],
)
def test_extract_code(text: str, how, expected) -> None:
    assert extract_code(text, how) == expected


@pytest.mark.parametrize(
    ("tests", "setup", "expected"),
    [
        (["assert pow(2, 10, 1000) == 24"], "", {"pow"}),
        (["assert sum(N) == 6"], "N = 3", {"sum"}),
        (["assert max(3, 4) == 4", "assert min(1, 2) == 1"], "", {"max", "min"}),
        (["assert all(sum(n) >= 0 for n in range(4))"], "", {"all", "sum", "range"}),
        (["assert len(f(2)) == 2"], "", set()),
        (["assert len(DATA) == 3"], "", set()),
        (["assert len(x) == 3"], "x = f(3)", set()),
        (["assert sum(3) == 6", "assert f(1) == 1"], "", set()),
        (["assert (lambda g: g(3))(sum) == 6"], "", set()),
        (["assert check(pow(2, 3))"], "def check(v):\n    return v == 8\n", set()),
        (["assert [y for y in range(2)] == [0, 1]"], "", {"range"}),
        (["assert eval('square(2)') == 4"], "", set()),
        (["exec('assert square(2) == 4')"], "", set()),
        (["assert eval(compile(source='square(2)', filename='t', mode='eval')) == 4"], "", set()),
        (["assert eval('eval(\"square(2)\")') == 4"], "", set()),
        (["assert eval('pow(2, 10, 1000)') == 24"], "", {"pow"}),
        (["exec('x = pow(2, 3)')\nassert x == 8"], "", {"pow"}),
        (["assert eval(S) == 4"], "S = 'square(2)'", None),
        (["assert eval('squ' + 'are(2)') == 4"], "", None),
        (["assert getattr(3, 'real') == 3", "assert vars() and globals() and locals()"], "", set()),
        (["assert eval('square(') == 4"], "", None),
        (["assert eval(' \\tpow(2, 10, 1000)') == 24"], "", {"pow"}),
        (["assert eval(b'pow(2, 10, 1000)') == 24"], "", {"pow"}),
        (["exec(b'assert pow(2, 10, 1000) == 24')"], "", {"pow"}),
        (["assert eval(compile(b' pow(2, 3)'.strip(), 't', 'eval')) == 8"], "", None),
        (["assert eval(compile('pow(2, 3)', 't', 'eval')) == 8"], "", {"pow"}),
        (["assert eval(compile('pow(2, 3)', 't', M)) == 8"], "M = 'eval'", None),
        (["assert eval('pow(2, 3)', globals()) == 8"], "", {"pow"}),
        (["assert eval('pow(2, 3)', {}) == 8"], "", None),
        (["f = eval\nassert f('pow(2, 3)') == 8"], "", None),
        (["import builtins\nassert builtins.eval('pow(2, 3)') == 8"], "", None),
        (["from builtins import exec\nexec('assert pow(2, 3) == 8')"], "", None),
        (["assert eval(repr(square(2))) == 4"], "", set()),
    ],
)
def test_task_builtins(tests: list[str], setup: str, expected: set[str] | None) -> None:
    """The builtins' names an assert list can only mean as the task's functions; None: the
    tests use only builtins and run code that cannot be read, so the sample is invalid."""
    if expected is None:
        with pytest.raises(_Unsupported):
            _task_builtins(tests, setup)
    else:
        assert _task_builtins(tests, setup) == expected


@pytest.mark.parametrize(
    "code",
    ["None", "0", "7", "263", "-5", "True", "2**63 - 1", "-(2**63)", "2**63", "-(2**63) - 1"],
)
def test_exit_status_is_cpythons(code: str) -> None:
    """`SystemExit(code)` exits with the status this interpreter gives it."""
    python = subprocess.run([sys.executable, "-c", f"raise SystemExit({code})"], check=False)
    assert _exit_status(eval(code)) == python.returncode


def test_exit_status_of_an_int_subclass_is_its_value() -> None:
    class Code(int):
        def __and__(self, other: object) -> int:
            return 0

        def __index__(self) -> int:
            return 0

    assert _exit_status(Code(3)) == 3


def test_outputs_match() -> None:
    assert outputs_match("5 \n\n", "5\n", "whitespace")
    assert outputs_match("1   2\n3", "1 2\n3\n", "whitespace")
    assert not outputs_match("1 2 3", "1 2\n3", "whitespace")
    assert not outputs_match("5 \n", "5\n", "exact")
    assert outputs_match("5\n", "5\n", "exact")


@pytest.mark.parametrize(
    "reference",
    [
        42,
        "not json",
        {"tests": []},
        {"tests": "assert 1"},
        {"io": [{"input": 1}]},
        {"x": 1},
        # a lone surrogate (JSON's "\\ud800"; `Sample` replaces those of a dict reference, not
        # of JSON text) is no UTF-8: the dataset's fault, not `error` charged to the completion
        '{"io": [{"input": "1", "output": "\\ud800"}]}',
        '{"io": [{"input": "\\udfff", "output": "1"}]}',
    ],
)
def test_bad_references_are_invalid(reference) -> None:
    assert isinstance(parse_reference(reference), str)
    score = code(sandbox="bwrap")(sample(SQUARE, reference))
    assert score.status == "invalid", score


def test_missing_reference_is_not_applicable() -> None:
    assert code()(sample(SQUARE, None)).status == "not_applicable"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout_s": 0},
        {"timeout_s": 1000},
        {"memory_mb": 10},
        {"max_processes": 0},
        {"parallelism": 0},
        {"sandbox": "docker"},
        {"python": "/nonexistent/python"},
    ],
)
def test_config_errors_name_the_parameter(kwargs) -> None:
    if "sandbox" in kwargs:  # a Literal: the spec layer (validate_call) rejects it
        spec = {"rewards": {"t": {"type": "rewardsmith.verifiers.code:code", **kwargs}}}
        with pytest.raises(Exception, match="sandbox"):
            rewardsmith.score([{"id": "a", "completion": "", "reference": ASSERTS}], spec)
        return
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        code(**kwargs)


def test_without_bwrap_every_sample_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reward_module, "bwrap_path", lambda: None)
    score = code()(sample(SQUARE, ASSERTS))
    assert score.status == "error"
    assert score.score is None
    assert "install" in score.detail["reason"] and "bubblewrap" in score.detail["reason"]


@needs_bwrap
def test_a_sandbox_that_never_starts_is_an_error_not_a_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stands for any start-up failure of the runs' processes: a seccomp filter the kernel
    # refuses makes both the referee and the candidate exit before the start record.
    monkeypatch.setattr(reward_module._seccomp, "program", lambda allow_fork: b"\0" * 8)
    for reference in (ASSERTS, IO):
        score = code()(sample(SQUARE, reference))
        assert score.status == "error", score.detail
        assert "did not start" in score.detail["reason"]


def test_sandbox_none_warns_loudly_and_still_scores() -> None:
    with pytest.warns(RuntimeWarning, match="UNSANDBOXED"):
        fn = code(sandbox="none")
    assert fn(sample(SQUARE, ASSERTS)).score == 1.0
    assert fn(sample("def square(x):\n    return 4\n", ASSERTS)).score == 0.0


# -- styles and modes, sandboxed -------------------------------------------------------------


@needs_bwrap
def test_asserts_style_all_and_fraction() -> None:
    wrong = "def square(x):\n    return abs(x) * 2\n"  # right for 2 only
    assert code()(sample(SQUARE, ASSERTS)).score == 1.0
    score = code()(sample(wrong, ASSERTS))
    assert score.score == 0.0
    assert [t["passed"] for t in score.detail["tests"]] == [True, False, False]
    assert "AssertionError" in score.detail["tests"][1]["error"]
    assert code(mode="fraction")(sample(wrong, ASSERTS)).score == pytest.approx(1 / 3)


@needs_bwrap
def test_asserts_setup_runs_after_the_program() -> None:
    reference = {
        "setup": "import math\nEXPECTED = math.factorial(4)",
        "tests": ["assert f() == EXPECTED"],
    }
    assert code()(sample("def f():\n    return 24\n", reference)).score == 1.0


@needs_bwrap
def test_dataset_code_runs_in_a_registered_module() -> None:
    """Setup, prompt and test code run as module ``solution`` in the referee's `sys.modules`:
    a class the test itself defines pickles, as under ``python solution.py``."""
    test = (
        "import pickle, sys\nclass Box:\n    pass\n"
        "assert type(pickle.loads(pickle.dumps(Box()))) is Box\n"
        "assert sys.modules['solution'].square(2) == 4\n"
    )
    assert code()(sample(SQUARE, {"tests": [test]})).score == 1.0


@needs_bwrap
@pytest.mark.parametrize(
    "prompt", ["import no_such_module\n", "def square(x):\n    1 / 0\nsquare(1)\n"]
)
def test_a_prompt_that_fails_is_invalid(prompt: str) -> None:
    """The problem's prompt is dataset code: its error is the dataset's, not a missing
    helper every program fails on."""
    reference = {"test": "def check(f):\n    assert f(2) == 4\n", "entry_point": "square"}
    score = code()(sample(SQUARE, {**reference, "prompt": prompt}))
    assert score.status == "invalid" and "the problem's prompt failed" in score.detail["reason"]


@needs_bwrap
def test_io_style_whitespace_and_exact() -> None:
    assert code()(sample(ADD, IO)).score == 1.0
    exact = code(compare="exact")(sample(ADD, IO))
    assert exact.score == 0.0  # case 2 expects "6" with no newline
    assert [t["passed"] for t in exact.detail["tests"]] == [True, False]
    wrong = code(mode="fraction")(sample("print(5)\n", IO))
    assert wrong.score == 0.5
    assert wrong.detail["tests"][1]["got"].strip() == "5"


@needs_bwrap
def test_io_runtime_error_and_timeout_fail_the_case() -> None:
    crash = code()(sample("raise ValueError('boom')\n", IO))
    assert crash.score == 0.0 and "ValueError: boom" in crash.detail["tests"][0]["error"]
    slow = code(timeout_s=1)(sample("while True:\n    pass\n", IO))
    assert slow.score == 0.0 and slow.detail["tests"][0]["error"] == "timeout"


@needs_bwrap
def test_io_unclosed_files_are_flushed_after_the_standard_streams() -> None:
    """As Python's shutdown: `sys.stdout` first, then a file left open on the same pipe (and
    one in a list, on stderr)."""
    program = (
        "out = open('/dev/stdout', 'w')\nkept = [open(2, 'w', closefd=False)]\n"
        "a, b = map(int, input().split())\nprint(a)\nout.write(str(b) + '\\n')\n"
        "kept[0].write('left open')\n"
    )
    io = {"io": [{"input": "2 3\n", "output": "2\n3\n"}]}
    score = code(compare="exact")(sample(program, io))
    assert score.score == 1.0 and score.detail["stderr_tail"] == "left open", score.detail


@needs_bwrap
def test_syntax_error_scores_zero() -> None:
    score = code()(sample("def square(x) return x\n", ASSERTS))
    assert score.score == 0.0 and "SyntaxError" in score.detail["tests"][0]["error"]


@needs_bwrap
def test_no_code_block_scores_zero() -> None:
    score = code(extract="last")(sample("I cannot solve this.", ASSERTS))
    assert score.score == 0.0 and "no code block" in score.detail["reason"]


@needs_bwrap
def test_output_is_capped() -> None:
    fn = code(max_output_bytes=1000)
    score = fn(sample("print('x' * 10**6)\n" + SQUARE, ASSERTS))
    assert score.score == 1.0 and score.detail["output_truncated"]
    assert len(score.detail["stdout_tail"]) <= 2_100


@needs_bwrap
def test_io_output_cap_covers_the_expected_output() -> None:
    """`max_output_bytes` is raised to twice the largest expected output plus 64 KiB: a right
    output always fits; one over the raised cap fails."""
    io = {"io": [{"input": "", "output": "x" * 5000 + "\n"}]}
    fn = code(max_output_bytes=1000)
    assert fn(sample("print('x' * 5000)\n", io)).score == 1.0
    over = fn(sample(f"print('x' * {2 * 5001 + 65_536})\n", io))
    assert over.score == 0.0 and over.detail["reason"] == "output limit exceeded"


@needs_bwrap
def test_stdlib_and_site_packages_are_importable() -> None:
    program = "import json, re, itertools, pydantic\n" + SQUARE
    assert code()(sample(program, ASSERTS)).score == 1.0


# -- through the engine ----------------------------------------------------------------------


def _spec(**params: object) -> dict[str, object]:
    return {"rewards": {"tests": {"type": "rewardsmith.verifiers.code:code", **params}}}


@needs_bwrap
def test_engine_scores_code_samples() -> None:
    samples = [
        {"id": "a", "completion": SQUARE, "reference": ASSERTS},
        {"id": "b", "completion": "def square(x):\n    return 0\n", "reference": ASSERTS},
        {"id": "c", "completion": ADD, "reference": IO},
    ]
    results = rewardsmith.score(samples, _spec(), workers=2)
    assert [r.reward for r in results] == [1.0, 0.0, 1.0]


def _sandbox_processes() -> list[int]:
    """Live processes under a sandbox uid. A zombie (state Z) is left out: it holds nothing
    but its process-table entry until its new parent, PID 1, reaps it, which on some VMs
    takes seconds."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                uid = entry.stat().st_uid
                with open(f"/proc/{entry.name}/stat") as stat:
                    state = stat.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if _HOST_UID_BASE <= uid < _HOST_UID_BASE + _HOST_UID_SPAN and state != "Z":
                found.append(int(entry.name))
    return found


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids are only distinct when run as root")
def test_a_worker_killed_by_the_engine_leaves_no_sandbox_behind() -> None:
    # The engine's hard timeout (1 s) strikes before the sandbox's own (30 s). A spec file
    # saying so is refused (`test_a_spec_timeout_under_the_rewards_is_refused`); the copy
    # below skips that check, as a worker killed for any other reason would.
    accepted = rewardsmith.RewardSpec.from_dict({"timeout_s": 32, **_spec(timeout_s=30)})
    engine_spec = accepted.model_copy(update={"timeout_s": 1})
    samples = [{"id": "a", "completion": "while True:\n    pass\n", "reference": ASSERTS}]
    results = rewardsmith.score(samples, engine_spec, workers=1)
    assert results[0].status == "timeout"
    deadline = time.monotonic() + 3
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sandbox_processes() == []


def test_a_spec_timeout_under_the_rewards_is_refused() -> None:
    """A code `timeout_s` the engine's cannot cover would make every hang a null (the
    worker killed) where its own limit gives 0: refused at load, with what to change."""
    with pytest.raises(ConfigError, match=r"up to 7s.*raise the spec's timeout_s above 7"):
        rewardsmith.RewardSpec.from_dict({"timeout_s": 5, **_spec(timeout_s=6)})
    rewardsmith.RewardSpec.from_dict({"timeout_s": 7.5, **_spec(timeout_s=6)})
    rewardsmith.RewardSpec.from_dict(_spec())  # the defaults fit: 3 s + 1 s under 5 s


@needs_bwrap
def test_an_interpreter_under_tmp_works(tmp_path) -> None:
    """Every run mounts its own /tmp; a virtual environment under /tmp (as many CI systems
    make) is bound back read-only on top of it: its own packages import, and it is not
    writable."""
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "only_in_this_venv.py").write_text("VALUE = 7\n")
    program = (
        "import only_in_this_venv, os\n"
        f"assert not os.access({site!r}, os.W_OK)\n"
        "def square(x):\n    return x * x * only_in_this_venv.VALUE // 7\n"
    )
    for warm in (True, False):
        fn = code(python=str(python), warm=warm)
        assert fn(sample(program, ASSERTS)).score == 1.0
        assert fn(sample(program, IO_SQUARE)).status == "ok"


# -- the trust boundary: what crosses it and what does not ---------------------------------------


@needs_bwrap
@pytest.mark.parametrize(
    ("completion", "strip_think", "expected"),
    [
        (f"<think>\n```python\n{SQUARE}```\n</think>\nI cannot do it.", True, 0.0),
        (f"<think>\n```python\n{SQUARE}```\n</think>\n```python\n{SQUARE}```", True, 1.0),
        (f"<think>\n```python\n{SQUARE}```\nstill thinking", True, 0.0),
        (f"<think>\n```python\n{SQUARE}```\n</think>\nI cannot do it.", False, 1.0),
    ],
)
def test_code_inside_think_is_not_run(completion: str, strip_think: bool, expected: float) -> None:
    score = code(strip_think=strip_think)(sample(completion, ASSERTS))
    assert (score.status, score.score) == ("ok", expected), score.detail


@needs_bwrap
def test_what_the_referee_sees_of_the_candidate() -> None:
    program = (
        "import math\nimport numpy as np\nLIMIT = 3\n"
        "class Counter:\n    def __init__(self, start):\n        self.n = start\n"
        "    def add(self, k):\n        self.n += k\n        return self.n\n"
        "calls = []\ndef remember(x):\n    calls.append(x)\n    return len(calls)\n"
        "def mean(xs):\n    return np.mean(xs)\n"
    )
    reference = {
        "tests": [
            "assert LIMIT == 3",
            "c = Counter(1)\nassert c.add(2) == 3 and c.add(2) == 5 and c.n == 5",
            "assert remember('a') == 1 and remember('b') == 2",  # its own state persists
            "assert math.isclose(mean([1, 2]), 1.5)",  # numpy scalar -> float; math imported
            "c = Counter(0)\nassert c != Counter(0) and c == c",  # handles equal only themselves
        ]
    }
    score = code()(sample(program, reference))
    assert [t["passed"] for t in score.detail["tests"]] == [True] * 5, score.detail


@needs_bwrap
def test_arguments_that_cannot_cross() -> None:
    program = "def apply(f, x):\n    return f(x)\n"
    humaneval = {
        "test": "def check(candidate):\n    assert candidate(abs, -2) == 2\n",
        "entry_point": "apply",
    }
    invalid = code()(sample(program, humaneval))
    assert invalid.status == "invalid" and "builtin_function_or_method" in invalid.detail["reason"]
    asserts = code()(sample(program, {"tests": ["assert apply(abs, -2) == 2"]}))
    assert (asserts.status, asserts.score) == ("ok", 0.0)
    assert "not plain data" in asserts.detail["reason"]


@needs_bwrap
@pytest.mark.parametrize(
    "reference",
    [
        {"test": "def check(candidate) pass", "entry_point": "square"},
        {"tests": ["assert square(2) = 4"]},
        {"tests": ["assert square(2) == 4"], "setup": "import"},
        {"test": "CHECK = 1\n", "entry_point": "square"},
    ],
)
def test_tests_that_cannot_run_are_invalid(reference) -> None:
    assert code()(sample(SQUARE, reference)).status == "invalid"


@needs_bwrap
def test_arguments_are_copies_and_results_plain() -> None:
    program = "def grow(xs):\n    xs.append(1)\n    return xs\n"
    reference = {
        "tests": [
            "xs = [0]\nassert grow(xs) == [0, 1] and xs == [0]",
            "assert type(grow((0,) and [0])) is list",
        ]
    }
    assert code()(sample(program, reference)).score == 1.0


MEMORY_SCAN = r"""
import re, sys
# Every readable mapping of this process, searched for the token's text. The pattern is
# built so that its own source never matches it.
pattern = re.compile(b"(" + sys.stdin.readline().strip().encode() + b"){8}")
found = False
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps.read().splitlines():
        span, perms = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if "r" not in perms or end - start > 64 << 20:
            continue
        try:
            mem.seek(start)
            found = found or pattern.search(mem.read(end - start)) is not None
        except (OSError, ValueError, OverflowError):
            continue
print("held" if found else "clean")
"""


@needs_bwrap
@pytest.mark.parametrize("given", ["", "5eed" * 8])
def test_a_stdin_stdout_candidate_never_holds_its_start_token(monkeypatch, given: str) -> None:
    """The README's "the candidate's process never holds ... the per-run token": the start
    token of a stdin/stdout run is nowhere in the candidate's memory. Control: when its input
    carries the token, the same scan finds it."""
    monkeypatch.setattr(reward_module, "new_token", lambda: "5eed" * 8)
    reference = {"io": [{"input": f"5eed\n{given}\n", "output": "clean\n"}]}
    score = code(timeout_s=10)(sample(MEMORY_SCAN, reference))
    assert score.status == "ok"
    assert score.score == (0.0 if given else 1.0), score.detail
