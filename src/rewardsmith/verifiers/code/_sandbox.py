"""The sandbox's outer layer: bubblewrap's command line, the host uid, limits, the memory rule.

What every sandbox gets (the `bwrap` backend; `_runtime` then gives each run more):

* namespaces: user, mount, PID, network, IPC, UTS, cgroup (``--unshare-all --unshare-user``),
  no further user namespaces inside (``--disable-userns``), a new session (``--new-session``,
  no terminal injection), every capability dropped (``--cap-drop ALL``) outside its own
  user namespace;
* files: ``/usr`` (with the ``/bin``, ``/lib``, ``/lib64`` symlinks) and the interpreter's
  directories, read-only; a fresh ``/proc`` and a minimal ``/dev``; a size-capped private
  tmpfs at ``/tmp``, the only writable place. An interpreter under ``/tmp`` (a virtual
  environment there) is bound read-only on top of that private ``/tmp``. Nothing else of the
  host (no ``/etc``, ``/home``, ``/root``, ``/work``, host ``/tmp``) exists inside;
* no network at all: a private network namespace with only its own loopback;
* rlimits (`Limits`), and a wall-clock timeout enforced by killing the run.

When the caller is root, RLIMIT_NPROC would not bind (the kernel exempts uid 0) and the
sandbox's processes would be host root without capabilities. So a root caller first drops to
an unprivileged host uid of its own (`host_uid`, one per worker process and slot so that
concurrent sandboxes do not share a process count), after bind-mounting the interpreter's
directories in a private mount namespace where that uid can reach them.

Memory (`memory_rule`). A sample's processes share one budget, `Limits.memory_mb`. The
kernel can only hold that for a group of processes with a cgroup; rewardsmith does not
create cgroups (see the function for why, and what it says at start), so a sample is held to
**one process**: the seccomp filter refuses new processes (threads remain allowed), and that
process's address space is limited to the budget less its private ``/tmp`` and
``/dev/shm``, which are memory too. Anonymous memory files, SysV shared memory and message
queues, which an address-space limit does not see, are refused by the filter.

Backend `none` runs the same processes without any of this: no isolation of files, network
or processes, no filter. Only for trusted code; the reward warns loudly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BWRAP_MISSING",
    "SHM_MB",
    "TMPFS_INODES",
    "Capped",
    "Limits",
    "RunResult",
    "SandboxUnavailable",
    "bwrap_path",
    "host_uid",
    "memfd",
    "memory_rule",
    "plan_bwrap",
    "plan_plain",
    "site_packages",
    "tail",
]

BWRAP_MISSING = (
    "bubblewrap (bwrap) is not installed or not on PATH: install it (Debian/Ubuntu: "
    "`apt-get install bubblewrap`) or, only for trusted code, set `sandbox: none` in the spec"
)
"""The message of the `error` score every sample gets when bwrap is missing."""

_TAIL_BYTES = 2_000
"""Length kept of stdout/stderr for `detail`."""
_SANDBOX_UID = 65534
"""uid/gid of the sandbox outside the runs' own user namespace (nobody)."""
_HOST_UID_BASE = 1_500_000
"""A root caller runs sandboxes as host uid `_HOST_UID_BASE + pid % _HOST_UID_SPAN`: an
unprivileged uid no account uses, one per worker process."""
_HOST_UID_SPAN = 100_000
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/tmp"}
"""The environment of every sandboxed process."""
SHM_MB = 4
"""Size of a run's private ``/dev/shm``."""
TMPFS_INODES = 1024
"""Files, directories and links each private tmpfs (``/tmp``, ``/dev/shm``) of a run may
hold (``nr_inodes``). Inodes and extended attributes are kernel memory that neither the
tmpfs size nor RLIMIT_AS counts; tmpfs bounds both by this count (1 KiB of "inode space"
each), so they are counted in the budget (`Limits.candidate_address_space`)."""
_INODE_SPACE = 2 * 1024
"""Kernel memory charged to the budget per inode of a private tmpfs: the kernel's 1 KiB
of inode space, doubled (its slab allocations round up)."""


class SandboxUnavailable(RuntimeError):
    """The sandbox could not be started (missing bwrap, no user namespaces...)."""


@dataclass(frozen=True)
class Limits:
    """What one execution may use."""

    timeout_s: float = 3.0
    """Wall clock, from start to SIGKILL of the run."""
    cpu_s: int = 5
    """RLIMIT_CPU of each process (the wall clock usually strikes first)."""
    memory_mb: int = 1024
    """The sample's memory budget, in MiB (see `memory_rule`)."""
    max_processes: int = 32
    """RLIMIT_NPROC (tasks: processes and threads), beyond the sandbox's own processes."""
    max_file_mb: int = 16
    """RLIMIT_FSIZE: largest file a process may write, in MiB."""
    max_open_files: int = 64
    """RLIMIT_NOFILE."""
    max_output_bytes: int = 1_000_000
    """stdout and stderr each; the rest is read and discarded."""
    tmpfs_mb: int = 64
    """Largest private writable /tmp (at most an eighth of `memory_mb`)."""

    @property
    def tmp_bytes(self) -> int:
        """Size of a run's private /tmp."""
        return min(self.tmpfs_mb, self.memory_mb // 8) * 1024 * 1024

    @property
    def candidate_address_space(self) -> int:
        """RLIMIT_AS of the candidate's process: the budget less its /tmp and /dev/shm (their
        blocks and their inodes)."""
        inodes = 2 * TMPFS_INODES * _INODE_SPACE
        return self.memory_mb * 1024 * 1024 - self.tmp_bytes - SHM_MB * 1024 * 1024 - inodes


@dataclass
class RunResult:
    """What came out of one execution."""

    exit_code: int | None = None
    """The candidate process's exit status; negative for a signal; None when it was killed
    (timeout, or still running when the tests were done)."""
    timed_out: bool = False
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    channel: bytes = b""
    """Everything written to the verdict pipe."""
    duration_s: float = 0.0
    tampered: str | None = None
    """Why the backend's own report of the run cannot be trusted (the remote wrapper's line
    without the run's token): the sample scores 0, as for a tampered verdict pipe."""
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


def host_uid(slot: int = 0) -> int:
    """The unprivileged host uid a root caller's sandboxes run as (per process and slot)."""
    per_process = _HOST_UID_SPAN // _HOST_UID_SLOTS
    return _HOST_UID_BASE + (os.getpid() % per_process) * _HOST_UID_SLOTS + slot % _HOST_UID_SLOTS


def own_task_count(uid: int) -> int:
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


# -- memory ------------------------------------------------------------------------------------


def memory_rule(filtered: bool = True) -> str:
    """How a sample's memory is held, with the machine's cgroup facts: said once at start.
    `filtered`: whether the seccomp filter (which refuses new processes) exists here.

    Holding several processes to one budget takes a cgroup (v2 ``memory.max``): creating one
    per run needs a delegated cgroup v2 subtree with the memory and pids controllers, which
    rewardsmith does not set up. So every machine gets the one-process rule (module
    docstring); this says so, and what this machine offers.
    """
    controllers = ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            mounts = [line.split() for line in f]
        for fields in mounts:
            if " - cgroup2 " in " ".join(fields):
                path = os.path.join(fields[4], "cgroup.controllers")
                with open(path, encoding="utf-8") as f:
                    controllers = f.read()
                break
        else:
            controllers = "(no cgroup v2 mount)"
    except OSError:
        controllers = "(cgroup v2 unreadable)"
    if "memory" in controllers.split():
        fact = "cgroup v2 offers a memory controller here, but rewardsmith creates no cgroups"
    else:
        fact = f"cgroup v2 controllers here: {controllers.strip() or 'none'}"
    if not filtered:
        return (
            "NO seccomp filter on this machine (only x86-64 has one), so new processes are "
            "NOT refused: memory_mb limits each process's address space, not the sample; "
            f"no per-sample cgroup ({fact})"
        )
    return (
        "one process per sample: new processes are refused (threads are allowed), the "
        "process's address space is limited to memory_mb less its private /tmp and /dev/shm; "
        f"no per-sample cgroup ({fact})"
    )


# -- the command line ------------------------------------------------------------------------


def site_packages(python: str) -> list[str]:
    """The interpreter's site-packages directories (put on `sys.path` without `.pth` hooks)."""
    if os.path.abspath(python) == os.path.abspath(sys.executable):
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
    """Directories outside /usr that the interpreter needs (its prefixes, a venv's base, the
    directory above its real executable's). Paths are resolved first: ``/bin/python3`` on a
    merged-/usr system is ``/usr/bin/python3``, not a reason to bind ``/``. A prefix that is
    the host's root is refused (it would put the whole host in the sandbox)."""
    if os.path.abspath(python) == os.path.abspath(sys.executable):
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
    prefixes.add(str(Path(os.path.realpath(python)).parent.parent))
    dirs = sorted({os.path.realpath(p) for p in prefixes})
    if "/" in dirs:
        raise SandboxUnavailable(f"the interpreter {python!r} has the host's root as a prefix")
    outside = [d for d in dirs if not (d == "/usr" or d.startswith("/usr/"))]
    return [d for d in outside if not any(d.startswith(o + "/") for o in outside if o != d)]


@dataclass(frozen=True)
class _Plan:
    """How to start a sandbox (computed once per reward)."""

    argv_prefix: tuple[str, ...]
    """bwrap's command line up to the interpreter (empty: no sandbox, `sandbox: none`)."""
    binds: tuple[str, ...]
    """Directories outside /usr that the interpreter needs, bound read-only."""
    as_root: bool
    python: str
    isolate: bool = True
    tmp_binds: tuple[tuple[str, str], ...] = ()
    """(where the sandbox keeps it, where it belongs) for each of `binds` under /tmp: every
    run mounts its own /tmp, then binds these back, read-only."""


_STAGED = "/.rewardsmith/python"
"""Where the sandbox also keeps the interpreter's directories that live under /tmp."""


def plan_plain(python: str) -> _Plan:
    """No sandbox (`sandbox: none`): the same processes, without namespaces or filter."""
    return _Plan((), (), False, os.path.realpath(python), isolate=False)


def plan_bwrap(python: str, limits: Limits) -> _Plan:
    """The bwrap command line up to the interpreter, for `python`."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable(BWRAP_MISSING)
    try:
        binds = _python_binds(python)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"cannot query the interpreter {python!r}: {exc}") from exc
    python = os.path.realpath(python)
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
    argv += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(limits.tmpfs_mb * 1024 * 1024),
        "--tmpfs",
        "/tmp",
    ]
    tmp_binds = []
    for i, directory in enumerate(binds):
        source = f"{_ROOT_STAGING}/{i}" if as_root else directory
        argv += ["--ro-bind", source, directory]  # after the tmpfs: on top of it if under /tmp
        if directory == "/tmp" or directory.startswith("/tmp/"):
            staged = f"{_STAGED}/{i}"
            argv += ["--ro-bind", source, staged]
            tmp_binds.append((staged, directory))
    argv += ["--chdir", "/tmp", "--"]
    if as_root:
        _load_libc()
    return _Plan(tuple(argv), tuple(binds), as_root, python, True, tuple(tmp_binds))


_ROOT_STAGING = "/tmp/.rewardsmith-bind"
"""Root callers: where the interpreter's directories are bound, in a private mount
namespace, for the unprivileged sandbox uid to reach them."""


def preexec_root(plan: _Plan, uid: int) -> None:
    """Root caller, in the forked child: stage the interpreter's directories in a private
    mount namespace, then become the unprivileged host `uid`.

    The directories are opened before the staging tmpfs covers /tmp (an interpreter may live
    there) and bound from their descriptors. Failures exit with a code of
    `PREEXEC_FAILURES`."""
    libc = _libc
    assert libc is not None
    if libc.unshare(_CLONE_NEWNS) != 0:
        os._exit(121)
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        os._exit(122)
    held = [os.open(d, os.O_PATH | os.O_DIRECTORY) for d in plan.binds]
    if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, b"size=64k,mode=755") != 0:
        os._exit(123)
    os.mkdir(_ROOT_STAGING, 0o755)
    for i, fd in enumerate(held):
        target = f"{_ROOT_STAGING}/{i}".encode()
        os.mkdir(target, 0o755)
        source = f"/proc/self/fd/{fd}".encode()
        if libc.mount(source, target, None, _MS_BIND | _MS_REC, None) != 0:
            os._exit(124)
        os.close(fd)
    os.setgroups([])
    os.setresgid(_SANDBOX_UID, _SANDBOX_UID, _SANDBOX_UID)
    os.setresuid(uid, uid, uid)


PREEXEC_FAILURES = {
    121: "unshare(CLONE_NEWNS) failed",
    122: "making mounts private failed",
    123: "mounting the bind staging tmpfs failed",
    124: "bind-mounting the interpreter prefix failed",
}


# -- output ---------------------------------------------------------------------------------


class Capped:
    """A byte sink that keeps the first `cap` bytes and says whether it dropped any."""

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


def memfd(name: str, data: bytes) -> int:
    """A memory file holding `data`, to be read from its start."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def tail(data: bytes, limit: int = _TAIL_BYTES) -> str:
    """The last `limit` bytes of output, decoded leniently."""
    text = data[-limit:].decode("utf-8", errors="replace")
    return ("..." + text) if len(data) > limit else text
