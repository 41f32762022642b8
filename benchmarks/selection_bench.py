"""Test-time selection: accuracy on Qwen2.5-Math's samples and GSM8K, and the cost of
`--cluster math`.

    python benchmarks/selection_bench.py [--write BENCHMARKS.md]

Accuracy: `rewardsmith.select` on `shared/data/qwen25math/math_cot_100.jsonl` (100 problems x 8
solutions) with Qwen's verdicts and exact clusters on its extracted `pred`, then with the math
reward as the judge and `--cluster math` on the completions; GSM8K's
`example_model_solutions.jsonl` (4 model solutions per problem).

Clustering cost: the 800 Qwen answers, read once as the math reward reads them, clustered per
problem (a) by `cluster_votes` (canonical keys, then `same_answer` only inside shared buckets)
and (b) by the greedy all-pairs loop of Qwen2.5-Math's `group_pred(..., use_symbol=True)`
(each answer against the first answer of every group so far, until one is equal, each
comparison under a 5 s alarm), written here with *our* `same_answer` as the comparison.
Qwen's own `math_equal` is not run: its repository is not on a package registry this
machine can reach, and its code may not be copied here. So (b) shows what bucketing saves
against all pairs with the same comparison, not Qwen's speed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _report import write_section

from rewardsmith.models import Sample
from rewardsmith.selection import Selector, cluster_votes, read_vote
from rewardsmith.selection._qwen import convert_qwen_math
from rewardsmith.selection._votes import Vote
from rewardsmith.verifiers.math import same_answer

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
QWEN = DATA / "qwen25math" / "math_cot_100.jsonl"
GSM8K = DATA / "gsm8k" / "example_model_solutions.jsonl"
GSM8K_MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")
METRICS = ("pass@1", "mean_accuracy", "maj@k")


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def accuracy(samples: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, float]:
    """pass@1, mean accuracy, maj@k, rm@k, sigmoid-weighted majority and pass@k."""
    numbers: dict[str, float] = {}
    for method, name in (("majority", None), ("best_of_n", "rm@k"), ("weighted_majority", "w")):
        if method != "majority" and "score_key" not in options:
            continue
        with Selector(method, weights="sigmoid", workers=2, **options) as selector:
            summary = selector.select(samples).summary
        assert summary is not None
        if name is None:
            numbers |= {k: summary[k] for k in (*METRICS, "pass@k")}
        else:
            numbers[name] = summary["accuracy"]
    return numbers


def gsm8k_samples() -> list[dict[str, Any]]:
    samples = []
    for i, row in enumerate(rows(GSM8K)):
        gold = row["ground_truth"].rsplit("A:", 1)[1].strip()
        for model in GSM8K_MODELS:
            samples.append(
                {
                    "id": f"{i}-{model}",
                    "group": str(i),
                    "completion": row[model]["solution"],
                    "reference": gold,
                    "metadata": {"is_correct": row[model]["is_correct"]},
                }
            )
    return samples


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError


def pairwise(votes: Sequence[Vote], same: Callable[[str, str], bool]) -> list[int | None]:
    """group_pred's greedy loop: each answer against every group's first answer in turn."""
    firsts: list[str] = []
    out: list[int | None] = []
    for vote in votes:
        if vote.answer is None:
            out.append(None)
            continue
        found = None
        for position, first in enumerate(firsts):
            signal.alarm(5)
            try:
                equal = same(vote.answer, first)
            except TimeoutError:
                equal = False
            finally:
                signal.alarm(0)
            if equal:
                found = position
                break
        if found is None:
            found = len(firsts)
            firsts.append(vote.answer)
        out.append(found)
    return out


def partition(assignment: Sequence[int | None]) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for index, cluster in enumerate(assignment):
        if cluster is not None:
            groups.setdefault(cluster, set()).add(index)
    return {frozenset(g) for g in groups.values()}


def clustering_cost(samples: list[dict[str, Any]]) -> dict[str, Any]:
    counted: dict[str, int] = {"pairwise": 0}

    def counting(a: str, b: str) -> bool:
        counted["pairwise"] += 1
        return same_answer(a, b)

    groups: dict[str, list[Vote]] = {}
    start = time.perf_counter()
    for row in samples:
        vote = read_vote(Sample.model_validate(row), "math", None)
        groups.setdefault(row["group"], []).append(vote)
    read_s = time.perf_counter() - start
    signal.signal(signal.SIGALRM, _alarm)
    ours_s = peer_s = 0.0
    ours_comparisons = agree = 0
    for votes in groups.values():
        start = time.perf_counter()
        clustering = cluster_votes(votes, "math")
        ours_s += time.perf_counter() - start
        ours_comparisons += clustering.comparisons
        start = time.perf_counter()
        theirs = pairwise(votes, counting)
        peer_s += time.perf_counter() - start
        agree += partition(clustering.assignment) == partition(theirs)
    return {
        "answers": len(samples),
        "groups": len(groups),
        "read_s": read_s,
        "ours_s": ours_s,
        "ours_comparisons": ours_comparisons,
        "peer_s": peer_s,
        "peer_comparisons": counted["pairwise"],
        "agree": agree,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="put the section into this BENCHMARKS.md")
    args = parser.parse_args()
    if not QWEN.exists() or not GSM8K.exists():
        print(f"real data not available under {DATA}", file=sys.stderr)
        return 1
    converted = Path("/tmp/rewardsmith_selection_bench_qwen.jsonl")
    convert_qwen_math(QWEN, converted)
    qwen = rows(converted)
    theirs = accuracy(
        qwen,
        {
            "cluster": "exact",
            "answer_key": "metadata.pred",
            "correct_key": "metadata.qwen_correct",
            "score_key": "metadata.rm_score",
        },
    )
    ours = accuracy(qwen, {"cluster": "math", "score_key": "metadata.rm_score"})
    gsm8k = gsm8k_samples()
    labelled = accuracy(gsm8k, {"cluster": "math", "correct_key": "metadata.is_correct"})
    judged = accuracy(gsm8k, {"cluster": "math"})
    cost = clustering_cost(qwen)

    def cells(n: dict[str, float], keys: Sequence[str]) -> str:
        return " | ".join(f"{round(n[k], 3):g}" if k in n else "-" for k in keys)

    keys = (*METRICS, "rm@k", "w", "pass@k")
    ours_row = f"{cost['ours_comparisons']} | {cost['ours_s']:.3f}"
    peer_row = f"{cost['peer_comparisons']} | {cost['peer_s']:.3f}"
    agree = f"{cost['agree']} / {cost['groups']}"
    body = f"""## Test-time selection: Qwen2.5-Math and GSM8K

Run `python benchmarks/selection_bench.py --write BENCHMARKS.md` on {time.strftime("%Y-%m-%d")},
2 cores, Python {sys.version.split()[0]}. Accuracy does not depend on the machine; the same
numbers are pinned by `tests/selection/test_real_data.py`. Qwen: 100 MATH problems x 8
Qwen2.5-Math solutions (`qwen25math/math_cot_100.jsonl`, `rewardsmith convert qwen-math`),
rm scores Qwen2.5-Math-RM-72B's `pred_score`, weighted majority with sigmoid weights.
GSM8K: `example_model_solutions.jsonl`, 1,319 problems x 4 models' solutions.

| data, judge, clusters | pass@1 | mean acc. | maj@k | rm@k | weighted maj. | pass@k |
|---|---|---|---|---|---|---|
| Qwen published (`rm_maj_eval.py`, Qwen's `score`) | 90 | 91 | 93 | 94 | 94 | 96 |
| Qwen: its verdicts, `--cluster exact` on its `pred` | {cells(theirs, keys)} |
| Qwen: our `math` reward, `--cluster math` on the completions | {cells(ours, keys)} |
| GSM8K: its labels, `--cluster math` (k = 4) | {cells(labelled, keys)} |
| GSM8K: our `math` reward, `--cluster math` (k = 4) | {cells(judged, keys)} |

Where our judge differs on Qwen's samples, Qwen's grader is wrong
(`benchmarks/qwen25math_label_errors.json`): problem 3 (8 solutions box `4:30 \\text{{ p.m.}}`,
gold `\\text{{4:30 p.m.}}`) and one solution of problem 72 (`10000`, gold `10{{,}}000`). The
clusters differ in problem 72 only: three solutions hedge between two final answers and vote
for nothing under the math reward. GSM8K's pass@1 is the first solution (the 6B fine-tuned
model's); ties in maj@4 go to it too.

Clustering the {cost["answers"]} Qwen answers ({cost["groups"]} groups of 8), read once as the
math reward reads them ({cost["read_s"]:.1f} s, the per-sample part, which runs in the
workers):

| clustering | comparisons | s | same clusters |
|---|---|---|---|
| `cluster_votes` (keys, then `same_answer` inside shared buckets) | {ours_row} | - |
| group_pred's all-pairs greedy loop, with our `same_answer` | {peer_row} | {agree} |

The second row is not Qwen's code: Qwen2.5-Math's `math_equal` is in no package this machine
can install and may not be copied here, so the comparison Qwen's `group_pred` makes could not
be timed; the row shows what bucketing saves against all pairs with one comparison function."""
    write_section(args.write, "selection-bench", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
