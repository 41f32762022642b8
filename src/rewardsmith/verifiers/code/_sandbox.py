"""Run one Python program in a bubblewrap sandbox, under rlimits and a wall-clock timeout.

What a run gets (the `bwrap` backend):

* namespaces: user, mount, PID, network, IPC, UTS, cgroup (``--unshare-all --unshare-user``),
  no further user namespaces inside (``--disable-userns``), a new session (``--new-session``,
  no terminal injection), every capability dropped (``--cap-drop ALL``), uid/gid 65534;
* files: ``/usr`` (with the ``/bin``, ``/lib``, ``/lib64`` symlinks) and the interpreter's
  prefix, read-only; a fresh ``/proc`` (own PID namespace only) and a minimal ``/dev``; a
  size-capped private tmpfs at ``/tmp``, the only writable place. Nothing else of the host
  (no ``/etc``, ``/home``, ``/root``, ``/work``, host ``/tmp``) exists inside;
* no network at all: a private network namespace with only its own loopback;
* rlimits: CPU seconds, address space, processes, file size, open files;
* a wall-clock timeout after which the whole process group is SIGKILLed; when bwrap's
  outermost process dies, ``--die-with-parent`` and the PID namespace take every sandboxed
  process with it, and if the engine worker that started bwrap is killed, bwrap dies too.

When the caller is root, RLIMIT_NPROC would not bind (the kernel exempts uid 0) and the
sandbox's processes would be host root without capabilities. So a root caller first drops to
an unprivileged host uid of its own (`_host_uid`, one per worker process so that concurrent
sandboxes do not share a process count), after bind-mounting the interpreter's prefix in a
private mount namespace where that uid can reach it.

Backend `none` runs the same program as a plain subprocess with the same rlimits and timeout:
no isolation of files, network or processes. Only for trusted code; the reward warns loudly.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BWRAP_MISSING",
    "Limits",
    "RunResult",
    "SandboxUnavailable",
    "bwrap_path",
    "run_python",
    "site_packages",
]

BWRAP_MISSING = (
    "bubblewrap (bwrap) is not installed or not on PATH: install it (Debian/Ubuntu: "
    "`apt-get install bubblewrap`) or, only for trusted code, set `sandbox: none` in the spec"
)
"""The message of the `error` score every sample gets when bwrap is missing."""

_TAIL_BYTES = 2_000
"""Length kept of stdout/stderr for `detail`."""
_READ_CHUNK = 65_536
_DRAIN_AFTER_EXIT_S = 1.0
"""How long to wait for pipes to close once the sandbox's outer process has exited."""
_SANDBOX_UID = 65534
"""uid/gid inside the sandbox (nobody)."""
_HOST_UID_BASE = 1_500_000
"""A root caller runs sandboxes as host uid `_HOST_UID_BASE + pid % _HOST_UID_SPAN`: an
unprivileged uid no account uses, one per worker process."""
_HOST_UID_SPAN = 100_000
_OWN_PROCESSES = 4
"""Processes of the sandbox itself (bwrap's outer process, its init, a nested-userns helper,
the interpreter), counted by RLIMIT_NPROC on top of `Limits.max_processes`."""
_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/tmp"}


class SandboxUnavailable(RuntimeError):
    """The sandbox could not be started (missing bwrap, no user namespaces...)."""


@dataclass(frozen=True)
class Limits:
    """What one execution may use."""

    timeout_s: float = 3.0
    """Wall clock, from start to SIGKILL of the process group."""
    cpu_s: int = 5
    """RLIMIT_CPU of each process (the wall clock usually strikes first)."""
    memory_mb: int = 1024
    """RLIMIT_AS (address space) of each process, in MiB."""
    max_processes: int = 32
    """RLIMIT_NPROC, beyond the sandbox's own processes."""
    max_file_mb: int = 16
    """RLIMIT_FSIZE: largest file a process may write, in MiB."""
    max_open_files: int = 64
    """RLIMIT_NOFILE."""
    max_output_bytes: int = 1_000_000
    """stdout and stderr each; the rest is read and discarded."""
    tmpfs_mb: int = 64
    """Size of the private writable /tmp."""


@dataclass
class RunResult:
    """What came out of one execution."""

    exit_code: int | None = None
    """The interpreter's exit status; negative for a signal; None when killed at timeout."""
    timed_out: bool = False
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    channel: bytes = b""
    """Everything written to the harness's result pipe."""
    duration_s: float = 0.0
    extra: dict[str, object] = field(default_factory=dict)


def bwrap_path() -> str | None:
    """Where bwrap is, or None."""
    return shutil.which("bwrap")


# -- root: private mount namespace + unprivileged host uid ---------------------------------

_CLONE_NEWNS = 0x00020000
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_libc: ctypes.CDLL | None = None


def _load_libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


_HOST_UID_SLOTS = 16
"""Host uids per worker process: slot 0 for cold runs and the first warm sandbox, one more
per concurrent warm sandbox (`_zygote`)."""


def _host_uid(slot: int = 0) -> int:
    """The unprivileged host uid a root caller's sandboxes run as (per process and slot)."""
    per_process = _HOST_UID_SPAN // _HOST_UID_SLOTS
    return _HOST_UID_BASE + (os.getpid() % per_process) * _HOST_UID_SLOTS + slot % _HOST_UID_SLOTS


def _own_task_count(uid: int) -> int:
    """Tasks (threads) the uid runs now: RLIMIT_NPROC counts them all."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Threads:"):
                        count += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
    return count


# -- the command line ------------------------------------------------------------------------


def site_packages(python: str) -> list[str]:
    """The interpreter's site-packages directories (put on `sys.path` without `.pth` hooks)."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        import site

        return [p for p in site.getsitepackages() if os.path.isdir(p)]
    out = subprocess.run(
        [python, "-I", "-c", "import site;print(chr(10).join(site.getsitepackages()))"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return [p for p in out.splitlines() if os.path.isdir(p)]


def _python_binds(python: str) -> list[str]:
    """Directories outside /usr that the interpreter needs (its prefix, a venv's base)."""
    python = os.path.realpath(python)
    if python == os.path.realpath(sys.executable):
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    else:
        out = subprocess.run(
            [python, "-I", "-c", "import sys;print(sys.prefix);print(sys.base_prefix)"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
        prefixes = set(out)
    prefixes.add(str(Path(python).parent.parent))
    dirs = sorted({os.path.realpath(p) for p in prefixes})
    outside = [d for d in dirs if not (d == "/usr" or d.startswith("/usr/"))]
    return [d for d in outside if not any(d.startswith(o + "/") for o in outside if o != d)]


@dataclass(frozen=True)
class _Plan:
    """How to start bwrap (computed once per reward)."""

    argv_prefix: tuple[str, ...]
    binds: tuple[str, ...]
    as_root: bool
    python: str


def plan_bwrap(python: str, limits: Limits) -> _Plan:
    """The bwrap command line up to the interpreter, for `python`."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable(BWRAP_MISSING)
    python = os.path.realpath(python)
    try:
        binds = _python_binds(python)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"cannot query the interpreter {python!r}: {exc}") from exc
    hidden = [d for d in binds if d == "/tmp" or d.startswith("/tmp/")]
    if hidden:
        raise SandboxUnavailable(
            f"the interpreter's files are under /tmp ({hidden[0]}), which every sandbox "
            "replaces with its own private /tmp; use a Python installed elsewhere (a virtual "
            "environment outside /tmp, or the `python` parameter)"
        )
    as_root = os.geteuid() == 0
    argv = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(_SANDBOX_UID),
        "--gid",
        str(_SANDBOX_UID),
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for link in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{link}"):
            argv += ["--symlink", os.readlink(f"/{link}"), f"/{link}"]
        elif os.path.isdir(f"/{link}"):
            argv += ["--ro-bind", f"/{link}", f"/{link}"]
    for i, directory in enumerate(binds):
        source = f"/tmp/.rewardsmith-bind/{i}" if as_root else directory
        argv += ["--ro-bind", source, directory]
    argv += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(limits.tmpfs_mb * 1024 * 1024),
        "--tmpfs",
        "/tmp",
        "--chdir",
        "/tmp",
        "--",
    ]
    if as_root:
        _load_libc()
    return _Plan(tuple(argv), tuple(binds), as_root, python)


def _set_limits(limits: Limits, nproc: int) -> None:
    cpu = max(1, int(limits.cpu_s))
    memory = limits.memory_mb * 1024 * 1024
    fsize = limits.max_file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.max_open_files, limits.max_open_files))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _preexec(plan: _Plan | None, limits: Limits, nproc: int) -> None:
    """In the forked child, before exec: drop root (bwrap plans), then rlimits.

    Failures exit with a distinctive code: the parent reports them as infrastructure errors.
    """
    if plan is not None and plan.as_root:
        _preexec_root(plan, _host_uid())
    _set_limits(limits, nproc)


def _preexec_root(plan: _Plan, uid: int) -> None:
    """Root caller, in the forked child: stage the interpreter's prefix in a private mount
    namespace, then become the unprivileged host `uid`."""
    libc = _libc
    assert libc is not None
    if libc.unshare(_CLONE_NEWNS) != 0:
        os._exit(121)
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        os._exit(122)
    if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, b"size=64k,mode=755") != 0:
        os._exit(123)
    os.mkdir("/tmp/.rewardsmith-bind", 0o755)
    for i, directory in enumerate(plan.binds):
        target = f"/tmp/.rewardsmith-bind/{i}".encode()
        os.mkdir(target, 0o755)
        if libc.mount(directory.encode(), target, None, _MS_BIND | _MS_REC, None) != 0:
            os._exit(124)
    os.setgroups([])
    os.setresgid(_SANDBOX_UID, _SANDBOX_UID, _SANDBOX_UID)
    os.setresuid(uid, uid, uid)


_PREEXEC_FAILURES = {
    121: "unshare(CLONE_NEWNS) failed",
    122: "making mounts private failed",
    123: "mounting the bind staging tmpfs failed",
    124: "bind-mounting the interpreter prefix failed",
}


# -- running -------------------------------------------------------------------------------


class _Capped:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > max(room, 0):
            self.truncated = True


def run_python(
    plan: _Plan | None,
    python: str,
    code: str,
    *,
    config: bytes,
    stdin: bytes,
    limits: Limits,
) -> RunResult:
    """Run ``python -I -S -B -c code CFG_FD RESULT_FD`` in the sandbox (`plan`; None = none).

    ``-S``: no `site` (its ``.pth`` hooks cost tens of milliseconds per start); the harness
    puts the interpreter's site-packages on `sys.path` itself (`site_packages`).

    `config` is readable on fd CFG_FD (a memfd), `stdin` is the program's standard input (a
    memfd), RESULT_FD is the write end of a pipe whose content comes back as `channel`.
    Raises `SandboxUnavailable` when the process could not even be started.
    """
    cfg_fd = _memfd("rewardsmith-config", config)
    in_fd = _memfd("rewardsmith-stdin", stdin)
    res_r, res_w = os.pipe()
    os.set_inheritable(cfg_fd, True)
    os.set_inheritable(res_w, True)
    argv = [*(plan.argv_prefix if plan else ()), python, "-I", "-S", "-B", "-c", code]
    argv += [str(cfg_fd), str(res_w)]
    if plan is None or plan.as_root:
        nproc = limits.max_processes + _OWN_PROCESSES
    else:
        nproc = limits.max_processes + _OWN_PROCESSES + _own_task_count(os.getuid())
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=in_fd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(cfg_fd, res_w),
            start_new_session=True,
            preexec_fn=lambda: _preexec(plan, limits, nproc),
            env=_ENV,
        )
    except OSError as exc:
        raise SandboxUnavailable(f"could not start {argv[0]}: {exc}") from exc
    finally:
        os.close(cfg_fd)
        os.close(in_fd)
        os.close(res_w)
    try:
        result = _collect(proc, res_r, limits, started)
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        os.close(res_r)
    if result.exit_code in _PREEXEC_FAILURES and not result.channel:
        raise SandboxUnavailable(f"sandbox setup: {_PREEXEC_FAILURES[result.exit_code]}")
    return result


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _collect(
    proc: subprocess.Popen[bytes], res_r: int, limits: Limits, started: float
) -> RunResult:
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Capped(limits.max_output_bytes), _Capped(limits.max_output_bytes)
    channel = _Capped(limits.max_output_bytes)
    sinks = {proc.stdout.fileno(): out, proc.stderr.fileno(): err, res_r: channel}
    pidfd = os.pidfd_open(proc.pid)
    deadline = started + limits.timeout_s
    timed_out = False
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in sinks:
            selector.register(fd, selectors.EVENT_READ)
        selector.register(pidfd, selectors.EVENT_READ)
        try:
            while len(selector.get_map()) > (0 if exited_at is not None else 1):
                now = time.monotonic()
                if exited_at is None and now >= deadline:
                    timed_out = True
                    _kill_group(proc)
                    exited_at = now
                if exited_at is not None and now - exited_at > _DRAIN_AFTER_EXIT_S:
                    break  # a pipe held open by something that survived: give up on it
                wait = (deadline if exited_at is None else exited_at + _DRAIN_AFTER_EXIT_S) - now
                for key, _ in selector.select(timeout=max(wait, 0.0)):
                    if key.fd == pidfd:
                        selector.unregister(pidfd)
                        exited_at = time.monotonic()
                        continue
                    chunk = os.read(key.fd, _READ_CHUNK)
                    if chunk:
                        sinks[key.fd].feed(chunk)
                    else:
                        selector.unregister(key.fd)
        finally:
            os.close(pidfd)
    _kill_group(proc)
    code = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return RunResult(
        exit_code=None if timed_out else code,
        timed_out=timed_out,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        channel=bytes(channel.data),
        duration_s=time.monotonic() - started,
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group bwrap leads (bwrap's death takes the sandbox with it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def tail(data: bytes, limit: int = _TAIL_BYTES) -> str:
    """The last `limit` bytes of output, decoded leniently."""
    text = data[-limit:].decode("utf-8", errors="replace")
    return ("..." + text) if len(data) > limit else text
