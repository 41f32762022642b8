"""Sandboxes seen from the host: a zygote per sandbox, runs sent to it, their results read.

A zygote is a preloaded interpreter inside bubblewrap (`_sandbox.plan_bwrap`) that forks
each run into namespaces of its own (`_runtime`). Starting bwrap and an interpreter costs
tens of milliseconds; a warm zygote pays that once per engine worker (per concurrent slot),
then a run costs a few forks and mounts. ``warm: false`` starts a zygote for one run and
stops it after (`run_cold`). ``sandbox: none`` uses the same zygote without bwrap
(`_sandbox.plan_plain`).

Per run the host sends, on the zygote's control socket, the limits and seccomp filter
(`Job` -> request) and eight descriptors: a status pipe for the zygote's report, the
private memfd (the tests and token for the referee; a stdin/stdout run's token for its init
process), the program's memfd (for the candidate only), the
candidate's stdin memfd, its stdout and stderr pipes, the verdict pipe, and the stdin/stdout
style's start pipe. It then reads stdout, stderr and the verdict pipe, capped, until the
zygote reports (every process of the run is dead), then what is left in them, without waiting
for their ends; a zygote that does not report by the backstop is killed and discarded.

Shared between consecutive runs of one zygote: the host uid (the kernel's per-uid state:
the RLIMIT_NPROC count, descriptors in flight, pipe buffers, and the user keyring, which the
seccomp filter makes unreachable) and the interpreter's memory image (hash seed; `random` is
reseeded per run). Nothing of a run's own (files, processes, IPC objects, sockets,
terminals, descriptors in flight) survives it: the zygote reports only once the kernel freed
what the run left in flight (`_runtime`), or ends.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import selectors
import signal
import socket
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from ._harness import start_config
from ._runtime import BOOTSTRAP
from ._sandbox import (
    ENV,
    SHM_MB,
    TMPFS_INODES,
    Capped,
    Limits,
    RunResult,
    SandboxUnavailable,
    _Plan,
    host_uid,
    memfd,
    own_task_count,
    preexec_root,
)

__all__ = ["Job", "WarmPool", "run_cold"]

_OWN_PROCESSES = 8
"""Processes of a sandbox besides the program's own: bwrap's outer process, its init, the
zygote, the run's ``A`` and ``B``, the referee, the candidate's ``U0`` and ``U1``."""
_BACKSTOP_S = 3.0
"""How long after the run's timeout the host waits for the zygote's report before it
discards the zygote."""
_VERDICT_BYTES = 8 * 1024 * 1024
"""What the host reads of the verdict pipe: its own cap, not `Limits.max_output_bytes` (the
program's output), which a small value would otherwise cut the referee's records with; the
referee writes at most ~1 kB per test."""
_MIN_RUN_S = 0.05
"""The shortest wall clock a run is started with."""
_START_TIMEOUT_S = 30.0
_READ_CHUNK = 65_536
_SHIPPED = ("_codec", "_candidate", "_referee", "_runtime")
"""Modules run inside the sandbox, shipped as source, in dependency order."""


def shipped_sources() -> list[tuple[str, str]]:
    """(module name, source) of every module the zygote loads."""
    here = Path(__file__).parent
    package = __name__.rpartition(".")[0]
    return [(f"{package}.{name}", (here / f"{name}.py").read_text("utf-8")) for name in _SHIPPED]


@dataclass(frozen=True)
class Job:
    """One run: a test suite (``tests`` set) or one stdin/stdout case (``start_token`` set)."""

    program: bytes
    """The candidate's configuration (marshal: code, path)."""
    tests: bytes = b""
    """The referee's configuration (marshal: token, style, tests, ...); empty for stdin/stdout."""
    stdin: bytes = b""
    start_token: str = ""
    seccomp: bytes | None = None
    deadline: float | None = None
    """When (`time.monotonic`) the sample's wall clock runs out: the run gets what is left
    of it, so the time spent starting a sandbox counts in the sample's `timeout_s`."""
    max_output_bytes: int | None = None
    """What is read of the program's stdout and stderr each; None: `Limits.max_output_bytes`
    (a stdin/stdout case sets more when its expected output needs it)."""

    def private(self) -> bytes:
        """What only the run's trusted processes read: the referee's configuration, or the
        start token of a stdin/stdout run."""
        return self.tests or start_config(self.start_token)

    def output_cap(self, limits: Limits) -> int:
        """What is read of each of the program's output streams."""
        return self.max_output_bytes or limits.max_output_bytes

    def wall_clock(self, most: float) -> float:
        """This run's wall clock: what is left of the sample's, at most `most`."""
        return most if self.deadline is None else min(most, self.deadline - time.monotonic())


_NO_TIME_LEFT = "starting the sandbox took the sample's whole timeout_s"
"""A sandbox that took the sample's whole time to start is the infrastructure's failure
(`error`), not the program's."""


def _rlimits(limits: Limits, nproc: int, address_space: int) -> list[tuple[str, int]]:
    cpu = max(1, int(limits.cpu_s))
    return [
        ("RLIMIT_CPU", cpu),
        ("RLIMIT_AS", address_space),
        ("RLIMIT_FSIZE", limits.max_file_mb * 1024 * 1024),
        ("RLIMIT_NOFILE", limits.max_open_files),
        ("RLIMIT_NPROC", nproc),
        ("RLIMIT_CORE", 0),
        ("RLIMIT_MEMLOCK", 0),  # no locked memory (`mmap(MAP_LOCKED)` too): see `_seccomp`
    ]


class _Zygote:
    """One sandbox: one run at a time."""

    def __init__(self, plan: _Plan, limits: Limits, slot: int) -> None:
        self.plan = plan
        self.limits = limits
        self.slot = slot
        self.uid = host_uid(slot) if plan.as_root else os.getuid()
        host, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ctl = host
        fd = zygote_end.fileno()
        argv = [*self._argv(), plan.python, "-I", "-S", "-B", "-c", BOOTSTRAP, str(fd)]
        nproc = self._nproc() + 8
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(fd,),
                start_new_session=True,
                preexec_fn=lambda: self._preexec(nproc),
                env=ENV,
            )
        except OSError as exc:
            host.close()
            raise SandboxUnavailable(f"could not start {argv[0]}: {exc}") from exc
        finally:
            zygote_end.close()
        host.settimeout(_START_TIMEOUT_S)
        try:
            host.sendall(marshal.dumps(shipped_sources()))
            ready = host.recv(16)
        except OSError:
            ready = b""
        host.settimeout(None)
        if ready != b"ready":
            self.kill()
            err = ""
            if self.proc.stderr is not None:
                err = self.proc.stderr.read(2000).decode(errors="replace")
                self.proc.stderr.close()
            raise SandboxUnavailable(f"the sandbox did not start: {err.strip()[-500:]}")
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self._finalizer = weakref.finalize(self, _stop, host, self.proc)

    def _argv(self) -> list[str]:
        """bwrap's command line, but uid 0 of the sandbox's user namespace with that
        namespace's capabilities (each run drops them), and no ``--die-with-parent`` (it
        follows the starting *thread*; the zygote exits when the host's end of its control
        socket closes)."""
        argv = list(self.plan.argv_prefix)
        if argv:
            i = argv.index("--uid")
            argv[i : i + 4] = ["--uid", "0", "--gid", "0", "--cap-add", "ALL"]
            argv.remove("--die-with-parent")
        return argv

    def _nproc(self) -> int:
        extra = 0 if self.plan.as_root or not self.plan.isolate else own_task_count(os.getuid())
        return self.limits.max_processes + _OWN_PROCESSES + extra

    def _preexec(self, nproc: int) -> None:
        import resource

        if self.plan.as_root:
            preexec_root(self.plan, self.uid)
        # The zygote and its preloaded modules need room of their own; each run's processes
        # set their own address-space limit.
        memory = max(self.limits.memory_mb, 512) * 1024 * 1024
        fsize = self.limits.max_file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        if self.plan.isolate:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.ctl.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)

    def pids(self) -> set[int]:
        """Host pids of the idle sandbox: bwrap, its init, the zygote (not deeper)."""
        found = {self.proc.pid}
        level = [self.proc.pid]
        for _ in range(2):
            level = [c for p in level for c in _children(p)]
            found.update(level)
        return found

    def run(self, job: Job) -> RunResult:
        limits = self.limits
        nproc = self._nproc()
        timeout = job.wall_clock(limits.timeout_s)
        request = {
            "isolate": self.plan.isolate,
            "timeout": timeout,
            "tmpfs": limits.tmp_bytes,
            "shm": SHM_MB * 1024 * 1024,
            "inodes": TMPFS_INODES,
            "tmp_binds": [list(pair) for pair in self.plan.tmp_binds],
            "rlimits_candidate": _rlimits(limits, nproc, limits.candidate_address_space),
            "rlimits_referee": _rlimits(limits, nproc, max(limits.memory_mb, 512) * 1024 * 1024),
            "seccomp": job.seccomp,
            "style": "suite" if job.tests else "io",
        }
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        for pipe in (out_w, err_w):
            _reopenable(pipe)
        res_r, res_w = os.pipe()
        st_r, st_w = os.pipe()
        start_w = os.dup(res_w) if not job.tests else os.open(os.devnull, os.O_WRONLY)
        sent = [
            st_w,
            memfd("rewardsmith-tests", job.private()),
            memfd("rewardsmith-program", job.program),
            memfd("rewardsmith-stdin", job.stdin),
            out_w,
            err_w,
            res_w,
            start_w,
        ]
        started = time.monotonic()
        try:
            socket.send_fds(self.ctl, [marshal.dumps(request)], sent)
        except OSError as exc:
            for fd in (out_r, err_r, res_r, st_r):
                os.close(fd)
            raise _ZygoteDied(f"could not reach the sandbox: {exc}") from exc
        finally:
            for fd in sent:
                os.close(fd)
        try:
            cap = job.output_cap(limits)
            return self._collect(out_r, err_r, res_r, st_r, started, timeout, cap)
        finally:
            for fd in (out_r, err_r, res_r, st_r):
                os.close(fd)

    def _collect(
        self,
        out_r: int,
        err_r: int,
        res_r: int,
        st_r: int,
        started: float,
        timeout: float,
        cap: int,
    ) -> RunResult:
        out, err = Capped(cap), Capped(cap)
        channel, status = Capped(_VERDICT_BYTES), Capped(4096)
        sinks = {out_r: out, err_r: err, res_r: channel, st_r: status}
        backstop = started + timeout + _BACKSTOP_S
        reported = False
        with selectors.DefaultSelector() as selector:
            for fd in sinks:
                selector.register(fd, selectors.EVENT_READ)
            while not reported and time.monotonic() < backstop:
                wait = max(backstop - time.monotonic(), 0.0)
                for key, _ in selector.select(timeout=wait):
                    if not _read(selector, sinks, key.fd) and key.fd == st_r:
                        reported = True
            # Every process of the run is dead: what they wrote is in the pipes. Read that,
            # never their ends (a descriptor left in flight may hold a pipe open).
            while ready := selector.select(timeout=0) if reported else []:
                for key, _ in ready:
                    _read(selector, sinks, key.fd)
        report = None
        if status.data:
            with contextlib.suppress(ValueError, EOFError, TypeError):
                report = marshal.loads(bytes(status.data))
        result = RunResult(
            stdout=bytes(out.data),
            stderr=bytes(err.data),
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            channel=bytes(channel.data),
            duration_s=time.monotonic() - started,
        )
        if not isinstance(report, dict):
            if not reported:  # no answer by the backstop: a hung zygote
                self.kill()
                result.timed_out = True
                result.extra["sandbox"] = "the sandbox did not answer; discarded"
                return result
            raise _ZygoteDied("the sandbox ended during a run")
        if "error" in report:
            raise SandboxUnavailable(f"sandbox: {report['error']}")
        result.timed_out = bool(report.get("timed_out"))
        result.exit_code = None if result.timed_out else report.get("exit")
        if report.get("referee") not in (0, None):
            result.extra["referee_exit"] = report.get("referee")
        return result


def _reopenable(pipe: int) -> None:
    """Let the sandbox's uid re-open the program's stdout or stderr pipe for writing
    (``open('/dev/stdout', 'w')``): a pipe the host made as root is root's, mode 0600. By name
    (``/proc/<pid>/fd``) it reaches only processes that may trace one of its holders: the
    host's, and the candidate's own."""
    os.fchmod(pipe, 0o602)


def _read(selector: selectors.BaseSelector, sinks: dict[int, Capped], fd: int) -> bool:
    """Read a chunk from `fd` into its sink; at its end, stop watching it. Whether it had
    more."""
    chunk = os.read(fd, _READ_CHUNK)
    if chunk:
        sinks[fd].feed(chunk)
    else:
        selector.unregister(fd)
    return bool(chunk)


def _stop(ctl: socket.socket, proc: subprocess.Popen[bytes]) -> None:
    """A zygote no longer referenced (or at exit): closing its control socket ends it."""
    with contextlib.suppress(OSError):
        ctl.close()
    try:
        proc.wait(2)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


class _ZygoteDied(Exception):
    pass


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def run_cold(plan: _Plan, limits: Limits, job: Job) -> RunResult:
    """One run in a sandbox of its own, stopped after."""
    zygote = _Zygote(plan, limits, 0)
    try:
        if job.wall_clock(limits.timeout_s) < _MIN_RUN_S:
            raise SandboxUnavailable(_NO_TIME_LEFT)
        return zygote.run(job)
    except _ZygoteDied as exc:
        raise SandboxUnavailable(str(exc)) from exc
    finally:
        zygote.kill()


class WarmPool:
    """Warm sandboxes of one engine worker: one per concurrent run, started on demand."""

    def __init__(self, plan: _Plan, limits: Limits) -> None:
        self.plan = plan
        self.limits = limits
        self._lock = threading.Lock()
        self._idle: list[_Zygote] = []
        self._all: list[_Zygote] = []
        self._owner = os.getpid()

    def _acquire(self) -> tuple[_Zygote, bool]:
        """An idle sandbox, or a new one; whether it was started for this call."""
        with self._lock:
            if self._owner != os.getpid():  # forked: the parent's zygotes are not ours
                self._idle, self._all, self._owner = [], [], os.getpid()
            while self._idle:
                zygote = self._idle.pop()
                if zygote.alive():
                    return zygote, False
                self._forget(zygote)
            used = {z.slot for z in self._all}
            slot = next(i for i in range(len(used) + 1) if i not in used)
        zygote = _Zygote(self.plan, self.limits, slot)
        with self._lock:
            self._all.append(zygote)
        return zygote, True

    def _forget(self, zygote: _Zygote) -> None:
        zygote.kill()
        if zygote in self._all:
            self._all.remove(zygote)

    def _release(self, zygote: _Zygote) -> None:
        with self._lock:
            if zygote.alive() and zygote.proc.pid and os.getpid() == self._owner:
                self._idle.append(zygote)
            else:
                self._forget(zygote)

    def run(self, job: Job) -> RunResult:
        """One run in a warm sandbox."""
        for attempt in range(2):
            zygote, started = self._acquire()
            if started and job.wall_clock(self.limits.timeout_s) < _MIN_RUN_S:
                self._release(zygote)
                raise SandboxUnavailable(_NO_TIME_LEFT)
            try:
                result = zygote.run(job)
            except _ZygoteDied as exc:
                with self._lock:
                    self._forget(zygote)
                if attempt:
                    raise SandboxUnavailable(str(exc)) from exc
                continue
            except BaseException:
                with self._lock:
                    self._forget(zygote)
                raise
            self._release(zygote)
            return result
        raise AssertionError("unreachable")

    def pids(self) -> set[int]:
        """Host pids of every idle warm sandbox (for tests: nothing else may remain)."""
        with self._lock:
            return set().union(*(z.pids() for z in self._all)) if self._all else set()

    def close(self) -> None:
        with self._lock:
            for zygote in self._all:
                zygote.kill()
            self._idle, self._all = [], []
