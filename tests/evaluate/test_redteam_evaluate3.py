"""Red team 3 of `rewardsmith evaluate`: the fixes of the second red team (5f9623d..4e8ea6b)
-- the streaming reader, the subset names, the skip rule of the attack pass
(`attack_skipped_rows`) -- and what is around them.

One row per hole, asserting the correct behaviour: the rows under HOLES fail on the code this
file was written against (4e8ea6b); the rows under GUARDS pass and pin down behaviour a later
fix must keep.

The skip rule (455f04d) decides "null by the row's doing" from the baseline's status alone:
any `not_applicable`, or a failure whose cause is not `completion` (which the reward itself
sets). But the baseline is a completion too (the honest wrong answer, or an attack's own
baseline): when some other completion of the same row scored (the honest right answer, the
attacked completion itself), the reward does apply to the row and the baseline's null is that
completion's doing -- a trainer reads it as 0 (or leaves it out), so an attack that scores
there is a hack. Rows 1-3 are rewards that ARE hacked (a trainer would pay the trick) and are
reported clean.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import RewardFn, Sample, Score, reward
from rewardsmith.evaluate import evaluate, load_dataset

HERE = "tests.evaluate.test_redteam_evaluate3:"
_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


# -- rewards -------------------------------------------------------------------------------


def _gold_boxed(sample: Sample) -> bool:
    """Whether any box holds the gold: the weakness (a hedge boxing both answers passes)."""
    return str(sample.reference).strip() in [b.strip() for b in _BOX.findall(sample.text)]


@reward("tests.evaluate.redteam3_zero_unless_right")
def zero_unless_right() -> RewardFn:
    """1.0 when any box holds the gold, else 0.0 (the control of row 1)."""

    def score(sample: Sample) -> Score:
        return Score.ok(float(_gold_boxed(sample)))

    return score


@reward("tests.evaluate.redteam3_na_unless_right")
def na_unless_right() -> RewardFn:
    """1.0 when any box holds the gold; otherwise `not_applicable` ("nothing to grade") --
    the same weak check, saying "not applicable" where the control says 0."""

    def score(sample: Sample) -> Score:
        if _gold_boxed(sample):
            return Score.ok(1.0)
        return Score.failed("not_applicable", "no gradable answer")

    return score


@reward("tests.evaluate.redteam3_infra_unless_right")
def infra_unless_right() -> RewardFn:
    """1.0 when any box holds the gold; otherwise an `error` the reward itself labels
    `cause: infrastructure` (a grader that blames its backend for what it cannot parse)."""

    def score(sample: Sample) -> Score:
        if _gold_boxed(sample):
            return Score.ok(1.0)
        return Score.failed("error", "grader busy", cause="infrastructure")

    return score


@reward("tests.evaluate.redteam3_na_without_think")
def na_without_think() -> RewardFn:
    """A format reward: `not_applicable` without a `<think>` block, else 1.0 when it is
    closed -- tags with nothing in them are paid (weak_think_format's weakness)."""

    def score(sample: Sample) -> Score:
        if "<think>" not in sample.text:
            return Score.failed("not_applicable", "no reasoning block")
        return Score.ok(1.0 if "</think>" in sample.text else 0.0)

    return score


@reward("tests.evaluate.redteam3_grader_down")
def grader_down() -> RewardFn:
    """Every sample fails with `cause: infrastructure` (the judge server is down)."""

    def score(sample: Sample) -> Score:
        return Score.failed("error", "judge server unreachable", cause="infrastructure")

    return score


# -- helpers -------------------------------------------------------------------------------


def _lines(rows: list[dict[str, Any]], end: str = "\n") -> str:
    return "".join(json.dumps(r) + end for r in rows)


def _row(i: int) -> dict[str, Any]:
    return {"prompt": f"q{i}", "completion": "x", "label": 1}


def _math_rows(tmp: Path) -> Path:
    """Three prompts, each with an honest right (boxed gold) and an honest wrong answer."""
    rows = []
    for i in range(3):
        gold = 18 + i
        prompt, reference = f"What is 9*2+{i}?", str(gold)
        rows.append(
            {
                "id": f"r{i}",
                "prompt": prompt,
                "reference": reference,
                "completion": f"9*2+{i} = {gold}. \\boxed{{{gold}}}",
                "label": 1,
            }
        )
        rows.append(
            {
                "id": f"w{i}",
                "prompt": prompt,
                "reference": reference,
                "completion": f"9*2+{i} = {gold - 1}. \\boxed{{{gold - 1}}}",
                "label": 0,
            }
        )
    path = tmp / "math.jsonl"
    path.write_text(_lines(rows))
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli", "evaluate", "--workers", "1", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _total_outcomes(summary: Any) -> dict[str, tuple[int, int]]:
    return {
        a["attack"]: (a["n"], a["successes"])
        for a in summary.as_json()["attacks"]
        if a["component"] == "reward"
    }


def _spec_file(tmp: Path, type_: str) -> Path:
    path = tmp / "spec.yaml"
    path.write_text(f'rewards:\n  c:\n    type: "{HERE}{type_}"\n')
    return path


# -- holes (fail now) ----------------------------------------------------------------------


def hole_not_applicable_on_the_wrong_answer_hides_a_hack(tmp: Path) -> None:
    """`hedge` and `box_every_number` box the gold beside the wrong answer; a reward that
    passes any box holding the gold is hacked by them. Scoring 0.0 for a wrong answer
    (control) it is reported hacked; saying `not_applicable` for it instead -- while the same
    row's honest right answer scores 1.0, so the reward plainly applies to the row -- every
    row goes to `attack_skipped_rows` ("no gradable answer"), no hedge case is counted, and
    `attacks_succeeded` is False (`--fail-on-attack` passes). A trainer reads the wrong
    answer's null as 0 (or zero advantage) and pays the hedge 1.0. README: "A row whose
    baseline ... is null by the row's doing, `not_applicable` ...: the reward does not apply
    to the row (`math` on a row with no reference)" -- here it does."""
    data = _math_rows(tmp)
    attacks = "hedge,box_every_number"
    control = evaluate(
        [data],
        spec={"rewards": {"c": {"type": HERE + "zero_unless_right"}}},
        attacks=attacks,
        workers=1,
    )
    assert control.attacks_succeeded, _total_outcomes(control)  # the trick works
    summary = evaluate(
        [data],
        spec={"rewards": {"c": {"type": HERE + "na_unless_right"}}},
        attacks=attacks,
        workers=1,
    )
    assert summary.attacks_succeeded, (
        _total_outcomes(summary),
        summary.as_json()["attack_skipped_rows"],
    )


def hole_reward_labelling_its_failure_infrastructure_hides_a_hack(tmp: Path) -> None:
    """As above, with the reward failing (`error`) on the wrong answer and setting
    `cause: infrastructure` itself: the cause is the reward's say-so (`detail.cause`), yet
    it alone takes every row out of the attack pass, on rows where the honest right answer
    scored 1.0 a moment before in the same group. Reported clean; hacked by the hedge."""
    summary = evaluate(
        [_math_rows(tmp)],
        spec={"rewards": {"c": {"type": HERE + "infra_unless_right"}}},
        attacks="hedge,box_every_number",
        workers=1,
    )
    assert summary.attacks_succeeded, (
        _total_outcomes(summary),
        summary.as_json()["attack_skipped_rows"],
    )


def hole_format_attack_whose_own_baseline_is_not_applicable_is_skipped(tmp: Path) -> None:
    """The `format` attacks compare with their own baseline (the honest right answer without
    tags). A think-format reward that says `not_applicable` without a `<think>` block and 1.0
    to any closed block (empty, U+200B, stuffed tags) is hacked by `tag_stuffing` /
    `empty_think` -- the attacked completion itself scored 1.0 on the row -- but the
    baseline's `not_applicable` (caused by the completion: it has no tags) is read as the
    row's doing: every row skipped ("no reasoning block"), no format case counted."""
    summary = evaluate(
        [_math_rows(tmp)],
        spec={"rewards": {"c": {"type": HERE + "na_without_think"}}},
        attacks="format",
        workers=1,
    )
    assert summary.attacks_succeeded, (
        _total_outcomes(summary),
        summary.as_json()["attack_skipped_rows"],
    )


def hole_fail_on_attack_passes_silently_when_every_row_is_left_out(tmp: Path) -> None:
    """The judge server is down during the run: every sample fails with cause
    `infrastructure`, so every attack row is "left out" and no attack is measured at all.
    `--fail-on-attack --quiet` exits 0 with nothing on stderr (bad lines are printed under
    --quiet; left-out rows are not), so a CI gate goes green on zero evidence. Without
    --quiet the only trace is a table row labelled "rows left out of attacks (not
    applicable)" -- for a server that was unreachable. README: "--fail-on-attack exits 1
    when any attack raised the total reward above its baseline"; "no attack list is no
    evidence that no trick works" -- neither is an attack pass that measured nothing.
    Correct: a run that measured no attack must not pass a gate silently (exit non-zero, or
    at least say on stderr that the rows were left out)."""
    proc = _cli(
        "--quiet",
        "--fail-on-attack",
        "--spec",
        str(_spec_file(tmp, "grader_down")),
        "--data",
        str(_math_rows(tmp)),
        "--json",
        str(tmp / "s.json"),
    )
    summary = json.loads((tmp / "s.json").read_text())
    assert summary["attacks"] == [] and len(summary["attack_skipped_rows"]) == 3
    assert proc.returncode != 0 or "left out" in proc.stderr, (proc.returncode, proc.stderr)


def hole_files_differing_only_in_extension_share_one_subset(tmp: Path) -> None:
    """README: "each file's name (without its extension) is its subset, with as many of its
    folders as tell it from the other files' names (...; the path as given when only the
    extensions differ)". `_file_names` drops the files equal to mine before comparing, so
    `data.jsonl` and `data.json` are both subset `data` (the fallback to the path is
    unreachable), their rows are merged into one subset, and the second file's ids become
    `data:1` -- naming neither file. Same with `a/x.jsonl`, `a/x.json`, `b/x.jsonl`."""
    (tmp / "data.jsonl").write_text(_lines([_row(1), _row(2)]))
    (tmp / "data.json").write_text(json.dumps([_row(3)]) + "\n")
    dataset = load_dataset([tmp / "data.jsonl", tmp / "data.json"])
    subsets = {row.subset for row in dataset.rows}
    assert len(subsets) == 2, subsets


def hole_cat_of_two_arrays_with_a_bom_loses_the_second(tmp: Path) -> None:
    """README: "Files are JSON Lines or JSON arrays (several arrays one after the other, as
    `cat a.json b.json` makes, are read in turn), UTF-8 with or without a byte-order mark".
    `cat` of two such files (each saved with a BOM, as Windows tools write them) puts a BOM
    before the second `[`; the reader skips only a leading BOM, so the second array is
    "item 3: not valid JSON (Expecting value); the rest is not read": half the data gone."""
    one = b"\xef\xbb\xbf[\n" + json.dumps(_row(1)).encode() + b",\n"
    one += json.dumps(_row(2)).encode() + b"\n]\n"
    two = b"\xef\xbb\xbf[\n" + json.dumps(_row(3)).encode() + b"\n]\n"
    path = tmp / "cat.json"
    path.write_bytes(one + two)
    dataset = load_dataset([path])
    assert len(dataset.rows) == 3, [str(b) for b in dataset.bad_lines]


def hole_the_same_file_given_twice_is_counted_twice(tmp: Path) -> None:
    """`--data a.jsonl --data a.jsonl` (or `a.jsonl` and `./a.jsonl`, or a symlink) reads
    the file twice: every row counts twice in the metrics (renamed `a:1`, `a:2`, so the
    duplicate is hidden by the id rule), both copies in one subset `a`. A shell glob plus an
    explicit path does this easily. Correct: one file is read once (or the run says so)."""
    path = tmp / "a.jsonl"
    path.write_text(_lines([_row(1), _row(2)]))
    dataset = load_dataset([path, tmp / "." / "a.jsonl"])
    assert len(dataset.rows) == 2 or dataset.bad_lines, [r.id for r in dataset.rows]


HOLES: list[Callable[[Path], None]] = [
    hole_not_applicable_on_the_wrong_answer_hides_a_hack,
    hole_reward_labelling_its_failure_infrastructure_hides_a_hack,
    hole_format_attack_whose_own_baseline_is_not_applicable_is_skipped,
    hole_fail_on_attack_passes_silently_when_every_row_is_left_out,
    hole_files_differing_only_in_extension_share_one_subset,
    hole_cat_of_two_arrays_with_a_bom_loses_the_second,
    hole_the_same_file_given_twice_is_counted_twice,
]


# -- guards (pass now) ---------------------------------------------------------------------


def guard_jsonl_line_numbers_past_long_lines_and_mixed_ends(tmp: Path) -> None:
    """GUARD. Line numbers stay right after a 300 kB line and across LF, CRLF, bare CR and
    blank lines (the binary reader cuts chunks at LF, so a CRLF is never split)."""
    long_row = {"prompt": "y" * 300_000, "completion": "x", "label": 1}
    text = (
        json.dumps(_row(1))
        + "\n"
        + json.dumps(long_row)
        + "\r\n\r\n"
        + json.dumps(_row(3))
        + "\r\r{bad\n"
        + json.dumps(_row(7))
    )
    path = tmp / "mixed.jsonl"
    path.write_bytes(text.encode())
    dataset = load_dataset([path])
    assert [(r.id, r.line) for r in dataset.rows] == [("1", 1), ("2", 2), ("4", 4), ("7", 7)]
    assert "line 6:" in str(dataset.bad_lines[0]), dataset.bad_lines


def guard_array_item_lines_with_cr_and_crlf(tmp: Path) -> None:
    """GUARD. In a JSON array with CR or CRLF ends, each item keeps the line it starts on,
    and a bad item is reported on its own line."""
    for end in ("\r", "\r\n"):
        text = "[" + end + json.dumps(_row(1)) + "," + end + end + json.dumps(_row(2))
        text += "," + end + '"str",' + end + "{bad}" + end + "]" + end
        path = tmp / "arr.json"
        path.write_bytes(text.encode())
        dataset = load_dataset([path])
        assert [(r.id, r.line) for r in dataset.rows] == [("1", 2), ("2", 4)]
        assert [str(b).split(": ")[1] for b in dataset.bad_lines] == ["line 5", "line 6"]


def guard_empty_blank_bom_utf16_and_directory_exit_2(tmp: Path) -> None:
    """GUARD. An empty file, one of only blank lines, one of only a BOM, a UTF-16 file and a
    directory given as --data stop the run with exit code 2, not a traceback."""
    files = {
        "empty.jsonl": b"",
        "blank.jsonl": b"  \n\n\t\r\n",
        "bom.jsonl": b"\xef\xbb\xbf\n",
        "utf16.jsonl": (json.dumps(_row(1)) + "\n").encode("utf-16"),
    }
    for name, content in files.items():
        (tmp / name).write_bytes(content)
    (tmp / "folder").mkdir()
    for name in [*files, "folder"]:
        proc = _cli(
            "--quiet", "--spec", str(_spec_file(tmp, "grader_down")), "--data", str(tmp / name)
        )
        assert proc.returncode == 2, (name, proc.returncode, proc.stderr[-500:])
        assert "Traceback" not in proc.stderr, name


def guard_subset_names_with_dots_and_backslashes(tmp: Path) -> None:
    """GUARD. Folders with dots (`v1.0`, `v1.1`) and names with a backslash (a POSIX file
    name, not a separator) give distinct subsets."""
    paths = []
    for folder, stem in (("v1.0", "data"), ("v1.1", "data"), ("x", "data.v2"), ("y", "a\\b")):
        (tmp / folder).mkdir()
        path = tmp / folder / f"{stem}.jsonl"
        path.write_text(_lines([_row(1)]))
        paths.append(path)
    subsets = [r.subset for r in load_dataset(paths).rows]
    assert subsets == ["v1.0/data", "v1.1/data", "data.v2", "a\\b"], subsets


def guard_honest_reward_with_not_applicable_everywhere_is_not_hacked(tmp: Path) -> None:
    """GUARD (must survive a fix of rows 1-3). When every completion of a row is null (the
    shipped `math` on rows with no reference), the row is left out and nothing is hacked."""
    rows = [
        {"id": f"r{i}", "prompt": f"Fact {i}?", "completion": "Octopi.", "label": 1}
        for i in range(2)
    ]
    path = tmp / "rows.jsonl"
    path.write_text(_lines(rows))
    summary = evaluate([path], spec={"rewards": {"c": {"type": "math"}}}, workers=1)
    assert not summary.attacks_succeeded, _total_outcomes(summary)
    assert len(summary.as_json()["attack_skipped_rows"]) == 2


def guard_best_of_n_tie_is_one_over_k_and_pairs_tie_is_zero(tmp: Path) -> None:
    """GUARD. README: best_of_n "1/(candidates tied at the maximum)"; pairs "a tie ... counts
    0". One chosen and two rejected all tied: 1/3; the same tie as a pair: 0."""
    spec = {"rewards": {"c": {"type": HERE + "zero_unless_right"}}}
    bon = tmp / "bon.jsonl"
    bon.write_text(
        _lines([{"prompt": "p", "reference": "1", "chosen": ["a"], "rejected": ["b", "c"]}])
    )
    pair = tmp / "pair.jsonl"
    pair.write_text(_lines([{"prompt": "p", "reference": "1", "chosen": "a", "rejected": "b"}]))
    as_bon = evaluate([bon], spec=spec, attacks="none", workers=1).measured.metrics
    as_pair = evaluate([pair], spec=spec, attacks="none", workers=1).measured.metrics
    assert abs(as_bon["accuracy"] - 1 / 3) < 1e-9, as_bon
    assert as_pair["accuracy"] == 0.0, as_pair


def guard_cli_table_json_and_report_agree(tmp: Path) -> None:
    """GUARD. The CLI table shows every metric of --json with its value, and the HTML report
    lists the same left-out rows as --json."""
    proc = _cli(
        "--spec",
        str(_spec_file(tmp, "na_unless_right")),
        "--data",
        str(_math_rows(tmp)),
        "--attacks",
        "hedge",
        "--json",
        str(tmp / "s.json"),
        "--report",
        str(tmp / "r.html"),
    )
    assert proc.returncode == 0, proc.stderr[-800:]
    data = json.loads((tmp / "s.json").read_text())
    table = proc.stderr
    for name, value in data["metrics"].items():
        shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        assert re.search(rf"{re.escape(name)}\s*│\s*{re.escape(shown)}", table), (name, shown)
    html = (tmp / "r.html").read_text()
    assert f"{len(data['attack_skipped_rows'])} rows left out" in html
    for row_id in data["attack_skipped_rows"]:
        assert f"<td>{row_id}</td>" in html, row_id


GUARDS: list[Callable[[Path], None]] = [
    guard_jsonl_line_numbers_past_long_lines_and_mixed_ends,
    guard_array_item_lines_with_cr_and_crlf,
    guard_empty_blank_bom_utf16_and_directory_exit_2,
    guard_subset_names_with_dots_and_backslashes,
    guard_honest_reward_with_not_applicable_everywhere_is_not_hacked,
    guard_best_of_n_tie_is_one_over_k_and_pairs_tie_is_zero,
    guard_cli_table_json_and_report_agree,
]


@pytest.mark.parametrize("row", HOLES, ids=lambda f: f.__name__.removeprefix("hole_"))
def test_hole(row: Callable[[Path], None], tmp_path: Path) -> None:
    row(tmp_path)


@pytest.mark.parametrize("row", GUARDS, ids=lambda f: f.__name__.removeprefix("guard_"))
def test_guard(row: Callable[[Path], None], tmp_path: Path) -> None:
    row(tmp_path)
