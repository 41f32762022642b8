"""Must show 2: the escape suite. Every attack scores 0 (the harness never reports a pass it
did not see) and leaves the host untouched: no file written, no secret read, no connection
made, no process left behind. Each attack runs in the warm sandbox and in a cold one.

The cross-sample cases (warm sandbox): one run leaves files, processes, sockets or kills
what it can see; the next run of the same zygote must find nothing of it, and the zygote
must keep serving."""

from __future__ import annotations

import contextlib
import os
import socket
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rewardsmith.verifiers.code import code
from rewardsmith.verifiers.code._sandbox import host_uid

from ._code_helpers import needs_bwrap, processes_of, sample

pytestmark = needs_bwrap

TIMEOUT_S = 2.0
CHECK = {
    "test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n",
    "entry_point": "square",
}


@pytest.fixture(scope="module", params=["warm", "cold"])
def fn(request):
    """Every attack runs against both the warm sandbox (default: a zygote forks each run)
    and a cold one (a fresh bwrap + interpreter per run)."""
    return code(timeout_s=TIMEOUT_S, memory_mb=512, max_processes=16, warm=request.param == "warm")


@pytest.fixture(scope="module")
def warm():
    return code(timeout_s=TIMEOUT_S, memory_mb=512, max_processes=16)


def _leftovers(fn) -> list[int]:
    """Processes of the sandbox uids other than the idle warm sandboxes (bwrap, its init, the
    zygote: nothing of any run)."""
    idle = fn.__self__.sandbox_pids()
    return [pid for slot in range(4) for pid in processes_of(host_uid(slot)) if pid not in idle]


def _no_leftovers(fn) -> None:
    if os.geteuid() == 0:  # the sandbox runs as a uid of its own: nothing may remain of it
        deadline = time.monotonic() + 2
        while _leftovers(fn) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _leftovers(fn) == []


def _zero(fn, program: str, reference=CHECK):
    started = time.monotonic()
    score = fn(sample(textwrap.dedent(program), reference))
    assert score.status == "ok", score.detail
    assert score.score == 0.0, score.detail
    assert time.monotonic() - started < TIMEOUT_S + 5
    _no_leftovers(fn)
    return score


def test_the_honest_program_passes(fn) -> None:
    score = fn(sample("def square(x):\n    return x * x\n", CHECK))
    assert score.score == 1.0, score.detail


def test_fork_bomb(fn) -> None:
    score = _zero(
        fn,
        """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        def square(x):
            return x * x
        """,
    )
    assert score.detail["timed_out"]


def test_fork_bomb_is_capped_by_nproc(fn) -> None:
    score = _zero(
        fn,
        """
        import os, time
        n = 0
        try:
            for _ in range(1000):
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                n += 1
        except OSError:
            pass
        def square(x):
            return n  # 1000 forks would pass 'square(3) == 9'? no: but n must stay small
        print("forked", n)
        assert n < 32, n
        """,
    )
    assert "forked" in score.detail["stdout_tail"]


def test_memory_bomb(fn) -> None:
    score = _zero(
        fn,
        """
        blocks = []
        while True:
            blocks.append(bytearray(50 * 1024 * 1024))
        def square(x):
            return x * x
        """,
    )
    # RLIMIT_AS stops it (MemoryError); on a very loaded host the clock may strike first.
    assert "MemoryError" in str(score.detail["tests"]) or score.detail["timed_out"]


def test_infinite_loop(fn) -> None:
    score = _zero(fn, "def square(x):\n    while True:\n        pass\n")
    assert score.detail["timed_out"]


def test_busy_child_left_behind_after_exit(fn) -> None:
    _zero(
        fn,
        """
        import os
        if os.fork() == 0:
            os.setsid()
            while True:
                pass
        def square(x):
            return None
        """,
    )


def test_network_connect_to_a_host_loopback_port(fn) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(5)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            accepted.append(server.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        score = _zero(
            fn,
            f"""
            import socket
            def square(x):
                s = socket.create_connection(("127.0.0.1", {port}), timeout=1)
                s.sendall(b"pwned")
                return x * x
            """,
        )
    finally:
        server.close()
        thread.join()
    assert accepted == []
    assert "square" in str(score.detail["tests"]) or score.detail["tests"][0]["error"]


def test_write_outside_the_sandbox(fn, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    _zero(
        fn,
        f"""
        import os
        for path in [{str(target)!r}, "/usr/escaped.txt", "/escaped.txt"]:
            try:
                with open(path, "w") as f:
                    f.write("x")
            except OSError:
                pass
        with open("/tmp/inside.txt", "w") as f:
            f.write("fine")
        def square(x):
            for path in [{str(target)!r}, "/usr/escaped.txt", "/escaped.txt"]:
                assert os.path.exists(path)
            return x * x
        """,
    )
    assert not target.exists()
    assert not Path("/usr/escaped.txt").exists()
    assert not Path("/escaped.txt").exists()
    assert not Path("/tmp/inside.txt").exists()


def test_read_a_file_planted_outside(fn, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("4")
    score = _zero(
        fn,
        f"""
        def square(x):
            return int(open({str(secret)!r}).read()) * x // 2
        """,
    )
    assert "No such file" in str(score.detail["tests"])
    for path in ("/etc/passwd", "/work", "/home", __file__, str(Path.home() / ".pyenv/shims")):
        result = fn(
            sample(f"import os\nos.stat({path!r})\ndef square(x):\n    return x*x\n", CHECK)
        )
        assert result.score == 0.0, path


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "os._exit(0)", "raise SystemExit(0)"])
def test_exit_before_the_tests(fn, exit_call: str) -> None:
    _zero(fn, f"import os, sys\ndef square(x):\n    return None\n{exit_call}\n")


def test_exit_inside_the_candidate(fn) -> None:
    _zero(fn, "import os\ndef square(x):\n    os._exit(0)\n")


def test_redefining_check(fn) -> None:
    _zero(fn, "def check(candidate):\n    pass\ndef square(x):\n    return None\n")


def test_redefining_builtins(fn) -> None:
    _zero(
        fn,
        """
        import builtins
        builtins.exec = lambda *a, **k: None
        builtins.compile = lambda *a, **k: None
        builtins.AssertionError = type("Nope", (Exception,), {})
        builtins.len = lambda x: 0
        builtins.enumerate = lambda x: iter(())
        __builtins__["exec"] = lambda *a, **k: None
        def square(x):
            return None
        """,
    )


def test_redefining_builtins_in_asserts_style(fn) -> None:
    reference = {"tests": ["assert square(2) == 4", "assert abs(square(-3)) == 9"]}
    _zero(
        fn,
        """
        import builtins
        builtins.abs = lambda x: 9
        __builtins__["abs"] = lambda x: 9
        def square(x):
            return None
        """,
        reference,
    )


def test_printing_a_fake_pass_marker(fn) -> None:
    score = _zero(
        fn,
        """
        import os, sys
        fake = "0" * 32
        print("PASSED all tests", fake, "done 1")
        sys.stderr.write("passed\\n")
        for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):  # every open fd
            for line in (fake + " start\\n", fake + " test 0 1 -\\n", fake + " done 1\\n"):
                try:
                    os.write(fd, line.encode())
                except OSError:
                    pass
        def square(x):
            return None
        """,
    )
    assert "tampered" in score.detail["reason"]


def test_killing_the_parent(fn) -> None:
    _zero(
        fn,
        """
        import os, signal
        for pid in (os.getppid(), 1, -1):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        def square(x):
            return None
        """,
    )
    # Killing its own process group takes the harness down before it reports: still 0.
    _zero(fn, "import os, signal\nos.killpg(0, signal.SIGKILL)\ndef square(x):\n    return x*x\n")


def test_forked_replay_of_the_harness(fn) -> None:
    # A fork returns into the harness twice: the duplicate report is caught. (The parent
    # waits for the child: otherwise whichever ends first may end the run before the other
    # reports, and a single genuine report of a correct program is a pass.)
    score = _zero(fn, "import os\nif os.fork():\n    os.wait()\ndef square(x):\n    return x * x\n")
    assert "tampered" in score.detail["reason"]


def test_stdin_stdout_program_cannot_fake_the_comparison(fn) -> None:
    reference = {"io": [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "9\n"}]}
    _zero(fn, "import os\nprint(4)\nos._exit(0)\n", reference)
    _zero(fn, "import sys\nprint(4)\nsys.exit(0)\n", reference)


# -- cross-sample isolation of the warm sandbox ----------------------------------------------

ONLY_ME = """
import os
def square(x):
    return x * x
"""


def _one(fn, program: str, reference=CHECK):
    return fn(sample(textwrap.dedent(program), reference))


def test_a_file_left_by_one_run_is_not_seen_by_the_next(warm) -> None:
    left = _one(
        warm,
        """
        import os
        open("/tmp/leak.txt", "w").write("secret")
        open("/dev/shm/leak", "w").write("secret")
        for path in ("/leak.txt", "/dev/leak", "/usr/leak"):
            try:
                open(path, "w").write("x")
            except OSError:
                pass
            else:
                raise SystemExit("wrote " + path)
        def square(x):
            return x * x
        """,
    )
    assert left.score == 1.0, left.detail  # it ran, wrote its own /tmp, and nothing else
    seen = _one(
        warm,
        """
        import os
        found = [p for p in ("/tmp/leak.txt", "/dev/shm/leak", "/leak.txt", "/dev/leak")
                 if os.path.exists(p)]
        assert found == [] and os.listdir("/tmp") == [] and os.listdir("/dev/shm") == [], found
        def square(x):
            return x * x
        """,
    )
    assert seen.score == 1.0, seen.detail


def test_a_process_left_by_one_run_is_gone_before_the_next(warm) -> None:
    left = _one(
        warm,
        """
        import os, socket, time
        if os.fork() == 0:
            os.setsid()
            s = socket.socket(socket.AF_UNIX)
            s.bind("\\0rewardsmith-leak")
            s.listen()
            while True:
                open("/tmp/alive", "w").write(str(time.time()))
                time.sleep(0.01)
        time.sleep(0.1)
        def square(x):
            return x * x
        """,
    )
    assert left.score == 1.0, left.detail
    _no_leftovers(warm)
    seen = _one(
        warm,
        """
        import os, socket
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
        assert others == [], others
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect("\\0rewardsmith-leak")
        except OSError:
            pass
        else:
            raise AssertionError("reached the previous run's socket")
        def square(x):
            return x * x
        """,
    )
    assert seen.score == 1.0, seen.detail


def test_a_run_cannot_reach_the_zygote(warm) -> None:
    assert _one(warm, ONLY_ME).score == 1.0
    idle = warm.__self__.sandbox_pids()
    _zero(
        warm,
        """
        import os, signal
        for pid in [-1, 0, 1] + list(range(2, 200)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        def square(x):
            return x * x
        """,
    )
    assert warm.__self__.sandbox_pids() == idle  # the same zygote, still serving
    assert _one(warm, ONLY_ME).score == 1.0


def test_a_run_has_no_capabilities_and_no_zygote_descriptors(warm) -> None:
    score = _one(
        warm,
        """
        import ctypes, os
        status = open("/proc/self/status").read()
        caps = {l.split(":")[0]: int(l.split()[1], 16) for l in status.splitlines()
                if l.startswith("Cap")}
        assert caps["CapEff"] == caps["CapPrm"] == caps["CapBnd"] == 0, caps
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.unshare(0x00020000) != 0  # CLONE_NEWNS
        assert libc.mount(b"tmpfs", b"/mnt", b"tmpfs", 0, None) != 0
        fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
        assert len(fds) <= 6, fds  # 0, 1, 2, the result pipe, the listing itself
        def square(x):
            return x * x
        """,
    )
    assert score.score == 1.0, score.detail
