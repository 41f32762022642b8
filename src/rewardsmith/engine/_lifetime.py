"""Process lifetime: reward workers die with the engine, and a forked child starts afresh.

Workers are forked by multiprocessing's fork server, a process the engine starts once. Two
things keep them from outliving the engine:

- each worker asks the kernel for SIGKILL when its parent, the fork server, dies
  (`PR_SET_PDEATHSIG`: nothing to catch, and it works while the worker is stuck in C code
  that holds the GIL, where a watching thread would never run);
- the fork server exits when the "alive" pipe it watches reports end of file, that is when
  every process holding the pipe's write end has gone. The engine holds one; multiprocessing
  also hands one to every worker, so a hung worker would keep the fork server, and so
  itself, alive forever: each worker closes its copy as it starts.

So a `kill -9` of the engine closes its end of the pipe, the fork server exits, and the
kernel kills every worker, hung or not.

A process forked from the engine's process (a data loader, verl's reward process pool)
inherits the parent's fork server bookkeeping: multiprocessing would then wait on a process
that is not its child (`ChildProcessError` in `forkserver.ensure_running`), and at exit
terminate the parent's workers as if they were its own. `_forget_parent_processes` runs in
every forked child and makes it start its own fork server and workers instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing.forkserver as forkserver
import multiprocessing.process as mp_process
import os
import signal
import sys
import threading
import weakref
from typing import Any

__all__ = ["die_with_parent", "track_worker"]

_PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal this process gets when its parent dies (Linux)."""

_WORKERS: weakref.WeakSet[Any] = weakref.WeakSet()
"""`multiprocessing.Process` objects of this process's reward workers."""


def track_worker(process: Any) -> None:
    """Remember a worker of this process, so that a forked child does not claim it."""
    _WORKERS.add(process)


def die_with_parent() -> None:
    """In a freshly started worker: be killed when the fork server dies, and let it die.

    Called first thing in the worker. If the fork server died before the signal was armed,
    the worker's parent is already someone else: it exits at once.
    """
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    server = forkserver._forkserver
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is not None:  # our copy would keep the fork server alive after the engine died
        with contextlib.suppress(OSError):
            os.close(alive)
        server._forkserver_alive_fd = None


def _forget_parent_processes() -> None:
    """In a forked child: the parent's fork server and workers are not ours."""
    server = forkserver._forkserver
    server._lock = threading.Lock()  # another thread of the parent may have held it
    alive = getattr(server, "_forkserver_alive_fd", None)
    if getattr(server, "_forkserver_pid", None) is not None and alive is not None:
        with contextlib.suppress(OSError):
            os.close(alive)  # the parent's fork server must end with the parent
        server._forkserver_address = None
        server._forkserver_alive_fd = None
        server._forkserver_pid = None
    for process in list(_WORKERS):  # else multiprocessing's exit handler would kill them
        mp_process._children.discard(process)
    _WORKERS.clear()


os.register_at_fork(after_in_child=_forget_parent_processes)
