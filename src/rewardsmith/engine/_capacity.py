"""How many workers a pool starts: a fair share of the node's cores.

Trainers run many reward processes per node (verl starts several reward actors, each loading
the reward function; a multi-GPU TRL job has one trainer process per GPU). If every one of
them started one worker per core, 8 actors on 2 cores would run 16 workers and 8 fork
servers. So each process that may score registers itself in a node-wide folder, and a pool
whose size nobody chose takes ``cores // processes registered`` workers (at least one).

- `cores` is what this process may really use: its CPU affinity, capped by the container's
  CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`).
- A process registers when it builds an `Engine` or loads a trainer adapter, before any pool
  starts, so processes that start together see each other. It holds an exclusive `flock` on
  its file for as long as it lives: the kernel releases it when the process dies, however it
  dies, so a file whose lock can be taken belongs to a dead process and is removed.
- `REWARDSMITH_WORKERS` (or an explicit `workers=`) overrides the share.

A share is taken when a pool starts; a pool does not shrink when other processes register
later.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import tempfile
import threading
from pathlib import Path

__all__ = ["WORKERS_ENV", "default_workers", "node_cores", "register_process", "worker_count"]

WORKERS_ENV = "REWARDSMITH_WORKERS"
"""Environment variable: worker processes per pool, instead of the node share."""

_CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
_CGROUP_V1 = Path("/sys/fs/cgroup/cpu")
"""cgroup v1: `cpu.cfs_quota_us` over `cpu.cfs_period_us`."""

_lock = threading.Lock()
_registration: tuple[int, int] | None = None
"""(pid, fd holding the lock) of this process's registration."""


def _folder() -> Path:
    """The node-wide registry: node-local shared memory when there is one."""
    base = Path("/dev/shm") if os.path.isdir("/dev/shm") else Path(tempfile.gettempdir())
    return base / f"rewardsmith-{os.getuid() if hasattr(os, 'getuid') else 'user'}"


def _quota() -> float | None:
    """CPUs allowed by the container's CPU quota, if it sets one."""
    try:
        quota, period = _CGROUP_V2.read_text().split()[:2]
        if quota != "max":
            return int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((_CGROUP_V1 / "cpu.cfs_quota_us").read_text())
        period_us = int((_CGROUP_V1 / "cpu.cfs_period_us").read_text())
        if quota_us > 0 and period_us > 0:
            return quota_us / period_us
    except (OSError, ValueError):
        pass
    return None


def node_cores() -> int:
    """Cores this process may use: its affinity, capped by the CPU quota (at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = _quota()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def register_process() -> None:
    """Count this process among the node's reward processes (once; a no-op afterwards)."""
    global _registration
    with _lock:
        if _registration is not None and _registration[0] == os.getpid():
            return
        folder = _folder()
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(folder / f"{os.getpid()}", os.O_CREAT | os.O_RDWR, 0o600)
        except OSError:  # no shared folder: every process counts alone
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # still held through a descriptor a dead process's child inherited
            os.close(fd)
            return
        _registration = (os.getpid(), fd)


def _live_processes() -> int:
    """Registered processes still alive (this one included); removes the dead ones' files."""
    folder = _folder()
    try:
        names = os.listdir(folder)
    except OSError:
        return 1
    live = 0
    for name in names:
        path = folder / name
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            live += 1  # its owner holds the lock: alive
        else:
            with contextlib.suppress(OSError):
                path.unlink()
        finally:
            os.close(fd)
    return max(1, live)


def default_workers() -> int:
    """Workers for a pool whose size was not given: `REWARDSMITH_WORKERS`, else the share."""
    chosen = os.environ.get(WORKERS_ENV)
    if chosen:
        return worker_count(chosen, WORKERS_ENV)
    register_process()
    return max(1, node_cores() // _live_processes())


def worker_count(value: object, what: str = "workers") -> int:
    """`value` as a number of workers (a whole number >= 1), else ValueError naming `what`."""
    try:
        count = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise ValueError(f"{what} must be a whole number, got {value!r}") from None
    if isinstance(count, bool) or count < 1:
        raise ValueError(f"{what} must be at least 1, got {value!r}")
    return count


def _forget_parent_registration() -> None:
    """In a forked child: the parent's lock is the parent's (closing our copy keeps it held)."""
    global _registration, _lock
    _lock = threading.Lock()
    if _registration is not None:
        with contextlib.suppress(OSError):
            os.close(_registration[1])
        _registration = None


os.register_at_fork(after_in_child=_forget_parent_registration)
