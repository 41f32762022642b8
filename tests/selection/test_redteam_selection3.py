"""Red team (rt23) of the rt22 fixes to test-time selection and the `majority_vote` reward.

rt22 fixed 16 holes (an empty key is no answer, `--cluster normalized` keeps a number's
punctuation, `prm_prod` refuses steps outside [0, 1], overflow gives no pick, strict JSON,
the comparison budget, oracle/pass@k, a verdict failed on the completion is wrong, `--k` and
reappearing groups, bad lines by file line, `--output` = `--input` refused). This file attacks
those fixes and what they may have broken, in the style of `test_redteam_selection2.py`: each
row computes what the attack earns and what an honest answer earns in the same setting (or,
for a README sentence, what the code does and what the sentence says) and asserts what the
attack *should* earn. `today` says what it earns now, and what it earned when this file was
written ("was"). The file's 13 open holes (strict xfails) are fixed: every row is a guard
against regressions.

Rows marked "engine" start a worker pool (`workers=1`); rows marked "CLI" run the command.
"""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import InputError, Sample, select
from rewardsmith.io import read_samples
from rewardsmith.selection import (
    Candidate,
    GroupOutcome,
    read_vote,
    summarize,
)
from rewardsmith.selection._votes import _normalized
from rewardsmith.verifiers.math import math
from tests.redteam_rows import AT_MOST_HONEST, guard
from tests.selection.redteam_helpers import BOX, EQUAL, choose, score_at, vote_group


def _answers_read(spellings: list[str]) -> float:
    """How many of `\\boxed{spelling}` `select` reads as an answer (cluster math)."""
    read = [read_vote(Sample(id="0", completion=BOX(s)), "math", None) for s in spellings]
    return float(sum(v.answer is not None for v in read))


# -- empty answers: spellings the fix missed --------------------------------------------------

BLANK_SPELLINGS = [
    r"\hspace{1em}",
    r"\enspace",
    r"\thinspace",
    r"\medspace",
    r"\negthinspace",
    r"\kern1em",
    r"\hfill",
    r"\vspace{1em}",
    r"\ ",
    r"\>",
    "\\\\",
    r"\newline",
    "\u200b",
    "\u2060",
    r"\color{red}{}",
    r"\textcolor{red}{}",
    r"\ensuremath{}",
    r"\rule{1em}{0pt}",
]
"""Boxes that render as nothing (LaTeX spacing, a line break, zero-width characters, colour
or math wrappers around nothing, an invisible rule). Each was read as an answer whose key is
not empty (`\\enspace`, `\\`, `\\u200b`...), so the rt22 rule "an answer that is empty once
keyed is no answer" does not see them."""

ENSPACE_SPELLINGS = [r"\enspace", r"\,\enspace", r"{\enspace}", r"\mbox{}\enspace"]
"""Four spellings of one blank box that share the key `\\enspace`."""


def _vote_blank_spellings_win() -> tuple[float, float]:
    """rt22 row 1 again, with spellings the fix missed: four samples box a blank (four
    spellings of `\\enspace`, one key), one boxes a real `3`. The four are the majority, each
    paid 1, the `3` 0. Honest comparison: four plainly empty `\\boxed{}` (no answer): 0."""
    attack = vote_group([BOX(s) for s in ENSPACE_SPELLINGS] + [BOX(3)])
    honest = vote_group([r"\boxed{}"] * 4 + [BOX(3)])
    return score_at(attack, 0), score_at(honest, 0)


def _vote_all_blank_group_paid() -> tuple[float, float]:
    """Every sample of the group boxes `\\enspace`: a unanimous majority, 1 each, where a
    group of empty boxes pays 0."""
    attack = vote_group([BOX(r"\enspace")] * 4)
    honest = vote_group([r"\boxed{}"] * 4)
    return max(score_at(attack, i) for i in range(4)), max(score_at(honest, i) for i in range(4))


def _read_blank_spellings() -> tuple[float, float]:
    """How many of `BLANK_SPELLINGS` `select` reads as an answer (maj@k can pick one, and the
    choice's `no_answer` does not count it), against 0."""
    return _answers_read(BLANK_SPELLINGS), 0.0


def _read_unit_only_boxes() -> tuple[float, float]:
    """A box holding a unit and no number: `\\%` alone is no answer (its key is empty once
    `%` is stripped), but `\\$` alone (key `[dollar]`) and a degree sign alone (key
    `\\unit{degree}`) are answers, and the same unit-only box from every sample is a
    majority. Returns how many of the four are read as answers, against 0."""
    return _answers_read([r"\$", r"^\circ", r"^{\circ}", r"\$\,"]), _answers_read([r"\%"])


def _answer_key_empty_keys_outvote() -> tuple[float, float]:
    """Engine. `--answer-key metadata.pred` with `--cluster math`: the answers are taken as
    given and never pass `committed_answer`, so the rt22 rule does not apply. Three preds
    that render as nothing (`\\text{}`, `\\,`, `{}`) share the key '' and beat two `3`:
    maj@k picks `\\text{}`. Returns 1.0 when an empty pred is picked (0.0: the `3`)."""
    preds = [r"\text{}", r"\,", "{}", "3", "3"]
    samples = [
        {"id": str(i), "group": "g", "completion": "x", "metadata": {"pred": p}}
        for i, p in enumerate(preds)
    ]
    chosen = select(samples, "majority", cluster="math", answer_key="metadata.pred", workers=1)
    return float(chosen.choices[0].answer != "3"), 0.0


# -- real answers the fix now reads as no answer ------------------------------------------------

EMPTY_SET_SPACED = [r"\{ \}", r"\{~\}", r"\{\ \}", r"\left\{ \right\}"]
"""The empty set written with a space between its braces (how `\\{ \\}` is often typeset)."""


def _empty_set_spaced_no_answer() -> tuple[float, float]:
    """`\\boxed{\\{ \\}}` is the empty set: the math reward scores it 1 against the gold
    `\\{\\}`. Its key is '' so `committed_answer` now calls it "boxed answer empty": three
    right `\\{ \\}` lose the vote to two wrong `5` (each paid 0), where three `\\{\\}` win
    it (1). Returns (the score of a spaced empty-set sample, the unspaced one's)."""
    judged = math()(Sample(id="0", completion=BOX(r"\{ \}"), reference=r"\{\}"))
    assert judged.score == 1.0
    rest = [BOX(5), BOX(5)]
    attack = vote_group([BOX(s) for s in EMPTY_SET_SPACED[:3]] + rest)
    honest = vote_group([BOX(r"\{\}")] * 3 + rest)
    return score_at(attack, 0), score_at(honest, 0)


def _read_empty_set_spaced() -> tuple[float, float]:
    """How many of the four spaced empty-set spellings are read as an answer, against 4."""
    return _answers_read(EMPTY_SET_SPACED), float(len(EMPTY_SET_SPACED))


def _read_real_answers() -> tuple[float, float]:
    """Guard: real answers near the empty-key rule stay answers (0, the empty set, words)."""
    real = [
        "0",
        r"\boxed{0}",
        r"0\%",
        r"\$0",
        r"0^\circ",
        "-0",
        r"\emptyset",
        r"\varnothing",
        r"\{\}",
        r"\{\,\}",
        r"\left\{\right\}",
        r"\text{None}",
        r"\text{no solution}",
        r"\displaystyle 0",
        r"\phantom{-}3",
    ]
    return _answers_read(real), float(len(real))


def _read_empty_spellings_still_none() -> tuple[float, float]:
    """Guard: the brief's other empty spellings are no answer (LaTeX spacing, phantoms,
    `\\displaystyle{}`, `$ $`, unicode spaces, a box in a box, punctuation, `\\%`)."""
    empty = [
        r"\quad",
        r"\qquad",
        r"\;",
        r"\:",
        r"\!",
        r"\phantom{3}",
        r"\vphantom{3}",
        r"\hphantom{3}",
        r"\displaystyle{}",
        r"\displaystyle",
        "$ $",
        "\u00a0",
        "\u2003",
        "\u3000",
        r"\boxed{}",
        r"\boxed{\text{}}",
        ".",
        ",",
        "...",
        r"\%",
        r"\text{ }",
        r"\mbox{ }",
        r"\text{\,}",
    ]
    return _answers_read(empty), 0.0


# -- --cluster normalized --------------------------------------------------------------------


def _normalized_unicode_dash_minus() -> tuple[float, float]:
    """rt22 row 4 again with a Unicode dash: `_NUMBER_PUNCTUATION` keeps only ASCII `-`, and
    an en dash (U+2013), hyphen (U+2010) or non-breaking hyphen (U+2011) is punctuation
    (`Pd`): `\u20133` normalizes to `3`. Three wrong answers, -3 written with each dash,
    beside three right `3`: under `normalized` all six are one cluster and each wrong one is
    paid 1 for agreeing with the majority it contradicts; under `exact` each gets 0.
    Returns the best score of a dashed sample under normalized, and under exact."""
    texts = [BOX(3)] * 3 + [BOX("\u20133"), BOX("\u20103"), BOX("\u20113")]
    normalized, exact = vote_group(texts, cluster="normalized"), vote_group(texts, cluster="exact")
    return max(score_at(normalized, i) for i in (3, 4, 5)), max(
        score_at(exact, i) for i in (3, 4, 5)
    )


def _normalized_sign_before_point() -> tuple[float, float]:
    """`-.5` keeps its `.` (before a digit) but loses its `-` (before a `.`, not a digit):
    it normalizes to `.5` and votes with `0.5`'s `.5`; `- 3` (a spaced minus) normalizes to
    `3`. The math key tells them apart (`n:-1/2`, `n:-3`). Returns how many of the two pairs
    share a normalized key, against 0."""
    pairs = [("-.5", ".5"), ("- 3", "3")]
    return float(sum(_normalized(a) == _normalized(b) for a, b in pairs)), 0.0


def _normalized_number_punctuation_kept() -> tuple[float, float]:
    """Guard: the README's examples hold (`-3` not `3`, `1.2` not `1/2`, `3.5` not `3,5`,
    the `.` ending `42.` goes), a Unicode minus U+2212 is not merged with `3`, a range
    `3-4` is not `34`, a date keeps its dashes. Returns the pairs wrongly merged or split."""
    apart = [("-3", "3"), ("1.2", "1/2"), ("3.5", "3,5"), ("\u22123", "3"), ("3-4", "34")]
    apart += [("2024-01-05", "20240105"), ("1/2", "12")]
    together = [("42.", "42"), ("(-3)", "-3"), ("\uff0d3", "-3")]
    wrong = sum(_normalized(a) == _normalized(b) for a, b in apart)
    wrong += sum(_normalized(a) != _normalized(b) for a, b in together)
    return float(wrong), 0.0


# -- PRM aggregates at their boundaries ----------------------------------------------------------


def _prm_boundaries() -> tuple[float, float]:
    """Guard: `prm_prod` takes steps of exactly 0 and 1, -0.0 and a subnormal (all in
    [0, 1]) and refuses NaN, 1.0000001 and -1e-300; `-0.0` is no negative vote under the
    `_vote` methods. Returns the number of wrong outcomes."""

    def prod(steps: tuple[float, ...]) -> Any:
        group = [Candidate("0", "1", 0, steps=steps), Candidate("1", "2", 1, steps=(0.5,))]
        return choose("prm_prod_max", group)

    wrong = 0
    for steps, picked in [((1.0, 1.0), 0), ((0.0, 1.0), 1), ((-0.0,), 1), ((1.0, 5e-324), 1)]:
        wrong += prod(steps).index != picked
    for steps in [(float("nan"),), (1.0000001,), (-1e-300,)]:
        wrong += prod(steps).index is not None
    for method in ("prm_min_vote", "prm_last_vote", "prm_mean_vote", "prm_prod_vote"):
        group = [Candidate("0", "1", 0, steps=(-0.0,)), Candidate("1", "2", 1, steps=(0.0,))]
        wrong += choose(method, group).index != 0
    return float(wrong), 0.0


def _prm_vote_no_answer_group_ungraded() -> tuple[float, float]:
    """README: "Under the voting methods (`majority`, `weighted_majority`, the PRM `_vote`
    methods ...) a group where no candidate has an answer counts as wrong". Under
    `prm_prod_vote` the [0, 1] check, and under `prm_mean_vote` the overflow check, run
    before the vote: a group where no candidate has an answer and a step is 1.5 (or two
    steps are 1e308) gets an empty pick that is *not* graded. Returns the number of the two
    such groups graded in `accuracy`, against 2."""
    graded = 0
    for method, steps in [("prm_prod_vote", (1.5,)), ("prm_mean_vote", (1e308, 1e308))]:
        group = [
            Candidate("0", None, None, steps=steps, correct=False),
            Candidate("1", None, None, steps=(0.5,), correct=False),
        ]
        outcome = GroupOutcome(group, choose(method, group), choose("majority", group))
        summary = summarize([outcome], method=method, cluster="math", k=None)
        assert summary is not None
        graded += summary["graded"]["accuracy"]
    return float(graded), 2.0


# -- oracle and pass@k --------------------------------------------------------------------------


def _oracle_matches_pass_at_k() -> tuple[float, float]:
    """Guard: over every group of 1 to 4 candidates with verdicts True/False/None, oracle's
    accuracy and pass@k are graded on the same groups with the same value. Returns the
    number of groups where they differ."""
    differ = 0
    for size in range(1, 5):
        for verdicts in itertools.product([True, False, None], repeat=size):
            group = [Candidate(str(i), str(i), i, correct=v) for i, v in enumerate(verdicts)]
            outcome = GroupOutcome(group, choose("oracle", group), choose("majority", group))
            summary = summarize([outcome], method="oracle", cluster="math", k=None)
            if summary is None:
                continue
            differ += summary["accuracy"] != summary["pass@k"]
            differ += summary["graded"]["accuracy"] != summary["graded"]["pass@k"]
    return float(differ), 0.0


# -- input lines ---------------------------------------------------------------------------------


def _bom_only_first_line() -> tuple[float, float]:
    """A file that starts with a UTF-8 BOM on a line of its own (an editor's BOM, then a
    blank line): blank lines "are not samples and are passed over", but the BOM is only
    stripped after the blank test, so line 1 is reported "not valid JSON" and skipped as
    malformed. Returns the number of malformed reports, against 0."""
    data = b"\xef\xbb\xbf\n" + json.dumps({"id": "a", "completion": "x"}).encode() + b"\n"
    records = list(read_samples(io.BytesIO(data)))
    return float(sum(isinstance(r, InputError) for r in records)), 0.0


def _crlf_lines_numbered() -> tuple[float, float]:
    """Guard (engine): CRLF line ends, a BOM before the first record, blank and
    whitespace-only lines, and a JSON array line: each bad line is reported by its line
    number in the file. Returns 1.0 when the reports are lines 3 and 4 and 2 candidates
    remain."""
    lines = [
        json.dumps({"id": "a", "group": "g", "completion": BOX(3)}),
        "",
        "[1, 2]",
        json.dumps({"id": "b", "group": "g", "completion": 5}),
        "   ",
        json.dumps({"id": "c", "group": "g", "completion": BOX(3)}),
    ]
    data = b"\xef\xbb\xbf" + ("\r\n".join(lines) + "\r\n").encode()
    chosen = select(read_samples(io.BytesIO(data)), "majority", workers=1)
    lines_named = [s.split(":")[0] for s in chosen.skipped]
    return float(lines_named == ["line 3", "line 4"] and chosen.choices[0].candidates == 2), 1.0


def _k_reappearing_after_ungrouped() -> tuple[float, float]:
    """Guard (engine): with `--k 1`, a group `A` that reappears after a sample without a
    group (a group of its own) still stops the run. 1.0 when it stops."""
    samples = [
        {"id": "1", "group": "A", "completion": BOX(1)},
        {"id": "2", "group": "A", "completion": BOX(1)},
        {"id": "1", "completion": BOX(1)},
        {"id": "4", "group": "A", "completion": BOX(2)},
    ]
    try:
        select(samples, "majority", k=1, workers=1)
    except InputError:
        return 1.0, 1.0
    return 0.0, 1.0


# -- rewardsmith select (CLI): files ------------------------------------------------------------

_SELECT = [sys.executable, "-m", "rewardsmith.cli", "select", "--quiet", "--workers", "1"]
_LINE = json.dumps({"id": "a", "group": "g", "completion": BOX(3)}) + "\n"


def _run(arguments: list[str], folder: Path, **options: Any) -> int:
    options.setdefault("stdout", subprocess.DEVNULL)
    done = subprocess.run(
        [*_SELECT, *arguments], cwd=folder, stderr=subprocess.DEVNULL, check=False, **options
    )
    return done.returncode


def _same_file_spellings_refused() -> tuple[float, float]:
    """Guard (CLI): the input named another way is refused (exit 2) and kept: a hard link,
    a path through `..`, an absolute path, `/dev/stdout` appended to the input, stdin or
    `/dev/stdin` redirected from the output. Returns how many of the six were refused with
    the input intact."""
    refused = 0
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        data = folder / "F.jsonl"
        (folder / "sub").mkdir()
        data.write_text(_LINE)
        (folder / "H.jsonl").hardlink_to(data)
        for output in ["H.jsonl", "sub/../F.jsonl", str(data)]:
            refused += _run(["--input", "F.jsonl", "--output", output], folder) == 2
        with data.open("ab") as sink:
            refused += (
                _run(["--input", "F.jsonl", "--output", "/dev/stdout"], folder, stdout=sink) == 2
            )
        for source in ["-", "/dev/stdin"]:
            with data.open("rb") as stdin:
                refused += (
                    _run(["--input", source, "--output", "F.jsonl"], folder, stdin=stdin) == 2
                )
        return float(refused if data.read_text() == _LINE else 0), 6.0


def _json_is_input() -> tuple[float, float]:
    """CLI. `select --input F --output out.jsonl --json F`: the summary is written over the
    candidates (exit 0, F now holds `{"groups": 1, "accuracy": null}`). The rt22 check covers
    `--output` only. 1.0 when the input survives."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "F.jsonl").write_text(_LINE)
        _run(["--input", "F.jsonl", "--output", "out.jsonl", "--json", "F.jsonl"], folder)
        return float((folder / "F.jsonl").read_text() == _LINE), 1.0


def _json_is_output() -> tuple[float, float]:
    """CLI. `select --output out.jsonl --json out.jsonl`: the summary replaces the selection
    (exit 0, no choice line left). 1.0 when a choice line survives (or the run is refused)."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "F.jsonl").write_text(_LINE)
        code = _run(["--input", "F.jsonl", "--output", "o.jsonl", "--json", "o.jsonl"], folder)
        refused = code == 2  # before anything is written: there is no o.jsonl to read
        return float(refused or '"id": "a"' in (folder / "o.jsonl").read_text()), 1.0


ROWS = [
    # (id, attack -> (attack earns, honest earns), should(attack, honest), today)
    guard(
        "vote_blank_spacing_spellings_form_majority",
        _vote_blank_spellings_win,
        AT_MOST_HONEST,
        "0.0 vs 0.0: no answer (was 1.0: four \\enspace spellings, one key, outvoted a real 3)",
    ),
    guard(
        "vote_all_blank_group_paid",
        _vote_all_blank_group_paid,
        AT_MOST_HONEST,
        "0.0 each (was 1.0 each for a unanimous \\boxed{\\enspace} group)",
    ),
    guard(
        "select_reads_blank_spellings_as_answers",
        _read_blank_spellings,
        EQUAL,
        "0 of 18 read as answers (was 18: \\hspace, \\enspace, \\ , \\\\, U+200B...)",
    ),
    guard(
        "select_reads_unit_only_boxes_as_answers",
        _read_unit_only_boxes,
        EQUAL,
        "0 of 4 (\\$, ^\\circ) read as answers, as \\% alone (was 4)",
    ),
    guard(
        "select_answer_key_empty_keys_outvote",
        _answer_key_empty_keys_outvote,
        EQUAL,
        "3 picked (was \\text{}: --answer-key preds skipped the empty-key rule, '' x3 beat 3 x2)",
    ),
    guard(
        "vote_spaced_empty_set_is_no_answer",
        _empty_set_spaced_no_answer,
        EQUAL,
        "1.0 vs 1.0: \\{ \\} keys to {} (was 0.0: 'boxed answer empty')",
    ),
    guard(
        "select_reads_spaced_empty_set_as_no_answer",
        _read_empty_set_spaced,
        EQUAL,
        "4 of 4 spaced empty-set spellings read as answers (was 0)",
    ),
    guard("select_reads_real_answers", _read_real_answers, EQUAL, "15 of 15 read"),
    guard(
        "select_reads_other_empty_spellings_as_none",
        _read_empty_spellings_still_none,
        EQUAL,
        "0 of 23 read as answers",
    ),
    guard(
        "normalized_unicode_dash_minus_votes_with_positive",
        _normalized_unicode_dash_minus,
        AT_MOST_HONEST,
        "0.0 as under exact (was 1.0: an en dash / U+2010 / U+2011 minus normalized away)",
    ),
    guard(
        "normalized_sign_before_point_or_space_dropped",
        _normalized_sign_before_point,
        EQUAL,
        "0 of 2 pairs merged (was 2: -.5 with .5, '- 3' with 3)",
    ),
    guard(
        "normalized_number_punctuation_kept",
        _normalized_number_punctuation_kept,
        EQUAL,
        "0 wrong (U+2212 minus is kept, but is not ASCII -3's key: a split, not a merge)",
    ),
    guard("prm_aggregates_at_boundaries", _prm_boundaries, EQUAL, "0 wrong"),
    guard(
        "prm_vote_no_answer_group_not_graded",
        _prm_vote_no_answer_group_ungraded,
        EQUAL,
        "2 of 2 no-answer groups graded wrong (was 0: the [0, 1] check or overflow came first)",
    ),
    guard("oracle_matches_pass_at_k_every_mix", _oracle_matches_pass_at_k, EQUAL, "0 differ"),
    guard(
        "bom_only_first_line_reported_malformed",
        _bom_only_first_line,
        EQUAL,
        "0 malformed reports (was 1 for a blank, BOM-only, line)",
    ),
    guard("select_crlf_bom_blank_lines_numbered", _crlf_lines_numbered, EQUAL, "lines 3, 4"),
    guard(
        "select_k_reappearing_after_ungrouped",
        _k_reappearing_after_ungrouped,
        EQUAL,
        "the run stops",
    ),
    guard(
        "cli_select_same_file_spellings_refused",
        _same_file_spellings_refused,
        EQUAL,
        "6 of 6 refused, exit 2, input intact",
    ),
    guard(
        "cli_select_json_is_input",
        _json_is_input,
        EQUAL,
        "exit 2, the input intact (was exit 0, the candidates replaced by the summary)",
    ),
    guard(
        "cli_select_json_is_output",
        _json_is_output,
        EQUAL,
        "exit 2 (was exit 0, the selection replaced by the summary)",
    ),
]


@pytest.mark.parametrize(("name", "attack", "should", "today"), ROWS)
def test_redteam_selection3(
    name: str,
    attack: Callable[[], tuple[float, float]],
    should: Callable[[float, float], bool],
    today: str,
) -> None:
    earned, honest = attack()
    assert should(earned, honest), f"{name}: attack earns {earned}, honest {honest} ({today})"
