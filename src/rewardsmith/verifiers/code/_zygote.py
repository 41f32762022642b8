"""A warm sandbox: one bwrap + a preloaded interpreter (the zygote) forks one child per run.

Starting bwrap and a fresh interpreter costs ~30 ms per execution; most of it is the
interpreter. A zygote pays it once per engine worker (per concurrent slot), then each run
costs a few forks and a handful of mounts (~3 ms).

Layout. The zygote runs inside bwrap with the same filesystem view, rlimits and host uid
switch as a cold run (`_sandbox.plan_bwrap`), except that it is uid 0 *of its own user
namespace* and keeps that namespace's capabilities (they grant nothing outside it): it needs
them to give every run namespaces of its own. Per run:

* ``A`` (forked by the zygote) unshares a mount, PID, IPC and network namespace; makes the
  sandbox root and ``/dev`` read-only; mounts a fresh size-capped tmpfs on ``/tmp`` and on
  ``/dev/shm`` (the only writable places; they vanish with the run); brings up a loopback of
  its own; forks ``B`` and exits.
* ``B`` is PID 1 of the run's PID namespace: it mounts a ``/proc`` that shows only the run's
  processes, forks ``C`` and reaps until ``C`` exits, then exits with ``C``'s status. When
  PID 1 of a namespace exits, the kernel SIGKILLs every other process in it and waits for
  them before ``B`` can be reaped: a run never outlives its reaping, so no process of one
  run meets the next.
* ``C`` starts a new session, takes the run's stdin/stdout/stderr, closes every other
  descriptor but the harness's config memfd and result pipe (none of the zygote's), applies
  the run's rlimits, locks the securebits (no capabilities regained by uid 0 on exec), empties
  the bounding, ambient, permitted and effective capability sets, sets no_new_privs, checks
  that ``CapEff`` is 0 (else refuses to run), then executes the harness (`_harness.RUNNER`)
  in a fresh ``__main__`` and exits as the interpreter would.

What a run cannot reach: the zygote is outside its PID namespace (no signal, ptrace or
``/proc`` entry reaches it; it is also non-dumpable), holds none of its descriptors but the
ones passed in, and shares no writable filesystem, IPC object or network namespace with it.
The zygote enforces the wall clock (SIGKILL of ``B`` = the whole run) and reports the exit
status on a per-run status pipe the run never holds; the host keeps a backstop deadline and
discards a zygote that does not answer. The per-run token and the verdict channel are the
harness's, exactly as in a cold run.

Shared between consecutive runs of one zygote (as between cold runs of one worker): the host
uid (the kernel's per-uid state, e.g. the user keyring, and the RLIMIT_NPROC count) and the
interpreter's memory image (hash seed; `random` is reseeded per run).
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

from ._sandbox import (
    _DRAIN_AFTER_EXIT_S,
    _ENV,
    _READ_CHUNK,
    Limits,
    RunResult,
    SandboxUnavailable,
    _Capped,
    _host_uid,
    _memfd,
    _own_task_count,
    _Plan,
    _preexec_root,
)

__all__ = ["WarmPool"]

_OWN_PROCESSES = 5
"""Processes of a warm sandbox besides the program's own: bwrap's outer process, its init,
the zygote, the run's PID 1 (``B``) and the harness (``C``)."""
_BACKSTOP_S = 3.0
"""How long after the run's timeout the host waits for the zygote's report before it
discards the zygote."""
_START_TIMEOUT_S = 30.0

ZYGOTE = r"""
import os, sys, marshal, socket, select, signal, ctypes, builtins, types
for _m in ("re", "math", "collections", "itertools", "functools", "typing", "string",
           "heapq", "bisect", "hashlib", "random", "copy", "operator", "fractions",
           "decimal", "datetime", "statistics", "atexit", "struct", "fcntl"):
    try:
        __import__(_m)
    except ImportError:
        pass
import fcntl, struct, atexit
libc = ctypes.CDLL(None, use_errno=True)
NEWNS, NEWPID, NEWIPC, NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
KEEP_FLAGS = 2 | 4 | 8 | 1024 | 2048 | 4096  # nosuid nodev noexec noatime nodiratime relatime

def mount(src, target, fstype, flags, data):
    if libc.mount(src, target, fstype, flags, data) != 0:
        raise OSError(ctypes.get_errno(), "mount %s" % target.decode())

def remount_ro(path):
    flags = os.statvfs(path).f_flag & KEEP_FLAGS
    mount(None, path.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY | flags, None)

def loopback_up():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        req = struct.pack("16sh14x", b"lo", 0x1 | 0x40)  # IFF_UP | IFF_RUNNING
        fcntl.ioctl(s.fileno(), 0x8914, req)  # SIOCSIFFLAGS
    finally:
        s.close()

def close_all_but(keep):
    last = 2
    for fd in sorted(keep):
        if fd > last:
            os.closerange(last + 1, fd)
        last = max(last, fd)
    os.closerange(last + 1, 1 << 16)

def drop_capabilities():
    PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT, PR_SET_NO_NEW_PRIVS = 24, 28, 47, 38
    # noroot, no_setuid_fixup, keep_caps_locked, no_cap_ambient_raise: all locked.
    if libc.prctl(PR_SET_SECUREBITS, 0xEF, 0, 0, 0) != 0:
        os._exit(126)
    libc.prctl(PR_CAP_AMBIENT, 4, 0, 0, 0)  # clear all
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            os._exit(126)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(header, data) != 0:
        os._exit(126)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        os._exit(126)
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith((b"CapEff:", b"CapPrm:", b"CapBnd:", b"CapAmb:")):
                if int(line.split()[1], 16) != 0:
                    os._exit(126)

def exit_code(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1

def run_harness(req, cfg_fd, res_fd):
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    sys.argv = ["-c", str(cfg_fd), str(res_fd)]
    status = 0
    try:
        exec(compile(req["code"], "<string>", "exec"), main.__dict__)
    except SystemExit as e:
        status = exit_code(e.code)
    except BaseException:
        try:
            sys.__excepthook__(*sys.exc_info())
        except BaseException:
            pass
        status = 1
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status)

def harness(req, fds):
    # C: the run's program. A new session, its own descriptors only, rlimits, no capabilities.
    cfg_fd, in_fd, out_w, err_w, res_w = fds
    os.setsid()
    os.dup2(in_fd, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    close_all_but({0, 1, 2, cfg_fd, res_w})
    import resource
    for name, value in req["rlimits"]:
        resource.setrlimit(getattr(resource, name), (value, value))
    drop_capabilities()
    libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: the program's own /proc entries stay its own
    os.chdir("/tmp")
    if "random" in sys.modules:
        sys.modules["random"].seed()
    run_harness(req, cfg_fd, res_w)

def init(req, fds):
    # B: PID 1 of the run's PID namespace.
    try:
        mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    except OSError:
        os._exit(125)
    child = os.fork()
    if child == 0:
        try:
            harness(req, fds)
        finally:
            os._exit(127)
    for fd in fds:
        os.close(fd)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(127)
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)

def setup(req, fds, pid_w):
    # A: the run's namespaces and mounts.
    try:
        if libc.unshare(NEWNS | NEWPID | NEWIPC | NEWNET) != 0:
            os._exit(121)
        mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
        remount_ro("/")
        remount_ro("/dev")
        tmpfs = ("size=%d,mode=1777" % req["tmpfs"]).encode()
        mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, tmpfs)
        if os.path.isdir("/dev/shm"):
            mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, tmpfs)
        loopback_up()
    except OSError:
        os._exit(122)
    child = os.fork()
    if child == 0:
        os.close(pid_w)
        try:
            init(req, fds)
        finally:
            os._exit(127)
    os.write(pid_w, child.to_bytes(4, "little"))
    os._exit(0)

SETUP_FAILURES = {121: "unshare of the run's namespaces failed",
                  122: "mounting the run's filesystems failed"}

def serve(ctl):
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 1 << 20, 8)
        except OSError:
            return
        if not msg:
            return
        req = marshal.loads(msg)
        status_w, fds = fds[0], fds[1:]
        report = run_one(ctl, req, fds, status_w)
        try:
            os.write(status_w, marshal.dumps(report))
        except OSError:
            pass
        os.close(status_w)
        if report.get("stop"):
            return

def run_one(ctl, req, fds, status_w):
    pid_r, pid_w = os.pipe()
    started = select_time()
    a = os.fork()
    if a == 0:
        try:
            os.close(pid_r)
            os.close(status_w)
            os.close(ctl.fileno())
            setup(req, fds, pid_w)
        finally:
            os._exit(120)
    for fd in fds:
        os.close(fd)
    os.close(pid_w)
    data = b""
    while True:
        chunk = os.read(pid_r, 4)
        if not chunk:
            break
        data += chunk
    os.close(pid_r)
    _, status = os.waitpid(a, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0 or len(data) != 4:
        return {"error": SETUP_FAILURES.get(code, "run setup failed (status %d)" % code)}
    b = int.from_bytes(data, "little")
    pidfd = os.pidfd_open(b)
    deadline = started + req["timeout"]
    timed_out = stop = False
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(ctl.fileno(), select.POLLIN)
    while True:
        left = deadline - select_time()
        if left <= 0:
            timed_out = True
            break
        events = dict(poller.poll(left * 1000))
        if pidfd in events:
            break
        if ctl.fileno() in events:  # the host closed the control socket: stop
            stop = True
            break
    if timed_out or stop:
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass
    os.close(pidfd)
    _, status = os.waitpid(b, 0)  # B is ours: the zygote is a subreaper
    code = os.waitstatus_to_exitcode(status)
    return {"exit": code, "timed_out": timed_out, "stop": stop}

def select_time():
    return __import__("time").monotonic()

def zygote():
    ctl = socket.socket(fileno=int(sys.argv[1]))
    del sys.argv[1:]
    os.chdir("/")
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    ctl.sendall(b"ready")
    serve(ctl)
zygote()
"""
"""The zygote: ``python -I -S -B -c ZYGOTE <control socket fd>`` inside bwrap."""


def zygote_argv(plan: _Plan) -> list[str]:
    """The plan's bwrap command line, but uid 0 of the sandbox's user namespace with that
    namespace's capabilities (the runs drop them), and no ``--die-with-parent`` (it follows
    the starting *thread*; the zygote exits when the host's end of its control socket
    closes)."""
    argv = list(plan.argv_prefix)
    i = argv.index("--uid")
    argv[i : i + 4] = ["--uid", "0", "--gid", "0", "--cap-add", "ALL"]
    argv.remove("--die-with-parent")
    return argv


class _Zygote:
    """One warm sandbox: one run at a time."""

    def __init__(self, plan: _Plan, limits: Limits, slot: int) -> None:
        self.plan = plan
        self.limits = limits
        self.slot = slot
        self.uid = _host_uid(slot) if plan.as_root else os.getuid()
        host, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ctl = host
        fd = zygote_end.fileno()
        argv = [*zygote_argv(plan), plan.python, "-I", "-S", "-B", "-c", ZYGOTE, str(fd)]
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
                env=_ENV,
            )
        except OSError as exc:
            host.close()
            raise SandboxUnavailable(f"could not start {argv[0]}: {exc}") from exc
        finally:
            zygote_end.close()
        host.settimeout(_START_TIMEOUT_S)
        try:
            ready = host.recv(16)
        except OSError:
            ready = b""
        host.settimeout(None)
        if ready != b"ready":
            self.kill()
            err = self.proc.stderr.read(2000).decode(errors="replace") if self.proc.stderr else ""
            raise SandboxUnavailable(f"the warm sandbox did not start: {err.strip()[-500:]}")
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self._finalizer = weakref.finalize(self, _stop, host, self.proc)

    def _nproc(self) -> int:
        extra = 0 if self.plan.as_root else _own_task_count(os.getuid())
        return self.limits.max_processes + _OWN_PROCESSES + extra

    def _preexec(self, nproc: int) -> None:
        import resource

        if self.plan.as_root:
            _preexec_root(self.plan, self.uid)
        # The zygote and its preloaded modules need room of their own; each run's harness sets
        # the run's own address-space limit.
        memory = max(self.limits.memory_mb, 512) * 1024 * 1024
        fsize = self.limits.max_file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
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
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def pids(self) -> set[int]:
        """Host pids of the idle warm sandbox: bwrap, its init, the zygote (not deeper)."""
        found = {self.proc.pid}
        level = [self.proc.pid]
        for _ in range(2):
            level = [c for p in level for c in _children(p)]
            found.update(level)
        return found

    def run(self, code: str, config: bytes, stdin: bytes) -> RunResult:
        limits = self.limits
        cpu = max(1, int(limits.cpu_s))
        request = {
            "code": code,
            "timeout": limits.timeout_s,
            "tmpfs": limits.tmpfs_mb * 1024 * 1024,
            "rlimits": [
                ("RLIMIT_CPU", cpu),
                ("RLIMIT_AS", limits.memory_mb * 1024 * 1024),
                ("RLIMIT_FSIZE", limits.max_file_mb * 1024 * 1024),
                ("RLIMIT_NOFILE", limits.max_open_files),
                ("RLIMIT_NPROC", self._nproc()),
                ("RLIMIT_CORE", 0),
            ],
        }
        cfg_fd = _memfd("rewardsmith-config", config)
        in_fd = _memfd("rewardsmith-stdin", stdin)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        res_r, res_w = os.pipe()
        st_r, st_w = os.pipe()
        started = time.monotonic()
        try:
            socket.send_fds(
                self.ctl, [marshal.dumps(request)], [st_w, cfg_fd, in_fd, out_w, err_w, res_w]
            )
        except OSError as exc:
            for fd in (out_r, err_r, res_r, st_r):
                os.close(fd)
            raise _ZygoteDied(f"could not reach the warm sandbox: {exc}") from exc
        finally:
            for fd in (cfg_fd, in_fd, out_w, err_w, res_w, st_w):
                os.close(fd)
        try:
            return self._collect(out_r, err_r, res_r, st_r, started)
        finally:
            for fd in (out_r, err_r, res_r, st_r):
                os.close(fd)

    def _collect(self, out_r: int, err_r: int, res_r: int, st_r: int, started: float) -> RunResult:
        limits = self.limits
        out, err = _Capped(limits.max_output_bytes), _Capped(limits.max_output_bytes)
        channel, status = _Capped(limits.max_output_bytes), _Capped(4096)
        sinks = {out_r: out, err_r: err, res_r: channel, st_r: status}
        backstop = started + limits.timeout_s + _BACKSTOP_S
        exited_at: float | None = None
        with selectors.DefaultSelector() as selector:
            for fd in sinks:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                now = time.monotonic()
                if exited_at is None and now >= backstop:
                    break
                if exited_at is not None and now - exited_at > _DRAIN_AFTER_EXIT_S:
                    break
                wait = (backstop if exited_at is None else exited_at + _DRAIN_AFTER_EXIT_S) - now
                for key, _ in selector.select(timeout=max(wait, 0.0)):
                    chunk = os.read(key.fd, _READ_CHUNK)
                    if chunk:
                        sinks[key.fd].feed(chunk)
                        continue
                    selector.unregister(key.fd)
                    if key.fd == st_r:
                        exited_at = time.monotonic()
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
            if exited_at is None:  # no answer by the backstop: a hung zygote
                self.kill()
                result.timed_out = True
                result.extra["warm"] = "the warm sandbox did not answer; discarded"
                return result
            raise _ZygoteDied("the warm sandbox ended during a run")
        if "error" in report:
            raise SandboxUnavailable(f"warm sandbox: {report['error']}")
        result.timed_out = bool(report.get("timed_out"))
        result.exit_code = None if result.timed_out else report.get("exit")
        return result


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


class WarmPool:
    """Warm sandboxes of one engine worker: one per concurrent run, started on demand."""

    def __init__(self, plan: _Plan, limits: Limits) -> None:
        self.plan = plan
        self.limits = limits
        self._lock = threading.Lock()
        self._idle: list[_Zygote] = []
        self._all: list[_Zygote] = []
        self._owner = os.getpid()

    def _acquire(self) -> _Zygote:
        with self._lock:
            if self._owner != os.getpid():  # forked: the parent's zygotes are not ours
                self._idle, self._all, self._owner = [], [], os.getpid()
            while self._idle:
                zygote = self._idle.pop()
                if zygote.alive():
                    return zygote
                self._forget(zygote)
            used = {z.slot for z in self._all}
            slot = next(i for i in range(len(used) + 1) if i not in used)
        zygote = _Zygote(self.plan, self.limits, slot)
        with self._lock:
            self._all.append(zygote)
        return zygote

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

    def run(self, code: str, *, config: bytes, stdin: bytes) -> RunResult:
        """Run the harness `code` in a warm sandbox (same contract as `run_python`)."""
        for attempt in range(2):
            zygote = self._acquire()
            try:
                result = zygote.run(code, config, stdin)
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
