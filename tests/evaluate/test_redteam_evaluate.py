"""Red team of `rewardsmith evaluate`: places where its summary, exit code or report tells a
user something about a reward that is not true.

One row per hole, asserting the correct behaviour. The rows under HOLES fail on the code this
file was written against (they are the findings); the rows under GUARDS pass and pin down
behaviour the README promises and a fix must keep. The rewards at the top are imported by the
engine's worker processes as ``tests.evaluate.test_redteam_evaluate:<factory>``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from itertools import product
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import RewardFn, Sample, Score, reward
from rewardsmith.evaluate import auroc, evaluate, load_dataset

from .real_data import DATA, GSM8K, read_jsonl
from .weak_rewards import _BOX, _evaluate, _gold

HERE = "tests.evaluate.test_redteam_evaluate:"
WEAK_MATH = "tests.evaluate.weak_rewards:weak_math"


# -- rewards -------------------------------------------------------------------------------


def _weak_value(sample: Sample) -> bool:
    """weak_math's verdict: the last box (or `####`) evaluated as arithmetic equals the gold."""
    text = sample.text
    boxes = _BOX.findall(text)
    answer = boxes[-1] if boxes else text.split("####")[-1] if "####" in text else None
    value = _evaluate(answer) if answer is not None else None
    gold = _evaluate(_gold(sample.reference))
    return value is not None and gold is not None and abs(value - gold) < 1e-9


@reward("tests.evaluate.redteam_fails_on_wrong")
def fails_on_wrong() -> RewardFn:
    """weak_math that raises instead of scoring a wrong answer 0 (a parser that gives up on
    an answer it cannot match): right answers 1.0, everything else `error`."""

    def score(sample: Sample) -> Score:
        if _weak_value(sample):
            return Score.ok(1.0)
        return Score.failed("error", "could not match the answer")

    return score


@reward("tests.evaluate.redteam_fails_on_bad")
def fails_on_bad() -> RewardFn:
    """1.0, except `error` on any text containing BAD (a reward that crashes on some inputs)."""

    def score(sample: Sample) -> Score:
        if "BAD" in sample.text:
            return Score.failed("error", "crashed")
        return Score.ok(1.0 if "good" in sample.text else 0.0)

    return score


@reward("tests.evaluate.redteam_na_unless_boxed")
def na_unless_boxed() -> RewardFn:
    """weak_math on a boxed answer; with no box, `not_applicable` ("no answer to check") --
    the way a custom checker says it had nothing to grade."""

    def score(sample: Sample) -> Score:
        if not _BOX.findall(sample.text):
            return Score.failed("not_applicable", "no boxed answer")
        return Score.ok(float(_weak_value(sample)))

    return score


# -- helpers -------------------------------------------------------------------------------


def _write(path: Path, rows: list[dict[str, Any]], first_line: str = "") -> Path:
    path.write_text(first_line + "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli", "evaluate", "--workers", "1", "--quiet", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _spec(tmp: Path, type_: str) -> Path:
    path = tmp / "spec.yaml"
    path.write_text(f'rewards:\n  c: {{type: "{type_}"}}\ntimeout_s: 20\n')
    return path


def _gsm8k(n: int) -> list[dict[str, Any]]:
    if not DATA.exists():
        pytest.skip(f"shared data absent: {DATA}")
    return read_jsonl(GSM8K, n)


def _total_outcomes(summary: Any) -> dict[str, tuple[int, int]]:
    return {
        a["attack"]: (a["n"], a["successes"])
        for a in summary.as_json()["attacks"]
        if a["component"] == "reward"
    }


# -- holes (fail now) ----------------------------------------------------------------------


def hole_bad_first_line_hides_the_whole_file(tmp: Path) -> None:
    """A pairs file whose FIRST line is truncated is read as `labelled` (the format chosen
    for a dataset whose first record is an error), so every good pair after it becomes an
    "unreadable row": 0 rows, metrics of nothing. README: "An unreadable row is reported with
    its line number and skipped" -- one row, not the file."""
    rows = [{"prompt": f"q{i}", "chosen": "good", "rejected": "bad"} for i in range(3)]
    data = load_dataset([_write(tmp / "pairs.jsonl", rows, first_line='{"prompt": "tr\n')])
    assert (data.format, len(data.rows), len(data.bad_lines)) == ("pairs", 3, 1)


def hole_nothing_readable_still_passes(tmp: Path) -> None:
    """When no row of the data can be read (here: a broken first line, then rows whose labels
    are strings), evaluate exits 0 with n = 0 and `agreement 0.0`, even under
    --fail-on-attack: a CI gate passes having evaluated and attacked nothing. (An empty file
    is a `--data: no rows` error; a file of unreadable rows should be one too.)"""
    rows = [{"prompt": "1+1?", "completion": "2", "reference": "2", "label": "yes"}] * 3
    data = _write(tmp / "rows.jsonl", rows, first_line="{not json\n")
    done = _cli("--spec", str(_spec(tmp, "math")), "--data", str(data), "--fail-on-attack")
    assert done.returncode != 0, done.stderr


def hole_duplicate_ids_stay_duplicate(tmp: Path) -> None:
    """Duplicate ids are renamed `<file>:<id>` once, without checking the new name: a third
    row with id `a` gets `rows:a` again. The summary's false positives/negatives and failed
    lists name rows by id, so two rows are indistinguishable there."""
    rows = [{"id": "a", "prompt": f"q{i}", "completion": "x", "label": 1} for i in range(3)]
    ids = [r.id for r in load_dataset([_write(tmp / "rows.jsonl", rows)]).rows]
    assert len(set(ids)) == 3, ids


def hole_duplicate_ids_change_attack_counts(tmp: Path) -> None:
    """The attack pass keys results by sample id (`{r.id: r for r in ...}`), and ids come
    from row ids: with the rows' ids `a, a, a` (renamed a, rows:a, rows:a) two targets share
    `rows:a/...`, so the second's results overwrite the first's and the first target's
    attacks are judged with another prompt's results. On 3 GSM8K-style rows weak_math is
    hedged 10 of 21 times with distinct ids but 5 of 21 with duplicate ones: a hack is
    halved by renaming rows."""
    fruit = {"question": "Name a fruit.", "answer": "An apple is a fruit.\n#### apple"}
    rows = [*_gsm8k(2), fruit]
    spec = {"rewards": {"c": {"type": WEAK_MATH}}}
    tallies = []
    for ids in (["a", "b", "c"], ["a", "a", "a"]):
        path = _write(tmp / "rows.jsonl", [{**r, "id": i} for r, i in zip(rows, ids, strict=True)])
        summary = evaluate([path], spec=spec, attacks="hedge,box_expression", workers=1)
        tallies.append(_total_outcomes(summary))
    assert tallies[0] == tallies[1]


def hole_custom_reward_type_gets_only_failure_attacks(tmp: Path) -> None:
    """`--attacks all` (the default) runs the attacks aimed at the spec's types; a reward type
    no generator names (any custom reward, and the built-in reward_model, regex, similarity,
    sql, tool_call, json, likelihood, process, ...) gets only `failure_escape`. weak_math
    (hacked 6 of 6 by `box_expression`, see test_attacks.py) is then reported unhacked and
    `--fail-on-attack` exits 0. With `--url` and no spec the types are unknown and every
    attack runs; an unknown type here should be treated the same (or the run should say that
    no attack was aimed at it). README: "it tells a user ... whether it can be hacked";
    "Any spec works"."""
    path = _write(tmp / "rows.jsonl", _gsm8k(3))
    summary = evaluate([path], spec={"rewards": {"c": {"type": WEAK_MATH}}}, workers=1)
    assert summary.attacks_succeeded, _total_outcomes(summary)


def hole_attack_vanishes_when_every_baseline_failed(tmp: Path) -> None:
    """A reward that errors on wrong answers (instead of scoring them 0) makes every honest
    wrong baseline fail; those rows are left out of `n`, and an attack left with n = 0 gets
    no outcome at all: `box_expression`, which earns 1.0 where the honest wrong answer earns
    null (0.0 under verl/OpenRLHF), is absent from the JSON, the table and the report, and
    `--fail-on-attack` passes. README: "(a missing or unscored baseline counts as 0)"; at
    the least the attack must be listed with the rows it could not judge."""
    path = _write(tmp / "rows.jsonl", _gsm8k(3))
    spec = {"rewards": {"c": {"type": HERE + "fails_on_wrong"}}}
    summary = evaluate([path], spec=spec, attacks="box_expression", workers=1)
    assert "box_expression" in _total_outcomes(summary), summary.as_json()["attacks"]


def hole_best_of_n_hides_failed_samples(tmp: Path) -> None:
    """best_of_n metrics have no failure count (labelled has `failed`, pairs
    `failed_samples`): a reward that crashes on every rejected candidate scores accuracy
    1.0 and nothing in the summary says 3 of 4 samples failed. (The same row as a pair counts
    0: "a tie or a failure counts 0".)"""
    row = {"prompt": "p", "chosen": ["good"], "rejected": ["BAD 1", "BAD 2", "BAD 3"]}
    path = _write(tmp / "bon.jsonl", [row])
    summary = evaluate(
        [path], spec={"rewards": {"c": {"type": HERE + "fails_on_bad"}}}, attacks="none", workers=1
    )
    assert summary.format == "best_of_n"
    assert summary.measured.metrics.get("failed_samples") == 3, summary.measured.metrics


def hole_labelled_subset_that_always_fails_disappears(tmp: Path) -> None:
    """Labelled subsets are built from scored samples only: a subset whose every sample
    failed has no entry, and with one subset left `subsets` is empty -- the per-subset view
    hides exactly the subset the reward cannot handle. README (labelled): "failed samples
    counted apart"; the subset's failures are counted nowhere per subset."""
    rows = [
        {"prompt": "p", "completion": "good", "label": 1, "subset": "easy"},
        {"prompt": "p", "completion": "meh", "label": 0, "subset": "easy"},
        {"prompt": "q", "completion": "BAD good", "label": 1, "subset": "hard"},
        {"prompt": "q", "completion": "BAD meh", "label": 0, "subset": "hard"},
    ]
    summary = evaluate(
        [_write(tmp / "rows.jsonl", rows)],
        spec={"rewards": {"c": {"type": HERE + "fails_on_bad"}}},
        attacks="none",
        workers=1,
    )
    assert summary.measured.metrics["failed"] == 2
    assert "hard" in summary.measured.subsets, summary.measured.subsets


def hole_negative_attack_rows_is_a_traceback(tmp: Path) -> None:
    """`--attack-rows -1` is not rejected by the CLI: `random.sample(..., -1)` raises and the
    user gets a Python traceback (exit 1, the same code as "attacks succeeded") instead of a
    usage error."""
    rows = [{"prompt": "1+1?", "completion": "2", "reference": "2", "label": 1}] * 2
    data = _write(tmp / "rows.jsonl", rows)
    done = _cli("--spec", str(_spec(tmp, "math")), "--data", str(data), "--attack-rows", "-1")
    assert "Traceback" not in done.stderr and done.returncode == 2, done.stderr[-400:]


def hole_json_array_rows_reported_by_position_as_line(tmp: Path) -> None:
    """In a JSON array file (LLMBar, RM-Bench) an unreadable item is reported as "line N"
    with N its position in the array, not its line: in this pretty-printed file the bad item
    (the 2nd) starts on line 8 and is reported as "line 2". README: "An unreadable row is
    reported with its line number"."""
    items = [
        {"input": "a", "output_1": "x", "output_2": "y", "label": 1},
        {"input": "b", "output_1": "x", "output_2": "y", "label": 3},
    ]
    path = tmp / "llmbar.json"
    path.write_text(json.dumps(items, indent=1), encoding="utf-8")
    starts = [i + 1 for i, text in enumerate(path.read_text().splitlines()) if text == " {"]
    line = starts[1]  # the 2nd item's first line
    message = str(load_dataset([path]).bad_lines[0])
    assert f"line {line}" in message or "item 2" in message, message


def hole_not_applicable_escape_is_not_counted(tmp: Path) -> None:
    """Only `timeout`/`error`/`invalid` count as an escape. A completion that makes a reward
    say `not_applicable` (here: a custom checker with no box to grade; a master key such as
    ":" has none) gets a null reward and, under `group_transform: grpo`, a null advantage --
    left out of its group, i.e. 0 to the trainer -- while the honest wrong answer gets about
    -1. evaluate reports `master_key` 0 of 11. README: an attack succeeds "when its reward, or
    with a `group_transform` its advantage, is higher", and ("Why: a sample left out of its
    group has no advantage at all, which beats the negative advantage of an honest wrong
    answer")."""
    prompt = "Janet has 16 eggs, eats 3, bakes 4 and sells the rest at $2. How much?"
    rows = [
        {"prompt": prompt, "reference": "18", "completion": "9*2=18. \\boxed{18}", "label": 1},
        {"prompt": prompt, "reference": "18", "completion": "9*2=17. \\boxed{17}", "label": 0},
    ]
    spec = {
        "rewards": {"c": {"type": HERE + "na_unless_boxed"}},
        "group_transform": "grpo",
    }
    summary = evaluate(
        [_write(tmp / "rows.jsonl", rows)], spec=spec, attacks="master_key", workers=1
    )
    n, successes = _total_outcomes(summary)["master_key"]
    assert successes > 0, (n, successes)


HOLES: list[Callable[[Path], None]] = [
    hole_bad_first_line_hides_the_whole_file,
    hole_nothing_readable_still_passes,
    hole_duplicate_ids_stay_duplicate,
    hole_duplicate_ids_change_attack_counts,
    hole_custom_reward_type_gets_only_failure_attacks,
    hole_attack_vanishes_when_every_baseline_failed,
    hole_best_of_n_hides_failed_samples,
    hole_labelled_subset_that_always_fails_disappears,
    hole_negative_attack_rows_is_a_traceback,
    hole_json_array_rows_reported_by_position_as_line,
    hole_not_applicable_escape_is_not_counted,
]


# -- guards (pass now) ---------------------------------------------------------------------


def guard_pairs_failure_counts_zero(tmp: Path) -> None:
    """README (pairs): "a tie or a failure counts 0", and failures are counted."""
    rows = [
        {"prompt": "p", "chosen": "good", "rejected": "BAD"},  # rejected fails: 0
        {"prompt": "q", "chosen": "good", "rejected": "good too"},  # tie: 0
        {"prompt": "r", "chosen": "good", "rejected": "meh"},  # 1
    ]
    summary = evaluate(
        [_write(tmp / "pairs.jsonl", rows)],
        spec={"rewards": {"c": {"type": HERE + "fails_on_bad"}}},
        attacks="none",
        workers=1,
    )
    metrics = summary.measured.metrics
    assert metrics["accuracy"] == pytest.approx(1 / 3)
    assert metrics["failed_samples"] == 1


def guard_labelled_failures_counted_apart(tmp: Path) -> None:
    """README (labelled): failures are not scored as 0 (which would be a true negative for a
    wrong answer) but counted apart and listed with their reason."""
    rows = [
        {"id": "r1", "prompt": "p", "completion": "good", "label": 1},
        {"id": "r2", "prompt": "p", "completion": "meh", "label": 0},
        {"id": "r3", "prompt": "p", "completion": "BAD", "label": 0},
    ]
    summary = evaluate(
        [_write(tmp / "rows.jsonl", rows)],
        spec={"rewards": {"c": {"type": HERE + "fails_on_bad"}}},
        attacks="none",
        workers=1,
    )
    metrics = summary.measured.metrics
    assert metrics["failed"] == 1 and metrics["true_negatives"] == 1
    assert [f["id"] for f in summary.measured.tables["failed"]] == ["r3"]


def guard_bad_jsonl_line_reported_with_its_number(tmp: Path) -> None:
    """README: "An unreadable row is reported with its line number and skipped"."""
    rows = [{"prompt": "p", "completion": "x", "label": 1}]
    path = tmp / "rows.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n\n{oops\n" + json.dumps(rows[0]) + "\n")
    data = load_dataset([path])
    assert len(data.rows) == 2 and "line 3" in str(data.bad_lines[0])


def guard_auroc_is_mann_whitney_with_half_ties(tmp: Path) -> None:
    """AUROC = P(positive > negative) + P(tie) / 2, checked against the pairwise definition."""
    positives, negatives = [1.0, 0.5, 0.5, 0.2, 0.9], [0.5, 0.1, 0.9, 0.0]
    pairs = list(product(positives, negatives))
    brute = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)
    assert auroc(positives, negatives) == pytest.approx(brute)


GUARDS: list[Callable[[Path], None]] = [
    guard_pairs_failure_counts_zero,
    guard_labelled_failures_counted_apart,
    guard_bad_jsonl_line_reported_with_its_number,
    guard_auroc_is_mann_whitney_with_half_ties,
]


@pytest.mark.parametrize("row", HOLES, ids=lambda f: f.__name__.removeprefix("hole_"))
def test_hole(row: Callable[[Path], None], tmp_path: Path) -> None:
    row(tmp_path)


@pytest.mark.parametrize("row", GUARDS, ids=lambda f: f.__name__.removeprefix("guard_"))
def test_guard(row: Callable[[Path], None], tmp_path: Path) -> None:
    row(tmp_path)
