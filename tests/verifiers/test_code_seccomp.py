"""The seccomp filter's verdicts, table-driven: the BPF program `_seccomp.program` assembles,
run by a small interpreter of the classic BPF instructions it uses, on ``seccomp_data``
records (architecture, number, arguments). The sandbox rows (`test_redteam_code`,
`test_code_escape`) check the same filter installed in a real kernel; this table also covers
numbers this kernel does not have."""

from __future__ import annotations

import struct

import pytest

from rewardsmith.verifiers.code import _seccomp

X86_64, I386 = 0xC000003E, 0x40000003
KILL, ALLOW = "kill", "allow"
EPERM, ENOSYS, EAFNOSUPPORT = 1, 38, 97
CLONE_THREAD, CLONE_NEWUSER = 0x00010000, 0x10000000


def verdict(program: bytes, arch: int, nr: int, *args: int) -> str | int:
    """What the filter answers: "kill", "allow" or the errno (the arguments' low halves are
    what the filter reads; unnamed arguments are 0)."""
    data = {0: nr, 4: arch, **{16 + 8 * i: 0 for i in range(6)}}
    data.update({16 + 8 * i: a & 0xFFFFFFFF for i, a in enumerate(args)})
    insns = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # LD ABS
            acc, pc = data[k], pc + 1
        elif code in (0x15, 0x25, 0x35, 0x45):
            taken = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # RET
            if k == 0x80000000:
                return KILL
            if k == 0x7FFF0000:
                return ALLOW
            assert k & 0xFFFF0000 == 0x00050000, hex(k)
            return k & 0xFFFF
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


CASES = [
    # (what, arch, number, first argument, verdict without fork, verdict with fork)
    ("read", X86_64, 0, 0, ALLOW, ALLOW),
    ("a 32-bit ABI call", I386, 20, 0, KILL, KILL),
    ("an x32 call (getpid)", X86_64, 0x40000000 | 39, 0, KILL, KILL),
    ("file_setattr: the table's highest", X86_64, 469, 0, ALLOW, ALLOW),
    ("listns: newer than the table", X86_64, 470, 0, ENOSYS, ENOSYS),
    ("a number far above the table", X86_64, 0x3FFFFFFF, 0, ENOSYS, ENOSYS),
    ("open_tree_attr", X86_64, 467, 0, EPERM, EPERM),
    ("ptrace", X86_64, 101, 0, EPERM, EPERM),
    ("setxattr", X86_64, 188, 0, EPERM, EPERM),
    ("fsetxattr", X86_64, 190, 0, EPERM, EPERM),
    ("setxattrat", X86_64, 463, 0, EPERM, EPERM),
    ("getxattr (reading is harmless)", X86_64, 191, 0, ALLOW, ALLOW),
    ("socket(AF_UNIX)", X86_64, 41, 1, ALLOW, ALLOW),
    ("socket(AF_INET)", X86_64, 41, 2, ALLOW, ALLOW),
    ("socket(AF_INET6)", X86_64, 41, 10, ALLOW, ALLOW),
    ("socket(AF_NETLINK)", X86_64, 41, 16, ALLOW, ALLOW),
    ("socket(AF_VSOCK)", X86_64, 41, 40, EAFNOSUPPORT, EAFNOSUPPORT),
    ("socket(AF_PACKET)", X86_64, 41, 17, EAFNOSUPPORT, EAFNOSUPPORT),
    ("socketpair(AF_UNIX)", X86_64, 53, 1, ALLOW, ALLOW),
    ("socketpair(AF_VSOCK)", X86_64, 53, 40, EAFNOSUPPORT, EAFNOSUPPORT),
    ("clone3", X86_64, 435, 0, ENOSYS, ENOSYS),
    ("clone of a thread", X86_64, 56, CLONE_THREAD, ALLOW, ALLOW),
    ("clone of a process", X86_64, 56, 0, EPERM, ALLOW),
    ("clone into a user namespace", X86_64, 56, CLONE_THREAD | CLONE_NEWUSER, EPERM, EPERM),
    ("fork", X86_64, 57, 0, EPERM, ALLOW),
]


@pytest.mark.parametrize(("what", "arch", "nr", "arg0", "no_fork", "fork"), CASES)
def test_filter_verdicts(what: str, arch: int, nr: int, arg0: int, no_fork, fork) -> None:
    assert verdict(_seccomp.program(allow_fork=False, machine="x86_64"), arch, nr, arg0) == no_fork
    assert verdict(_seccomp.program(allow_fork=True, machine="x86_64"), arch, nr, arg0) == fork


RWF_HIPRI, RWF_NOWAIT, RWF_APPEND, RWF_DONTCACHE = 0x01, 0x08, 0x10, 0x80
ARGUMENT_CASES = [
    # (what, number, arguments, verdict): the page cache's probes and drops
    ("preadv2 without flags", 327, (3, 0, 1, 0, 0, 0), ALLOW),
    ("preadv2(RWF_HIPRI)", 327, (3, 0, 1, 0, 0, RWF_HIPRI), ALLOW),
    ("preadv2(RWF_NOWAIT)", 327, (3, 0, 1, 0, 0, RWF_NOWAIT), EPERM),
    ("preadv2(RWF_DONTCACHE)", 327, (3, 0, 1, 0, 0, RWF_DONTCACHE), EPERM),
    ("preadv2(RWF_HIPRI | RWF_NOWAIT)", 327, (3, 0, 1, 0, 0, RWF_HIPRI | RWF_NOWAIT), EPERM),
    ("preadv2, NOWAIT's bit in the offset, not the flags", 327, (3, 0, 1, 8, 8, 0), ALLOW),
    ("pwritev2(RWF_APPEND)", 328, (3, 0, 1, 0, 0, RWF_APPEND), ALLOW),
    ("pwritev2(RWF_NOWAIT)", 328, (3, 0, 1, 0, 0, RWF_NOWAIT), EPERM),
    ("fadvise64(SEQUENTIAL)", 221, (3, 0, 0, 2), ALLOW),
    ("fadvise64(WILLNEED)", 221, (3, 0, 0, 3), ALLOW),
    ("fadvise64(DONTNEED)", 221, (3, 0, 0, 4), EPERM),
    ("fadvise64(NOREUSE)", 221, (3, 0, 0, 5), EPERM),
    ("fadvise64(DONTNEED), upper half set", 221, (3, 0, 0, (1 << 32) | 4), EPERM),
    ("madvise(MADV_DONTNEED): the allocator's", 28, (0, 4096, 4), ALLOW),
    ("madvise(MADV_WILLNEED)", 28, (0, 4096, 3), ALLOW),
    ("madvise(MADV_COLD)", 28, (0, 4096, 20), EPERM),
    ("madvise(MADV_PAGEOUT)", 28, (0, 4096, 21), EPERM),
    ("madvise, 21 as the length", 28, (0, 21, 4), ALLOW),
    ("mincore", 27, (0, 4096, 0), EPERM),
    ("cachestat", 451, (3, 0, 0, 0), EPERM),
    ("io_setup", 206, (1, 0), EPERM),
    ("readahead (loads pages, like a read)", 187, (3, 0, 4096), ALLOW),
]


@pytest.mark.parametrize(("what", "nr", "args", "expected"), ARGUMENT_CASES)
def test_argument_rules(what: str, nr: int, args: tuple[int, ...], expected) -> None:
    for allow_fork in (False, True):
        program = _seccomp.program(allow_fork=allow_fork, machine="x86_64")
        assert verdict(program, X86_64, nr, *args) == expected


def test_every_denied_call_is_refused_and_known() -> None:
    program = _seccomp.program(allow_fork=False, machine="x86_64")
    for name, nr in _seccomp.DENIED.items():
        assert nr <= _seccomp.HIGHEST_KNOWN, name
        assert verdict(program, X86_64, nr) == EPERM, name


def test_no_table_elsewhere() -> None:
    assert _seccomp.program(allow_fork=False, machine="aarch64") is None
