"""The seccomp filter of the sandboxed processes: system calls a test program never needs.

Assembled here as a classic BPF program (``struct sock_filter`` records) and installed by
each sandboxed process (`_runtime`) after it dropped its capabilities and set
``no_new_privs``, just before it runs any code of the dataset or the completion. The filter
first checks the audit architecture and the x32 bit: any other ABI (32-bit ``int 0x80``
calls, x32 numbers) kills the process (SIGSYS). Then:

* a number above `HIGHEST_KNOWN` (a system call newer than this table): ``ENOSYS``, as a
  kernel without it would say (the C library then falls back, as it does on older kernels);
* refused with ``EPERM``: every call in `DENIED` (debugging and reading other processes,
  kernel keyrings, mounts and namespaces, kernel modules, eBPF, perf, io_uring, SysV IPC and
  POSIX message queues, anonymous memory files, extended attributes, locked memory, the
  clock, swap, reboot, the writeback of every filesystem of the machine (``sync``) or of the
  whole filesystem holding a file, shared with other processes (``syncfs``)...), and the
  calls that test the page cache or drop from it without reading the file (`mincore`,
  `cachestat`, Linux AIO, `process_madvise`);
* refused with ``EPERM`` for some arguments only (`REFUSED_ARGUMENTS`): the page cache is
  shared by every process of the machine, sandboxed or not, and a run that could drop a
  read-only file's pages (``posix_fadvise(DONTNEED)``, ``madvise(MADV_PAGEOUT)``, a read with
  ``RWF_DONTCACHE``) and test whether they are cached without loading them (``preadv2`` with
  ``RWF_NOWAIT``) could rewrite a message for the next run at will. Without these a run can
  still load pages and a later run can still tell which are loaded (a read fault maps the
  cached neighbours of the page it loads, and ``/proc/self/pagemap`` shows them; or timing):
  bits no run can clear but any run can add to. The README states it as an open hole;
* ``socket`` and ``socketpair`` of any family but `SOCKET_FAMILIES` (Unix, IPv4, IPv6,
  netlink): ``EAFNOSUPPORT``. The run's network namespace leaves it only a loopback, but a
  namespace does not confine every family (``AF_VSOCK`` reaches the hypervisor from a VM);
* ``clone`` with any namespace flag: ``EPERM``; ``clone3``: ``ENOSYS`` (its flags are in
  memory a filter cannot read; the C library then falls back to ``clone``);
* when new processes are not allowed (no per-sample memory cgroup, see `_reward`):
  ``fork``, ``vfork`` and a ``clone`` without ``CLONE_THREAD``: ``EPERM``. Threads remain
  allowed: they share their process's address-space limit.

Only x86-64 has a table here; on other machines `program` returns None and the sandbox runs
without a filter, and so without the one-process memory rule: the reward says so in the log
and a warning when it starts, and in every score's `detail` (``seccomp: "none"``).
"""

from __future__ import annotations

import platform
import struct
from dataclasses import dataclass

__all__ = ["DENIED", "HIGHEST_KNOWN", "REFUSED_ARGUMENTS", "SOCKET_FAMILIES", "program"]

AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_CLONE, _FORK, _VFORK, _CLONE3 = 56, 57, 58, 435
_CLONE_THREAD = 0x00010000
_CLONE_NAMESPACES = 0x7E020080
"""NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME."""
_EPERM, _ENOSYS, _EAFNOSUPPORT = 1, 38, 97
HIGHEST_KNOWN = 469
"""The highest x86-64 system call number this table was written against (``file_setattr``,
Linux 6.17); newer ones get ``ENOSYS``."""
_SOCKET, _SOCKETPAIR = 41, 53
SOCKET_FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16}
"""The only socket families a sandboxed process may create."""

DENIED: dict[str, int] = {
    # other processes' memory and execution
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "pidfd_getfd": 438,
    "pidfd_open": 434,  # its inode number counts every task the machine ever created
    # kernel keyrings (per host uid: shared between runs without this)
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    # mounts, namespaces, file handles
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "open_tree_attr": 467,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    # memory outside the address-space limit (extended attributes: kernel memory on tmpfs)
    "setxattr": 188,
    "lsetxattr": 189,
    "fsetxattr": 190,
    "setxattrat": 463,
    "memfd_create": 319,
    "memfd_secret": 447,
    "userfaultfd": 323,
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "semtimedop": 220,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    # the kernel itself
    "bpf": 321,
    "perf_event_open": 298,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "quotactl": 179,
    "quotactl_fd": 443,
    "lookup_dcookie": 212,
    "syslog": 103,
    "iopl": 172,
    "ioperm": 173,
    "modify_ldt": 154,
    "uselib": 134,
    "vhangup": 153,
    "fanotify_init": 300,
    "_sysctl": 156,
    # the page cache, read or dropped without reading the file (see `REFUSED_ARGUMENTS`)
    "mincore": 27,
    "cachestat": 451,
    "process_madvise": 440,
    "io_setup": 206,
    "io_submit": 209,
    # locked memory: a machine-wide counter (`unevictable_pgs_mlocked`) a run could set
    "mlock": 149,
    "munlock": 150,
    "mlockall": 151,
    "munlockall": 152,
    "mlock2": 325,
    # writeback, in a sleep SIGKILL does not cut: of every filesystem of the machine (`sync`),
    # of the whole filesystem holding the fd, shared with other processes (`syncfs`)
    "sync": 162,
    "syncfs": 306,
    # the clock
    "settimeofday": 164,
    "clock_settime": 227,
    "clock_adjtime": 305,
    "adjtimex": 159,
}
"""Refused with EPERM (x86-64 numbers, from the kernel's ``unistd_64.h``)."""

_RWF_NOWAIT, _RWF_DONTCACHE = 0x08, 0x80
_POSIX_FADV_DONTNEED, _POSIX_FADV_NOREUSE = 4, 5
_MADV_COLD, _MADV_PAGEOUT = 20, 21


@dataclass(frozen=True)
class ArgumentRule:
    """A call refused with EPERM when its argument `arg` (its low 32 bits: every argument
    checked here is a C ``int`` to the kernel) is one of `values` or has a bit of `mask`."""

    number: int
    arg: int
    values: tuple[int, ...] = ()
    mask: int = 0


REFUSED_ARGUMENTS: dict[str, ArgumentRule] = {
    "preadv2": ArgumentRule(327, 5, mask=_RWF_NOWAIT | _RWF_DONTCACHE),
    "pwritev2": ArgumentRule(328, 5, mask=_RWF_NOWAIT | _RWF_DONTCACHE),
    "fadvise64": ArgumentRule(221, 3, values=(_POSIX_FADV_DONTNEED, _POSIX_FADV_NOREUSE)),
    "madvise": ArgumentRule(28, 2, values=(_MADV_COLD, _MADV_PAGEOUT)),
}
"""The page cache's probes and drops: the other uses of these calls stay allowed (the C
library's allocator needs ``madvise(MADV_DONTNEED)``, which drops a process's own mapping,
not the cache)."""

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGT, _JGE, _JSET = 0x15, 0x25, 0x35, 0x45  # BPF_JMP | BPF_{JEQ,JGT,JGE,JSET} | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_ALLOW = 0x7FFF0000
_NR, _ARCH, _ARG0 = 0, 4, 16
"""Offsets in ``struct seccomp_data``: syscall number, audit arch, low half of args[0] (each
argument takes 8 bytes)."""


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program(allow_fork: bool, machine: str | None = None) -> bytes | None:
    """The filter as ``struct sock_filter`` records, or None on an unsupported machine."""
    if (machine or platform.machine()) not in ("x86_64", "amd64", "AMD64"):
        return None
    deny = _insn(_RET, _ERRNO | _EPERM)
    code = [
        _insn(_LD_ABS, _ARCH),
        _insn(_JEQ, AUDIT_ARCH_X86_64, jt=1),
        _insn(_RET, _KILL_PROCESS),
        _insn(_LD_ABS, _NR),
        _insn(_JGE, _X32_BIT, jf=1),
        _insn(_RET, _KILL_PROCESS),
        _insn(_JGT, HIGHEST_KNOWN, jf=1),
        _insn(_RET, _ERRNO | _ENOSYS),
        _insn(_JEQ, _CLONE3, jf=1),
        _insn(_RET, _ERRNO | _ENOSYS),
    ]
    for number in sorted(set(DENIED.values())) + ([] if allow_fork else [_FORK, _VFORK]):
        code += [_insn(_JEQ, number, jf=1), deny]
    for rule in REFUSED_ARGUMENTS.values():
        block = _argument_block(rule)
        code += [_insn(_JEQ, rule.number, jf=len(block)), *block]
    families = sorted(SOCKET_FAMILIES.values())
    socket = [_insn(_LD_ABS, _ARG0)]
    for i, family in enumerate(families):
        socket.append(_insn(_JEQ, family, jt=len(families) - i))
    socket += [_insn(_RET, _ERRNO | _EAFNOSUPPORT), _insn(_RET, _ALLOW)]
    code += [_insn(_JEQ, _SOCKET, jt=1), _insn(_JEQ, _SOCKETPAIR, jf=len(socket)), *socket]
    clone = [_insn(_LD_ABS, _ARG0), _insn(_JSET, _CLONE_NAMESPACES, jf=1), deny]
    if not allow_fork:
        clone += [_insn(_JSET, _CLONE_THREAD, jt=1), deny]
    code += [_insn(_JEQ, _CLONE, jf=len(clone)), *clone, _insn(_RET, _ALLOW)]
    return b"".join(code)


def _argument_block(rule: ArgumentRule) -> list[bytes]:
    """Load the argument, refuse on a listed value or a masked bit, else allow."""
    tests = [(_JEQ, value) for value in rule.values] + ([(_JSET, rule.mask)] if rule.mask else [])
    block = [_insn(_LD_ABS, _ARG0 + 8 * rule.arg)]
    block += [_insn(op, k, jt=len(tests) - i) for i, (op, k) in enumerate(tests)]
    return [*block, _insn(_RET, _ALLOW), _insn(_RET, _ERRNO | _EPERM)]
