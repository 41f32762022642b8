"""Must show 2: the escape suite (`_code_attacks.ATTACKS`, 70+ attacks, each with a wrong
solution), warm and cold. For every attack: reward 0 with status `ok` (a forged verdict would
be > 0; a policy-controlled `error` or `invalid` would be an escape hatch), no host file
written, no process of the sandbox left behind; in the warm sandbox, the next honest-but-wrong
sample still scores 0 and a probe that looks for anything the attack left scores 1. Then:
the seccomp filter and the trust boundary probed from inside by correct programs, per-sample
memory measured from the host during a fork-and-allocate attack, 20 honest samples queued
behind attackers, and a sample of the attacks through the HTTP server."""

from __future__ import annotations

import os
import textwrap
import threading
import time
from pathlib import Path

import pytest

import rewardsmith
from rewardsmith.verifiers.code import code
from rewardsmith.verifiers.code._sandbox import host_uid

from ._code_attacks import ASSERTS, ATTACKS, CHECK, IO, MARKER, WRONG
from ._code_helpers import needs_bwrap, processes_of, sample

pytestmark = needs_bwrap

TIMEOUT_S = 2.0
MEMORY_MB = 512
RIGHT = "def square(x):\n    return x * x\n"
PROBE = textwrap.dedent(
    """
    import os, socket, sys
    # (an interpreter under /tmp, e.g. a venv there, is bound read-only into every run's /tmp;
    # solution.py is this program's text, written there for its __file__ before it runs)
    own = [p for p in os.listdir("/tmp") if not any(e.startswith("/tmp/" + p) for e in sys.path)]
    own = [p for p in own if p != "solution.py"]
    left = [p for p in ("/dev/shm",) if os.listdir(p)] + own
    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\\0rewardsmith-leak")
        left.append("socket")
    except OSError:
        pass
    def square(x):
        return x * x if not left and not others else None
    """
)
"""Correct only in a fresh world: nothing in /tmp (but its own text) or /dev/shm, no other
process, no socket."""


def _reward(warm: bool):
    return code(timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB, max_processes=16, warm=warm)


@pytest.fixture(scope="module", params=["warm", "cold"])
def fn(request):
    return _reward(request.param == "warm")


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host directory anyone could write to, if they could see it."""
    path = tmp_path_factory.mktemp("canary")
    path.chmod(0o777)
    return path


def _leftovers(fn) -> list[int]:
    """Processes of the sandbox uids other than the idle warm sandboxes (bwrap, its init, the
    zygote: nothing of any run)."""
    idle = fn.sandbox_pids()
    return [pid for slot in range(4) for pid in processes_of(host_uid(slot)) if pid not in idle]


def _no_leftovers(fn) -> None:
    if os.geteuid() != 0:  # only a root caller runs sandboxes under uids of their own
        return
    deadline = time.monotonic() + 3
    while _leftovers(fn) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _leftovers(fn) == []


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_earns_nothing_and_leaves_nothing(fn, canary: Path, name: str) -> None:
    program, reference = ATTACKS[name]
    started = time.monotonic()
    score = fn(sample(program.replace("CANARY", str(canary)), reference))
    assert (score.status, score.score) == ("ok", 0.0), score.detail
    assert time.monotonic() - started < TIMEOUT_S + 8
    assert list(canary.iterdir()) == []
    assert not Path("/usr/escaped").exists() and not Path("/escaped").exists()
    assert MARKER not in str(score.detail.get("stdout_tail", ""))  # the tests never leaked
    _no_leftovers(fn)
    if fn.config.warm:  # the same warm sandbox serves the next samples, untouched
        follow = IO if reference is IO else CHECK
        wrong = WRONG if follow is CHECK else "print(int(input()) + 1)\n"
        right = PROBE if follow is CHECK else "print(int(input()) ** 2)\n"
        after_wrong = fn(sample(wrong, follow))
        assert (after_wrong.status, after_wrong.score) == ("ok", 0.0), after_wrong.detail
        after_right = fn(sample(right, follow))
        assert after_right.score == 1.0, after_right.detail


def test_the_suite_is_large_and_covers_every_style() -> None:
    assert len(ATTACKS) >= 60
    styles = {id(reference) for _, reference in ATTACKS.values()}
    assert {id(CHECK), id(ASSERTS), id(IO)} <= styles


def test_honest_programs_pass(fn) -> None:
    assert fn(sample(RIGHT, CHECK)).score == 1.0
    assert fn(sample(RIGHT, ASSERTS)).score == 1.0
    assert fn(sample("print(int(input()) ** 2)\n", IO)).score == 1.0


# -- probes from inside: correct programs that turn wrong if the boundary is not there --------


def _probe(fn, checks: str) -> None:
    program = textwrap.dedent(checks) + "\ndef square(x):\n    return x * x if OK else None\n"
    score = fn(sample(program, CHECK))
    assert score.score == 1.0, score.detail


def test_the_seccomp_filter_refuses_what_it_lists(fn) -> None:
    from rewardsmith.verifiers.code._seccomp import DENIED

    numbers = sorted(set(DENIED.values()))
    _probe(
        fn,
        f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        def refused(nr, *args):
            ctypes.set_errno(0)
            r = libc.syscall(nr, *args)
            return r == -1 and ctypes.get_errno() == 1  # EPERM
        OK = all(refused(nr, 0, 0, 0, 0, 0) for nr in {numbers})
        OK = OK and refused(57) and refused(58) and refused(56, 17, 0, 0, 0, 0)  # fork, vfork
        ctypes.set_errno(0)
        OK = OK and libc.syscall(435, 0, 0) == -1 and ctypes.get_errno() == 38  # clone3: ENOSYS
        try:
            os.fork()
            OK = False
        except PermissionError:
            pass
        import threading
        t = threading.Thread(target=lambda: None); t.start(); t.join()  # threads are fine
        """,
    )


def test_the_candidate_sees_neither_the_tests_nor_the_referee(fn) -> None:
    _probe(
        fn,
        f"""
        import gc, os
        OK = True
        # The marker in two halves, never joined here: only the tests could hold it whole.
        head, rest = b"{MARKER[:20]}", b"{MARKER[20:]}"
        def holds(data):
            i = data.find(head)
            while i >= 0:
                if data[i + len(head) : i + len(head) + len(rest)] == rest:
                    return True
                i = data.find(head, i + 1)
            return False
        strings = [o for o in gc.get_objects() if isinstance(o, str)]
        if any(holds(o.encode("utf-8", "replace")) for o in strings):
            OK = False
        # its own memory, every readable mapping: the tests never entered this process
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
            for line in maps:
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if "r" not in line.split()[1] or hi - lo > 1 << 28:
                    continue
                try:
                    mem.seek(lo)
                    if holds(mem.read(hi - lo)):
                        OK = False
                except (OSError, OverflowError, ValueError):
                    pass
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
        fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
        status = open("/proc/self/status").read()
        caps = [int(l.split()[1], 16) for l in status.splitlines() if l.startswith("Cap")]
        OK = OK and others == [] and len(fds) <= 6 and not any(caps)
        OK = OK and "Seccomp:\\t2" in status
        """,
    )


# -- per-sample memory, measured from the host -----------------------------------------------


def _memory_of(pids: set[int]) -> int:
    """Memory the given host processes hold, in bytes: their resident memory (PSS) plus
    what their private /tmp and /dev/shm hold (tmpfs pages are in no process's PSS)."""
    total, filesystems = 0, {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
            for place in ("tmp", "dev/shm"):
                path = f"/proc/{pid}/root/{place}"
                fs = os.statvfs(path)
                filesystems[os.stat(path).st_dev] = (fs.f_blocks - fs.f_bfree) * fs.f_frsize
        except OSError:
            pass
    return total + sum(filesystems.values())


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox processes have their own uid only as root")
def test_fork_and_allocate_is_held_to_memory_mb(fn) -> None:
    attack = textwrap.dedent(
        """
        import os, threading
        blocks = []
        def grab():
            try:
                while True:
                    blocks.append(b"\1" * (32 * 1024 * 1024))  # written: resident
            except MemoryError:
                pass
        for _ in range(8):
            try:
                if os.fork() == 0:
                    grab()
                    os._exit(0)
            except OSError:
                pass
        threads = [threading.Thread(target=grab) for _ in range(4)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        grab()
        with open("/tmp/fill", "wb") as f:
            try:
                while True:
                    f.write(b"x" * (1 << 20))
            except OSError:
                pass
        import time
        time.sleep(1.5)
        def square(x):
            return x + 1
        """
    )
    # A clock long enough for the attack to reach its peak, even on a loaded machine.
    fn = code(timeout_s=20, memory_mb=MEMORY_MB, max_processes=16, warm=fn.config.warm)
    assert fn(sample(RIGHT, CHECK)).score == 1.0  # the warm sandbox is up before watching
    idle = fn.sandbox_pids()
    peak = 0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            pids = {p for slot in range(4) for p in processes_of(host_uid(slot))} - idle
            peak = max(peak, _memory_of(pids))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        score = fn(sample(attack, CHECK))
    finally:
        done.set()
        watcher.join()
    assert (score.status, score.score) == ("ok", 0.0)
    print(f"fork-and-allocate: peak {peak / 2**20:.0f} MiB with memory_mb={MEMORY_MB}")
    # The run's processes: the candidate (held to memory_mb, its /tmp and /dev/shm included)
    # plus the referee, A and B (forked from the preloaded zygote, a few MiB each).
    assert peak > 200 * 1024 * 1024, peak  # the attack did allocate (the watcher saw it)
    assert peak <= (MEMORY_MB + 48) * 1024 * 1024, peak / 2**20


# -- queued behind attackers, through the engine ---------------------------------------------


def test_twenty_honest_samples_queued_behind_attackers_score_right() -> None:
    attackers = [
        "infinite_loop_at_import",
        "memory_bomb",
        "fork_bomb",
        "thread_bomb",
        "kill_every_visible_process",
        "sleep_in_every_call",
        "huge_answer",
        "five_line_frame_emit",
    ]
    samples = [
        {"id": f"attack-{name}", "completion": ATTACKS[name][0], "reference": ATTACKS[name][1]}
        for name in attackers
    ]
    for i in range(20):
        right = i % 2 == 0
        samples.append(
            {"id": f"honest-{i}", "completion": RIGHT if right else WRONG, "reference": CHECK}
        )
    spec = {
        "rewards": {
            "tests": {"type": "code", "timeout_s": TIMEOUT_S, "memory_mb": MEMORY_MB},
        },
        "timeout_s": 30,
    }
    results = rewardsmith.score(samples, spec, workers=2)
    assert [r.id for r in results] == [s["id"] for s in samples]
    assert [(r.status, r.reward) for r in results[: len(attackers)]] == [("ok", 0.0)] * len(
        attackers
    )
    assert [r.reward for r in results[len(attackers) :]] == [1.0, 0.0] * 10


# -- over HTTP: a real `rewardsmith serve` ----------------------------------------------------

HTTP_ATTACKS = [
    "five_line_frame_emit",
    "gc_rewrite_the_test_list",
    "always_equal_object",
    "int_subclass_always_equal",
    "optimize_away_the_asserts",
    "records_written_to_every_fd",
    "kill_every_visible_process",
    "memory_bomb",
    "fork_bomb",
    "os_exit_before_the_tests",
    "io_prints_the_first_answer_and_exits",
    "shadow_builtins_by_global_names",
]


def test_a_sample_of_the_attacks_over_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, canary: Path
) -> None:
    import httpx

    from tests.server import conftest as server_conftest

    # The server fixture's process imports rewardsmith from ROOT: this checkout's sources.
    monkeypatch.setattr(server_conftest, "ROOT", Path(rewardsmith.__file__).parents[1])
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"rewards:\n  tests: {{type: code, timeout_s: {TIMEOUT_S}, memory_mb: {MEMORY_MB}}}\n"
        "timeout_s: 30\n"
    )
    server = server_conftest.Server(spec, "--workers", "2")
    try:
        samples = [
            {
                "id": name,
                "completion": ATTACKS[name][0].replace("CANARY", str(canary)),
                "reference": ATTACKS[name][1],
            }
            for name in HTTP_ATTACKS
        ]
        samples += [
            {"id": "right", "completion": RIGHT, "reference": CHECK},
            {"id": "wrong", "completion": WRONG, "reference": CHECK},
        ]
        response = httpx.post(
            f"{server.url}/v1/score",
            json={"samples": samples},
            headers={"Authorization": f"Bearer {server_conftest.TOKEN}"},
            timeout=120,
        )
        assert response.status_code == 200, response.text
        results = response.json()["results"]
    finally:
        server.stop()
    got = {r["id"]: (r["status"], r["reward"]) for r in results}
    assert got == {
        **{name: ("ok", 0.0) for name in HTTP_ATTACKS},
        "right": ("ok", 1.0),
        "wrong": ("ok", 0.0),
    }
    assert list(canary.iterdir()) == []
