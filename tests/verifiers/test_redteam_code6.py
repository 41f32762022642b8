"""Red team, sixth pass (rtcode6), of the `code` reward: what a CORRECT program loses, and
what a name that shadows a builtin wins.

Same table as `test_redteam_code5.py` (`Attack`, `guard`, `assert_earns_what_it_should`).
Five rounds closed the trust boundary (the referee/candidate split, the codec, the verdict
records, the filter, the registers between runs); this pass found no new way for a WRONG
suite program to forge a pass through the sandbox. What it found is the other side of the
contract: ordinary, correct programs that score 0 (a false negative is a wrong gradient as
much as a false positive), one reference shape where the test never reaches the
candidate, and one machine-wide call the filter allows (sync/syncfs).

The hole rows failed when this pass was written (each row's ``today`` says what it earned
then) and pass now; they assert the behaviour the README and the module docs promise. The
other rows guard honest programs (recursion, threads, stdin read every usual way, unicode,
big debug output), a hang after a right answer, exits in suites, and builtin helpers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import _code_redteam as rt
from ._code_helpers import needs_bwrap
from ._code_redteam import ONE, ZERO, all_of
from .test_code_remote import FakeSandboxFusion
from .test_redteam_code import Attack, Env, assert_earns_what_it_should, guard

pytestmark = [needs_bwrap]

RIGHT_OR_INVALID = frozenset({ONE, ("invalid", None)})

OPEN_HOLES: frozenset[str] = frozenset()
"""The rows that still fail (holes): none. The eleven this pass found are fixed; each row's
``today`` says what it earned before."""


# -- programs --------------------------------------------------------------------------------

IO_SQUARE = "n = int(input())\nprint(n * n)\n"

EXIT_IO = "n = int(input())\nprint(n * n)\nexit()\n"
"""The competitive-programming idiom: print, then `exit()` (or `quit()`). `python
solution.py` defines both (the `site` module does); the zygote runs ``python -I -S``, so the
names do not exist and the right answer ends in NameError, exit status 1."""
QUIT_IO = "n = int(input())\nif n >= 0:\n    print(n * n)\n    quit()\nprint(-1)\n"

DATACLASS_FUTURE = """from __future__ import annotations
from dataclasses import dataclass

@dataclass
class Point:
    x: int

def square(x):
    return Point(x).x ** 2
"""
"""`from __future__ import annotations` + `@dataclass`: dataclasses looks the class's module
up in `sys.modules` (`_is_type`: ``sys.modules.get(cls.__module__).__dict__``); suites run the
program as module ``solution`` without registering it, so the decorator raises
AttributeError ('NoneType' object has no attribute '__dict__') at import."""
PICKLE_OWN_CLASS = """import pickle

class Box:
    def __init__(self, v):
        self.v = v

def square(x):
    return pickle.loads(pickle.dumps(Box(x * x))).v
"""
"""The same root: pickle imports the class's module ``solution`` (PicklingError)."""

RIGHT_SQUARE = "def square(x):\n    return x * x\n"

CRLF_COMPLETION = (
    "Here is the function:\r\n```python\r\n" + RIGHT_SQUARE.replace("\n", "\r\n") + "```\r\n"
)
"""A completion with Windows line endings: `_CLOSING.fullmatch` does not allow the ``\\r``
before the line's end, so no fence closes, the opening fence opens nothing, and a text with
"```" in it and no block is 'no code block in the answer'."""

INDENTED_FENCE = (
    "1. The function:\n\n   ```python\n   def square(x):\n       return x * x\n   ```\n"
)
"""A fenced block inside a list item, indented 3 spaces (as models write numbered steps).
CommonMark strips the fence's indentation from the block's lines; `_extract` keeps it, and
the program fails to compile (IndentationError: unexpected indent)."""

TILDES_IN_A_COMMENT = "def square(x):\n    # ~~~ x squared ~~~\n    return x * x\n"
"""A raw program, no fence anywhere (none starts a line), but ``~~~`` in a comment (or
"```" in a string): `extract_code` refuses any text containing either substring."""

DEV_STDOUT = "import sys\nsys.stdout = open('/dev/stdout', 'w')\nprint(int(input()) ** 2)\n"
"""Re-opening stdout by name (also ``open('/proc/self/fd/1', 'w')``): the candidate's stdout
is a pipe created by the host's uid (mode 0600), which the sandbox's uid may not re-open:
PermissionError. ``open('/dev/stdin')`` works (a memfd)."""

PROC_FD_1 = (
    "import sys\nsys.stdout = open('/proc/self/fd/1', 'w')\n"
    "print('debug', file=open('/dev/stderr', 'w'))\nprint(int(input()) ** 2)\n"
)
"""The same through ``/proc/self/fd/1``, with a line of debug output to ``/dev/stderr``."""

DUNDER_FILE = (
    "import os\nHERE = os.path.dirname(os.path.abspath(__file__))\nprint(int(input()) ** 2)\n"
)
"""``python solution.py`` sets ``__file__``; `run_main`'s ``__main__`` module has none."""

_N = 150_000
BIG_OUTPUT = {"io": [{"input": f"{_N}\n", "output": "".join(f"{i * 7}\n" for i in range(_N))}]}
"""One case whose expected output (1.1 MB) is over the default `max_output_bytes` (1 MB)."""
BIG_OUTPUT_PROGRAM = "n = int(input())\nprint('\\n'.join(str(i * 7) for i in range(n)))\n"

POW_TESTS = {"tests": ["assert pow(2, 10, 1000) == 24", "assert pow(3, 4, 5) == 1"]}
"""An assert list for a task that names its function like a builtin (`pow`, `sum`, `max`,
`round`, `filter`...): the candidate's function is never bound (README: 'never a name that
shadows a builtin'), so the test calls the builtin."""
WRONG_POW = "def pow(a, b, m):\n    return 0\n"
SUM_TESTS = {"tests": ["assert sum(3) == 6", "assert sum(10) == 55"]}
"""`sum(n)`: 1 + 2 + ... + n. The builtin `sum(3)` raises TypeError: every right program 0."""
RIGHT_SUM = "def sum(n):\n    return n * (n + 1) // 2\n"
SUM_OF_SETUP_DATA = {"tests": ["assert sum(N) == 6"], "setup": "N = 3"}
"""The setup's own data: the assertions still call nothing but `sum`."""
NO_POW = "def power(a, b, m):\n    return pow(a, b, m)\n"
"""A program with no `pow` of its own: the assertions' `pow` is the task's, never the builtin."""
ONLY_BUILTINS = {"tests": ["assert max(3, 4) == 4", "assert min(pow(2, 2), 5) == 4"]}
"""Several builtins called, no other name: nothing says which is the task's function."""
LYING_LEN = "def pairs(n):\n    return n\n\ndef len(x):\n    return 3 if x in (3, 7) else 0\n"
"""A wrong `pairs` (and a value `DATA`, below) behind a `len` that says what the test wants."""
LEN_OF_A_CALL = {"tests": ["assert len(pairs(3)) == 3", "assert len(pairs(0)) == 0"]}
LEN_OF_A_VALUE = {"tests": ["assert len(DATA) == 3"]}
LEN_AFTER_SETUP = {"tests": ["assert len(x) == 3"], "setup": "x = pairs(3)"}

SYNC = """
import ctypes, os
# sync(2) writes back every dirty page of the MACHINE (every filesystem of the host, not the
# sandbox's), syncfs(2) those of the whole filesystem holding its fd (here the host's /usr,
# shared with other processes), in uninterruptible sleep (SIGKILL at the deadline waits).
# No test program needs them; a run can call them in a loop to stall the host's I/O.
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/usr", os.O_RDONLY)
OK = libc.syscall(162) != 0 and libc.syncfs(fd) != 0  # sync, syncfs: both refused
"""

# Guards: honest programs that must keep passing.
DEEP_RECURSION_SUITE = """import sys
sys.setrecursionlimit(10 ** 6)
def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)
def square(x):
    return x * x + depth(100_000) - 100_000
"""
BIG_STACK_THREAD_IO = """import sys, threading
sys.setrecursionlimit(10 ** 6)
threading.stack_size(2 ** 27)
def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)
def main():
    n = int(input())
    print(n * n + depth(200_000) - 200_000)
t = threading.Thread(target=main)
t.start()
t.join()
"""
LRU_RECURSION_IO = """import sys, functools
sys.setrecursionlimit(10 ** 6)
@functools.lru_cache(None)
def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)
n = int(input())
print(n * n + depth(12_000) - 12_000)
"""
STDIN_WAYS = (
    "print(int(open(0).read()) ** 2)\n",
    "print(int(open('/dev/stdin').read()) ** 2)\n",
    "print(int(open('/proc/self/fd/0').read()) ** 2)\n",
    "import sys\nprint(int(sys.stdin.buffer.read()) ** 2)\n",
    "import sys\nprint(int(sys.stdin.readline()) ** 2)\n",
    "import os\nprint(int(os.read(0, 100)) ** 2)\n",
    "import sys\nsys.stdout.buffer.write(str(int(input()) ** 2).encode())\n",
)
UNICODE_IO = {"io": [{"input": "héllo wörld ✓ 日本\n", "output": "HÉLLO WÖRLD ✓ 日本\n"}]}
THREADS_IO = """import threading
from concurrent.futures import ThreadPoolExecutor
done = []
threads = [threading.Thread(target=lambda: done.append(1)) for _ in range(28)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with ThreadPoolExecutor() as pool:
    (answer,) = pool.map(lambda v: v * v, [int(input())])
print(answer if len(done) == 28 else -1)
"""
PRINTS_2MB_SUITE = "def square(x):\n    print('debug ' * 400_000)\n    return x * x\n"
STRING_ANNOTATION_DATACLASS = """from dataclasses import dataclass
@dataclass
class Point:
    x: 'int'
def square(x):
    return Point(x).x ** 2
"""
RIGHT_THEN_HANG_IN_ATEXIT = """import atexit, time
n = int(input())
print(n * n)
atexit.register(lambda: time.sleep(100))
"""
RIGHT_THEN_HANG_IN_A_THREAD = """import threading, time
n = int(input())
print(n * n, flush=True)
threading.Thread(target=lambda: time.sleep(100)).start()
"""


ATTACKS = [
    # ------------------------------------------------- right programs scored 0 (FAIL NOW)
    guard(
        Attack(
            "right-io-program-ending-with-exit",
            "stdin/stdout: a right program that ends with `exit()`, and one that prints and "
            "`quit()`s on one branch (the competitive-programming idiom). The zygote runs "
            "`python -I -S`: no `site`, so no `exit`/`quit` builtins (nor `help`, `license`); "
            "`_candidate` says stdin/stdout programs 'exit as the interpreter would'",
            today="ok 0.0 for both: 'exit status 1: NameError: name 'exit' is not defined' "
            "(the right answer is on stdout)",
            honest_wrong="ok 0",
            should=all_of(ONE),
            run=lambda env: all_of(rt.reward(EXIT_IO, rt.IO_ONE), rt.reward(QUIT_IO, rt.IO_ONE)),
        )
    ),
    guard(
        Attack(
            "suite-exit-before-the-tests",
            "a right `square`, then `exit(0)` or `quit()` at the module's top level (before "
            "any test runs), or `exit(0)` in the function: with `exit`/`quit` given as `site` "
            "gives them, a test suite's program that exits still fails every test",
            today="ok 0.0 for each (NameError then; SystemExit now)",
            honest_wrong="ok 0",
            should=all_of(ZERO),
            run=lambda env: all_of(
                rt.reward(RIGHT_SQUARE + "exit(0)\n"),
                rt.reward(RIGHT_SQUARE + "quit()\n"),
                rt.reward("def square(x):\n    exit(0)\n"),
            ),
        )
    ),
    guard(
        Attack(
            "right-suite-dataclass-with-future-annotations",
            "a right `square` in a module with `from __future__ import annotations` and a "
            "`@dataclass` (and one that pickles an instance of its own class): suites run the "
            "program as module `solution`, never put in `sys.modules`, and both look it up",
            today="ok 0.0 for both: \"the program raised AttributeError: 'NoneType' object has "
            "no attribute '__dict__'\"; 'raised PicklingError: ... import of module "
            "'solution' failed'",
            honest_wrong="ok 0",
            should=all_of(ONE),
            run=lambda env: all_of(rt.reward(DATACLASS_FUTURE), rt.reward(PICKLE_OWN_CLASS)),
        )
    ),
    guard(
        Attack(
            "right-program-in-a-crlf-fence",
            "a right program in a ```python fence, the completion's lines ending in CRLF",
            today="ok 0.0: 'no code block in the answer' (the closing fence line is '```\\r')",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(CRLF_COMPLETION),
        )
    ),
    guard(
        Attack(
            "right-program-in-an-indented-fence",
            "a right program in a fence indented 3 spaces under a list item",
            today="ok 0.0: 'the program raised IndentationError: unexpected indent'",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(INDENTED_FENCE),
        )
    ),
    guard(
        Attack(
            "right-unfenced-program-with-tildes-in-a-comment",
            "a raw right program (no fence: the `auto` rule's 'the whole text') whose comment "
            "holds '~~~'",
            today="ok 0.0: 'no code block in the answer'",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(TILDES_IN_A_COMMENT),
        )
    ),
    guard(
        Attack(
            "right-io-program-writing-dev-stdout",
            "stdin/stdout: a right program that re-opens stdout as `/dev/stdout`",
            today="ok 0.0: 'exit status 1: PermissionError: [Errno 13] Permission denied: "
            "'/dev/stdout''",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(DEV_STDOUT, rt.IO_ONE),
        )
    ),
    guard(
        Attack(
            "right-io-program-writing-proc-self-fd-1",
            "stdin/stdout: a right program that re-opens stdout as `/proc/self/fd/1` and "
            "writes debug output to `/dev/stderr`",
            today="ok 1.0 (the pipes are writable by the sandbox's uid)",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(PROC_FD_1, rt.IO_ONE),
        )
    ),
    guard(
        Attack(
            "right-io-program-using-dunder-file",
            "stdin/stdout: a right program that reads `__file__` (as `python solution.py` sets it)",
            today="ok 0.0: \"NameError: name '__file__' is not defined\"",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(DUNDER_FILE, rt.IO_ONE),
        )
    ),
    guard(
        Attack(
            "right-io-output-over-the-capture-cap",
            "stdin/stdout: a case whose EXPECTED output (1.1 MB) is over the default "
            "`max_output_bytes` (1,000,000, a parameter the README's table does not list), "
            "and the right program: no program can pass it, so the 0 is the reference's "
            "(`invalid`) or the cap should cover what the reference expects",
            today="ok 0.0: 'output limit exceeded'",
            honest_wrong="ok 0",
            should=RIGHT_OR_INVALID,
            run=lambda env: rt.reward(BIG_OUTPUT_PROGRAM, BIG_OUTPUT, timeout_s=5),
        )
    ),
    # ------------------------------------------------- a builtin's name (FAIL NOW)
    guard(
        Attack(
            "wrong-function-named-like-a-builtin-asserts",
            "an assert list for a task whose function is named `pow` (a builtin's name); the "
            "program's `pow` returns 0. The referee never binds a name that shadows a "
            "builtin, so the assertions call the builtin and pass: 1.0 for any program, the "
            "test never reaches the candidate. Should be 0 (bind the candidate's function for "
            "the names the assertions call) or `invalid`, never a pass",
            today="ok 1.0",
            honest_wrong="ok 1.0 (that is the hole: every program passes)",
            should=frozenset({ZERO, ("invalid", None)}),
            run=lambda env: rt.reward(WRONG_POW, POW_TESTS),
        )
    ),
    guard(
        Attack(
            "right-function-named-like-a-builtin-asserts",
            "the same shape, `sum(n)` = 1 + ... + n, answered right: the assertions call the "
            "builtin `sum(3)` (TypeError)",
            today="ok 0.0: \"TypeError: 'int' object is not iterable\"",
            honest_wrong="ok 0",
            should=RIGHT_OR_INVALID,
            run=lambda env: rt.reward(RIGHT_SUM, SUM_TESTS),
        )
    ),
    guard(
        Attack(
            "right-function-named-like-a-builtin-with-setup-data",
            "`sum(N)` with `N` from the setup (dataset code): the assertions still call one "
            "builtin's name and read no name of the candidate's",
            today="ok 1.0 (before the task's builtin name was bound: ok 0.0, TypeError)",
            honest_wrong="ok 0",
            should=ONE,
            run=lambda env: rt.reward(RIGHT_SUM, SUM_OF_SETUP_DATA),
        )
    ),
    guard(
        Attack(
            "no-function-named-like-the-builtin-asserts",
            "the `pow` assert list, and a program that defines no `pow` (its `power` calls the "
            "builtin): the assertions' `pow` is the task's function, so the builtin never "
            "answers for it",
            today="ok 0.0 ('raised KeyError: 'pow'': the program has no such function; "
            "before the task's builtin name was bound: ok 1.0, the builtin answered)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(NO_POW, POW_TESTS),
        )
    ),
    guard(
        Attack(
            "assert-list-of-builtins-only",
            "assertions that call several builtins (`max`, `min`, `pow`) and read no other "
            "name: they cannot tell any program from the builtins. Decided from the tests "
            "alone: the same for a program defining `pow` wrong and one defining `sum`",
            today="invalid (before: ok 1.0 for any program, the builtins answered)",
            honest_wrong="invalid",
            should=all_of(("invalid", None)),
            run=lambda env: all_of(
                rt.reward(WRONG_POW, ONLY_BUILTINS), rt.reward(RIGHT_SUM, ONLY_BUILTINS)
            ),
        )
    ),
    guard(
        Attack(
            "builtin-helper-is-never-the-candidates",
            "a wrong program that defines `len` to say what the tests want, where `len` is a "
            "helper: around a call of the task's function (`len(pairs(3))`), around a "
            "candidate's value (`len(DATA)`), after a setup that calls the candidate "
            "(`x = pairs(3)`). The builtin `len` stays, so the wrong `pairs` (and `DATA`) fail",
            today="ok 0.0 for each",
            honest_wrong="ok 0",
            should=all_of(ZERO),
            run=lambda env: all_of(
                rt.reward(LYING_LEN, LEN_OF_A_CALL),
                rt.reward("DATA = 7\n" + LYING_LEN, LEN_OF_A_VALUE),
                rt.reward(LYING_LEN, LEN_AFTER_SETUP),
            ),
        )
    ),
    # ------------------------------------------------- the host's writeback (FAILS NOW)
    guard(
        Attack(
            "probe-machine-wide-writeback",
            "a correct `square` that first calls sync(2) and syncfs(2) on /usr: machine-wide "
            "writeback of the host's dirty pages from untrusted code. Not a README sentence "
            "(the filter's list does not name them): a host-damage surface, and an "
            "uninterruptible wait the run's SIGKILL cannot cut",
            today="ok 0.0: both succeed (return 0)",
            honest_wrong="-",
            should=ONE,
            run=lambda env: rt.probe(SYNC),
        )
    ),
    # ------------------------------------------------- guards: honest programs pass
    guard(
        Attack(
            "right-deep-recursion-suite",
            "a right `square` that first recurses 100,000 deep (`setrecursionlimit(10**6)`)",
            today="ok 1.0",
            honest_wrong="-",
            should=ONE,
            run=lambda env: rt.reward(DEEP_RECURSION_SUITE),
        )
    ),
    guard(
        Attack(
            "right-recursion-in-a-big-stack-thread-io",
            "stdin/stdout: `threading.stack_size(2**27)` and a 200,000-deep recursion in the "
            "thread (the usual Python competitive idiom); and a 12,000-deep `lru_cache` "
            "recursion (C frames) in the main thread",
            today="ok 1.0 for both",
            honest_wrong="-",
            should=all_of(ONE),
            run=lambda env: all_of(
                rt.reward(BIG_STACK_THREAD_IO, rt.IO_ONE), rt.reward(LRU_RECURSION_IO, rt.IO_ONE)
            ),
        )
    ),
    guard(
        Attack(
            "right-stdin-read-every-usual-way",
            "stdin/stdout: `open(0)`, `/dev/stdin`, `/proc/self/fd/0`, `sys.stdin.buffer`, "
            "`readline`, `os.read(0)`, `sys.stdout.buffer.write`; an input without its final "
            "newline and one with CRLF",
            today="ok 1.0 for each",
            honest_wrong="-",
            should=all_of(ONE),
            run=lambda env: all_of(
                *(rt.reward(program, rt.IO_ONE) for program in STDIN_WAYS),
                rt.reward(IO_SQUARE, {"io": [{"input": "2", "output": "4\n"}]}),
                rt.reward(IO_SQUARE, {"io": [{"input": "2\r\n", "output": "4\n"}]}),
            ),
        )
    ),
    guard(
        Attack(
            "right-unicode-io",
            "stdin/stdout: non-ASCII input upper-cased (the sandbox's locale is C.UTF-8)",
            today="ok 1.0",
            honest_wrong="-",
            should=ONE,
            run=lambda env: rt.reward("print(input().upper())\n", UNICODE_IO),
        )
    ),
    guard(
        Attack(
            "right-with-threads-io",
            "stdin/stdout: 28 threads started and joined, then a `ThreadPoolExecutor` "
            "(within `max_processes: 32`)",
            today="ok 1.0",
            honest_wrong="-",
            should=ONE,
            run=lambda env: rt.reward(THREADS_IO, rt.IO_ONE),
        )
    ),
    guard(
        Attack(
            "right-suite-printing-2mb-of-debug",
            "a right `square` that prints 2.4 MB of debug output per call (over the output "
            "cap: a suite's stdout is evidence, never the verdict)",
            today="ok 1.0",
            honest_wrong="-",
            should=ONE,
            run=lambda env: rt.reward(PRINTS_2MB_SUITE),
        )
    ),
    guard(
        Attack(
            "right-suite-dataclass-with-a-string-annotation",
            "`@dataclass` with a quoted annotation (`x: 'int'`), no future import",
            today="ok 1.0",
            honest_wrong="-",
            should=ONE,
            run=lambda env: rt.reward(STRING_ANNOTATION_DATACLASS),
        )
    ),
    guard(
        Attack(
            "right-answer-then-hang-io",
            "stdin/stdout: the right answer printed, then a hang in an `atexit` handler, or "
            "in a non-daemon thread the interpreter joins at exit: README 'A hang therefore "
            "scores 0'",
            today="ok 0.0 for both ('timeout')",
            honest_wrong="ok 0",
            should=all_of(ZERO),
            run=lambda env: all_of(
                rt.reward(RIGHT_THEN_HANG_IN_ATEXIT, rt.IO_ONE, timeout_s=1),
                rt.reward(RIGHT_THEN_HANG_IN_A_THREAD, rt.IO_ONE, timeout_s=1),
            ),
        )
    ),
]


def test_open_holes_are_rows() -> None:
    assert {row.values[0].target for row in ATTACKS} >= OPEN_HOLES


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack(attack: Attack, fake: FakeSandboxFusion, tmp_path: Path) -> None:
    assert_earns_what_it_should(attack, Env(fake, tmp_path))


HONEST = {
    # The baselines of the rows above: the same configuration, an honest WRONG program.
    "io": (lambda: rt.reward("print(int(input()) + 1)\n", rt.IO_ONE), ZERO),
    "suite": (lambda: rt.reward(rt.WRONG), ZERO),
    "io-over-the-cap": (
        lambda: rt.reward("n = int(input())\nprint(n)\n", BIG_OUTPUT, timeout_s=5),
        ZERO,
    ),
}


@pytest.mark.parametrize("target", sorted(HONEST))
def test_baseline(target: str) -> None:
    run, expected = HONEST[target]
    assert run() == expected
