"""Red team, seventh pass (rtcode7), of the `code` reward: round 6's fixes (the program runs
as ``python solution.py`` would; CRLF and indented fences; re-openable output pipes; the
raised output cap of stdin/stdout cases; sync refused; builtin-named task functions).

Same table as `test_redteam_code6.py` (`Attack`, `guard`, `assert_earns_what_it_should`).
No way was found for a WRONG program to forge a pass through the new `sys.modules` entry,
``__file__``, the ``exit``/``quit`` builtins or the 0602 pipes: the candidate's process can
only ever change its own answers (suites) or its own stdout (stdin/stdout), and the pipes
stay write-only to the sandbox's uid. What this pass found:

* the builtin-binding rule (`_referee._task_builtins`) says "the tests can only mean" the
  program's function when they call one builtin and read nothing else, but `eval` and
  `exec` reach the program's names through a string: the rule binds THEM to the candidate,
  which then answers the string, and the named function is never called (a wrong `square`
  earns 1.0; a right one 0.0);
* "runs as ``python solution.py`` would": a stdout re-opened by name (the README's own
  example) and never closed loses its output (``os._exit``, no interpreter shutdown); an
  exit status that Python reports as a failure (``SystemExit(2**64)``: 255) is 0 here;
  ``__file__`` names a file that does not exist;
* the same `sys.modules` gap round 6 closed on the candidate's side is open on the
  referee's: dataset code (an assert list's ``setup``, a HumanEval prompt's helpers) runs as
  module ``solution`` that is not in ``sys.modules``, so a dataclass with a string (or
  future) annotation, or pickling a class of the setup, fails for every program.

The hole rows failed when this pass was written and pass now (each row's ``today`` says what
it earns, and what it earned before); they assert the behaviour the README and the module
docs promise. Two rows come from the report's findings not turned into rows then
(``sys.argv``, a closing fence longer than the opening one). The other rows guard what round
6 opened (an always-equal `sys.modules` entry, the pipes' modes, the raised cap, a builtin
used as a helper around `eval`, an unclosed fence's whole-text program).
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

RIGHT_OR_INVALID = frozenset({ONE, INVALID})

OPEN_HOLES: tuple[str, ...] = ()
"""The rows that still fail (holes): none. The seven this pass found are fixed."""


# -- the builtin-binding rule: eval and exec --------------------------------------------------

WRONG_SQUARE = "def square(x):\n    return x + 1\n"
EVAL_TESTS = {"tests": ["assert eval('square(2)') == 4", "assert eval('square(3)') == 9"]}
"""Assertions that reach the task's function through `eval` (as generated or templated test
lists do): the only name they call or read is the builtin `eval`, so `_task_builtins`
binds `eval` to the candidate's (the README: "the one function they call is the
candidate's"). `square` is never called."""
LYING_EVAL = (
    WRONG_SQUARE + "\ndef eval(source):\n    return {'square(2)': 4, 'square(3)': 9}[source]\n"
)
"""A wrong `square` and an `eval` of the program's own that answers the strings the tests
hold: plain data, so it crosses."""
EXEC_TESTS = {"tests": ["exec('assert square(2) == 4')", "exec('assert square(3) == 9')"]}
"""The same through `exec`: the assertion is inside the string."""
SILENT_EXEC = WRONG_SQUARE + "\ndef exec(source):\n    return None\n"
EVAL_AS_A_HELPER = {"tests": ["assert eval(repr(square(2))) == 4"]}
"""`eval` around a call of `square`: a name that is not a builtin's, so `eval` stays the
builtin (guard)."""

# -- as `python solution.py` would ------------------------------------------------------------

UNCLOSED_STDOUTS = (
    "out = open('/dev/stdout', 'w')\nout.write(str(int(input()) ** 2) + '\\n')\n",
    "import os\nout = os.fdopen(1, 'w')\nout.write(str(int(input()) ** 2) + '\\n')\n",
    "out = open(1, 'w', closefd=False)\nout.write(str(int(input()) ** 2) + '\\n')\n",
)
"""Right programs that write to stdout re-opened by name or number and never close it:
`python solution.py` flushes the buffered file when the interpreter shuts down (the module's
globals are cleared, the file is finalized); `_runtime._candidate_process` flushes only
`sys.stdout`/`sys.__stdout__` and calls ``os._exit``: the answer stays in the buffer."""

EXIT_2_64 = "print(int(input()) ** 2)\nraise SystemExit(2 ** 64)\n"
"""Python exits 255 (the code does not fit a C long: -1); `_candidate._exit_status` takes
``code & 0xFF`` = 0."""
EXIT_INT_SUBCLASS = (
    "class Code(int):\n    def __and__(self, other):\n        return 0\n"
    "print(int(input()) ** 2)\nraise SystemExit(Code(3))\n"
)
"""Python reads the int's value (exit status 3); `_exit_status` calls the subclass's
``__and__`` (0)."""

DUNDER_FILE_EXISTS = (
    "import os\nprint(int(input()) ** 2 if os.path.isfile(__file__) else 'no such file')\n"
)
"""``__file__`` is ``/tmp/solution.py``, a file that does not exist (the program is a memfd):
under `python solution.py` it is the program's own source (`open(__file__)`,
`os.path.getsize(__file__)`, `inspect.getsource`)."""

ARGV = "import sys\nprint(int(input()) ** 2 if sys.argv == ['solution.py'] else sys.argv)\n"
"""`python solution.py` sets ``sys.argv`` to ``['solution.py']``; the sandbox's interpreter
left it ``['-c']``."""

# -- the referee's module ---------------------------------------------------------------------

DATACLASS_SETUP = {
    "setup": "from dataclasses import dataclass\n\n@dataclass\nclass Case:\n    n: 'int'\n",
    "tests": ["assert square(Case(2).n) == 4", "assert square(Case(3).n) == 9"],
}
"""Dataset code: a setup with a dataclass whose annotation is a string. It runs in the
referee as module ``solution``, which is not in the referee's `sys.modules`: dataclasses
raises AttributeError ('NoneType' object has no attribute '__dict__'), 'the setup failed'."""
FUTURE_DATACLASS_SETUP = {
    "setup": (
        "from __future__ import annotations\nfrom dataclasses import dataclass\n\n"
        "@dataclass\nclass Case:\n    n: int\n"
    ),
    "tests": ["assert square(Case(2).n) == 4"],
}
PICKLE_SETUP = {
    "setup": "import pickle\n\nclass Box:\n    def __init__(self, v):\n        self.v = v\n",
    "tests": ["assert pickle.loads(pickle.dumps(Box(square(2)))).v == 4"],
}
HUMANEVAL_DATACLASS = {
    "prompt": (
        "from __future__ import annotations\nfrom dataclasses import dataclass\n\n\n"
        "@dataclass\nclass Case:\n    n: int\n    out: int\n\n\n"
        'def square(x: int) -> int:\n    """x squared."""\n'
    ),
    "test": (
        "def check(candidate):\n    for case in [Case(2, 4), Case(3, 9)]:\n"
        "        assert candidate(case.n) == case.out\n"
    ),
    "entry_point": "square",
}
"""A HumanEval-style problem whose prompt holds a dataclass helper the test builds its cases
with (plain ints cross): `_prompt_scope` runs the prompt as ``solution`` outside
`sys.modules`, the decorator raises, the error is suppressed, and `check` meets NameError."""

# -- guards ---------------------------------------------------------------------------------

ALWAYS_EQUAL_MODULE = """import sys, types
class Yes(types.ModuleType):
    def __eq__(self, other):
        return True
    def __getattr__(self, name):
        return lambda *a, **k: Yes('x')
sys.modules['solution'] = Yes('solution')
sys.modules['__main__'] = Yes('__main__')
import builtins
builtins.exit = builtins.quit = lambda *a: None
def square(x):
    return x + 1
"""
"""A wrong `square` that replaces its own `sys.modules` entry (and `__main__`) with an
always-equal module and disarms `exit`: the referee never looks at the candidate's modules."""
ALWAYS_EQUAL_MAIN_IO = """import sys, types, atexit
class Yes(str):
    def __eq__(self, other):
        return True
sys.modules['__main__'] = Yes('4')
print(int(input()) + 1)
atexit.register(exit, 0)
"""

OWN_PIPES = """
import os
# Round 6 made the stdout and stderr pipes 0602 (write for the sandbox's uid). Reading them
# back (the other stream, the referee's stderr in a suite) or widening their mode must stay
# refused.
refused = []
for fd in (1, 2):
    for flags in (os.O_RDONLY, os.O_RDWR):
        try:
            os.close(os.open("/proc/self/fd/%d" % fd, flags | os.O_NONBLOCK))
            refused.append(False)
        except OSError:
            refused.append(True)
    try:
        os.fchmod(fd, 0o666)
        refused.append(False)
    except OSError:
        refused.append(True)
OK = all(refused)
"""

_N = 150_000
BIG_EXPECTED = {"io": [{"input": f"{_N}\n", "output": "".join(f"{i * 7}\n" for i in range(_N))}]}
"""1.1 MB expected: the cap is raised to 2 x 1.1 MB + 64 KiB."""
FLOOD_BOTH_STREAMS = (
    "import sys\nblock = 'x' * (1 << 20)\n"
    "for _ in range(4):\n    sys.stdout.write(block)\n    sys.stderr.write(block)\n"
)
"""A wrong program that prints twice the raised cap on stdout and stderr: 0, never an
`error` (a null reward is an escape)."""

UNCLOSED_FENCE = "Here it is:\n```python\ndef square(x):\n    return x + 1\n"
"""No complete block: the whole text, prose and fence included, runs (SyntaxError)."""
UNCLOSED_FENCE_IN_A_STRING = (
    "def square(x):\n    return x * x\n'''\n```python\ndef square(x):\n    return x + 1\n'''\n"
)
"""The whole text is a right program; the unclosed fence (which a Markdown view shows as a
wrong program) sits in a string. README: no complete fenced block, the whole text runs."""

LONGER_CLOSING_FENCE = "Here:\n```python\n" + rt.RIGHT + "````\n"
"""A right block closed by a longer fence: CommonMark closes it (before, no complete block: the
whole text ran, SyntaxError)."""
RIGHT_THEN_WRONG = LONGER_CLOSING_FENCE + "\nOr:\n```python\n" + WRONG_SQUARE + "```\n"
"""Then a wrong block: rendered, it is the last block, and it runs."""


ATTACKS = [
    # ------------------------------------------------- the builtin rule (FAIL NOW)
    guard(
        Attack(
            "wrong-program-answers-the-tests-eval",
            "an assert list that reaches `square` through `eval('square(2)')` (or runs "
            "`exec('assert square(2) == 4')`): every name the tests call or read is a "
            "builtin's, one is called, so `_task_builtins` binds `eval` (`exec`) to the "
            "candidate. A wrong `square` with an `eval` of its own that answers the two "
            "strings (an `exec` that does nothing) passes: the test never reaches `square`. "
            "README: 'the one function they call is the candidate's' is meant for tests that "
            "'can only mean it'; eval/exec name the task's function inside a string",
            today="ok 0.0 for both (before eval/exec were never the task's: ok 1.0)",
            honest_wrong="ok 0",
            should=any_of(ZERO, INVALID),
            run=lambda env: all_of(
                rt.reward(LYING_EVAL, EVAL_TESTS), rt.reward(SILENT_EXEC, EXEC_TESTS)
            ),
        )
    ),
    guard(
        Attack(
            "right-program-reached-through-eval",
            "the same tests and a right `square` (no eval/exec of its own): the bound `eval` "
            "is not the program's, every test fails",
            today="ok 1.0 for both (before: ok 0.0, \"raised KeyError: 'eval'\" ('exec'))",
            honest_wrong="ok 0",
            should=any_of(ONE, INVALID),
            run=lambda env: all_of(
                rt.reward(rt.RIGHT, EVAL_TESTS), rt.reward(rt.RIGHT, EXEC_TESTS)
            ),
        )
    ),
    # ------------------------------------------------- as python solution.py (FAIL NOW)
    guard(
        Attack(
            "right-io-program-with-an-unclosed-stdout",
            "stdin/stdout: a right program that writes its answer to `open('/dev/stdout', "
            "'w')` (README: stdout 'can be re-opened by name'), `os.fdopen(1, 'w')` or "
            "`open(1, 'w', closefd=False)` and never closes it. `python solution.py` flushes "
            "it at shutdown; the run ends in `os._exit` after flushing `sys.stdout` only",
            today="ok 1.0 for each (before: ok 0.0, 'wrong output' (got ''))",
            honest_wrong="ok 0",
            should=all_of(ONE),
            run=lambda env: all_of(*(rt.reward(p, rt.IO_ONE) for p in UNCLOSED_STDOUTS)),
        )
    ),
    guard(
        Attack(
            "io-exit-status-python-reports-as-failure",
            "stdin/stdout: the right answer, then `raise SystemExit(2**64)` (Python: exit "
            "status 255) or `SystemExit(Code(3))` with an int subclass whose `__and__` says 0 "
            "(Python: 3). `_exit_status` takes `code & 0xFF`: status 0, a pass for a run "
            "every judge (and the README's 'exit as the interpreter would') calls a failure",
            today="ok 0.0 for both: exit status 255, 3 (before: ok 1.0, exit_code 0)",
            honest_wrong="ok 0",
            should=all_of(ZERO),
            run=lambda env: all_of(
                rt.reward(EXIT_2_64, rt.IO_ONE), rt.reward(EXIT_INT_SUBCLASS, rt.IO_ONE)
            ),
        )
    ),
    guard(
        Attack(
            "right-io-program-reading-dunder-file",
            "stdin/stdout: a right program that checks its own file (`os.path.isfile("
            "__file__)`, as `open(__file__)` or `inspect.getsource` need): README '`__file__` "
            "is set' as `python solution.py` sets it, but it names /tmp/solution.py, which "
            "does not exist (the program is a memfd). Low severity",
            today="ok 1.0 (before: ok 0.0, 'wrong output' (got 'no such file'))",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(DUNDER_FILE_EXISTS, rt.IO_ONE),
        )
    ),
    guard(
        Attack(
            "right-io-program-reading-argv",
            "stdin/stdout: a right program that checks `sys.argv` is `['solution.py']`, as "
            "`python solution.py` sets it (from the report's rows not turned into rows)",
            today="ok 1.0 (before: ok 0.0, 'wrong output' (got \"['-c']\"))",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(ARGV, rt.IO_ONE),
        )
    ),
    # ------------------------------------------------- the referee's module (FAIL NOW)
    guard(
        Attack(
            "right-program-dataclass-in-the-setup",
            "an assert list whose `setup` (dataset code, run in the referee) defines a "
            "dataclass with a string annotation, or with `from __future__ import "
            "annotations`, or a class the tests pickle: the referee runs it as module "
            "`solution`, which is not in the referee's `sys.modules` (round 6 registered the "
            "candidate's only), so every program fails: no gradient",
            today='ok 1.0 for each (before: ok 0.0, "the setup failed: AttributeError: '
            "'NoneType' object has no attribute '__dict__'\"; \"PicklingError: Can't pickle "
            "<class 'solution.Box'>: import of module 'solution' failed\")",
            honest_wrong="ok 0",
            should=all_of(ONE),
            run=lambda env: all_of(
                rt.reward(rt.RIGHT, DATACLASS_SETUP),
                rt.reward(rt.RIGHT, FUTURE_DATACLASS_SETUP),
                rt.reward(rt.RIGHT, PICKLE_SETUP),
            ),
        )
    ),
    guard(
        Attack(
            "right-program-dataclass-in-the-humaneval-prompt",
            "a HumanEval-style problem whose prompt defines a dataclass (future annotations) "
            "that `check` builds its cases from (plain ints cross). README: HumanEval helpers "
            "come from the problem's prompt, run in the referee. `_prompt_scope` swallows the "
            "decorator's AttributeError, so `Case` is never defined",
            today="ok 1.0 (before: ok 0.0, \"NameError: name 'Case' is not defined\")",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(rt.RIGHT, HUMANEVAL_DATACLASS),
        )
    ),
    guard(
        Attack(
            "closing-fence-longer-than-the-opening",
            "a right program in a ```python block closed by ````: CommonMark (and every "
            "Markdown view) closes the block there; and the same followed by a wrong block, "
            "which is then the last one and runs (from the report's rows not turned into rows)",
            today="ok 1.0; ok 0.0 (before: ok 0.0 for both, the whole text or a block "
            "swallowing the fences ran: SyntaxError)",
            honest_wrong="ok 0",
            should=("pair", ONE, ZERO),
            run=lambda env: (
                "pair",
                rt.reward(LONGER_CLOSING_FENCE),
                rt.reward(RIGHT_THEN_WRONG),
            ),
        )
    ),
    # ------------------------------------------------- guards
    guard(
        Attack(
            "eval-as-a-helper-stays-the-builtin",
            "`assert eval(repr(square(2))) == 4` with a wrong `square` and a lying `eval`: "
            "the tests read `square`, so `eval` stays the builtin",
            today="ok 0.0",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(
                WRONG_SQUARE + "\ndef eval(source):\n    return 4\n", EVAL_AS_A_HELPER
            ),
        )
    ),
    guard(
        Attack(
            "always-equal-sys-modules-entry",
            "a wrong `square` that replaces `sys.modules['solution']` and `['__main__']` with "
            "an always-equal module and disarms `exit`/`quit`; stdin/stdout: `__main__` "
            "replaced by an always-equal str and `exit(0)` in `atexit` after a wrong answer. "
            "Nothing the referee or the host reads comes from the candidate's modules",
            today="ok 0.0 for each",
            honest_wrong="ok 0",
            should=all_of(ZERO),
            run=lambda env: all_of(
                rt.reward(ALWAYS_EQUAL_MODULE), rt.reward(ALWAYS_EQUAL_MAIN_IO, rt.IO_ONE)
            ),
        )
    ),
    guard(
        Attack(
            "probe-output-pipes-write-only",
            "a correct `square` that first tries to open its stdout and stderr pipes (0602 "
            "since round 6) for reading or read-write through /proc/self/fd, and to fchmod "
            "them 0666: all refused (the sandbox's uid is 'other')",
            today="ok 1.0",
            honest_wrong="-",
            should=ONE,
            run=lambda env: rt.probe(OWN_PIPES),
        )
    ),
    guard(
        Attack(
            "flood-over-the-raised-cap",
            "stdin/stdout, 1.1 MB expected (cap raised to ~2.3 MB): a wrong program writes "
            "4 MiB to stdout and 4 MiB to stderr",
            today="ok 0.0 ('output limit exceeded')",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(FLOOD_BOTH_STREAMS, BIG_EXPECTED, timeout_s=5),
        )
    ),
    guard(
        Attack(
            "unclosed-fence-whole-text",
            "a wrong program after an unclosed ```python fence (the whole text runs: "
            "SyntaxError, 0); and a right whole-text program whose string holds an unclosed "
            "fence with a wrong one (the README's rule: the whole text runs, and it is right)",
            today="ok 0.0; ok 1.0",
            honest_wrong="ok 0",
            should=("pair", ZERO, ONE),
            run=lambda env: (
                "pair",
                rt.reward(UNCLOSED_FENCE),
                rt.reward(UNCLOSED_FENCE_IN_A_STRING),
            ),
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
    "eval": (lambda: rt.reward(WRONG_SQUARE, EVAL_TESTS), ZERO),
    "io": (lambda: rt.reward("print(int(input()) + 1)\n", rt.IO_ONE), ZERO),
    "setup": (lambda: rt.reward(WRONG_SQUARE, DATACLASS_SETUP), ZERO),
}


@pytest.mark.parametrize("target", sorted(HONEST))
def test_baseline(target: str) -> None:
    run, expected = HONEST[target]
    assert run() == expected
