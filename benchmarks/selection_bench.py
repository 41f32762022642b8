"""Test-time selection: accuracy on Qwen2.5-Math's samples and GSM8K, and the cost of
`--cluster math`, against Qwen2.5-Math's own `group_pred`.

    python benchmarks/selection_bench.py [--write BENCHMARKS.md] [--qwen-eval DIR]

Accuracy: `rewardsmith.select` on `shared/data/qwen25math/math_cot_100.jsonl` (100 problems x 8
solutions) with Qwen's verdicts and exact clusters on its extracted `pred`, then with the math
reward as the judge and `--cluster math` on the completions; GSM8K's
`example_model_solutions.jsonl` (4 model solutions per problem).

Clustering cost: the 800 Qwen answers, read once as the math reward reads them, clustered per
problem (a) by `cluster_votes` (canonical keys, then `same_answer` only inside shared buckets)
and (b) by the greedy all-pairs loop of Qwen2.5-Math's `group_pred(..., use_symbol=True)`
(each answer against the first answer of every group so far, until one is equal, each
comparison under a 5 s alarm), written here with *our* `same_answer` as the comparison: what
bucketing saves against all pairs with one comparison function.

Against Qwen's own code (`--qwen-eval DIR`): the same 100 groups of 8 completions selected by
`rewardsmith.select` majority with `--cluster math` (1 and 2 workers, after a warm-up on GSM8K)
and by Qwen2.5-Math's `extract_answer(completion, "math")` then
`group_pred(preds, use_symbol=True)` (pairwise `math_equal`, each under its 5 s
`timeout_decorator`), in one run: time per group, samples per second, how often the two pick a
different answer, and each pick's accuracy by Qwen's verdicts. Qwen's code runs in a process of
its own (`_qwen_group_pred.py`), killed when one group takes over `--qwen-timeout` seconds
(default 150: 28 comparisons x 5 s, and room for extraction); killed groups are counted.

Qwen's files are NOT in this repository (its code is not ours to copy) and not on a package
registry; put them in DIR yourself, from github.com/QwenLM/Qwen2.5-Math (the versions measured,
checked by sha256 when the benchmark starts):

    evaluation/rm_maj_eval.py  commit ab5097e42776099b57d59fe8541ce67e98d2b54a
    evaluation/grader.py       commit e3564205dc804ac083eaf91ddf401a491fe344a4
    evaluation/parser.py       commit 005449c4f8220b1af7db49aed0285d9901aefea0

and their dependencies, into DIR/site so that they never replace this machine's packages
(`latex2sympy2` pins antlr 4.7.2 and installs top-level `gen` and `tests` packages; Qwen's
requirements pin sympy 1.12):

    pip install --no-deps --target DIR/site latex2sympy2==1.9.1 \\
        antlr4-python3-runtime==4.7.2 sympy==1.12 timeout-decorator==0.5.0 word2number==1.1

(Qwen installs a latex2sympy of its own, not in the stored repository, next to antlr 4.11.1;
with the PyPI latex2sympy2's antlr 4.7.2, sympy's `parse_latex` raises and Qwen's
`symbolic_equal` falls through to `parse_expr` and `latex2sympy`, as it is written to.)
Their `utils.py` is not needed: `group_pred` and `extract_answer` do not use it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _report import write_section

from rewardsmith.models import Sample
from rewardsmith.selection import GroupOutcome, Selector, cluster_votes, read_vote
from rewardsmith.selection._qwen import convert_qwen_math
from rewardsmith.selection._votes import Vote
from rewardsmith.verifiers.math import same_answer

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
QWEN = DATA / "qwen25math" / "math_cot_100.jsonl"
GSM8K = DATA / "gsm8k" / "example_model_solutions.jsonl"
GSM8K_MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")
METRICS = ("pass@1", "mean_accuracy", "maj@k")
QWEN_REPO = "QwenLM/Qwen2.5-Math"
QWEN_FILES = {  # file: (commit, sha256 of the file as fetched)
    "rm_maj_eval.py": (
        "ab5097e42776099b57d59fe8541ce67e98d2b54a",
        "e80a8f2d0c58bc978850c5a07523bfd9b902e0d8f207425df0e28f1e42a88535",
    ),
    "grader.py": (
        "e3564205dc804ac083eaf91ddf401a491fe344a4",
        "308f23553bbf0a93229d50c3dfd8d5d73ad09a4e1bf7b3555d79fd9814e74bfb",
    ),
    "parser.py": (
        "005449c4f8220b1af7db49aed0285d9901aefea0",
        "262dd9dd3137bcc74ef491928220274fdf2bb95cb619590889a84a35164e1878",
    ),
}
QWEN_WORKER = Path(__file__).with_name("_qwen_group_pred.py")


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


def our_majority(
    samples: list[dict[str, Any]], warm_up: list[dict[str, Any]], workers: int
) -> tuple[float, list[GroupOutcome]]:
    """`rewardsmith.select` majority with `--cluster math`: seconds and each group's outcome.
    Qwen's verdicts are the correctness, so that nothing is graded that group_pred does not."""
    with Selector(
        "majority", cluster="math", correct_key="metadata.qwen_correct", workers=workers
    ) as selector:
        selector.select(warm_up)  # starts the workers
        start = time.perf_counter()
        outcomes = [outcome for _, outcome in selector.iter_select(samples)]
        return time.perf_counter() - start, outcomes


class QwenGroupPred:
    """Qwen2.5-Math's own extract_answer + group_pred, one group per call, in a process that
    is killed (and started again) when a group takes over `timeout` seconds."""

    def __init__(self, directory: Path, timeout: float) -> None:
        self.directory = directory
        self.timeout = timeout
        self.process: subprocess.Popen[str] | None = None
        self.ready_s = 0.0

    def _start(self) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(QWEN_WORKER), str(self.directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # antlr's and sympy's complaints
            text=True,
        )
        ready = self._read(process, 120.0)
        if ready is None:
            self._kill(process)
            raise RuntimeError(f"Qwen's code in {self.directory} did not import")
        self.ready_s = ready["ready"]
        return process

    def _read(self, process: subprocess.Popen[str], timeout: float) -> dict[str, Any] | None:
        assert process.stdout is not None
        with selectors.DefaultSelector() as waiting:
            waiting.register(process.stdout, selectors.EVENT_READ)
            if not waiting.select(timeout):
                return None
        line = process.stdout.readline()
        return json.loads(line) if line else None

    @staticmethod
    def _kill(process: subprocess.Popen[str]) -> None:
        process.kill()
        process.wait()

    def __call__(self, completions: list[str]) -> dict[str, Any] | None:
        """Qwen's reply for one group, or None when it was killed."""
        if self.process is None:
            self.process = self._start()
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"completions": completions}) + "\n")
        self.process.stdin.flush()
        reply = self._read(self.process, self.timeout)
        if reply is None:
            self._kill(self.process)
            self.process = None
        return reply

    def close(self) -> None:
        if self.process is not None:
            self._kill(self.process)
            self.process = None


def qwen_files(directory: Path) -> list[str]:
    """What is wrong with DIR's copy of Qwen's files (empty: the versions measured here)."""
    problems = []
    for name, (commit, digest) in QWEN_FILES.items():
        path = directory / name
        if not path.exists():
            problems.append(f"{path} is missing (evaluation/{name} at {commit})")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"{path} is not evaluation/{name} at {commit}")
    return problems


def clusters_text(unanswered: list[str], clusters: dict[Any, list[str]]) -> str:
    """`{9999 x2}, {10000}, 3 without an answer`: a group's clusters, for the section."""
    parts = [
        f"`{{{members[0]}}}`" + (f" x{len(members)}" if len(members) > 1 else "")
        if len(set(members)) == 1
        else "`{" + ", ".join(members) + "}`"
        for members in clusters.values()
    ]
    if unanswered:
        parts.append(f"{len(unanswered)} without an answer")
    return ", ".join(parts)


def against_qwen(
    samples: list[dict[str, Any]], warm_up: list[dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
    """Ours and Qwen's own group_pred on the same groups, in this run."""
    ours = {workers: our_majority(samples, warm_up, workers) for workers in (1, 2)}
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in samples:
        groups.setdefault(row["group"], []).append(row)
    qwen = QwenGroupPred(args.qwen_eval, args.qwen_timeout)
    try:
        replies = [qwen([row["completion"] for row in members]) for members in groups.values()]
    finally:
        qwen.close()
    outcomes = ours[1][1]
    different: list[str] = []
    other_clusters: list[str] = []
    ours_right = theirs_right = 0
    for (group, members), outcome, reply in zip(groups.items(), outcomes, replies, strict=True):
        candidates = outcome.candidates
        index = outcome.pick.index
        ours_right += index is not None and bool(candidates[index].correct)
        if reply is None:
            continue
        theirs = reply["majority"]
        theirs_right += bool(members[theirs]["metadata"]["qwen_correct"])
        if partition([c.cluster for c in candidates]) != {
            frozenset(ids) for ids in reply["groups"]
        }:
            ours_clusters: dict[int | None, list[str]] = {}
            for candidate in candidates:
                ours_clusters.setdefault(candidate.cluster, []).append(str(candidate.answer))
            theirs_clusters = [[reply["preds"][i] for i in ids] for ids in reply["groups"]]
            other_clusters.append(
                f"problem {group}: ours {clusters_text(ours_clusters.pop(None, []), ours_clusters)}"
                f", group_pred {clusters_text([], dict(enumerate(theirs_clusters)))}"
            )
        if index is None or candidates[theirs].cluster != candidates[index].cluster:
            ours_answer = candidates[index].answer if index is not None else None
            different.append(
                f"problem {group}: ours `{ours_answer}`, group_pred `{reply['preds'][theirs]}`"
            )
    done = [r for r in replies if r is not None]
    return {
        "ours": {w: seconds for w, (seconds, _) in ours.items()},
        "groups": len(groups),
        "samples": len(samples),
        "qwen_groups": len(done),
        "qwen_samples": sum(len(r["preds"]) for r in done),
        "qwen_extract_s": sum(r["extract_s"] for r in done),
        "qwen_group_s": sum(r["group_s"] for r in done),
        "qwen_comparisons": sum(r["comparisons"] for r in done),
        "qwen_alarms": sum(r["alarms"] for r in done),
        "qwen_import_s": qwen.ready_s,
        "killed": len(replies) - len(done),
        "different": different,
        "other_clusters": other_clusters,
        "ours_right": ours_right,
        "theirs_right": theirs_right,
    }


def qwen_section(result: dict[str, Any] | None, timeout: float) -> str:
    """The part of the section on Qwen's own code (how to run it when it was not run)."""
    files = "\n".join(
        f"- `evaluation/{name}` at commit `{commit}`" for name, (commit, _) in QWEN_FILES.items()
    )
    provenance = f"""Qwen's files are not in this repository: they come from `{QWEN_REPO}`
on GitHub,

{files}

put by hand in a directory outside the repository with their dependencies in `DIR/site`
(the commands are in the benchmark's docstring): sympy 1.12 as Qwen pins it, and PyPI's
latex2sympy2 1.9.1 with the antlr 4.7.2 it needs, where Qwen installs a latex2sympy of its own
(not in its repository's stored files) with antlr 4.11.1. Under antlr 4.7.2 sympy's
`parse_latex` raises, and Qwen's `symbolic_equal` goes on to `parse_expr` and `latex2sympy`
as it is written to."""
    if result is None:
        return f"""Qwen2.5-Math's own `group_pred` was not run (it needs `--qwen-eval DIR`).
{provenance}"""
    n, groups = result["samples"], result["groups"]

    def row(name: str, seconds: float, count: int, done: int, killed: str) -> str:
        per_group = seconds / done * 1000 if done else float("nan")
        rate = count / seconds if seconds else float("nan")
        return f"| {name} | {per_group:,.1f} | {rate:,.0f} | {killed} |"

    done, count = result["qwen_groups"], result["qwen_samples"]
    qwen_s = result["qwen_extract_s"] + result["qwen_group_s"]
    killed = f"{result['killed']} (past {timeout:g} s)"
    lines = [
        "| selecting 100 groups of 8 completions | ms / group | samples / s | groups killed |",
        "|---|---|---|---|",
        row(
            "`rewardsmith.select` majority, `--cluster math`, 1 worker",
            result["ours"][1],
            n,
            groups,
            "-",
        ),
        row("the same, 2 workers", result["ours"][2], n, groups, "-"),
        row(
            "Qwen2.5-Math `extract_answer` + `group_pred(preds, use_symbol=True)`",
            qwen_s,
            count,
            done,
            killed,
        ),
        row("of which `group_pred` alone", result["qwen_group_s"], count, done, "-"),
    ]
    different, others = result["different"], result["other_clusters"]
    listed = "; ".join(different) if different else "none"
    return f"""Against Qwen2.5-Math's own code, the same {groups} groups in the same run
(`--qwen-eval`; Qwen's code in a process of its own, which imported in
{result["qwen_import_s"]:.1f} s, not counted; ours after a warm-up on GSM8K):

{chr(10).join(lines)}

`group_pred` made {result["qwen_comparisons"]:,} `math_equal` calls; {result["qwen_alarms"]} hit its
5 s alarm (or raised). The two pick a different answer (the sample group_pred picks is not in the
cluster ours picks) in {len(different)} of {done} groups: {listed}. The clusters differ in
{len(others)} of {done} groups: {"; ".join(others) or "none"}. (group_pred's `math_equal` calls
two numbers equal within a relative 1e-4, and reads a completion that hedges between answers
by its last box; the math reward keeps such numbers apart, and a hedged completion votes for
nothing.) maj@8 by Qwen's
verdicts: ours {result["ours_right"]}, group_pred {result["theirs_right"]} (of {done}).

{provenance}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="put the section into this BENCHMARKS.md")
    parser.add_argument(
        "--qwen-eval",
        type=Path,
        metavar="DIR",
        help="Qwen2.5-Math's evaluation files (see the docstring); without it, no Qwen row",
    )
    parser.add_argument("--note", default="", help="a sentence on the machine, for the section")
    parser.add_argument(
        "--qwen-timeout", type=float, default=150.0, help="kill a Qwen group after this (s)"
    )
    args = parser.parse_args()
    if not QWEN.exists() or not GSM8K.exists():
        print(f"real data not available under {DATA}", file=sys.stderr)
        return 1
    if args.qwen_eval is not None and (problems := qwen_files(args.qwen_eval)):
        print("\n".join(problems), file=sys.stderr)
        return 1
    if args.qwen_eval is None:
        print("Qwen's own group_pred skipped: see --qwen-eval in the docstring", file=sys.stderr)
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
    peer = against_qwen(qwen, gsm8k[:8], args) if args.qwen_eval is not None else None

    def cells(n: dict[str, float], keys: Sequence[str]) -> str:
        return " | ".join(f"{round(n[k], 3):g}" if k in n else "-" for k in keys)

    keys = (*METRICS, "rm@k", "w", "pass@k")
    ours_row = f"{cost['ours_comparisons']} | {cost['ours_s']:.3f}"
    peer_row = f"{cost['peer_comparisons']} | {cost['peer_s']:.3f}"
    agree = f"{cost['agree']} / {cost['groups']}"
    qwen_flag = " --qwen-eval DIR" if peer is not None else ""
    shared = f" {args.note}" if args.note else ""
    body = f"""## Test-time selection: Qwen2.5-Math and GSM8K

Run `python benchmarks/selection_bench.py --write BENCHMARKS.md{qwen_flag}` on
{time.strftime("%Y-%m-%d")}, 2 cores, Python {sys.version.split()[0]}.{shared}
Accuracy does not depend on the machine; the same
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

The second row is Qwen's loop with our comparison, not Qwen's code: what bucketing saves
against all pairs with one comparison function.

{qwen_section(peer, args.qwen_timeout)}"""
    write_section(args.write, "selection-bench", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
