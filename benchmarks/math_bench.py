"""Math reward vs math-verify on real labelled data, in one run.

    python benchmarks/math_bench.py [--data ../shared/data] [--write BENCHMARKS.md]

Pairs: GSM8K example model solutions (5,276, labelled `is_correct`) and MATH-500 reference
solutions against their answers (500, all correct). For each tool: agreement with the labels,
false positives/negatives, throughput, per-pair latency (p50/p99/max) and peak memory. Then
Qwen2.5-Math's 800 sampled completions (100 MATH problems x 8, `score` = Qwen's grader's
verdict): agreement and pairs/s for both tools, and every pair where we disagree with the
label, with its cause (`qwen25math_label_errors.json` names the labels that are wrong).

- ours, end to end: the `rewardsmith score` CLI as a subprocess (start-up, JSONL in and out,
  the worker pool on every core), timed by wall clock.
- math-verify: `verify(parse(gold), parse(pred))` with its defaults, one pair after another
  in one process, as a trainer's reward function calls it. Its gold is given as its README
  shows gold: the bare final answer for GSM8K (text after `A:`) and `$answer$` for MATH-500
  (given the raw fields it scores 5,269/5,276 and 392/500). Ours gets the raw fields: the
  whole GSM8K ground-truth solution and the undelimited MATH-500 answer.
- latency: each tool scores every pair serially in one process, timed per pair.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import write_section
from _tree_memory import TreeMemory

from rewardsmith import ComponentSpec, Sample, registry

HERE = Path(__file__).resolve().parent
LABEL_ERRORS = HERE / "qwen25math_label_errors.json"
GSM8K_MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")
SPEC = "rewards:\n  correct: {type: math}\ntimeout_s: 5\n"


def load_pairs(data: Path) -> list[dict]:
    """Pairs with the label (`is_correct`) and the gold as math-verify's README shows it."""
    pairs = []
    with open(data / "gsm8k" / "example_model_solutions.jsonl", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            row = json.loads(line)
            for model in GSM8K_MODELS:
                pairs.append(
                    {
                        "id": f"gsm8k-{line_no}-{model}",
                        "completion": row[model]["solution"],
                        "reference": row["ground_truth"],
                        "is_correct": bool(row[model]["is_correct"]),
                        "peer_gold": row["ground_truth"].rsplit("A:", 1)[-1].strip(),
                    }
                )
    with open(data / "math500" / "test.jsonl", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            row = json.loads(line)
            pairs.append(
                {
                    "id": f"math500-{line_no}",
                    "completion": row["solution"],
                    "reference": row["answer"],
                    "is_correct": True,
                    "peer_gold": f"${row['answer']}$",
                }
            )
    return pairs


def load_qwen(data: Path) -> list[dict]:
    """Qwen2.5-Math's 800 completions with Qwen's verdicts; the question is the prompt."""
    pairs = []
    with open(data / "qwen25math" / "math_cot_100.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            for k, (completion, label) in enumerate(zip(row["code"], row["score"], strict=True)):
                pairs.append(
                    {
                        "id": f"qwen-{row['idx']}-{k}",
                        "prompt": row["question"],
                        "completion": completion,
                        "reference": row["answer"],
                        "is_correct": bool(label),
                        "peer_gold": f"${row['answer']}$",
                    }
                )
    return pairs


def write_pairs(pairs: list[dict], workdir: Path, name: str) -> tuple[Path, Path]:
    """Our input (the data contract) and math-verify's (gold as its README shows it)."""
    ours, peer = workdir / f"{name}.jsonl", workdir / f"{name}_peer.jsonl"
    keys = ("id", "prompt", "completion", "reference")
    ours.write_text("".join(json.dumps({k: p[k] for k in keys if k in p}) + "\n" for p in pairs))
    peer.write_text(
        "".join(
            json.dumps({"id": p["id"], "completion": p["completion"], "reference": p["peer_gold"]})
            + "\n"
            for p in pairs
        )
    )
    return ours, peer


def run_ours_cli(pairs_path: Path, workdir: Path) -> tuple[dict[str, dict], float, int]:
    spec, out = workdir / "spec.yaml", workdir / f"ours_{pairs_path.stem}.jsonl"
    spec.write_text(SPEC)
    cmd = [
        sys.executable,
        "-m",
        "rewardsmith.cli",
        "score",
        "--spec",
        str(spec),
        "--input",
        str(pairs_path),
        "--output",
        str(out),
        "--quiet",
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd)
    with TreeMemory(proc.pid) as memory:
        code = proc.wait()
    elapsed = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"rewardsmith exited {code}")
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    return results, elapsed, memory.peak_bytes


def run_math_verify(pairs_path: Path, workdir: Path) -> tuple[dict[str, dict], float, int]:
    out = workdir / f"math_verify_{pairs_path.stem}.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "_math_verify_runner.py"), str(pairs_path), str(out)]
    )
    with TreeMemory(proc.pid) as memory:
        code = proc.wait()
    if code != 0:
        raise SystemExit(f"math-verify runner exited {code}")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {r["id"]: r for r in rows[:-1]}, rows[-1]["total_seconds"], memory.peak_bytes


def our_latencies(pairs: list[dict]) -> list[float]:
    for module in registry.get("math").preload:  # as every worker does before its first task
        importlib.import_module(module)
    reward = ComponentSpec(type="math").build()
    seconds = []
    for pair in pairs:
        sample = Sample(
            id=pair["id"],
            completion=pair["completion"],
            reference=pair["reference"],
            prompt=pair.get("prompt"),
        )
        t0 = time.perf_counter()
        reward(sample)
        seconds.append(time.perf_counter() - t0)
    return seconds


def agreement(pairs: list[dict], verdicts: dict[str, bool], prefix: str) -> dict:
    subset = [p for p in pairs if p["id"].startswith(prefix)]
    fp = [p for p in subset if verdicts[p["id"]] and not p["is_correct"]]
    fn = [p for p in subset if not verdicts[p["id"]] and p["is_correct"]]
    return {"n": len(subset), "agree": len(subset) - len(fp) - len(fn), "fp": fp, "fn": fn}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def qwen_lines(
    qwen: list[dict],
    ours: dict[str, dict],
    ours_seconds: float,
    theirs: dict[str, dict],
    theirs_seconds: float,
) -> list[str]:
    """The Qwen2.5-Math section: agreement with Qwen's labels, pairs/s, every disagreement."""
    ours_latency = our_latencies(qwen)
    theirs_latency = [theirs[p["id"]]["seconds"] for p in qwen]
    errors = {e["id"]: e["cause"] for e in json.loads(LABEL_ERRORS.read_text())["label_errors"]}
    n = len(qwen)
    verdicts = {i: r["status"] == "ok" and r["reward"] == 1.0 for i, r in ours.items()}
    their_verdicts = {i: r["verdict"] for i, r in theirs.items()}
    agree = sum(verdicts[p["id"]] == p["is_correct"] for p in qwen)
    their_agree = sum(their_verdicts[p["id"]] == p["is_correct"] for p in qwen)
    wrong_labels = sum(p["id"] in errors for p in qwen)
    truth = {p["id"]: p["is_correct"] != (p["id"] in errors) for p in qwen}
    agree_truth = sum(verdicts[i] == t for i, t in truth.items())
    their_agree_truth = sum(their_verdicts[i] == t for i, t in truth.items())
    statuses = {
        s: sum(r["status"] == s for r in ours.values())
        for s in {r["status"] for r in ours.values()}
    }
    lines = [
        "",
        "### Qwen2.5-Math completions",
        "",
        f"The {n} completions of `qwen25math/math_cot_100.jsonl` (100 MATH problems x 8 samples, "
        "the question as prompt), against Qwen's grader's `score` labels, in the same run. "
        f"{wrong_labels} labels are wrong (`benchmarks/qwen25math_label_errors.json`, each with "
        "its cause); the last column counts against the corrected labels. Pairs/s: ours "
        "through the CLI (start-up included, which dominates 800 pairs) and serially in one "
        "warm process; math-verify serially. Max ms: the slowest pair, serially.",
        "",
        "| tool | agree with labels | pairs/s (CLI) | pairs/s (serial) | max ms "
        "| agree with corrected labels |",
        "|---|---|---|---|---|---|",
        f"| rewardsmith `math` | {agree}/{n} | {n / ours_seconds:,.0f} "
        f"| {n / sum(ours_latency):,.0f} | {max(ours_latency) * 1e3:.1f} "
        f"| **{agree_truth}/{n}** |",
        f"| math-verify 0.9.0 `parse`+`verify` | {their_agree}/{n} | - "
        f"| {n / theirs_seconds:,.0f} | {max(theirs_latency) * 1e3:.1f} "
        f"| {their_agree_truth}/{n} |",
        "",
        f"Our result statuses: {json.dumps(statuses, sort_keys=True)}. Every pair where our "
        "verdict differs from the label:",
        "",
    ]
    differ = [p for p in qwen if verdicts[p["id"]] != p["is_correct"]]
    if not differ:
        lines.append("- none")
    for pair in differ:
        found = ours[pair["id"]]["components"]["correct"].get("detail", {})
        answer = re.sub(r"\s+", " ", str(found.get("answer", "")))[:60]
        cause = errors.get(pair["id"], f"unexplained; our reason: {found.get('reason')}")
        label = "correct" if pair["is_correct"] else "wrong"
        lines.append(
            f"- `{pair['id']}` (labelled {label}, ours {int(verdicts[pair['id']])}): answer "
            f"`{answer}`, gold `{pair['reference']}`. {cause}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--write", type=Path, help="update this BENCHMARKS.md section")
    args = parser.parse_args()

    pairs = load_pairs(args.data)
    qwen = load_qwen(args.data)
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        pairs_path, peer_path = write_pairs(pairs, workdir, "pairs")
        ours, ours_seconds, ours_memory = run_ours_cli(pairs_path, workdir)
        theirs, theirs_seconds, theirs_memory = run_math_verify(peer_path, workdir)
        qwen_path, qwen_peer_path = write_pairs(qwen, workdir, "qwen")
        qwen_ours, qwen_ours_seconds, _ = run_ours_cli(qwen_path, workdir)
        qwen_theirs, qwen_theirs_seconds, _ = run_math_verify(qwen_peer_path, workdir)
    ours_latency = our_latencies(pairs)
    theirs_latency = [theirs[p["id"]]["seconds"] for p in pairs]

    our_verdicts = {i: r["status"] == "ok" and r["reward"] == 1.0 for i, r in ours.items()}
    their_verdicts = {i: r["verdict"] for i, r in theirs.items()}
    statuses = {
        s: sum(r["status"] == s for r in ours.values())
        for s in {r["status"] for r in ours.values()}
    }
    n = len(pairs)
    rows = []
    for name, verdicts, seconds, latency, memory in (
        (
            "rewardsmith `math` (CLI, end to end)",
            our_verdicts,
            ours_seconds,
            ours_latency,
            ours_memory,
        ),
        (
            "math-verify 0.9.0 `parse`+`verify` (serial)",
            their_verdicts,
            theirs_seconds,
            theirs_latency,
            theirs_memory,
        ),
    ):
        gsm, m500 = agreement(pairs, verdicts, "gsm8k-"), agreement(pairs, verdicts, "math500-")
        rows.append(
            f"| {name} | {gsm['agree']}/{gsm['n']} | {len(gsm['fp'])} | {len(gsm['fn'])} "
            f"| {m500['agree']}/{m500['n']} | {n / seconds:,.0f} | {seconds:.2f} "
            f"| {statistics.median(latency) * 1e3:.3f} | {pct(latency, 0.99) * 1e3:.2f} "
            f"| {max(latency) * 1e3:.1f} | {memory / 2**20:,.0f} |"
        )
    ratio = (n / ours_seconds) / (n / theirs_seconds)

    lines = [
        "## Math reward vs math-verify",
        "",
        f"Run `python benchmarks/math_bench.py --write BENCHMARKS.md` on {date.today()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, {n:,} pairs "
        "(5,276 GSM8K labelled model solutions + 500 MATH-500 reference solutions).",
        "",
        "| tool | GSM8K agree | GSM8K FP | GSM8K FN | MATH-500 scored 1 | pairs/s | wall s "
        "| p50 ms | p99 ms | max ms | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"**Throughput ratio: {ratio:.1f}x** (ours end to end through the CLI, including start-up, "
        "vs math-verify pair after pair in one process). Latency columns: each tool scoring every "
        "pair serially in one process (ours after importing its preload modules, as workers "
        "do). Peak MB: summed RSS of the process tree, sampled every 50 ms (ours: CLI + "
        "forkserver + workers).",
        "",
        f"Our result statuses: {json.dumps(statuses, sort_keys=True)}.",
        "",
        "Every pair where our verdict differs from the label:",
        "",
    ]
    gsm, m500 = agreement(pairs, our_verdicts, "gsm8k-"), agreement(pairs, our_verdicts, "math500-")
    disagreements = [("false positive", p) for p in gsm["fp"] + m500["fp"]] + [
        ("false negative", p) for p in gsm["fn"] + m500["fn"]
    ]
    if not disagreements:
        lines.append("- none")
    for kind, pair in disagreements:
        detail = ours[pair["id"]]["components"]["correct"]
        found = detail.get("detail", {})
        gold = re.sub(r"\s+", " ", str(found.get("gold", "")))[:80]
        answer = re.sub(r"\s+", " ", str(found.get("answer", "")))[:80]
        lines.append(
            f"- `{pair['id']}` ({kind}): extracted `{answer}` vs gold `{gold}`; "
            f"reason: {found.get('reason', detail.get('status'))}"
        )
    lines += qwen_lines(qwen, qwen_ours, qwen_ours_seconds, qwen_theirs, qwen_theirs_seconds)
    section = "\n".join(lines)
    write_section(args.write, "math-bench", section)


if __name__ == "__main__":
    main()
