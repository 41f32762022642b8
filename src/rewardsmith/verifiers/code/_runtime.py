"""What runs inside the sandbox: the zygote's loop and the process tree of one run.

Shipped into the sandbox as source with `_codec`, `_candidate` and `_referee` (`BOOTSTRAP`
loads them): standard library only. The zygote (one per warm sandbox, started by
`_zygote`) serves one run at a time. With ``isolate`` (the bubblewrap backend) it is uid 0
of the sandbox's own user namespace and keeps that namespace's capabilities (they grant
nothing outside it) to give each run namespaces of its own:

* the zygote enters a fresh network namespace for the run (it keeps it until the run's
  leftovers are collected, below);
* ``A`` (forked by the zygote) unshares a mount, PID and IPC namespace; makes the root,
  ``/dev`` and the host's device nodes bound in it read-only; mounts a fresh tmpfs, capped
  in size and inodes, on ``/tmp`` and ``/dev/shm``, and a new devpts instance on
  ``/dev/pts`` (no terminal of another run); brings up a loopback of its own; forks ``B``
  and exits.
* ``B`` is PID 1 of the run's PID namespace: it mounts a ``/proc`` of that namespace, makes
  the two call pipes and the two pipes of the start handshake, forks the referee ``T`` (test
  suites) and the candidate's ``U0``, and waits. When ``B`` exits, the kernel kills every
  process of the run. The handshake: the candidate's process, confined, says it is up (one
  byte on ``ready``) and waits for one byte on ``go`` before it loads the program; the
  referee (suites) or ``B`` (stdin/stdout, with the token it reads from the private memfd
  then: the token never enters a process the candidate's is forked from) writes the run's
  start record, then that byte. So no code of the completion runs before the start record,
  and a run without one is never the completion's doing: without a PID namespace
  (``sandbox: none``, remote) the candidate can signal ``B`` and the referee (which ignores
  SIGINT), but only once the record is written, and a run it cuts short then is scored like
  any other (0).
* ``T``, the referee (trusted: the dataset's tests), holds the verdict pipe and reads its
  configuration (tests, prompt, token) from a memfd only it receives; it calls the candidate
  over the pipes (`_referee`).
* ``U0`` unshares a mount and a PID namespace nested in the run's and forks ``U1``, PID 1 of
  it: the candidate's process. ``U1`` mounts its own ``/proc`` (showing only its namespace:
  ``T`` and ``B`` are not in it, so it cannot signal, trace or read them; and none of the
  machine's counters, `_own_proc`) and its own tmpfs on ``/tmp`` and ``/dev/shm`` (hiding
  the referee's), keeps only its stdin, stdout, stderr, program memfd, call pipes and
  handshake pipes (closed before the program loads), then runs the completion
  (`_candidate`).

Both ``T`` and ``U1`` then start a new session, apply their rlimits, lock the securebits,
empty every capability set, set ``no_new_privs``, check that ``CapEff`` is 0 (else refuse
to run), and install the seccomp filter (`_seccomp`) before any dataset or completion code
runs. The zygote enforces the wall clock (SIGKILL of ``B`` = the whole run) and reports on a
per-run status pipe no run process holds.

Descriptors "in flight" (sent over a Unix socket, never received) outlive their processes:
a cycle of such sockets is freed only by the kernel's collector, which runs when some Unix
socket is released, later (a second or two on a quiet machine). Until then they pin
memory, the host uid's quotas (descriptors in flight, pipe buffers) and terminals. So once
``B`` is gone the zygote releases sockets of its own until the run's network namespace holds
no Unix socket, i.e. the collector freed every cycle (`_collect_in_flight`), before it
reports; a run whose leftovers are not collected in `_COLLECT_S` ends the sandbox.

Without ``isolate`` (``sandbox: none``, and SandboxFusion's server) the same tree runs
without namespaces, capabilities, filter or mounts, and without ``A``: ``B`` is forked by
the zygote (or the remote wrapper) and leads a process group that is killed at the end or
at the wall clock. ``B``, the referee and the candidate are each tied to their parent's life
(``PR_SET_PDEATHSIG``: SIGKILL), so a wrapper killed by the server (at its time limit, or by
the candidate) takes the run down with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import io
import marshal
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from ._candidate import describe, run_main, serve
from ._codec import encode
from ._referee import Link, referee

__all__ = ["BOOTSTRAP", "OUTPUT_MARKER", "remote", "zygote"]

BOOTSTRAP = r"""
import marshal, socket, sys, types
def _rewardsmith_bootstrap():
    ctl = socket.socket(fileno=int(sys.argv[1]))
    del sys.argv[1:]
    for name, source in marshal.loads(ctl.recv(1 << 22)):
        module = types.ModuleType(name)
        module.__package__ = name.rpartition(".")[0]
        sys.modules[name] = module
        exec(compile(source, "<%s>" % name, "exec"), module.__dict__)
    sys.modules[name].zygote(ctl)
_rewardsmith_bootstrap()
"""
"""``python -I -S -B -c BOOTSTRAP <control socket fd>``: receives the modules' sources as the
first message on the control socket, loads them, and runs `zygote`."""

_PRELOAD = (
    "re",
    "math",
    "collections",
    "itertools",
    "functools",
    "typing",
    "string",
    "heapq",
    "bisect",
    "hashlib",
    "random",
    "copy",
    "operator",
    "fractions",
    "decimal",
    "datetime",
    "statistics",
    "atexit",
    "struct",
    "fcntl",
    "resource",
    "threading",
)
"""Modules the zygote imports once, so that runs do not pay for them."""

_NEWNS, _NEWPID, _NEWIPC, _NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_KEEP_FLAGS = 2 | 4 | 8 | 1024 | 2048 | 4096  # nosuid nodev noexec noatime nodiratime relatime
_GRACE_S = 0.2
"""How long ``B`` waits for the candidate to end once the referee is done."""
_COLLECT_S = 0.5
"""How long the zygote waits, after a run, for the kernel to free what it left in flight."""
_DEVPTS = b"newinstance,ptmxmode=0666,mode=0620"

SETUP_FAILURES = {
    121: "unshare of the run's namespaces failed",
    122: "mounting the run's filesystems failed",
    123: "the candidate's namespaces could not be set up",
    126: "dropping privileges or installing the seccomp filter failed",
}

_libc = ctypes.CDLL(None, use_errno=True)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _mount(source: bytes | None, target: str, fstype: bytes | None, flags: int, data: Any) -> None:
    if _libc.mount(source, target.encode(), fstype, flags, data) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}")


def _own_proc() -> None:
    """The candidate's ``/proc``: its own PID namespace's processes only, and with
    ``subset=pid`` (Linux 5.8+) none of the machine's files (``vmstat``, ``stat``,
    ``meminfo``...: counters every run on the machine shares, some of which a run can set,
    a register from one run to the next). An older kernel refuses the option: a plain one."""
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    try:
        _mount(b"proc", "/proc", b"proc", flags, b"subset=pid")
    except OSError:
        _mount(b"proc", "/proc", b"proc", flags, None)


def _device_nodes_ro() -> None:
    """The host's device nodes bubblewrap binds into ``/dev`` (``null``, ``urandom``...):
    read-only binds. Writing to a device still works; changing its inode (``utime``: the
    host's timestamps, which every later run reads) does not."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in points:
        if point.startswith("/dev/") and not os.path.isdir(point):
            _remount_ro(point)


def _remount_ro(path: str) -> None:
    flags = os.statvfs(path).f_flag & _KEEP_FLAGS
    _mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | flags, None)


def _scratch(req: dict[str, Any]) -> None:
    """Fresh ``/tmp`` and ``/dev/shm``, capped in size and inodes; the interpreter's
    directories that live under ``/tmp`` bound back read-only from where the sandbox keeps
    them."""
    flags, inodes = _MS_NOSUID | _MS_NODEV, req["inodes"]
    for target, size in (("/tmp", req["tmpfs"]), ("/dev/shm", req["shm"])):
        if target == "/tmp" or os.path.isdir(target):
            data = b"size=%d,nr_inodes=%d,mode=1777" % (size, inodes)
            _mount(b"tmpfs", target, b"tmpfs", flags, data)
    for staged, target in req["tmp_binds"]:
        os.makedirs(target, exist_ok=True)
        _mount(staged.encode(), target, None, _MS_BIND | _MS_REC, None)
        _remount_ro(target)


def _loopback_up() -> None:
    import fcntl

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        request = struct.pack("16sh14x", b"lo", 0x1 | 0x40)  # IFF_UP | IFF_RUNNING
        fcntl.ioctl(s.fileno(), 0x8914, request)  # SIOCSIFFLAGS
    finally:
        s.close()


def _close_all_but(keep: set[int]) -> None:
    last = -1
    for fd in sorted(keep):
        if fd > last + 1:
            os.closerange(last + 1, fd)
        last = max(last, fd)
    os.closerange(last + 1, 1 << 16)


def _confine(req: dict[str, Any], rlimits: list[tuple[str, int]]) -> None:
    """rlimits, then (isolated) no capabilities, no_new_privs and the seccomp filter."""
    import resource

    for name, value in rlimits:
        resource.setrlimit(getattr(resource, name), (value, value))
    if not req["isolate"]:
        return
    pr_capbset_drop, pr_set_securebits, pr_cap_ambient, pr_set_no_new_privs = 24, 28, 47, 38
    # noroot, no_setuid_fixup, keep_caps_locked, no_cap_ambient_raise: all locked.
    if _libc.prctl(pr_set_securebits, 0xEF, 0, 0, 0) != 0:
        os._exit(126)
    _libc.prctl(pr_cap_ambient, 4, 0, 0, 0)  # clear all
    for cap in range(64):
        if _libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            os._exit(126)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    if _libc.capset(header, data) != 0:
        os._exit(126)
    if _libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        os._exit(126)
    with open("/proc/self/status", "rb") as f:
        for line in f:
            capability = line.startswith((b"CapEff:", b"CapPrm:", b"CapBnd:", b"CapAmb:"))
            if capability and int(line.split()[1], 16) != 0:
                os._exit(126)
    program = req["seccomp"]
    if program is not None:
        buffer = ctypes.create_string_buffer(program, len(program))
        fprog = _Fprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        if _libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
            os._exit(126)


def _fork(run: Any, *args: Any, close: tuple[int, ...] = (), tied: bool = False) -> int:
    """A child that closes `close`, runs ``run(*args)`` and never returns; its pid. `tied`:
    the child is killed when this process dies (no PID namespace does it for them)."""
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            if tied:
                _tie_to(parent)
            for fd in close:
                os.close(fd)
            run(*args)
        finally:
            os._exit(127)
    return pid


def _tie_to(parent: int) -> None:
    """SIGKILL this process when `parent` dies (``PR_SET_PDEATHSIG``); if it already has,
    exit now."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(0)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _private_config(fd: int, req: dict[str, Any]) -> dict[str, Any]:
    """The configuration only trusted processes read (the tests, the run's token), from the
    start of its memory file (``pread``: the offset other holders share does not move)."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    raw = b"".join(chunks)
    if req.get("base64"):
        import base64

        raw = base64.b64decode(raw)
    return marshal.loads(raw)


def _reseed() -> None:
    if "random" in sys.modules:
        sys.modules["random"].seed()


# -- the referee (T) ---------------------------------------------------------------------------


def _referee_process(req: dict[str, Any], fds: dict[str, int]) -> None:
    # Python turns SIGINT into an exception where the referee waits: without a PID namespace
    # (`none`, remote) the candidate could send one and make the run abort.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if req["isolate"]:
        os.setsid()
    os.dup2(fds["stdin"], 0)
    os.dup2(fds["err"], 1)
    os.dup2(fds["err"], 2)
    keep = {0, 1, 2, fds["tests"], fds["verdict"], fds["calls_w"], fds["answers_r"]}
    keep |= {fds["ready_r"], fds["go_w"]}
    _close_all_but(keep)
    _confine(req, req["rlimits_referee"])
    _libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    if req["isolate"]:
        os.chdir("/tmp")
    _reseed()
    config = _private_config(fds["tests"], req)
    os.close(fds["tests"])
    token, verdict = config.pop("token"), fds["verdict"]

    def emit(line: str) -> None:
        data = f"{token} {line}\n".encode()
        while data:
            data = data[os.write(verdict, data) :]

    if not _handshake(fds["ready_r"], fds["go_w"], lambda: emit("start")):
        os._exit(0)
    link = Link(fds["calls_w"], fds["answers_r"])
    sys.path.extend(config.pop("path"))
    try:
        referee(config, link, emit)
    except BaseException:
        emit("abort " + describe().encode().hex())
    os._exit(0)


# -- the candidate (U0, U1) --------------------------------------------------------------------


def _candidate_outer(req: dict[str, Any], fds: dict[str, int]) -> None:
    """U0: the candidate's own mount and PID namespaces (isolated), then U1."""
    keep = {fds[k] for k in ("program", "stdin", "out", "err", "calls_r", "answers_w")}
    keep |= {fds["ready_w"], fds["go_r"]}
    _close_all_but(keep)
    if not req["isolate"]:
        _candidate_process(req, fds)
    if _libc.unshare(_NEWNS | _NEWPID) != 0:
        os._exit(123)
    child = _fork(_candidate_process, req, fds)
    _close_all_but(set())
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def _candidate_process(req: dict[str, Any], fds: dict[str, int]) -> None:
    """U1: the completion's process."""
    if req["isolate"]:
        try:
            _own_proc()
            _scratch(req)
        except OSError:
            os._exit(123)
        os.setsid()
    for fd, target in ((fds["stdin"], 0), (fds["out"], 1), (fds["err"], 2)):
        os.dup2(fd, target)
    program_fd, calls, answers, ready, go = (
        fds[k] for k in ("program", "calls_r", "answers_w", "ready_w", "go_r")
    )
    _close_all_but({0, 1, 2, program_fd, calls, answers, ready, go})
    _confine(req, req["rlimits_candidate"])
    _libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: its own /proc entries stay its own
    if req["isolate"]:
        os.chdir("/tmp")
    _reseed()
    os.write(ready, b"r")  # the handshake (module docstring): no code of ours runs before `go`
    os.close(ready)
    if not os.read(go, 1):
        os._exit(0)
    os.close(go)
    program = marshal.loads(_read_all(program_fd))
    if req["isolate"]:
        _source_file(program["code"])
    if req["style"] == "suite":
        status = serve(program, calls, answers)
    else:
        os.close(calls)
        os.close(answers)
        status = run_main(program)
    if not _flush_std_files():
        status = 120  # CPython's `Py_RunMain` when its shutdown fails to flush them
    for stream in (sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(BaseException):
            stream.flush()
    if req["style"] != "suite":
        _flush_open_files()
    os._exit(status)


def _flush_std_files() -> bool:
    """Flush ``sys.stdout`` then ``sys.stderr`` as CPython's shutdown does (`flush_std_files`:
    each one present, not None and not closed); False when one fails, which makes
    ``python solution.py`` exit 120 (stdout's error is reported, stderr's is not)."""
    ok = True
    for name in ("stdout", "stderr"):
        try:
            stream = getattr(sys, name, None)
            if stream is None or _closed(stream):
                continue
            stream.flush()
        except BaseException as exc:
            ok = False
            if name == "stdout":
                with contextlib.suppress(BaseException):
                    sys.stderr.write(f"Exception ignored in: {stream!r}\n")
                    traceback.print_exception(exc)
    return ok


def _closed(stream: Any) -> bool:
    """Its ``closed``, as CPython's `file_is_closed` reads it: open when it cannot be read."""
    try:
        return bool(stream.closed)
    except BaseException:
        return False


_TIERS = (io.TextIOBase, io.BufferedIOBase, io.IOBase)
"""The order `_flush_open_files` flushes in: text layers, then the buffers under them, then
the rest (raw writers). `_pyio`'s classes are registered with `io`'s, so they count too."""


def _tier(cls: type) -> int:
    """Where a type's objects flush in `_TIERS` (its index), -1 for a type that is no file
    (decided once per type, so the ABC checks do not run per object)."""
    try:
        if not issubclass(cls, io.IOBase):
            return -1
        return next(i for i, kind in enumerate(_TIERS) if issubclass(cls, kind))
    except BaseException:
        return -1


def _flush_open_files() -> None:
    """Flush every writable file object the program left open (an unclosed ``open(
    '/dev/stdout', 'w')``, a subclass, a `_pyio` file; found by `gc`), as Python's shutdown
    would, which ``os._exit`` skips: a stdin/stdout program's answer. Its cost is one pass over
    the gc-tracked objects, a dict look-up of each one's type, the ABC checks once per type
    (`_tier`) and ``writable()`` of the files only: some 10 ms on a bare interpreter (mostly
    its few hundred types), then some 60 ns an object (70 ms for a million), within the run's
    wall clock."""
    with contextlib.suppress(BaseException):
        gc.unfreeze()
        tiers: list[list[Any]] = [[] for _ in _TIERS]
        kinds: dict[type, int] = {}
        for obj in gc.get_objects():
            try:  # free unless raised: a type's odd hash, a file's failing writable()
                cls = type(obj)
                tier = kinds.get(cls)
                if tier is None:
                    tier = kinds[cls] = _tier(cls)
                if tier >= 0 and obj.writable():
                    tiers[tier].append(obj)
            except BaseException:
                pass
        for file in (f for tier in tiers for f in tier):
            with contextlib.suppress(BaseException):
                file.flush()


def _source_file(code: str) -> None:
    """The program's text in ``solution.py`` of its private ``/tmp`` (the working directory),
    the file its ``__file__`` names, as ``python solution.py`` has it (``open(__file__)``,
    `inspect.getsource`). One that does not fit there is left out."""
    with (
        contextlib.suppress(OSError),
        open("solution.py", "w", encoding="utf-8", errors="surrogatepass") as f,
    ):
        f.write(code)


# -- the run: A and B ----------------------------------------------------------------------------


def _init(req: dict[str, Any], fds: dict[str, int], report_w: int) -> None:
    """B: PID 1 of the run's namespace (isolated), or the leader of its process group."""
    if req["isolate"]:
        try:
            _mount(b"proc", "/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)
        except OSError:
            os._exit(122)
    else:
        os.setpgid(0, 0)
    for pipe in ("calls", "answers", "ready", "go"):
        fds[f"{pipe}_r"], fds[f"{pipe}_w"] = os.pipe()
    referee_pid = None
    tied = not req["isolate"]
    if req["style"] == "suite":
        referee_pid = _fork(_referee_process, req, fds, close=(report_w,), tied=tied)
    else:  # B writes the start record: the token never enters the candidate's process
        start, config = fds.pop("start"), os.dup(fds["tests"])
        ready, go = os.dup(fds["ready_r"]), os.dup(fds["go_w"])
    candidate_pid = _fork(_candidate_outer, req, fds, close=(report_w,), tied=tied)
    for fd in fds.values():
        os.close(fd)
    if referee_pid is None:
        _handshake(ready, go, lambda: _write_start(req, config, start))
        os.close(config)
        os.close(start)
    statuses: dict[int, int] = {}
    main = referee_pid if referee_pid is not None else candidate_pid
    while main not in statuses:
        pid, status = os.wait()
        statuses[pid] = os.waitstatus_to_exitcode(status)
    if candidate_pid not in statuses:
        pidfd = os.pidfd_open(candidate_pid)
        if select.select([pidfd], [], [], _GRACE_S)[0]:
            _, status = os.waitpid(candidate_pid, 0)
            statuses[candidate_pid] = os.waitstatus_to_exitcode(status)
        os.close(pidfd)
    report = {"candidate": statuses.get(candidate_pid), "referee": statuses.get(referee_pid)}
    os.write(report_w, marshal.dumps(report))
    if not req["isolate"] and candidate_pid not in statuses:
        os.kill(candidate_pid, signal.SIGKILL)
    os._exit(0)


def _handshake(ready: int, go: int, write_start: Callable[[], None]) -> bool:
    """Once the candidate's process is up and confined (one byte on `ready`), the start
    record, then the byte on `go` that lets the candidate's process load the program: whether
    the candidate's process was up. Closes both pipes."""
    up = os.read(ready, 1) == b"r"
    if up:
        write_start()
        os.write(go, b"g")
    os.close(ready)
    os.close(go)
    return up


def _write_start(req: dict[str, Any], config: int, start: int) -> None:
    """stdin/stdout: the run's start record on `start`, with the token from the private
    configuration."""
    token = _private_config(config, req)["token"]
    os.write(start, f"{token} start\n".encode())


def _setup(req: dict[str, Any], fds: dict[str, int], pid_w: int, report_w: int) -> None:
    """A: the run's namespaces and mounts, then B."""
    try:
        if _libc.unshare(_NEWNS | _NEWPID | _NEWIPC) != 0:
            os._exit(121)
        _mount(b"none", "/", None, _MS_REC | _MS_PRIVATE, None)
        _remount_ro("/")
        _remount_ro("/dev")
        _device_nodes_ro()
        if os.path.isdir("/dev/pts"):
            _mount(b"devpts", "/dev/pts", b"devpts", _MS_NOSUID | _MS_NOEXEC, _DEVPTS)
        _scratch(req)
        _loopback_up()
    except OSError:
        os._exit(122)
    child = _fork(_init, req, fds, report_w, close=(pid_w,))
    os.write(pid_w, child.to_bytes(4, "little"))
    os._exit(0)


_FDS = ("status", "tests", "program", "stdin", "out", "err", "verdict", "start")


def _start_isolated(
    req: dict[str, Any], fds: dict[str, int], report_w: int, close: tuple[int, ...]
) -> int | str:
    """A (the run's namespaces), which forks B and exits: B's pid, or why setup failed.
    Closes every descriptor of `fds` and `report_w`."""
    pid_r, pid_w = os.pipe()
    a = _fork(_setup, req, fds, pid_w, report_w, close=(pid_r, *close))
    for fd in (*fds.values(), pid_w, report_w):
        os.close(fd)
    data = b""
    while chunk := os.read(pid_r, 4):
        data += chunk
    os.close(pid_r)
    _, status = os.waitpid(a, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0 or len(data) != 4:
        return SETUP_FAILURES.get(code, f"run setup failed (status {code})")
    return int.from_bytes(data, "little")


def _run_one(req: dict[str, Any], fds: dict[str, int], stop: int | None) -> dict[str, Any]:
    """One run: A, then B under the wall clock; the report. `stop`: a descriptor whose
    readability means the host is gone (stop now). Closes every descriptor of `fds`."""
    if req["isolate"] and _libc.unshare(_NEWNET) != 0:  # the run's, kept until collected
        for fd in fds.values():
            os.close(fd)
        return {"error": SETUP_FAILURES[121]}
    report_r, report_w = os.pipe()
    started = time.monotonic()
    own = (report_r,) if stop is None else (report_r, stop)
    if req["isolate"]:
        b = _start_isolated(req, fds, report_w, own)
        if isinstance(b, str):
            os.close(report_r)
            return {"error": b}
    else:  # B directly, tied to this process: it dies with it, and so do its children
        b = _fork(_init, req, fds, report_w, close=own, tied=True)
        for fd in (*fds.values(), report_w):
            os.close(fd)
    pidfd = os.pidfd_open(b)
    deadline = started + req["timeout"]
    timed_out = stopped = False
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    if stop is not None:
        poller.register(stop, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        events = dict(poller.poll(left * 1000))
        if pidfd in events:
            break
        if stop in events:  # the host closed the control socket: stop
            stopped = True
            break
    if timed_out or stopped:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    os.close(pidfd)
    _, status = os.waitpid(b, 0)  # B is ours: the zygote is a subreaper
    if not req["isolate"]:  # no PID namespace: kill what is left of B's process group
        with contextlib.suppress(OSError):
            os.killpg(b, signal.SIGKILL)
    collected = _collect_in_flight() if req["isolate"] else True
    report: Any = None
    if not timed_out and not stopped:
        try:
            report = marshal.loads(_read_all(report_r))
        except (EOFError, ValueError, TypeError):
            report = None
    else:
        os.close(report_r)
    if not isinstance(report, dict):
        report = {}
    init_status = os.waitstatus_to_exitcode(status)
    if init_status in SETUP_FAILURES and not timed_out:
        return {"error": SETUP_FAILURES[init_status]}
    return {
        "exit": report.get("candidate"),
        "referee": report.get("referee"),
        "timed_out": timed_out,
        "stop": stopped or not collected,
    }


def _unix_sockets() -> int:
    """Unix sockets of this process's network namespace (the run's, in the zygote)."""
    with open("/proc/self/net/unix", "rb") as f:
        return sum(1 for _ in f) - 1


def _collect_in_flight() -> bool:
    """Once every process of the run is gone, whether the kernel freed what it left in
    flight (module docstring) within `_COLLECT_S`. Releasing a socket runs the collector."""
    deadline = time.monotonic() + _COLLECT_S
    while _unix_sockets() > 0:
        if time.monotonic() >= deadline:
            return False
        for end in socket.socketpair():
            end.close()
        time.sleep(0.002)
    return True


def zygote(ctl: socket.socket) -> None:
    """Serve runs until the host closes the control socket."""
    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    os.chdir("/")
    _libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    _libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    ctl.sendall(b"ready")
    while True:
        try:
            message, received, _, _ = socket.recv_fds(ctl, 1 << 16, len(_FDS))
        except OSError:
            return
        if not message:
            return
        req = marshal.loads(message)
        fds = dict(zip(_FDS, received, strict=True))
        status_w = fds.pop("status")
        try:
            report = _run_one(req, fds, ctl.fileno())
        except OSError as exc:
            report = {"error": f"the warm sandbox failed: {exc}"}
        with contextlib.suppress(OSError):
            os.write(status_w, marshal.dumps(report))
        os.close(status_w)
        if report.get("stop"):
            return


OUTPUT_MARKER = b"rewardsmith-output"
"""Starts the last line the remote wrapper writes on its stdout: the run's token, then base64
of the run's report."""
_COPY_CHUNK = 1 << 16


def remote() -> None:
    """One run in this process's own tree, for SandboxFusion (`_remote`): no sandbox.

    stdin: two sections, each a length line and that many base64 bytes: the request and the
    program (marshal), then the private configuration (marshal: for a test suite the
    referee's, tests and token; for a stdin/stdout case the start token); for a stdin/stdout
    case the program's input follows. This process is non-dumpable from the start, so a
    process of the same user (the candidate's) cannot open its ``/proc`` entries (its
    descriptors, stdin included, and its memory). It copies the whole private section into a
    memory file through a buffer it then zeroes, before any run process exists: the
    candidate's process, forked from it, never holds the tests or the token, and cannot read
    or drain them from stdin. The referee (suites) or ``B`` (the start record) reads the
    memory file. The program's stdout and stderr go to memory files of this process, never to
    the server: its last line on stdout is `OUTPUT_MARKER`, the run's token (read from the
    memory file after the run) and the base64 of ``{stdout, stderr, exit, timed_out, error}``
    in plain data (`_codec`; each stream capped), so the server relays ASCII only, whatever
    bytes the program wrote, and a line without the token is not ours. Suites: the verdict
    records come before it on stdout. stdin/stdout: the start record is the first line of
    stderr.
    """
    import base64

    _libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    req, program = marshal.loads(base64.b64decode(_read_section()))
    private = _memory_file(b"")
    _copy_section(private)
    suite = req["style"] == "suite"
    out, err = _memory_file(b""), _memory_file(b"")
    fds = {
        "tests": os.dup(private),
        "program": _memory_file(program),
        "stdin": os.open(os.devnull, os.O_RDONLY) if suite else os.dup(0),
        "out": os.dup(out),
        "err": os.dup(err),
        "verdict": os.dup(1) if suite else os.open(os.devnull, os.O_WRONLY),
        "start": os.open(os.devnull, os.O_WRONLY) if suite else os.dup(2),
    }
    _libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: the candidate's orphans stay ours
    report = _run_one(req, fds, None)
    cap = req["max_output"]
    result = {
        "stdout": os.pread(out, cap + 1, 0),
        "stderr": os.pread(err, cap + 1, 0),
        "exit": report.get("exit"),
        "timed_out": bool(report.get("timed_out")),
        "error": report.get("error"),
    }
    token = _private_config(private, req)["token"].encode()
    line = b"\n" + b" ".join((OUTPUT_MARKER, token, base64.b64encode(encode(result)))) + b"\n"
    while line:
        line = line[os.write(1, line) :]
    os._exit(0)


def _section_size() -> int:
    """The length line of the next section of stdin."""
    head = b""
    while not head.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte:
            raise SystemExit("rewardsmith: no configuration on stdin")
        head += byte
    return int(head)


def _read_section() -> bytes:
    """The next section of stdin, in this process's memory."""
    size, data = _section_size(), b""
    while len(data) < size:
        chunk = os.read(0, size - len(data))
        if not chunk:
            raise SystemExit("rewardsmith: short configuration on stdin")
        data += chunk
    return data


def _copy_section(target: int) -> None:
    """The next section of stdin into `target`, through one buffer zeroed after: none of it
    stays in this process's memory."""
    left, buffer = _section_size(), bytearray(_COPY_CHUNK)
    view = memoryview(buffer)
    try:
        while left:
            n = os.readv(0, [view[: min(left, _COPY_CHUNK)]])
            if not n:
                raise SystemExit("rewardsmith: short configuration on stdin")
            written = 0
            while written < n:
                written += os.write(target, view[written:n])
            left -= n
    finally:
        view.release()
        buffer[:] = bytes(_COPY_CHUNK)


def _memory_file(data: bytes) -> int:
    """A descriptor to read `data` from: a memfd, or an unlinked temporary file."""
    try:
        fd = os.memfd_create("rewardsmith-program")
    except (AttributeError, OSError):
        import tempfile

        with tempfile.TemporaryFile() as f:
            fd = os.dup(f.fileno())
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
