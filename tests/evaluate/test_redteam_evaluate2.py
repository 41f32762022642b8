"""Red team 2 of `rewardsmith evaluate`: the fixes of the first red team (097d2bf..b2a9618)
and what is around them.

One row per hole, asserting the correct behaviour: the rows under HOLES fail on the code this
file was written against (032b24d); the rows under GUARDS pass and pin down behaviour the
fixes got right and a later fix must keep.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.evaluate import evaluate, load_dataset

from .real_data import DATA, GSM8K, read_jsonl

FAILS_ON_BAD = "tests.evaluate.test_redteam_evaluate:fails_on_bad"
WEAK_MATH = "tests.evaluate.weak_rewards:weak_math"
MATH500 = DATA / "math500" / "test.jsonl"


# -- helpers -------------------------------------------------------------------------------


def _lines(rows: list[dict[str, Any]], end: str = "\n") -> str:
    return "".join(json.dumps(r) + end for r in rows)


def _labelled(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"prompt": f"q{i}", "completion": "x", "label": 1} for i in range(start, start + n)]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli", "evaluate", "--workers", "1", "--quiet", *args],
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


# -- holes (fail now) ----------------------------------------------------------------------


def hole_data_after_a_json_array_is_silently_dropped(tmp: Path) -> None:
    """REGRESSION of 24ee967. The item-by-item array reader stops at the array's `]` and never
    looks at what follows: two concatenated arrays (`[r1]` then `[r2, r3]`, as `cat a.json
    b.json` makes) give 1 row and NO bad line -- 2 rows vanish unreported. The old
    `json.load` refused the file ("Extra data"). README: "An unreadable row is reported with
    its line number ... and skipped"."""
    path = tmp / "two_arrays.json"
    path.write_text(json.dumps(_labelled(1)) + "\n" + json.dumps(_labelled(2, 1)) + "\n")
    data = load_dataset([path])
    assert len(data.rows) == 3 or data.bad_lines, (len(data.rows), data.bad_lines)


def hole_jsonl_whose_first_line_is_an_array_loses_the_file(tmp: Path) -> None:
    """A JSON Lines file whose first line happens to start with `[` (here a header line
    `["prompt", "completion", "label"]`) is read as one JSON array: the header is reported as
    one bad item, the array ends at its `]`, and the 5 good rows after it vanish with no
    message. With another `--data` file beside it the run goes on with those 5 rows missing.
    This is the first red team's "a bad first line hides the file", back through `[`."""
    good = tmp / "good.jsonl"
    good.write_text(_lines(_labelled(3)))
    headed = tmp / "headed.jsonl"
    headed.write_text('["prompt", "completion", "label"]\n' + _lines(_labelled(5, 3)))
    data = load_dataset([good, headed])
    assert len(data.rows) == 8, (len(data.rows), [str(e) for e in data.bad_lines])


def hole_utf8_bom_costs_the_first_row(tmp: Path) -> None:
    """A UTF-8 file with a byte-order mark (what Notepad and Excel's "CSV UTF-8" export write)
    loses its first row: "line 1: not valid JSON: Unexpected UTF-8 BOM". A BOM JSON array is
    not read at all (no readable row, exit 2). Reading as `utf-8-sig` (which the error
    message itself suggests) keeps every row; RFC 8259 lets a parser ignore the BOM."""
    path = tmp / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _lines(_labelled(3)).encode())
    data = load_dataset([path])
    assert (len(data.rows), data.bad_lines) == (3, []), [str(e) for e in data.bad_lines]


def hole_cr_line_ends_make_one_bad_line(tmp: Path) -> None:
    """REGRESSION of c1dd46d (files read as bytes, split on b"\\n"). A file whose lines end
    in a bare CR (classic Mac, some exports) was read row by row by the old text-mode reader
    (universal newlines); now the whole file is one line, "not valid JSON: Extra data", and
    the run stops with no readable row. JSON strings cannot hold a raw CR, so a CR is always
    a line end here."""
    path = tmp / "cr.jsonl"
    path.write_bytes(_lines(_labelled(3), end="\r").encode())
    data = load_dataset([path])
    assert len(data.rows) == 3


def hole_one_non_utf8_byte_drops_a_whole_json_array(tmp: Path) -> None:
    """One Latin-1 byte in the 3rd of 4 items of a JSON array: the whole array is dropped
    ("not UTF-8 text; the array is not read"), items 1 and 2 included; in JSON Lines the same
    byte costs one line. README: "a JSON array is read up to the item where its JSON
    breaks"."""
    items = [{"input": f"i{i}", "output_1": "x", "output_2": "y", "label": 1} for i in range(4)]
    items[2]["output_1"] = "caf\udce9"  # the byte 0xE9 alone: Latin-1 "é"
    path = tmp / "llmbar.json"
    path.write_bytes(
        json.dumps(items, indent=1, ensure_ascii=False).encode("utf-8", "surrogateescape")
    )
    other = tmp / "other.json"
    other.write_text(json.dumps(items[:1]))
    data = load_dataset([other, path])
    assert len(data.rows) >= 1 + 2, (len(data.rows), [str(e) for e in data.bad_lines])


def hole_first_row_without_a_label_stops_the_run(tmp: Path) -> None:
    """The format comes from the first readable row (24ee967). When that row is labelled
    data missing its label (`"label": null`, one unlabelled sample), the whole run stops,
    exit 2: "rows have a completion but no label", though 3 of 4 rows have one. The same row
    on line 4 is skipped as "no 0/1 or bool label" and the other 3 are evaluated. README: "An
    unreadable row is reported with its line number ... and skipped"."""
    unlabelled = {"prompt": "p", "completion": "x", "label": None}
    path = tmp / "rows.jsonl"
    path.write_text(_lines([unlabelled, *_labelled(3)]))
    data = load_dataset([path])
    assert (data.format, len(data.rows), len(data.bad_lines)) == ("labelled", 3, 1)


def hole_not_applicable_rows_report_an_honest_reward_as_hacked(tmp: Path) -> None:
    """549766f made a `not_applicable` total an escape unless the baseline is null too; but
    when a row has NO honest wrong baseline (none in the data, none a family can make), the
    null is counted as beating a "missing baseline counted as 0". The shipped `math` reward
    on labelled rows that have no reference says `not_applicable` ("no reference answer") to
    EVERY completion, honest or not; evaluate reports restate_question 4 of 4 and
    failure_escape 12 of 12 successful, and `--fail-on-attack` exits 1. The null is caused by
    the row, not the completion. README: "A null reward the completion causes (...
    `not_applicable`: nothing left to count) is a success"."""
    rows = [
        {
            "id": f"r{i}",
            "prompt": f"Tell me a fun fact ({i}).",
            "completion": "Octopuses have three hearts.",
            "label": 1,
        }
        for i in range(2)
    ]
    path = tmp / "rows.jsonl"
    path.write_text(_lines(rows))
    summary = evaluate([path], spec={"rewards": {"c": {"type": "math"}}}, workers=1)
    assert summary.measured.metrics["not_applicable"] == 2  # the honest answers: null too
    assert not summary.attacks_succeeded, _total_outcomes(summary)


def hole_best_of_n_failed_rejected_is_not_as_in_pairs(tmp: Path) -> None:
    """README (best_of_n): "a failed candidate is never at it: it counts 0, as in pairs".
    In pairs, a row whose rejected response fails counts 0 ("a tie or a failure counts 0");
    in best_of_n the failed rejected candidates are dropped, so the chosen one (scored 0.0,
    the reward's lowest score) is alone at the maximum: 1.0. A reward that crashes on every
    hard negative gets a perfect best-of-N score (only `failed_samples` says otherwise),
    and the same preference is 0 as a pair and 1 as a best-of-N row."""
    spec = {"rewards": {"c": {"type": FAILS_ON_BAD}}}
    pair = tmp / "pairs.jsonl"
    pair.write_text(_lines([{"prompt": "p", "chosen": "meh", "rejected": "BAD"}]))
    bon = tmp / "bon.jsonl"
    bon.write_text(_lines([{"prompt": "p", "chosen": ["meh"], "rejected": ["BAD", "BAD 2"]}]))
    as_pair = evaluate([pair], spec=spec, attacks="none", workers=1).measured.metrics
    as_bon = evaluate([bon], spec=spec, attacks="none", workers=1).measured.metrics
    assert as_pair["accuracy"] == 0.0
    assert as_bon["accuracy"] == as_pair["accuracy"], as_bon


def hole_overall_rates_are_a_silent_zero_when_nothing_was_scored(tmp: Path) -> None:
    """42d3dde gives a labelled subset with nothing scored only its counts ("rates only when
    something in it was scored (no silent 0)"), but the overall metrics still read
    `agreement 0.0, precision 0.0, recall 0.0, f1 0.0` when every sample was not_applicable
    -- the table says the reward disagrees with every label when it graded none."""
    rows = [
        {"prompt": "Tell me a fact.", "completion": "Octopuses have three hearts.", "label": 1}
    ] * 2
    path = tmp / "rows.jsonl"
    path.write_text(_lines(rows))
    metrics = evaluate(
        [path], spec={"rewards": {"c": {"type": "math"}}}, attacks="none", workers=1
    ).measured.metrics
    assert metrics["not_applicable"] == 2
    assert "agreement" not in metrics, metrics


def hole_files_with_the_same_name_merge_their_subsets(tmp: Path) -> None:
    """With several `--data` files each file's NAME (stem) is its subset, so files of the same
    name in different folders become one subset -- LLMBar as published is
    `Natural/dataset.json`, `Adversarial/Neighbor/dataset.json`, ...: its five subsets
    collapse into one `dataset` and `accuracy_subset_mean` is just the accuracy. README:
    "with several `--data` files whose rows name no subset, each file's name is its
    subset"; the renamed ids (`dataset:1`) do not say which file either."""
    item = {"input": "i", "output_1": "x", "output_2": "y", "label": 1}
    paths = []
    for folder in ("Natural", "Neighbor"):
        (tmp / folder).mkdir()
        paths.append(tmp / folder / "dataset.json")
        paths[-1].write_text(json.dumps([item, item]))
    subsets = {row.subset for row in load_dataset(paths).rows}
    assert len(subsets) == 2, subsets


HOLES: list[Callable[[Path], None]] = [
    hole_data_after_a_json_array_is_silently_dropped,
    hole_jsonl_whose_first_line_is_an_array_loses_the_file,
    hole_utf8_bom_costs_the_first_row,
    hole_cr_line_ends_make_one_bad_line,
    hole_one_non_utf8_byte_drops_a_whole_json_array,
    hole_first_row_without_a_label_stops_the_run,
    hole_not_applicable_rows_report_an_honest_reward_as_hacked,
    hole_best_of_n_failed_rejected_is_not_as_in_pairs,
    hole_overall_rates_are_a_silent_zero_when_nothing_was_scored,
    hole_files_with_the_same_name_merge_their_subsets,
]


# -- guards (pass now) ---------------------------------------------------------------------


def guard_array_lines_with_newlines_and_brackets_in_strings(tmp: Path) -> None:
    """Item lines in a pretty-printed array are right when strings hold escaped newlines,
    brackets and braces (`"a [ { \\n ]"`), and CRLF line ends count once."""
    items = [
        {"input": "a [ { \\n ] }", "output_1": "x\n\n\n]", "output_2": "y", "label": 1},
        {"input": "b", "output_1": "x", "output_2": "y", "label": 3},
        {"input": "c", "output_1": "x", "output_2": "y", "label": 1},
    ]
    for name, text in (
        ("lf.json", json.dumps(items, indent=2)),
        ("crlf.json", json.dumps(items, indent=2).replace("\n", "\r\n")),
    ):
        path = tmp / name
        path.write_bytes(text.encode())
        data = load_dataset([path])
        assert [r.line for r in data.rows] == [2, 14]
        assert "line 8: item 2:" in str(data.bad_lines[0])


def guard_crlf_jsonl_reads_every_row(tmp: Path) -> None:
    path = tmp / "crlf.jsonl"
    path.write_bytes(_lines(_labelled(3), end="\r\n").encode())
    data = load_dataset([path])
    assert (len(data.rows), data.bad_lines) == (3, [])


def guard_renamed_ids_never_collide(tmp: Path) -> None:
    """Ids that look like renames (`rows:a`, `rows:a#2`) given literally, before and after the
    repeats, in two files of the same stem: every id stays unique."""
    ids = ["rows:a#2", "a", "rows:a", "a", "a", "rows:a#3", "a"]
    rows = [{"id": i, "prompt": "p", "completion": "x", "label": 1} for i in ids]
    (tmp / "x").mkdir()
    first, second = tmp / "rows.jsonl", tmp / "x" / "rows.jsonl"
    first.write_text(_lines(rows))
    second.write_text(_lines(rows))
    got = [r.id for r in load_dataset([first, second]).rows]
    assert len(got) == len(set(got)) == 14, got


def guard_failed_baseline_and_failed_attack_is_a_tie(tmp: Path) -> None:
    """A reward that errors on the honest wrong answer AND on the attack (both null): not an
    escape (README: "unless ... the baseline itself was scored null (a tie)")."""
    rows = [
        {"prompt": "p", "completion": "good", "label": 1},
        {"prompt": "p", "completion": "BAD wrong", "label": 0},
    ]
    path = tmp / "rows.jsonl"
    path.write_text(_lines(rows))

    summary = evaluate(
        [path],
        spec={"rewards": {"c": {"type": FAILS_ON_BAD}}, "group_transform": "grpo"},
        attacks="failure_escape",
        workers=1,
    )
    n, successes = _total_outcomes(summary)["failure_escape"]
    assert n > 0 and successes == 0, (n, successes)


def guard_attacks_succeed_with_a_bad_line_exits_1(tmp: Path) -> None:
    """--fail-on-attack: attacks that succeed exit 1 even when a line was skipped (a bad line
    alone is not "data that cannot be evaluated"), and the bad line is reported."""
    row = {"question": "Janet sells 9 eggs at $2. How much?", "answer": "9*2=18\n#### 18"}
    path = tmp / "rows.jsonl"
    path.write_text(_lines([row]) + "{oops\n")
    spec = tmp / "spec.yaml"
    spec.write_text(f'rewards:\n  c: {{type: "{WEAK_MATH}"}}\n')
    done = _cli(
        "--spec",
        str(spec),
        "--data",
        str(path),
        "--attacks",
        "box_expression",
        "--fail-on-attack",
    )
    assert done.returncode == 1, done.stderr[-600:]
    assert "line 2:" in " ".join(done.stderr.split())  # rich wraps the message


def guard_real_data_math_resists_on_a_slice(tmp: Path) -> None:
    """README: with `group_transform: grpo`, no `answers` or `failure` attack beats `math` on
    GSM8K and MATH-500 prompts. Checked on 4 + 4 rows (--format prompts); the honest right
    answers are all above the wrong ones."""
    if not DATA.exists():
        pytest.skip(f"shared data absent: {DATA}")
    paths = []
    for name, source in (("gsm8k.jsonl", GSM8K), ("math500.jsonl", MATH500)):
        paths.append(tmp / name)
        paths[-1].write_text(_lines(read_jsonl(source, 4)))
    summary = evaluate(
        paths,
        spec={"rewards": {"c": {"type": "math"}}, "group_transform": "grpo"},
        format="prompts",
        attacks="answers,failure",
        workers=1,
    )
    outcomes = _total_outcomes(summary)
    assert outcomes and all(s == 0 for _, s in outcomes.values()), outcomes
    assert summary.redteam is not None and summary.redteam.baselines["right_above_wrong"] == 1.0


GUARDS: list[Callable[[Path], None]] = [
    guard_array_lines_with_newlines_and_brackets_in_strings,
    guard_crlf_jsonl_reads_every_row,
    guard_renamed_ids_never_collide,
    guard_failed_baseline_and_failed_attack_is_a_tie,
    guard_attacks_succeed_with_a_bad_line_exits_1,
    guard_real_data_math_resists_on_a_slice,
]


@pytest.mark.parametrize("row", HOLES, ids=lambda f: f.__name__.removeprefix("hole_"))
def test_hole(row: Callable[[Path], None], tmp_path: Path) -> None:
    row(tmp_path)


@pytest.mark.parametrize("row", GUARDS, ids=lambda f: f.__name__.removeprefix("guard_"))
def test_guard(row: Callable[[Path], None], tmp_path: Path) -> None:
    row(tmp_path)
