"""Programs and runners of the `code` red team (rt9, after issue #9): see
`test_redteam_code.py` for the table.

Runners return an *outcome*: ``(status, score)`` of one sample, or a row-specific tuple. A
*probe* is a CORRECT program (``square`` squares) whose answer turns wrong when the hole it
checks for is there: it earns 1.0 only when the sandbox keeps the README's promise.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

from rewardsmith import Engine
from rewardsmith._exceptions import ConfigError
from rewardsmith.verifiers.code import _seccomp, code

from ._code_helpers import sample

Outcome = tuple[Any, ...]

MEMORY_MB = 256
"""The budget of the probes that measure what a sample can hold beyond it."""
WRONG = "def square(x):\n    return x + 1\n"
RIGHT = "def square(x):\n    return x * x\n"
CHECK = {
    "test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n",
    "entry_point": "square",
}
IO_ONE = {"io": [{"input": "2\n", "output": "4\n"}]}
IO_MANY = {
    "io": [
        {"input": f"{i}\n", "output": f"{i * i}\n"}
        for i in range(2, 2 + 2 * len(os.sched_getaffinity(0)) + 1)
    ]
}
"""Stdin/stdout cases: at least three rounds of the reward's default parallelism (the cores),
so 3 x 3 s > the engine's 5 s; 5 cases on 2 cores, few next to APPS or CodeContests, which
have dozens per problem."""
LOOP = "while True:\n    pass\n"
LOOP_IN_SQUARE = "def square(x):\n    while True:\n        pass\n"
HUGE_INT = "def square(x):\n    return 10 ** 5000\n"
"""A wrong answer whose ``str()`` raises (over Python's 4,300-digit conversion limit)."""


RUN_PROCESSES = """
import os, signal
# `sandbox: none` and `remote`: the run's processes, same user, no PID namespace. B is the
# candidate's parent, the referee B's other child, and B's parent the zygote (none) or the
# remote wrapper.
def _parent(pid):
    return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
_me, _b = os.getpid(), os.getppid()
_wrapper = _parent(_b)
_referees = []
for _pid in os.listdir("/proc"):
    if _pid.isdigit() and int(_pid) != _me:
        try:
            if _parent(int(_pid)) == _b:
                _referees.append(int(_pid))
        except OSError:
            pass
"""
"""A program's prelude naming the run's processes (`_b`, `_wrapper`, `_referees`)."""


def readme() -> str:
    """The README, whitespace folded: for the rows that check its sentences."""
    path = Path(__file__).resolve().parents[2] / "README.md"
    return " ".join(path.read_text(encoding="utf-8").split())


def signal_referee(name: str) -> str:
    """A wrong program that sends signal `name` to the referee at import."""
    return RUN_PROCESSES + f"for _p in _referees:\n    os.kill(_p, signal.{name})\n" + WRONG


def outcome(score: Any) -> Outcome:
    return score.status, score.score


def reward(program: str, reference: Any = CHECK, prompt: str | None = None, **config) -> Outcome:
    """``(status, score)`` of one sample scored directly (bwrap, warm unless told)."""
    return outcome(code(**config)(sample(program, reference, prompt=prompt)))


def engine(program: str, reference: Any, **config: Any) -> Outcome:
    """``(status, reward)`` through the engine with the spec's default ``timeout_s`` (5 s);
    ``("config_error",)`` if the spec is refused."""
    spec = {"rewards": {"tests": {"type": "code", **config}}}
    try:
        with Engine(spec, workers=1) as scorer:
            (result,) = scorer.score([{"id": "s", "completion": program, "reference": reference}])
    except ConfigError:
        return ("config_error",)
    return result.status, result.reward


def probe(checks: str, **config: Any) -> Outcome:
    """A correct ``square`` that answers None when ``OK`` is false (see the module doc)."""
    program = textwrap.dedent(checks) + "\ndef square(x):\n    return x * x if OK else None\n"
    return reward(program, CHECK, **config)


def io_exit(program: str) -> Outcome:
    """``("exit", status)`` of a stdin/stdout program: the candidate's exit status."""
    score = code(timeout_s=5)(sample(program, IO_ONE))
    return ("exit", score.detail.get("exit_code"))


def warm_sandboxes_after_io() -> Outcome:
    """``("sandboxes", after a test suite, whether a stdin/stdout sample kept at most
    `parallelism`)``: the README's "one warm sandbox per concurrent run"."""
    fn = code(parallelism=2)
    assert fn(sample(RIGHT, CHECK)).score == 1.0
    after_suite = len(fn._pool._all)
    score = fn(sample("print(int(input()) ** 2)\n", IO_MANY))
    assert score.score == 1.0, score.detail
    return ("sandboxes", after_suite, 1 <= len(fn._pool._all) <= 2)


# -- probes of what the candidate's process can reach -----------------------------------------

XATTRS = """
import os
# User extended attributes on the private /tmp and /dev/shm: values live in kernel memory,
# outside the files' blocks (tmpfs `size`) and outside RLIMIT_AS. Try to store 16 MiB.
stored = 0
value = b"x" * 65536
for place in ("/tmp", "/dev/shm"):
    try:
        open(place + "/f", "w").close()
        for i in range(256):
            if stored >= 256:
                break
            os.setxattr(place + "/f", "user.v%d" % i, value)
            stored += 1
    except OSError:
        pass
OK = stored < 256  # less than 16 MiB held where no limit counts it
"""

INODES = f"""
import os
# Every inode (and dentry) of a tmpfs is kernel memory that neither the tmpfs `size` nor
# RLIMIT_AS counts; tmpfs's default inode count is half the host's RAM pages.
capacity = sum(os.statvfs(p).f_files for p in ("/tmp", "/dev/shm"))
OK = capacity * 1024 <= {MEMORY_MB} * 2**20  # even at 1 KiB each, within the whole budget
"""

VSOCK = """
import socket
# AF_VSOCK is not confined by a network namespace: from a VM guest it reaches the
# hypervisor host (CID 2). Only the socket is created here; nothing is connected.
try:
    socket.socket(40, socket.SOCK_STREAM).close()  # AF_VSOCK
    OK = False
except OSError:
    OK = True
"""

OPEN_TREE_ATTR = """
import ctypes
# open_tree_attr (x86-64 number 467, Linux 6.15+): part of the new mount API the README says
# the filter refuses with EPERM; not in DENIED.
libc = ctypes.CDLL(None, use_errno=True)
ctypes.set_errno(0)
fd = libc.syscall(467, -100, b"/tmp", 0, None, 0)  # AT_FDCWD, "/tmp", no flags
OK = fd == -1 and ctypes.get_errno() == 1
"""

ALLOWED_SOCKETS = """
import socket
# The families a test program uses still work: Unix pairs, and IPv4/IPv6 on the loopback.
a, b = socket.socketpair()
a.sendall(b"x")
OK = b.recv(1) == b"x"
for family in (socket.AF_INET, socket.AF_INET6):
    socket.socket(family, socket.SOCK_STREAM).close()
"""

X32_GETPID = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall(0x40000000 | 39)  # getpid through the x32 ABI\nprint(4)\n"
)

# -- the candidate's side of the pipes ---------------------------------------------------------

REOPEN_OWN_PIPES = """
import os, struct, sys
enc = [m for n, m in sys.modules.items() if n.endswith("_codec")][0]
forged = (enc.encode(("ok", 4)), enc.encode(("ok", 9)), b"0" * 32 + b" test 0 1 -\\n")
for fd in map(int, os.listdir("/proc/self/fd")):
    for mode in ("wb", "rb"):
        try:
            f = open("/proc/self/fd/%d" % fd, mode, buffering=0)
        except OSError:
            continue
        if mode == "wb":
            for payload in forged:
                try:
                    f.write(struct.pack("<I", len(payload)) + payload)
                except OSError:
                    pass
"""

GARBAGE_FROM_A_THREAD = """
import os, threading, time, struct
def spray():
    for _ in range(200):
        for fd in range(3, 12):
            try:
                os.write(fd, struct.pack("<I", 3) + b"T" + b"i\\x01")
            except OSError:
                pass
        time.sleep(0.001)
threading.Thread(target=spray, daemon=True).start()
def square(x):
    time.sleep(0.05)
    return x * x + 1
"""

CLOSE_AFTER_FIRST_CALL = """
import os
calls = []
def square(x):
    calls.append(x)
    if len(calls) == 1:
        return x * x
    for fd in range(3, 12):
        try:
            os.close(fd)
        except OSError:
            pass
    return 0
"""

SURROGATES = (
    "def square(x):\n    if x == 2:\n        return '\\ud800\\udcff'\n"
    "    raise ValueError('\\udcff\\ud800' * 1000)\n"
)
HUGE_EXCEPTION = "def square(x):\n    raise ValueError('x' * (10 * 2**20))\n"
HUGE_INT_COMPARED = "def square(x):\n    return 10 ** 100000\n"

# -- SandboxFusion (the tests' FAKE server) -----------------------------------------------------

PID_RECORDER = """
import os
with open({path!r}, "a") as f:  # the fake server runs programs on the host, unsandboxed
    f.write("%d %d\\n" % (os.getpid(), os.getppid()))
"""
"""Records the candidate's pid and its parent's (the run's B): the row kills exactly those
processes (and B's children) that outlive the run, and no other."""


def remote(fake: Any, program: str, reference: Any = CHECK, **config: Any) -> Outcome:
    fn = code(sandbox="remote", url=fake.url, **config)
    return outcome(fn(sample(program, reference)))


def remote_leftovers(fake: Any, tmp: Path, program: str, reference: Any, **config: Any) -> Outcome:
    """``("left", n)``: processes of the run still alive 3 s after its score came back (then
    killed, by pid)."""
    pids = tmp / f"pids-{time.monotonic_ns()}"
    remote(fake, PID_RECORDER.format(path=str(pids)) + program, reference, **config)
    time.sleep(3)
    run: set[int] = set()
    if pids.exists():
        for line in pids.read_text().splitlines():
            candidate, parent = (int(p) for p in line.split())
            run |= {candidate, parent, *_children(parent)}
    alive = sorted(pid for pid in run if _is_a_remote_run(pid))
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return ("left", len(alive))


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _is_a_remote_run(pid: int) -> bool:
    """Alive, not a zombie, and running the remote wrapper (never another process that
    reused the pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return b"_rewardsmith_remote" in cmdline and state != "Z"


KILL_THE_WRAPPER = """
import os, signal
parent = os.getppid()  # B
wrapper = int(open("/proc/%d/stat" % parent).read().rsplit(")", 1)[1].split()[1])
os.kill(wrapper, signal.SIGKILL)  # the server sees its program end; B's group lives on
while True:
    pass
"""

KILL_THE_REFEREE = """
import os, signal
me, parent = os.getpid(), os.getppid()
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != me:
        try:
            stat = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat[1]) == parent:
            os.kill(int(pid), signal.SIGKILL)  # the referee: same user, no PID namespace
"""

RECORDS_INTO_THE_WRAPPERS_STDOUT = """
import os
parent = os.getppid()
for pid in (parent, int(open("/proc/%d/stat" % parent).read().rsplit(")", 1)[1].split()[1])):
    try:
        with open("/proc/%d/fd/1" % pid, "wb", buffering=0) as out:  # the verdict stream
            for line in (b" start", b" test 0 1 -", b" done 1"):
                out.write(b"0" * 32 + line + b"\\n")
    except OSError:
        pass
"""

NOT_UTF8_ON_STDERR = "import sys\nsys.stderr.buffer.write(bytes([255, 254]))\nsys.stderr.flush()\n"


def filterless_machine_is_said() -> Outcome:
    """``("said", bool)``: on a machine without a filter table (aarch64 here, faked), is the
    missing filter said at start (log or warning) or in the score's `detail`?"""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler = Keep()
    logger = logging.getLogger("rewardsmith")
    logger.addHandler(handler)
    try:
        with (
            mock.patch.object(_seccomp.platform, "machine", return_value="aarch64"),
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always")
            fn = code(warm=False)
            score = fn(sample(RIGHT, CHECK))
    finally:
        logger.removeHandler(handler)
    said = [*records, *(str(w.message) for w in caught), json.dumps(score.detail, default=str)]
    return ("said", any("seccomp" in text or "filter" in text for text in said))


ZERO: Outcome = ("ok", 0.0)
ONE: Outcome = ("ok", 1.0)
INVALID: Outcome = ("invalid", None)


def all_of(*outcomes: Outcome) -> Outcome:
    """``("all", ...)``: the distinct outcomes of several programs (one when they agree)."""
    return ("all", *sorted(set(outcomes), key=repr))


def any_of(*allowed: Outcome) -> frozenset[Outcome]:
    """Every `all_of` of a non-empty subset of `allowed`: each program earned one of them."""
    subsets: list[tuple[Outcome, ...]] = [()]
    for outcome in allowed:
        subsets += [(*s, outcome) for s in subsets]
    return frozenset(all_of(*s) for s in subsets if s)
