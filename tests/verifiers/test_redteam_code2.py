"""Red team, second pass (rtcode2), of the `code` reward: what `test_redteam_code.py` (rt9),
`_code_attacks.py` (the escape suite), `test_code_escape.py` and `test_code_seccomp.py` do
not cover.

One row per attack, written as a policy paid for every unit of reward would try it. Each row
says what the attack earns today, what an honest wrong answer earns under the same
configuration, and what it should earn; the test asserts the last. Rows marked
``xfail(strict=True)`` are open holes: they fail today and flip loudly when fixed. The others
are attacks that correctly fail today (regression guards).

Probe rows (``probe-...``) score a CORRECT program that turns wrong when the hole is there: 1.0
means the reward keeps the README's promise. Rows with two samples run them back to back in
one warm sandbox (one `code` instance): the first leaves something behind, the second looks
for it. Remote rows use the tests' FAKE SandboxFusion server (`test_code_remote`), which runs
the programs on this host as this user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine
from rewardsmith.verifiers.code import code

from . import _code_redteam as rt
from ._code_helpers import HUMANEVAL, needs_bwrap, sample
from .test_code_remote import FakeSandboxFusion
from .test_redteam_code import Attack, Env, assert_earns_what_it_should, guard, humaneval

pytestmark = needs_bwrap

Outcome = rt.Outcome
ZERO = ("ok", 0.0)
RIGHT = rt.RIGHT
WRONG = rt.WRONG

# -- programs ---------------------------------------------------------------------------------

IN_FLIGHT = """
import array, socket
# The run's stdout and stderr pipes, and the two sockets themselves, sent over the sockets
# (SCM_RIGHTS) and never received: once the process is gone nobody holds the cycle but the
# kernel, whose garbage collector of Unix sockets runs later (about a second here).
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
for s in (a, b):
    for fd in (1, 2, a.fileno(), b.fileno()):
        s.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
"""
"""Holds the run's output pipes open past the run: the host then drains them for its full
1 s (`_zygote._DRAIN_AFTER_EXIT_S`, now gone) after the sandbox reported."""

SLOW_WRONG = "import time\ndef square(x):\n    time.sleep(1.9)\n    return x + 1\n"
"""Wrong, and ends just inside a 2 s `timeout_s`."""

LEAVE_FDS_IN_FLIGHT = """
import array, socket
# As many descriptors in flight as the kernel lets this host uid have (RLIMIT_NOFILE, 64),
# in a cycle nobody will receive: they outlive the run until the kernel's collector runs.
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    for i in range(1000):
        fd = b.fileno() if i % 2 else a.fileno()
        a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
except OSError:
    pass
"""

FDS_PASS = """
import socket
# Passing a descriptor over a Unix socket pair works in a fresh run.
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    socket.send_fds(a, [b"x"], [a.fileno()])
    OK = True
except OSError:  # ETOOMANYREFS: the host uid already has its quota in flight
    OK = False
"""

LEAVE_PIPE_BUFFERS = """
import array, fcntl, os, socket
# 63 pipes of 1 MiB (F_SETPIPE_SZ), filled, their read ends sent in flight in a cycle nobody
# receives: 63 MiB of kernel memory outside RLIMIT_AS that outlives the run.
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
for _ in range(63):
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        os.set_blocking(w, False)
        while True:
            os.write(w, b"x" * 65536)
    except OSError:  # BlockingIOError: full (or the uid's soft limit is reached)
        pass
    try:
        a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
    except OSError:
        break
    os.close(r)
    os.close(w)
# Both sockets in flight in one of them (a socket that only holds itself is collected
# at once).
fds = array.array("i", [a.fileno(), b.fileno()])
a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
"""

PIPE_GROWS = """
import fcntl, os
# A fresh run may grow a pipe to 1 MiB: its host uid holds no pipe buffers yet
# (fs.pipe-user-pages-soft: 64 MiB per uid).
r, w = os.pipe()
try:
    fcntl.fcntl(w, 1031, 1 << 20)
    OK = True
except OSError:  # EPERM: the uid is over its soft limit
    OK = False
"""

FORGED_WRAPPER_REPORT = """
import base64, os, signal, sys
def parent(pid):
    return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
me, b = os.getpid(), os.getppid()  # b: the run's B; its parent: the wrapper
wrapper = parent(b)
for pid in os.listdir("/proc"):  # the referee (B's other child), so it writes no more records
    if pid.isdigit() and int(pid) != me:
        try:
            if parent(int(pid)) == b:
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
codec = [m for n, m in sys.modules.items() if n.endswith("_codec")][0]
report = base64.b64encode(codec.encode({"error": "forged"}))
# The wrapper's stdout (same user: /proc/<pid>/fd is open to us), then the wrapper dies before
# writing its own report: ours is the last line the server returns.
with open("/proc/%d/fd/1" % wrapper, "wb", buffering=0) as out:
    out.write(b"\\nrewardsmith-output " + report + b"\\n")
os.kill(wrapper, signal.SIGKILL)
"""

IO_START_TOKEN_RECORDS = """
import gc, os
# The stdin/stdout start token is in this process's memory (the request dict): write records
# with it to every descriptor this process has.
found = [o for o in gc.get_objects() if isinstance(o, dict) and o.get("start_token")]
tokens = [o["start_token"] for o in found]
for token in tokens:
    for fd in range(0, 64):
        try:
            os.write(fd, (token + " start\\n" + token + " test 0 1 -\\n").encode())
        except OSError:
            pass
print(int(input()) + 1)
"""

IO_THREAD_BOMB = """
import threading, time
n = int(input())
if n == 2:  # the first case holds every task its uid may have while its siblings start
    try:
        for _ in range(1000):
            threading.Thread(target=time.sleep, args=(2.5,), daemon=True).start()
    except RuntimeError:
        pass
    time.sleep(2.5)
    print(n + 1)
else:
    print(n * n)
"""

PTY_MESSAGE = """
import array, fcntl, os, socket, struct
# A pseudo-terminal of the sandbox's /dev/pts (one devpts instance for every run of a warm
# sandbox, writable): a message written on the master waits on the slave; the master goes in
# flight, so /dev/pts/N outlives the run.
master = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(master, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlock the slave
os.write(master, b"a message for the next sample\\n")
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
fds = array.array("i", [master, a.fileno(), b.fileno()])
a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
"""

NO_PTY_LEFT = """
import os
# A fresh run finds no terminal of an earlier one (and so no message on it).
OK = not [name for name in os.listdir("/dev/pts") if name.isdigit()]
"""

_WRAPPER_STDIN = """
import ctypes, fcntl, os, time
def parent(pid):
    return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
wrapper = parent(os.getppid())  # the remote wrapper: B's parent, same user, dumpable
# Its stdin still carries the referee's configuration (the tests, base64) while the referee
# reads it: a suite larger than a pipe buffer is still flowing when the program starts.
source = os.open("/proc/%d/fd/0" % wrapper, os.O_RDONLY | os.O_NONBLOCK)
"""

PEEK_AT_THE_TESTS = (
    _WRAPPER_STDIN
    + """
import base64, re
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
seen = {}
started = time.time()
while time.time() - started < 0.5:
    if libc.tee(source, w, 1 << 20, 2) <= 0:  # copy without consuming (SPLICE_F_NONBLOCK)
        continue
    window = os.read(r, 1 << 20)
    for shift in range(4):  # the window's alignment in the base64 text
        try:
            text = base64.b64decode(window[shift:][: (len(window) - shift) // 4 * 4])
        except ValueError:
            continue
        for argument, expected in re.findall(rb"square\\((\\d+)\\) == (\\d+)", text):
            seen[int(argument)] = int(expected)
def square(x):
    return seen.get(x, x + 1)  # wrong, except where the tests were read
"""
)

DRAIN_THE_TESTS = (
    _WRAPPER_STDIN
    + """
started = time.time()
while time.time() - started < 0.5:  # take the rest of the referee's configuration
    try:
        if not os.read(source, 1 << 20):
            break
    except BlockingIOError:
        pass
"""
)

BIG_ASSERTS = {"tests": [f"assert square({i}) == {i * i}  # {'x' * 5000}" for i in range(1000)]}
"""1,000 assertions of 5 kB (5 MB): a suite larger than a pipe buffer."""

RELAY_IS_PRIME = r"""
# HumanEval/31 without ever testing primality. `check` stops at the first wrong answer, so
# the calls a run receives say how far it got: each run leaves that on a terminal of the
# warm sandbox's shared /dev/pts (its master in flight, so it outlives the run), and the next
# run (the next sample of the group, scored by the same worker) reads it, keeps what was
# right, flips what was not, and passes it on.
import array, fcntl, os, socket, struct

def _messages():  # every message left on a terminal of /dev/pts: (seq, lines)
    found = []
    for name in os.listdir("/dev/pts"):
        if not name.isdigit():
            continue
        try:
            fd = os.open("/dev/pts/" + name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        data = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        os.close(fd)
        lines = [line.split() for line in data.decode(errors="replace").splitlines()]
        seqs = [int(l[1]) for l in lines if len(l) == 2 and l[0] == "S"]
        if seqs:
            found.append((seqs[0], lines))
    return found

RIGHT, FLIP, SEQ = {}, {}, 0
messages = _messages()
if messages:
    SEQ, lines = max(messages)
    tries = [l for l in lines if len(l) == 3 and l[0] == "T"]
    for l in lines:
        if len(l) == 3 and l[0] == "R":
            RIGHT[l[1]] = l[2]
    for l in tries[:-1]:  # the check went on after these: they were right
        RIGHT[l[1]] = l[2]
    if tries:  # it stopped after this one: (most likely) wrong
        FLIP[tries[-1][1]] = "0" if tries[-1][2] == "1" else "1"

master = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(master, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlock the slave
_a, _b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
_fds = array.array("i", [master, _a.fileno(), _b.fileno()])
_a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fds)])
_known = "".join("R %s %s\n" % kv for kv in RIGHT.items())
os.write(master, ("S %d\n" % (SEQ + 1) + _known).encode())

def is_prime(n):
    key = str(n)
    answer = RIGHT.get(key) or FLIP.get(key) or "0"
    os.write(master, ("T %s %s\n" % (key, answer)).encode())
    return answer == "1"
"""

ALWAYS_FALSE = "def is_prime(n):\n    return False\n"

IO_FOUR = {"io": [{"input": f"{i}\n", "output": f"{i * i}\n"} for i in range(2, 6)]}
IO_TWO = {"io": [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "9\n"}]}
FORTY_ASSERTS = {"tests": [f"assert square({i}) == {i * i}" for i in range(40)]}
ISCLOSE = {"tests": ["assert math.isclose(square(2), 4)", "assert math.isclose(square(3), 9)"]}

# -- runners ----------------------------------------------------------------------------------


def engine_first_sample(program: str, reference: Any, spec_timeout_s: float) -> Outcome:
    """``(status, reward)`` of the first sample of a fresh engine (its worker starts its warm
    sandbox inside the task), `code` with ``timeout_s: 2`` under the given spec `timeout_s`."""
    spec = {
        "rewards": {"tests": {"type": "code", "timeout_s": 2.0}},
        "timeout_s": spec_timeout_s,
    }
    with Engine(spec, workers=1) as scorer:
        (result,) = scorer.score([{"id": "s", "completion": program, "reference": reference}])
    return result.status, result.reward


def first_hole(run: Callable[[], Outcome], good: Outcome, tries: int = 3) -> Outcome:
    """`run`'s outcome, tried up to `tries` times while it is `good`: for holes that depend
    on when the kernel collects Unix sockets in flight (usually a second or two after the run,
    sometimes at once), the first outcome that shows the hole."""
    for _ in range(tries):
        got = run()
        if got != good:
            return got
    return good


def best_of_a_group(program: str, reference: Any, size: int = 16) -> Outcome:
    """``("best", reward)``: the best of `size` samples of one program on one problem, scored
    one after the other by one reward (as a worker scores its share of a GRPO group)."""
    fn = code()
    return ("best", max(rt.outcome(fn(sample(program, reference)))[1] or 0.0 for _ in range(size)))


def after(first: str, then: str, reference: Any = rt.CHECK, **config: Any) -> Outcome:
    """``(status, score)`` of `then` scored right after `first` by the same reward (one warm
    sandbox): what `first` left behind for the next sample."""
    fn = code(**config)
    fn(sample(first, reference))
    return rt.outcome(fn(sample(then, reference)))


def probe_after(first: str, checks: str) -> Outcome:
    """A correct ``square`` (None when ``OK`` is false) scored right after `first`."""
    return after(first, checks + "\ndef square(x):\n    return x * x if OK else None\n")


def probe_alone(checks: str) -> Outcome:
    """The same probe in a fresh reward: the baseline (1.0: the check itself is sound)."""
    return rt.probe(checks)


@cache
def _system_python() -> str | None:
    """``/bin/python3`` when ``/bin`` is a link into ``/usr`` (merged /usr: Debian, Ubuntu,
    Fedora) and the interpreter can run the sandbox (3.10+), else None."""
    if not os.path.islink("/bin") or shutil.which("/bin/python3") is None:
        return None
    check = "import sys; sys.exit(sys.version_info < (3, 10))"
    if subprocess.run(["/bin/python3", "-c", check], check=False).returncode != 0:
        return None
    return "/bin/python3"


def with_bin_python(program: str) -> Outcome:
    python = _system_python()
    if python is None:
        pytest.skip("no /bin/python3 (3.10+) through a /bin -> /usr/bin link here")
    return rt.outcome(code(python=python, warm=False)(sample(program, rt.CHECK)))


def _humaneval(task: str) -> dict[str, str]:
    if not HUMANEVAL.exists():
        pytest.skip(f"HumanEval data absent: {HUMANEVAL}")
    return humaneval(task)


def on_humaneval(task: str, program: str, **config: Any) -> Outcome:
    return rt.reward(program, _humaneval(task), **config)


COUNTER_HISTOGRAM = (
    "from collections import Counter\n"
    "def histogram(test):\n"
    "    counts = Counter(test.split())\n"
    "    top = max(counts.values(), default=0)\n"
    "    return Counter({k: v for k, v in counts.items() if v == top})\n"
)
"""HumanEval/111, right: a `Counter` (a dict subclass) equal to the expected dict."""

ATTACKS = [
    # ------------------------------------------------- a null instead of an honest 0
    guard(
        Attack(
            "engine-drain-past-the-declared-worst-case",
            "the run's stdout/stderr pipes put in flight over a Unix socket pair (IN_FLIGHT), "
            "then `square` answers wrong after 1.9 s of its 2 s; the spec's `timeout_s: 3.02` "
            "is accepted (above `timeout_s` + 1 s, as the README asks). The host drains the "
            "held pipes for 1 s after the sandbox reported, and the first sample of a worker "
            "also starts its warm sandbox outside the run's clock: 3.2-4.4 s measured",
            today="fixed; before: timeout (null reward): the engine kills the worker at 3.02 s",
            honest_wrong="ok 0 (the same wrong `square` without the two tricks: ~0.6 s)",
            should=ZERO,
            run=lambda env: first_hole(
                lambda: engine_first_sample(IN_FLIGHT + SLOW_WRONG, rt.CHECK, 3.02), ZERO
            ),
        ),
    ),
    guard(
        Attack(
            "remote-forged-wrapper-report",
            "`sandbox: remote`, io case: the candidate (same user as the wrapper, not root) "
            "writes `rewardsmith-output <base64 {'error': 'forged'}>` into the wrapper's "
            "stdout through /proc/<wrapper>/fd/1, then SIGKILLs the wrapper: the forged line "
            "is the last one the server returns",
            today=(
                "fixed; before: error (null, cause infrastructure): 'the remote run failed: forged'"
            ),
            honest_wrong="ok 0 (`print(5)`)",
            should=ZERO,
            run=lambda env: rt.remote(env.fake, FORGED_WRAPPER_REPORT + "print(5)\n", rt.IO_ONE),
        ),
    ),
    guard(
        Attack(
            "remote-forged-wrapper-report-suite",
            "the same against a HumanEval suite, after SIGKILLing the referee (B's other "
            "child) so that no record follows the forged line",
            today="fixed; before: error (null, cause infrastructure)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.remote(env.fake, FORGED_WRAPPER_REPORT + WRONG),
        ),
    ),
    guard(
        Attack(
            "remote-tests-read-from-the-wrappers-stdin",
            "`sandbox: remote`, `mode: fraction`, a 1,000-assertion suite (5 MB): the candidate "
            "(same user, not root) opens /proc/<wrapper>/fd/0 and tee()s the referee's "
            "configuration as it flows, without consuming it, then answers by lookup. README: "
            "'the candidate never holds the tests'",
            today=(
                "fixed; before: ok 0.02-0.135 (20-135 expected answers read in 0.5 s), tests intact"
            ),
            honest_wrong="ok 0 (`x + 1`)",
            should=ZERO,
            run=lambda env: first_hole(
                lambda: rt.remote(env.fake, PEEK_AT_THE_TESTS, BIG_ASSERTS, mode="fraction"), ZERO
            ),
        ),
    ),
    guard(
        Attack(
            "remote-tests-drained-from-the-wrappers-stdin",
            "the same suite: the candidate reads (consumes) the rest of the referee's "
            "configuration from /proc/<wrapper>/fd/0; the referee cannot decode what is left "
            "and dies before its start record",
            today=(
                "fixed; before: error (null, cause infrastructure): 'the sandboxed processes "
                "did not start'"
            ),
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: first_hole(
                lambda: rt.remote(env.fake, DRAIN_THE_TESTS + WRONG, BIG_ASSERTS), ZERO
            ),
        ),
    ),
    # ------------------------------------------------- one run's leftovers in the next
    guard(
        Attack(
            "probe-fds-in-flight-outlive-the-run",
            "sample 1 puts 65 descriptors in flight in an unreceived cycle (the host uid's "
            "quota); sample 2, in the same warm sandbox, is a correct program that passes one "
            "descriptor over a fresh socket pair. README: 'Nothing of a run — files, "
            "processes, sockets, IPC objects — survives into the next'",
            today="fixed; before: ok 0: sample 2's send_fds fails with ETOOMANYREFS",
            honest_wrong="-",
            should=("ok", 1.0),
            run=lambda env: first_hole(
                lambda: probe_after(LEAVE_FDS_IN_FLIGHT + WRONG, FDS_PASS), ("ok", 1.0)
            ),
        ),
    ),
    guard(
        Attack(
            "probe-pipe-buffers-outlive-the-run",
            "sample 1 (memory_mb default) fills 63 pipes of 1 MiB and leaves them in flight: "
            "63 MiB of kernel memory no limit counts, held after the run (MemAvailable -40 MiB "
            "measured for 40 pipes); sample 2, a correct program, grows a pipe to 1 MiB. The "
            "same trick keeps the run's /tmp files alive: Shmem +64 MiB per run, up to "
            "+204 MiB after three runs of one worker, freed 1-2 s later",
            today=(
                "fixed; before: ok 0: sample 2's F_SETPIPE_SZ fails (EPERM: the uid is over "
                "its soft limit)"
            ),
            honest_wrong="-",
            should=("ok", 1.0),
            run=lambda env: first_hole(
                lambda: probe_after(LEAVE_PIPE_BUFFERS + WRONG, PIPE_GROWS), ("ok", 1.0)
            ),
        ),
    ),
    guard(
        Attack(
            "relay-answers-to-the-next-sample",
            "HumanEval/31 (13 boolean asserts, `check` stops at the first wrong one), a group "
            "of 16 samples of the same program scored one after the other by one reward: each "
            "run logs the calls it got on a terminal of /dev/pts kept in flight; the next run "
            "reads the log, keeps the answers that were followed by another call, flips the "
            "last one, and logs again. No primality is ever computed",
            today="fixed; before: best 1.0: samples 7, 9, 11, 13 and 15 of 16 pass (measured)",
            honest_wrong="best 0.0 (`return False`, 16 samples)",
            should=("best", 0.0),
            run=lambda env: first_hole(
                lambda: best_of_a_group(RELAY_IS_PRIME, _humaneval("HumanEval/31")),
                ("best", 0.0),
                tries=2,
            ),
        ),
    ),
    guard(
        Attack(
            "probe-pty-message-to-the-next-sample",
            "sample 1 opens a pseudo-terminal of the warm sandbox's /dev/pts (shared by its "
            "runs, writable), writes a message on it and puts the master in flight; sample 2 "
            "(a correct program) looks for a terminal left in /dev/pts: it finds /dev/pts/0 "
            "and can read 'a message for the next sample' from it",
            today=(
                "fixed; before: ok 0: sample 2 sees /dev/pts/0 (a channel from one sample to "
                "the next)"
            ),
            honest_wrong="-",
            should=("ok", 1.0),
            run=lambda env: first_hole(
                lambda: probe_after(PTY_MESSAGE + WRONG, NO_PTY_LEFT), ("ok", 1.0)
            ),
        ),
    ),
    # ------------------------------------------------- correct answers scored 0
    guard(
        Attack(
            "right-with-a-small-output-cap",
            "a right `square` against 40 assertions with `max_output_bytes: 1000` (a parameter "
            "of `code`, meant for the program's stdout/stderr): the verdict pipe is capped at "
            "the same 1,000 bytes, so its records are cut mid-line",
            today=(
                "fixed; before: ok 0: 'result channel tampered with: a record without the "
                "run's token'"
            ),
            honest_wrong="ok 0",
            should=("ok", 1.0),
            run=lambda env: rt.reward(RIGHT, FORTY_ASSERTS, max_output_bytes=1000),
        ),
    ),
    guard(
        Attack(
            "right-with-two-big-constants",
            "a right `square` in a module that also holds two 20 MB string constants: each "
            "fits the codec's 32 MiB alone (so neither is dropped from the name table), "
            "together they do not, and the whole table is refused",
            today="fixed; before: ok 0: 'the candidate's first message is malformed'",
            honest_wrong="ok 0",
            should=("ok", 1.0),
            run=lambda env: rt.reward("A = 'a' * 20_000_000\nB = 'b' * 20_000_000\n" + RIGHT),
        ),
    ),
    guard(
        Attack(
            "right-counter-for-a-dict",
            "HumanEval/111 answered right with a `collections.Counter` (a dict subclass, equal "
            "to the expected dict; the official harness passes it). Exact types are the "
            "README's rule, but the conversion NumPy scalars get (in the candidate's own "
            "process, to a plain value it could have returned itself) would be as safe here",
            today="fixed; before: ok 0: returned a value of type Counter, not plain data",
            honest_wrong="ok 0",
            should=("ok", 1.0),
            run=lambda env: on_humaneval("HumanEval/111", COUNTER_HISTOGRAM),
        ),
    ),
    guard(
        Attack(
            "right-under-bin-python3",
            "`python: /bin/python3` (also what `sys.executable` is for a trainer started as "
            "`/bin/python3 train.py` on a merged-/usr system): `_python_binds` adds "
            "Path(python).parent.parent = '/' and binds the host's whole root into the "
            "sandbox. Run as root here, every run then fails to set up",
            today=(
                "fixed; before: error (null) for every sample: 'mounting the run's filesystems "
                "failed'"
            ),
            honest_wrong="error",
            should=("ok", 1.0),
            run=lambda env: with_bin_python(RIGHT),
        ),
    ),
    # ------------------------------------------------- guards: correctly 0 today
    guard(
        Attack(
            "in-flight-pipes-under-the-default-spec",
            "IN_FLIGHT with a wrong `square`, default spec (5 s) and `timeout_s` (3 s)",
            today="ok 0 (~1 s, the drain)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.engine(IN_FLIGHT + WRONG, rt.CHECK),
        )
    ),
    guard(
        Attack(
            "io-start-token-from-own-memory",
            "stdin/stdout: the start token read from the candidate's own memory (gc), records "
            "with it written to every descriptor",
            today="ok 0 (no start token in its memory: the run's init writes the start record)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(IO_START_TOKEN_RECORDS, rt.IO_ONE),
        )
    ),
    guard(
        Attack(
            "io-cold-thread-bomb-while-siblings-start",
            "stdin/stdout, `warm: false`, parallelism 2 (cold sandboxes all run as slot 0's "
            "host uid): case 1 holds every thread its limit allows while cases 2-4 start",
            today="ok 0: the siblings start (the task limit is per sandbox user namespace)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(
                IO_THREAD_BOMB, IO_FOUR, warm=False, parallelism=2, timeout_s=4
            ),
        )
    ),
    guard(
        Attack(
            "io-last-case-with-little-time-left",
            "stdin/stdout, 2 cases, parallelism 1, `timeout_s: 1`: case 1 is right after "
            "0.93 s, so case 2 starts with ~50 ms left (a run that times out before its start "
            "record would be `error`)",
            today="ok 0 or ok 1 (case 2 not run, or run in time)",
            honest_wrong="ok 0",
            should=frozenset({ZERO, ("ok", 1.0)}),
            run=lambda env: rt.reward(
                "import time\nn = int(input())\nif n == 2:\n    time.sleep(0.93)\nprint(n * n)\n",
                IO_TWO,
                timeout_s=1.0,
                parallelism=1,
            ),
        )
    ),
    guard(
        Attack(
            "referee-near-its-memory-limit",
            "HumanEval/32 (`solution = candidate(...)` stays alive in check's frame while the "
            "failure is handled), memory_mb 256 (referee: 512 MiB): return 1.9M empty "
            "frozensets (~3.8 MB encoded, ~430 MB decoded in the referee)",
            today="ok 0",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: on_humaneval(
                "HumanEval/32",
                "def find_zero(xs):\n    return [frozenset() for _ in range(1_900_000)]\n",
                memory_mb=256,
            ),
        )
    ),
    guard(
        Attack(
            "assert-message-repr-of-30-mb",
            "HumanEval/77 (`assert candidate(1) == True, '...' + str(candidate(1))`): return "
            "30 MiB of NUL bytes, whose repr in the message is 120 MiB (memory_mb 256)",
            today="ok 0",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: on_humaneval(
                "HumanEval/77",
                "def iscube(a):\n    return b'\\x00' * (30 * 2**20)\n",
                memory_mb=256,
            ),
        )
    ),
    guard(
        Attack(
            "stdlib-alias-for-a-module-the-tests-use",
            "assert list using `math.isclose` without importing math: the candidate binds "
            "`import cmath as math` and answers wrong",
            today="ok 0",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward("import cmath as math\n" + WRONG, ISCLOSE),
        )
    ),
    guard(
        Attack(
            "right-with-one-oversized-table",
            "a right `square` next to one 3M-element table (over the codec's 2M values alone: "
            "left out of the name table, as it should be)",
            today="ok 1.0",
            honest_wrong="ok 0",
            should=("ok", 1.0),
            run=lambda env: rt.reward("memo = [0] * 3_000_000\n" + RIGHT),
        )
    ),
    guard(
        Attack(
            "degenerate-programs",
            "a NUL byte, 100,000 open parentheses, whitespace and a zero-width space: suites "
            "and stdin/stdout",
            today="ok 0 for each",
            honest_wrong="ok 0",
            should=("all", ZERO),
            run=lambda env: (
                "all",
                *{
                    rt.reward(program, reference)
                    for program in ("\x00", "(" * 100_000, "   \n\t\u200b\n")
                    for reference in (rt.CHECK, rt.IO_ONE)
                },
            ),
        )
    ),
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack(attack: Attack, fake: FakeSandboxFusion, tmp_path: Path) -> None:
    assert_earns_what_it_should(attack, Env(fake, tmp_path))


HONEST = {
    # Under the same tight spec, in a fresh engine: the honest wrong answer is 0.
    "engine-drain-past-the-declared-worst-case": (
        lambda env: engine_first_sample(WRONG, rt.CHECK, 3.02),
        ZERO,
    ),
    "remote-forged-wrapper-report": (
        lambda env: rt.remote(env.fake, "print(5)\n", rt.IO_ONE),
        ZERO,
    ),
    "remote-forged-wrapper-report-suite": (lambda env: rt.remote(env.fake, WRONG), ZERO),
    "remote-tests-read-from-the-wrappers-stdin": (
        lambda env: rt.remote(env.fake, WRONG, BIG_ASSERTS, mode="fraction"),
        ZERO,
    ),
    "remote-tests-drained-from-the-wrappers-stdin": (
        lambda env: rt.remote(env.fake, WRONG, BIG_ASSERTS),
        ZERO,
    ),
    "probe-pty-message-to-the-next-sample": (lambda env: probe_alone(NO_PTY_LEFT), ("ok", 1.0)),
    "relay-answers-to-the-next-sample": (
        lambda env: best_of_a_group(ALWAYS_FALSE, _humaneval("HumanEval/31")),
        ("best", 0.0),
    ),
    # The probes are sound: alone, in a fresh sandbox, they pass.
    "probe-fds-in-flight-outlive-the-run": (lambda env: probe_alone(FDS_PASS), ("ok", 1.0)),
    "probe-pipe-buffers-outlive-the-run": (lambda env: probe_alone(PIPE_GROWS), ("ok", 1.0)),
    "right-with-a-small-output-cap": (lambda env: rt.reward(RIGHT, FORTY_ASSERTS), ("ok", 1.0)),
}


@pytest.mark.parametrize("target", sorted(HONEST))
def test_baseline(target: str, fake: FakeSandboxFusion, tmp_path: Path) -> None:
    """The baseline of a hole's row: an honest wrong answer earns 0 under the same
    configuration (so a null for the attack is worth more under group advantages), or the
    probe alone passes (so its failure after the attack is the attack's doing)."""
    run, expected = HONEST[target]
    assert run(Env(fake, tmp_path)) == expected


README = Path(__file__).resolve().parents[2] / "README.md"

UNTRUE = [
    pytest.param(
        "`code` is forged by always-equal objects and by reading the expected value from the "
        "caller's frame",
        id="readme-code-forged-by-always-equal-and-frames",
    ),
]


@pytest.mark.parametrize("sentence", UNTRUE)
def test_readme_sentence_is_gone(sentence: str) -> None:
    """README sentences about the code reward that are not literally true of the code."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert sentence not in text
