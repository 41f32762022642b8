"""Red team, eighth pass (rtcode8), of the `code` reward: round 7's fixes (eval/exec/compile
constant strings parsed as the tests' code, the indirect builtins never bound; CPython's exit
status; dataset code as a registered module ``solution``; ``/tmp/solution.py``; the `gc` flush
of open writers; ``sys.argv``; CommonMark closing fences).

Same table as `test_redteam_code7.py` (`Attack`, `guard`, `assert_earns_what_it_should`).
No way was found for a WRONG program to reach the referee's registered ``solution`` module
(only plain data crosses), to use ``/tmp/solution.py`` as a channel (each process has its own
``/tmp``), or to gain anything from code the `gc` flush runs (it runs after the exit status
is taken, as CPython's shutdown runs it, and inside the run's wall clock). What this pass
found:

* `_referee._code_argument` reads a string only when it is a ``str`` constant that compiles in
  ``exec`` mode; `eval` also runs ``bytes`` and strips leading spaces and tabs
  (``eval(' abs(-3)')``, ``eval(b'abs(-3)')``, ``exec(b'...')``). Such a string counts for
  nothing, `eval` is never bound, and a task function named like a builtin (`abs`) is not
  bound either (`_bind` leaves out names shadowing builtins): the tests call the real builtin,
  so a WRONG `abs` earns 1.0;
* `_runtime._flush_open_files` flushes only the exact types TextIOWrapper, BufferedWriter,
  BufferedRandom: a right program whose unclosed stdout is a TextIOWrapper subclass or a
  `_pyio` file (CPython's shutdown flushes both) loses its answer, 0;
* CPython exits 120 when flushing ``sys.stdout``/``sys.stderr`` fails at shutdown (a stream
  replaced by one whose ``flush`` raises); the run suppresses that error: status 0, a pass.

All three are fixed, ``OPEN_HOLES`` is empty: `_code_argument` reads str and bytes as the
builtins read them (`eval` strips leading spaces and tabs, in ``eval`` mode), and tests that use
only builtins and run code it cannot read are `invalid`; `_flush_open_files` flushes every
writable `io.IOBase` (text layers first); a failed final flush of ``sys.stdout``/``sys.stderr``
exits 120. The rows assert the behaviour the README promises (``today`` says what each earned
when found) and guard round 7's surfaces (nested eval strings, a stall in the flush,
``/tmp/solution.py`` between cases) and the invalid rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import _code_redteam as rt
from ._code_helpers import needs_bwrap
from ._code_redteam import INVALID, ONE, ZERO, all_of, any_of
from .test_code_remote import FakeSandboxFusion
from .test_redteam_code import Attack, Env, assert_earns_what_it_should, guard

pytestmark = [needs_bwrap]


OPEN_HOLES: tuple[str, ...] = ()


# -- eval strings the parser skips -------------------------------------------------------------

WRONG_ABS = "def abs(x):\n    return 0\n"
RIGHT_ABS = "def abs(x):\n    return x if x > 0 else -x\n"
UNPARSED_EVAL_TESTS = (
    {"tests": ["assert eval(' abs(-3)') == 3", "assert eval(' abs(4)') == 4"]},
    {"tests": ["assert eval(b'abs(-3)') == 3"]},
    {"tests": ["exec(b'assert abs(-3) == 3')"]},
)
"""The task's function is named `abs` (a builtin's name, as `_task_builtins` allows) and the
tests reach it through `eval`/`exec` of a constant the parser does not read: `eval` strips
leading spaces and tabs (``' abs(-3)'`` is an IndentationError in ``exec`` mode, where
`_uses` compiles it) and runs bytes (`_code_argument` takes ``str`` only). The string counts
for nothing, so `called` is ``{eval}`` less `_INDIRECT`: nothing is bound, `_bind` leaves the
program's `abs` out (it shadows a builtin) and the tests check the builtin."""
PARSED_EVAL_TESTS = {"tests": ["assert eval('abs(-3)') == 3"]}
NESTED_EVAL_TESTS = {
    "tests": ["assert eval(\"eval('abs(-3)')\") == 3", "exec(\"exec('assert abs(4) == 4')\")"]
}
"""Nested strings: `_uses` follows them, `abs` is bound (guard)."""
UNREADABLE_CODE_TESTS = (
    {"tests": ["assert eval(s) == 3"], "setup": "s = 'abs(-3)'"},
    {"tests": ["f = eval\nassert f('abs(-3)') == 3"]},
    {"tests": ["assert eval('abs(-3)', {}) == 3"]},
    {"tests": ["from builtins import eval as e\nassert e('abs(-3)') == 3"]},
    {"tests": ["assert eval(compile('abs(-3)', '', m)) == 3"], "setup": "m = 'eval'"},
    {"tests": ["try:\n    eval('abs(')\nexcept SyntaxError:\n    pass\nassert abs(-3) == 3"]},
)
"""Tests that read and call only builtins and run code the parser cannot read (a variable, a
runner taken as a value, a namespace of its own, a mode it cannot see, a string that does not
parse): which builtin that code calls is unknown, so nothing tells the program from the
builtins: `invalid`, decided from the tests alone."""
CANDIDATE_BESIDE_UNREADABLE = {"tests": ["assert eval(repr(square(2))) == 4"]}
"""An unreadable `eval` beside a name that is the candidate's: the usual binding (guard)."""

# -- the gc flush --------------------------------------------------------------------------------

UNCLOSED_STDOUT_KINDS = (
    "import io\nclass Out(io.TextIOWrapper):\n    pass\n"
    "out = Out(open(1, 'wb', closefd=False))\nout.write(str(int(input()) ** 2) + '\\n')\n",
    "import _pyio\nout = _pyio.open(1, 'w', closefd=False)\n"
    "out.write(str(int(input()) ** 2) + '\\n')\n",
)
"""Right programs whose unclosed stdout is a TextIOWrapper subclass, or `_pyio`'s file:
``python solution.py`` prints 4 (their finalizers flush at shutdown); `_flush_open_files`
keeps ``type(o) in _WRITERS`` (exact types) and skips them."""

FLUSH_STALLS = (
    "import io, time\nclass Raw(io.RawIOBase):\n    def writable(self):\n        return True\n"
    "    def write(self, b):\n        time.sleep(60)\n        return len(b)\n"
    "out = io.TextIOWrapper(io.BufferedWriter(Raw()))\nout.write('x')\nprint(int(input()) + 1)\n"
)
"""A wrong answer, then an unclosed text file over a raw writer of its own that sleeps when
the flush reaches it: the run's wall clock still ends it (guard)."""

# -- exit status ---------------------------------------------------------------------------------

FAILED_STD_FLUSH = tuple(
    "import sys\nprint(int(input()) ** 2)\nsys.stdout.flush()\n"
    "class Bad:\n    def write(self, s):\n        return len(s)\n"
    f"    def flush(self):\n        raise OSError('no')\nsys.{stream} = Bad()\n"
    for stream in ("stdout", "stderr")
)
"""The answer, then ``sys.stdout`` (``sys.stderr``) replaced by a stream whose ``flush`` raises:
CPython's shutdown (`flush_std_files`) reports it and exits 120, a failing run; the run's
``contextlib.suppress`` around the flush leaves status 0."""

# -- /tmp/solution.py between cases --------------------------------------------------------------

MARKS_ITS_FILE = (
    "mark = '#' + 'seen'\nwith open(__file__) as f:\n    seen = mark in f.read()\n"
    "with open(__file__, 'a') as f:\n    f.write('\\n' + mark + '\\n')\n"
    "print(int(input()) ** 2 if seen else 'first')\n"
)
"""Right only when an earlier case marked ``/tmp/solution.py``: each process has its own
``/tmp``, a fresh file; every case answers 'first' (guard)."""
TWO_CASES = {"io": [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "9\n"}]}


ATTACKS = [
    # ------------------------------------------------- eval strings (FAIL NOW)
    guard(
        Attack(
            "wrong-builtin-named-program-through-an-unparsed-eval-string",
            "an assert list for a task function named `abs` that calls it through "
            "`eval(' abs(-3)')` (leading space: eval strips it, exec mode does not), "
            "`eval(b'abs(-3)')` or `exec(b'assert abs(-3) == 3')`: the string counts for "
            "nothing, `eval` is never bound, the program's `abs` is left out as a builtin's "
            "name, and the tests check the builtin. README: 'the code in a constant string "
            "they pass to eval, exec or compile counts as theirs'",
            today="ok 1.0 for each (a wrong abs passes; a right one too: no gradient)",
            honest_wrong="ok 0",
            should=any_of(ZERO, INVALID),
            run=lambda env: all_of(*(rt.reward(WRONG_ABS, t) for t in UNPARSED_EVAL_TESTS)),
        )
    ),
    # ------------------------------------------------- the gc flush (FAIL NOW)
    guard(
        Attack(
            "right-io-program-with-an-unclosed-stdout-subclass",
            "stdin/stdout: a right program whose unclosed stdout is a TextIOWrapper "
            "subclass or `_pyio.open(1, 'w')`: CPython prints 4; `_flush_open_files` "
            "matches exact types only. README: 'the files it left open (open, os.fdopen) "
            "are flushed ... as Python's shutdown flushes them'",
            today="ok 0.0 for each ('wrong output', got '')",
            honest_wrong="ok 0",
            should=all_of(ONE),
            run=lambda env: all_of(*(rt.reward(p, rt.IO_ONE) for p in UNCLOSED_STDOUT_KINDS)),
        )
    ),
    # ------------------------------------------------- exit status (FAIL NOW)
    guard(
        Attack(
            "io-exit-status-120-failed-stdout-flush",
            "stdin/stdout: the answer, then sys.stdout (sys.stderr) replaced by a stream whose "
            "flush raises: `python solution.py` exits 120 (a failing run); the run suppresses "
            "the error and exits 0. README: 'runs as python solution.py would', 'a case whose "
            "program exits with any status but 0 fails'. Low severity",
            today="ok 1.0 for both (exit_code 0)",
            honest_wrong="ok 0",
            should=all_of(ZERO),
            run=lambda env: all_of(*(rt.reward(p, rt.IO_ONE) for p in FAILED_STD_FLUSH)),
        )
    ),
    # ------------------------------------------------- the invalid rule (rtcode8 fix)
    guard(
        Attack(
            "right-builtin-named-program-through-stripped-and-bytes-eval-strings",
            "the `abs` task through `eval(' abs(-3)')`, `eval(b'abs(-3)')` and "
            "`exec(b'assert abs(-3) == 3')`, read as those builtins read them: `abs` is "
            "bound and a right one passes",
            today="ok 1.0 for each",
            honest_wrong="ok 0",
            should=all_of(ONE),
            run=lambda env: all_of(*(rt.reward(RIGHT_ABS, t) for t in UNPARSED_EVAL_TESTS)),
        )
    ),
    guard(
        Attack(
            "builtin-only-tests-running-unreadable-code",
            "tests that use only builtins and run code the parser cannot read (`eval(s)`, "
            "`f = eval`, `eval(..., {})`, `from builtins import eval`, a compile mode in a "
            "variable, an unparseable string): `invalid` for a wrong and a right `abs`. "
            "README: 'no test can tell the program from the builtins: the sample is invalid'",
            today="invalid for each",
            honest_wrong="ok 0",
            should=all_of(INVALID),
            run=lambda env: all_of(
                *(rt.reward(p, t) for p in (WRONG_ABS, RIGHT_ABS) for t in UNREADABLE_CODE_TESTS)
            ),
        )
    ),
    guard(
        Attack(
            "candidate-name-beside-an-unreadable-eval",
            "`assert eval(repr(square(2))) == 4`: the tests read the candidate's `square`, "
            "so the unreadable eval does not make the sample invalid; a wrong square fails",
            today="ok 0.0, ok 1.0",
            honest_wrong="ok 0",
            should=("pair", ZERO, ONE),
            run=lambda env: (
                "pair",
                rt.reward(rt.WRONG, CANDIDATE_BESIDE_UNREADABLE),
                rt.reward(rt.RIGHT, CANDIDATE_BESIDE_UNREADABLE),
            ),
        )
    ),
    # ------------------------------------------------- guards
    guard(
        Attack(
            "wrong-builtin-named-program-through-parsed-eval-strings",
            "the same `abs` task through plain and nested eval/exec strings: `abs` is bound, "
            "a wrong one fails, a right one passes",
            today="ok 0.0, ok 0.0; ok 1.0, ok 1.0",
            honest_wrong="ok 0",
            should=("pair", ZERO, ONE),
            run=lambda env: (
                "pair",
                all_of(
                    rt.reward(WRONG_ABS, PARSED_EVAL_TESTS), rt.reward(WRONG_ABS, NESTED_EVAL_TESTS)
                )[1],
                all_of(
                    rt.reward(RIGHT_ABS, PARSED_EVAL_TESTS), rt.reward(RIGHT_ABS, NESTED_EVAL_TESTS)
                )[1],
            ),
        )
    ),
    guard(
        Attack(
            "gc-flush-stalls-past-the-deadline",
            "a wrong answer, then an unclosed text file over a raw writer that sleeps 60 s "
            "when the exit flush reaches it: the wall clock ends the run, 0",
            today="ok 0.0 (after timeout_s)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(FLUSH_STALLS, rt.IO_ONE, timeout_s=3),
        )
    ),
    guard(
        Attack(
            "solution-file-as-a-channel-between-cases",
            "two stdin/stdout cases; the program marks /tmp/solution.py and answers right "
            "only when the mark was already there: each case's /tmp is fresh",
            today="ok 0.0",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(MARKS_ITS_FILE, TWO_CASES, mode="fraction"),
        )
    ),
]


def test_open_holes_are_rows() -> None:
    assert {row.values[0].target for row in ATTACKS} >= set(OPEN_HOLES)


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack(attack: Attack, fake: FakeSandboxFusion, tmp_path: Path) -> None:
    assert_earns_what_it_should(attack, Env(fake, tmp_path))


HONEST = {
    # The baselines of the rows above: the same configuration, an honest WRONG program.
    "abs": (lambda: rt.reward(WRONG_ABS, PARSED_EVAL_TESTS), ZERO),
    "io": (lambda: rt.reward("print(int(input()) + 1)\n", rt.IO_ONE), ZERO),
}


@pytest.mark.parametrize("target", sorted(HONEST))
def test_baseline(target: str) -> None:
    run, expected = HONEST[target]
    assert run() == expected
