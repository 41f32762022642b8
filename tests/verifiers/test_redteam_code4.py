"""Red team, fourth pass (rtcode4), of the `code` reward: the start handshake of 43a45fc and
the filter's page-cache rules of 3c66deb.

Same table as `test_redteam_code3.py`. Rows marked ``xfail`` are open holes, stated in the
README (the page cache as a log: set-only bits read without loading them). They are not
strict: they need a kernel whose fault-around maps cached neighbours, and a file no one else
on the machine reads, so another machine's CI may not see them. The other rows are guards:
the SIGINT and machine-counter holes this pass found are closed (the referee ignores SIGINT
and a referee cut short off bubblewrap is scored; the candidate's ``/proc`` hides the
machine's files and locking memory is refused); each row's ``today`` says what it earned
before. Probe rows score a CORRECT program that turns wrong when the hole is there.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.verifiers.code import code

from . import _code_redteam as rt
from ._code_helpers import needs_bwrap, sample
from .test_code_remote import FakeSandboxFusion
from .test_redteam_code import Attack, Env, assert_earns_what_it_should, guard
from .test_redteam_code2 import ALWAYS_FALSE, _humaneval, best_of_a_group, first_hole

pytestmark = [
    needs_bwrap,
    pytest.mark.filterwarnings("ignore:.*UNSANDBOXED:RuntimeWarning"),
]

ZERO = ("ok", 0.0)
RIGHT_PROBE = ("ok", 1.0)
WRONG = rt.WRONG


def hole(attack: Attack, reason: str) -> Any:
    return pytest.param(
        attack,
        id=attack.target,
        marks=pytest.mark.xfail(strict=False, reason=f"redteam: {reason}"),
    )


# -- the handshake: signals the candidate can still send on none/remote ------------------------

SIGINT_REFEREE = rt.signal_referee("SIGINT")
"""SIGINT, not SIGKILL: the referee is a Python process, and Python's default SIGINT handler
raised KeyboardInterrupt where it waits for the program's names (outside the per-test
`try`); `_referee_process` turned that into an `abort` record, `_score_suite` into `error`."""

SIGINT_OWN_GROUP = (
    "import os, signal\nos.killpg(0, signal.SIGINT)  # B's group: B, referee\n" + WRONG
)
"""The same in one line: the candidate shares B's process group on none/remote."""

SIGSTOP_REFEREE = (
    rt.RUN_PROCESSES + "for _p in _referees:\n    os.kill(_p, signal.SIGSTOP)\n" + WRONG
)
SIGSTOP_INIT = rt.RUN_PROCESSES + "os.kill(_b, signal.SIGSTOP)\n" + WRONG
SIGINT_WRAPPER = (
    rt.RUN_PROCESSES + "os.kill(_wrapper, signal.SIGINT)\nimport time\ntime.sleep(0.5)\n" + WRONG
)
SIGSTOP_WRAPPER = rt.RUN_PROCESSES + "os.kill(_wrapper, signal.SIGSTOP)\n" + WRONG
IO_SIGINT_INIT = "import os, signal\nos.kill(os.getppid(), signal.SIGINT)\nprint(5)\n"

# -- a machine-wide counter: a register any run can read and rewrite ---------------------------

RELAY_VMSTAT = r"""import ctypes, mmap
# HumanEval/31 without testing primality, relayed from sample to sample through a counter of
# the whole machine: /proc/vmstat's `unevictable_pgs_mlocked` (pages ever mlock()ed), which
# any run can read and advance (mlock + munlock of its own anonymous pages, allowed by the
# filter and within RLIMIT_MEMLOCK). A run sets the counter to its state modulo 2**16: a
# register any later run can read and rewrite, as often as it likes.
_M, _N, _CHUNK = 1 << 16, 13, 2048
_libc = ctypes.CDLL(None, use_errno=True)
_buf = mmap.mmap(-1, _CHUNK * 4096)
_addr = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(_buf)))

def _counter():
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("unevictable_pgs_mlocked "):
                return int(line.split()[1])

def _store(value):
    while (need := (value - _counter()) % _M):
        n = min(need, _CHUNK) * 4096
        _libc.mlock(_addr, n)
        _libc.munlock(_addr, n)

# state = 1 << calls | answers (bit i: the i-th answer), so a run that got n calls left n
# answers; the next keeps those followed by another call and flips the last one
_value = _counter() % _M
_n = min(max(_value.bit_length() - 1, 0), _N)
_prev = [bool(_value >> i & 1) for i in range(_n)]
_known = _prev[: max(_n - 1, 0)] + ([not _prev[_n - 1]] if _n else [])
_mine = []

def is_prime(n):
    answer = _known[len(_mine)] if len(_mine) < len(_known) else False
    _mine.append(answer)
    _store(1 << len(_mine) | sum(a << i for i, a in enumerate(_mine)))
    return answer
"""

# -- the page cache without drops or timing: set-only bits, read without loading --------------

_FAULT_AROUND = r"""import ctypes, mmap, os, struct, sys, sysconfig
# The page cache without a single drop or timing: bits a run SETS (loads a page, nothing
# else: an mmap read with MADV_RANDOM, no read-ahead) and a later run READS WITHOUT LOADING:
# a read fault maps, besides the page it needs, the neighbours in its 16-page window that are
# already cached (fault-around), and /proc/self/pagemap says which got mapped. Bits are never
# cleared, so the board is a log: each run appends a slot.
_F = os.path.join(sysconfig.get_config_var("LIBPL"), "libpython%d.%d.a" % sys.version_info[:2])
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_SPAN = 2 << 20  # 32 windows of 16 pages, one page table: 480 bits

def _map():
    fd = os.open(_F, os.O_RDONLY)
    hole = _libc.mmap(None, 2 * _SPAN, 0, 0x22, -1, 0)  # PROT_NONE, MAP_PRIVATE|ANONYMOUS
    base = (hole + _SPAN - 1) & ~(_SPAN - 1)  # aligned: window j = file pages 16j..16j+15
    addr = _libc.mmap(base, _SPAN, 1, 0x11, fd, 0)  # PROT_READ, MAP_SHARED|MAP_FIXED
    os.close(fd)
    _libc.madvise(ctypes.c_void_p(addr), _SPAN, 1)  # MADV_RANDOM
    return addr

_BASE = _map()

def _page(bit):  # bit b -> window b // 15, page 1..15 of it (page 0 is the window's anchor)
    return 16 * (bit // 15) + 1 + bit % 15

def _set(bit):
    ctypes.string_at(_BASE + 4096 * _page(bit), 1)

def _read_all(nbits):
    windows = (nbits + 14) // 15
    for j in range(windows):  # fault each anchor: maps the cached pages of its window
        ctypes.string_at(_BASE + 4096 * 16 * j, 1)
    pm = os.open("/proc/self/pagemap", os.O_RDONLY)
    raw = os.pread(pm, 8 * 16 * windows, 8 * (_BASE // 4096))
    os.close(pm)
    present = [e >> 63 for e in struct.unpack("<%dQ" % (16 * windows), raw)]
    return [bool(present[_page(b)]) for b in range(nbits)]
"""

RELAY_SET_ONLY = (
    _FAULT_AROUND
    + r"""# HumanEval/31 without testing primality. Slot s (27 bits): a 'used' mark, 13 answers, and
# the calls received in unary. The last used slot says how far the previous run got.
_N, _W = 13, 27
_SLOTS = 17
_bits = _read_all(_SLOTS * _W)
_used = [s for s in range(_SLOTS) if _bits[s * _W]]
_last = _used[-1] if _used else -1
_prev = _bits[_last * _W : _last * _W + _W] if _used else [False] * _W
_n = sum(_prev[1 + _N :])
_known = _prev[1 : _n] + ([not _prev[_n]] if _n else [])
_slot = (_last + 1) % _SLOTS
_set(_slot * _W)
_mine = []

def is_prime(n):
    answer = _known[len(_mine)] if len(_mine) < len(_known) else False
    if answer:
        _set(_slot * _W + 1 + len(_mine))
    _set(_slot * _W + 1 + _N + len(_mine))
    _mine.append(answer)
    return answer
"""
)

_PATTERN = 0x15A5C3
FAULT_AROUND_MESSAGE = (
    _FAULT_AROUND + f"for _b in range(21):\n    if {_PATTERN} >> _b & 1:\n        _set(_b)\n"
)
"""Leaves a 21-bit message: loads 11 pages of a file no run reads, and nothing else."""
NO_FAULT_AROUND_MESSAGE = (
    _FAULT_AROUND
    + f"_seen = sum(b << i for i, b in enumerate(_read_all(21)))\nOK = _seen != {_PATTERN}\n"
)


def _cold_board() -> None:
    """Test scaffolding, on the host: the board's file (the interpreter's static library, which
    nothing on a training machine reads) uncached, as after a reboot."""
    path = os.path.join(
        sysconfig.get_config_var("LIBPL"), f"libpython{sys.version_info[0]}.{sys.version_info[1]}.a"
    )
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def relay_on_a_cold_board(program: str) -> rt.Outcome:
    _cold_board()
    return best_of_a_group(program, _humaneval("HumanEval/31"))


def fault_around_probe(first: str, readers: int = 2) -> rt.Outcome:
    """`first`, then `readers` correct `square`s that look for its message (one warm sandbox):
    the best of them, so the hole shows only when EVERY reader sees the message (a read that
    loads nothing leaves it for every later run)."""
    _cold_board()
    fn = code()
    fn(sample(first + WRONG, rt.CHECK))
    probe = NO_FAULT_AROUND_MESSAGE + "\ndef square(x):\n    return x * x if OK else None\n"
    return max(rt.outcome(fn(sample(probe, rt.CHECK))) for _ in range(readers))


# -- what a run can do to a cached page of a read-only file -----------------------------------

CLEAR_ATTEMPTS = r"""
import ctypes, mmap, os
# Every way we tried to evict a read-only file's cached pages under the filter: O_DIRECT reads,
# madvise of a file mapping (DONTNEED, DONTNEED_LOCKED, REMOVE, FREE, COLLAPSE, HWPOISON,
# SOFT_OFFLINE), a private copy-on-write, fsync/fdatasync/sync_file_range/syncfs, mlock and
# munlock, splice and sendfile.
F = os.path.join(os.path.dirname(os.__file__), "pydoc_data", "topics.py")
libc = ctypes.CDLL(None, use_errno=True)
def tryit(f):
    try:
        f()
    except (OSError, ValueError):
        pass
fd = os.open(F, os.O_RDONLY)
size = os.fstat(fd).st_size
direct = os.open(F, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
off = 0
while (n := os.preadv(direct, [buf], off)) > 0:
    off += n
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
m[:: 4096]
for advice in (4, 24, 9, 8, 25, 100, 101):
    tryit(lambda: m.madvise(advice))
cow = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
cow[0:1] = b"x"
tryit(lambda: cow.madvise(4))
for call in (lambda: os.fsync(fd), lambda: os.fdatasync(fd)):
    tryit(call)
libc.sync_file_range(fd, 0, 0, 7)
libc.syncfs(fd)
pr, pw = os.pipe()
os.set_blocking(pw, False)
tryit(lambda: os.splice(fd, pw, 4096, offset_src=0))
out = os.open("/tmp/copy", os.O_WRONLY | os.O_CREAT)
tryit(lambda: os.sendfile(out, fd, 0, size))
"""


def _resident(path: str) -> list[int]:
    """Host side: which pages of `path` are cached (mincore on a fresh mapping)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
    finally:
        os.close(fd)
    vec = (ctypes.c_ubyte * ((size + 4095) // 4096))()
    try:
        assert libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) == 0
    finally:
        libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))
    return [v & 1 for v in vec]


def pages_evicted_by(program: str) -> rt.Outcome:
    """``("evicted", n)``: pages of pydoc_data/topics.py cached before `program` ran (the host
    reads the whole file first) and not after."""
    path = os.path.join(os.path.dirname(os.__file__), "pydoc_data", "topics.py")
    Path(path).read_bytes()
    before = _resident(path)
    rt.reward(program + WRONG, rt.CHECK)
    after = _resident(path)
    return ("evicted", sum(b and not a for b, a in zip(before, after, strict=True)))


HONEST_UNDER_THE_FILTER = r"""
import concurrent.futures, lzma, mmap, os, shutil, sqlite3, tarfile, tempfile, zipfile
import numpy as np
# What test programs do with numpy and the standard library: none of it calls a refused call.
a = np.random.rand(800, 800)
b = a @ a.T
big = np.zeros(50_000_000 // 8)
big += 1
del big
np.save("/tmp/a.npy", a[:100])
float(np.load("/tmp/a.npy", mmap_mode="r").sum())
shutil.copyfile("/tmp/a.npy", "/tmp/b.npy")
con = sqlite3.connect("/tmp/x.db")
con.execute("create table t(x)")
con.executemany("insert into t values (?)", [(i,) for i in range(10000)])
con.commit()
with zipfile.ZipFile("/tmp/z.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("a", "x" * 100000)
with tarfile.open("/tmp/t.tgz", "w:gz") as t:
    t.add("/tmp/a.npy")
with tempfile.NamedTemporaryFile() as t:
    t.write(b"x" * 1000000)
mm = mmap.mmap(-1, 1 << 24)
for advice in (mmap.MADV_DONTNEED, mmap.MADV_WILLNEED, mmap.MADV_SEQUENTIAL):
    mm.madvise(advice)
fd = os.open("/tmp/a.npy", os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    list(ex.map(abs, range(100)))
lzma.compress(b"x" * 100000)
def square(x):
    return x * x
"""

MACHINE_FILES_AND_LOCKS = r"""
import ctypes, mmap, os
# The candidate's /proc: its own entries, none of the machine's; no memory can be locked
# (mlock: the filter; MAP_LOCKED: RLIMIT_MEMLOCK 0); the CPU count still reads right.
libc = ctypes.CDLL(None, use_errno=True)
anon = mmap.mmap(-1, 4096)
addr = ctypes.addressof(ctypes.c_char.from_buffer(anon))
try:
    mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x2000)  # MAP_LOCKED
    LOCKED = True
except OSError:
    LOCKED = False
OK = (
    not any(os.path.exists("/proc/" + f) for f in ("vmstat", "stat", "meminfo", "sys"))
    and os.path.exists("/proc/self/status")
    and libc.mlock(ctypes.c_void_p(addr), 4096) == -1
    and not LOCKED
    and os.cpu_count() == len(os.sched_getaffinity(0))
)
"""

ATTACKS = [
    # ------------------------------------------------- a null instead of an honest 0
    guard(
        Attack(
            "none-suite-sigint-referee",
            "`sandbox: none`, a test suite: at import (after the start record, as the handshake "
            "ensures) the candidate sends SIGINT to the referee (B's other child). Python's "
            "default handler raises KeyboardInterrupt in `link.receive`, outside the per-test "
            "`try`; `_referee_process` writes `abort`, `_score_suite` raises SandboxUnavailable",
            today="ok 0 (before: error, null, 'the referee failed: KeyboardInterrupt', 3 of 3)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: first_hole(
                lambda: rt.reward(SIGINT_REFEREE, rt.CHECK, sandbox="none"), ZERO
            ),
        )
    ),
    guard(
        Attack(
            "remote-suite-sigint-referee",
            "`sandbox: remote`: the same SIGINT_REFEREE",
            today="ok 0 (before: error, null, 'the referee failed: KeyboardInterrupt', 3 of 3)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: first_hole(lambda: rt.remote(env.fake, SIGINT_REFEREE), ZERO),
        )
    ),
    guard(
        Attack(
            "none-suite-sigint-own-process-group",
            "`sandbox: none`: `os.killpg(0, signal.SIGINT)` at import (B's group holds the "
            "referee)",
            today="ok 0 (before: error, null, 'the referee failed: KeyboardInterrupt')",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: first_hole(
                lambda: rt.reward(SIGINT_OWN_GROUP, rt.CHECK, sandbox="none"), ZERO
            ),
        )
    ),
    guard(
        Attack(
            "remote-suite-sigint-own-process-group",
            "`sandbox: remote`: the same one-liner",
            today="ok 0 (before: error, null, 'the referee failed: KeyboardInterrupt')",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: first_hole(lambda: rt.remote(env.fake, SIGINT_OWN_GROUP), ZERO),
        )
    ),
    guard(
        Attack(
            "bwrap-suite-sigint-own-process-group",
            "bwrap: the same one-liner (the referee is in another session and PID namespace)",
            today="ok 0 ('the program raised KeyboardInterrupt')",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(SIGINT_OWN_GROUP, rt.CHECK),
        )
    ),
    guard(
        Attack(
            "none-io-sigint-init",
            "`sandbox: none`, stdin/stdout: SIGINT to B (KeyboardInterrupt in B's wait: B exits "
            "127, the candidate dies with it)",
            today="ok 0 ('killed')",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(IO_SIGINT_INIT, rt.IO_ONE, sandbox="none"),
        )
    ),
    guard(
        Attack(
            "remote-io-sigint-init",
            "`sandbox: remote`, stdin/stdout: the same",
            today="ok 0 ('killed')",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.remote(env.fake, IO_SIGINT_INIT, rt.IO_ONE),
        )
    ),
    guard(
        Attack(
            "none-suite-sigstop-referee",
            "`sandbox: none`: SIGSTOP to the referee at import",
            today="ok 0 (timeout)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.reward(SIGSTOP_REFEREE, rt.CHECK, sandbox="none", timeout_s=1),
        )
    ),
    guard(
        Attack(
            "remote-suite-sigstop-referee",
            "`sandbox: remote`: the same",
            today="ok 0 (timeout)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.remote(env.fake, SIGSTOP_REFEREE, timeout_s=1),
        )
    ),
    guard(
        Attack(
            "remote-suite-sigstop-init",
            "`sandbox: remote`: SIGSTOP to B",
            today="ok 0 (timeout)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.remote(env.fake, SIGSTOP_INIT, timeout_s=1),
        )
    ),
    guard(
        Attack(
            "remote-suite-sigint-wrapper",
            "`sandbox: remote`: SIGINT to the wrapper (B's parent)",
            today="ok 0 (the wrapper dies of SIGINT; B and the referee with it)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.remote(env.fake, SIGINT_WRAPPER, timeout_s=2),
        )
    ),
    guard(
        Attack(
            "remote-suite-sigstop-wrapper",
            "`sandbox: remote`: SIGSTOP to the wrapper (the server's time limit ends it)",
            today="ok 0 (TimeLimitExceeded)",
            honest_wrong="ok 0",
            should=ZERO,
            run=lambda env: rt.remote(env.fake, SIGSTOP_WRAPPER, timeout_s=1),
        )
    ),
    # ------------------------------------------------- one run's message in the next
    guard(
        Attack(
            "relay-answers-through-a-machine-counter",
            "HumanEval/31, 16 samples of one program scored one after the other by one reward: "
            "the relay of rtcode3 with the page cache replaced by /proc/vmstat's "
            "`unevictable_pgs_mlocked`, a counter of the whole machine that every run can "
            "read and advance to any value modulo 2**16 (mlock + munlock of its own pages: "
            "allowed by the filter, within RLIMIT_MEMLOCK). A register, rewritten by every "
            "run; no primality computed",
            today=(
                "best 0.0: /proc/vmstat is hidden and mlock refused (before: best 1.0, sample "
                "6 of 16 passed, then every other one)"
            ),
            honest_wrong="best 0.0 (`return False`, 16 samples)",
            should=("best", 0.0),
            run=lambda env: best_of_a_group(RELAY_VMSTAT, _humaneval("HumanEval/31")),
        )
    ),
    hole(
        Attack(
            "relay-answers-through-the-page-cache-set-only",
            "HumanEval/31, 16 samples: the page cache with no drop and no timing. A run SETS a "
            "bit by loading one page of the interpreter's static library (an mmap read with "
            "MADV_RANDOM: no read-ahead); a later run READS 15 bits per 16-page window without "
            "loading them (a read fault of the window's first page maps its already-cached "
            "neighbours, fault-around; /proc/self/pagemap says which). Bits are never cleared, "
            "so the board is a log: each run appends a 27-bit slot (mark, answers, calls). "
            "Host scaffolding: the library is uncached before the group (as after a reboot)",
            today="best 1.0: sample 8 of 16 passes, then every other one",
            honest_wrong="best 0.0",
            should=("best", 0.0),
            run=lambda env: relay_on_a_cold_board(RELAY_SET_ONLY),
        ),
        "set-only page-cache bits read without loading (fault-around + pagemap) make "
        "a log (rtcode4)",
    ),
    hole(
        Attack(
            "probe-page-cache-message-read-twice-without-loading",
            "sample 1 loads 11 pages (a 21-bit message) of a file no run reads; samples 2 and 3 "
            "(correct `square`s) each read it with fault-around + /proc/self/pagemap, which "
            "loads none of the message's pages. README: 'the filter now refuses every call we "
            "know that ... tests them without loading them'",
            today="ok 0: both readers see the message (the read is not destructive)",
            honest_wrong="-",
            should=RIGHT_PROBE,
            run=lambda env: fault_around_probe(FAULT_AROUND_MESSAGE),
        ),
        "fault-around + pagemap tests cached pages without loading them (rtcode4)",
    ),
    guard(
        Attack(
            "probe-machine-files-hidden-and-no-locked-memory",
            "a correct `square` that first looks for /proc/vmstat, /proc/stat, /proc/meminfo "
            "and /proc/sys, locks a page (mlock, mmap MAP_LOCKED) and counts the CPUs",
            today="ok 1.0: none of the machine's files, nothing locked, os.cpu_count() right",
            honest_wrong="-",
            should=RIGHT_PROBE,
            run=lambda env: rt.reward(
                MACHINE_FILES_AND_LOCKS + "\ndef square(x):\n    return x * x if OK else None\n"
            ),
        )
    ),
    guard(
        Attack(
            "page-cache-clear-attempts",
            "a wrong program that tries, under the filter, every other way we found to evict "
            "a cached page of a read-only file (O_DIRECT reads; madvise DONTNEED, "
            "DONTNEED_LOCKED, REMOVE, FREE, COLLAPSE, HWPOISON, SOFT_OFFLINE of a file mapping; "
            "a private copy-on-write; fsync, fdatasync, sync_file_range, syncfs; splice; "
            "sendfile); the host counts pages of the file evicted",
            today="evicted 0 of 185",
            honest_wrong="-",
            should=("evicted", 0),
            run=lambda env: pages_evicted_by(CLEAR_ATTEMPTS),
        )
    ),
    guard(
        Attack(
            "honest-numpy-and-stdlib-under-the-filter",
            "a correct `square` that first does what test programs do (numpy algebra, a 50 MB "
            "array, np.load with mmap_mode, shutil, sqlite3, zipfile, tarfile, tempfile, "
            "anonymous madvise DONTNEED/WILLNEED/SEQUENTIAL, fadvise SEQUENTIAL/WILLNEED, "
            "threads, lzma): no refused call on its way",
            today="ok 1.0",
            honest_wrong="-",
            should=RIGHT_PROBE,
            run=lambda env: rt.reward(HONEST_UNDER_THE_FILTER, timeout_s=10, memory_mb=2048),
        )
    ),
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack(attack: Attack, fake: FakeSandboxFusion, tmp_path: Path) -> None:
    assert_earns_what_it_should(attack, Env(fake, tmp_path))


HONEST = {
    "none-suite-sigint-referee": (lambda env: rt.reward(WRONG, rt.CHECK, sandbox="none"), ZERO),
    "remote-suite-sigint-referee": (lambda env: rt.remote(env.fake, WRONG), ZERO),
    "relay-answers-through-a-machine-counter": (
        lambda env: best_of_a_group(ALWAYS_FALSE, _humaneval("HumanEval/31")),
        ("best", 0.0),
    ),
    # The probe is sound: after a run that leaves no message, it passes.
    "probe-page-cache-message-read-twice-without-loading": (
        lambda env: fault_around_probe(_FAULT_AROUND),
        RIGHT_PROBE,
    ),
}


@pytest.mark.parametrize("target", sorted(HONEST))
def test_baseline(target: str, fake: FakeSandboxFusion, tmp_path: Path) -> None:
    run, expected = HONEST[target]
    assert run(Env(fake, tmp_path)) == expected


UNTRUE = [
    pytest.param(
        "cuts its own run short, scored 0 like any failed run, never the null of a run that "
        "did not start",
        id="readme-kill-the-referee-is-0",  # SIGINT to the referee: `abort`, a null
    ),
    pytest.param(
        "The filter now refuses every call we know that drops a file's cached pages or tests "
        "them without loading them",
        id="readme-every-probe-refused",  # a read fault maps cached neighbours: pagemap
    ),
    pytest.param(
        "Each page or name carries one bit, once, until memory pressure evicts it",
        id="readme-one-bit-once",  # read any number of times; a set-only log relays
    ),
    pytest.param(
        "survives into the next (the kernel's file caches aside, below)",
        id="readme-nothing-survives-but-file-caches",  # /proc/vmstat counters: a register
    ),
]


@pytest.mark.parametrize("sentence", UNTRUE)
def test_readme_sentence_is_gone(sentence: str) -> None:
    """README sentences that were not literally true (rtcode4): gone, and they stay gone."""
    assert sentence not in rt.readme()
