"""Red team (rt22) of test-time selection and the `majority_vote` reward, after rtsel.

One row per attack, written as a policy (or a set of N sampled candidates) paid whenever its
answer is selected or agrees with the majority, using only what the README promises. Each
row computes what the attack earns and what an honest answer earns in the same setting (or,
for a README sentence, what the code does and what the sentence says) and asserts what the
attack *should* earn. `today` says what it earns now, and what it earned when this file was
written ("was"). The file's 16 open holes (strict xfails) are fixed: every row is a guard
against regressions.

Not repeated from `test_redteam_selection.py`: two boxes / a list as a hedge, unit-less
answers, the group step's cost, duplicate ids, signed raw scores, failed scores.
Rows marked "engine" start a worker pool (`workers=1`); one row runs the CLI.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import InputError, Sample, select
from rewardsmith.io import read_samples
from rewardsmith.selection import (
    Candidate,
    GroupOutcome,
    Vote,
    cluster_votes,
    majority_vote,
    read_vote,
    summarize,
)
from rewardsmith.selection._clusters import MAX_COMPARISONS_PER_VOTE
from rewardsmith.selection._methods import vote_weights
from tests.combine.helpers import ECHO
from tests.redteam_rows import AT_MOST_HONEST, guard
from tests.selection.redteam_helpers import BOX, EQUAL, choose, score_at, vote_group

# -- empty answers ----------------------------------------------------------------------------

EMPTY_SPELLINGS = [r"\text{}", r"\,", "{}", "~", r"\mbox{}", r"\text{.}"]
"""Boxes that render as nothing. The README ("Reward types", math): "Empty and `\\phantom{}`
boxes are not answers"; each of these was read as an answer whose key is the empty string."""


def _vote_empty_spellings_win() -> tuple[float, float]:
    """Four samples box nothing, each spelled differently, one boxes a real answer `3`. The
    four share the key '' and so one cluster: the majority, each paid 1 (the real answer 0).
    Honest comparison: the same four with a plainly empty `\\boxed{}` (no answer): 0."""
    attack = vote_group([BOX(e) for e in EMPTY_SPELLINGS[:4]] + [BOX(3)])
    honest = vote_group([r"\boxed{}"] * 4 + [BOX(3)])
    return score_at(attack, 0), score_at(honest, 0)


def _vote_all_empty_group_paid() -> tuple[float, float]:
    """A degenerate group: every sample boxes `\\text{}`. Each scores 1 (a unanimous
    majority), where a group of plainly empty boxes scores 0 each."""
    attack = vote_group([BOX(r"\text{}")] * 4)
    honest = vote_group([r"\boxed{}"] * 4)
    return max(score_at(attack, i) for i in range(4)), max(score_at(honest, i) for i in range(4))


def _read_empty_spellings() -> tuple[float, float]:
    """`select` reads answers with the same `read_vote`: how many of the empty spellings are
    read as an answer (maj@k can pick one, and `no_answer` does not count it), against 0."""
    read = [read_vote(Sample(id="0", completion=BOX(e)), "math", None) for e in EMPTY_SPELLINGS]
    return float(sum(v.answer is not None for v in read)), 0.0


# -- clusters ------------------------------------------------------------------------------


def _normalized_minus_sign() -> tuple[float, float]:
    """`--cluster normalized` strips punctuation, and ASCII `-`, `.` and `/` are punctuation:
    `-3` votes with `3` (and `1.2` with `1/2`, `3.5` with `3,5`). Three wrong `-3` and two
    right `3` make one cluster of 5, so each wrong sample is paid 1 for agreeing; under
    `exact` the three are simply the majority (1 each) and the two `3` get 0. Returns the
    score of a `3` sample: the wrong majority should not pay the answers it contradicts."""
    texts = [BOX(3), BOX(3), BOX(-3), BOX(-3), BOX(-3)]
    return score_at(vote_group(texts, cluster="normalized"), 0), score_at(
        vote_group(texts, cluster="exact"), 0
    )


def _vote_two_forms_one_vote() -> tuple[float, float]:
    """Guard: a completion that boxes one (wrong) answer in two forms (`0.5` and
    `\\frac{1}{2}`) is one vote, not two: the votes its cluster gets, against 1."""
    attack = vote_group([r"\boxed{0.5} and \boxed{\frac{1}{2}}", BOX(3), BOX(3)])
    assert attack[0].detail["clusters"] == [1, 2]
    return float(attack[0].detail["votes"]), 1.0


def _vote_approx_hedge() -> tuple[float, float]:
    """Guard: `5 \\approx 4` shares a bucket with both 5 and 4 but is the same answer as its
    exact side only: it votes for 5 as a plain `5` does, never for the majority 4."""
    rest = [BOX(4), BOX(4), BOX(4), BOX(5), BOX(5)]
    attack = vote_group([*rest, BOX(r"5 \approx 4")])
    honest = vote_group([*rest, BOX(5)])
    return score_at(attack, 5), score_at(honest, 5)


def _vote_or_hedge() -> tuple[float, float]:
    """Guard: `3 \\text{ or } 4` is its own answer (the set {3, 4}), not a vote for 3."""
    rest = [BOX(3), BOX(3), BOX(4)]
    return score_at(vote_group([*rest, BOX(r"3 \text{ or } 4")]), 3), score_at(
        vote_group([*rest, BOX(7)]), 3
    )


def _vote_restated_question() -> tuple[float, float]:
    """Guard: boxing the question's own expression is no answer, not a vote for 42."""
    reward = majority_vote()
    prompt = "What is 17+25?"
    texts = [BOX("17+25"), BOX(42), BOX(42), BOX(41), BOX(41)]
    samples = [
        Sample(id=str(i), prompt=prompt, completion=t, group="g") for i, t in enumerate(texts)
    ]
    scores = reward.group(samples, [reward(s) for s in samples])
    return score_at(scores, 0), 0.0


def _vote_no_answers_pay_nothing() -> tuple[float, float]:
    """Guard: a group where nobody commits to an answer pays nobody."""
    scores = vote_group(["hmm", "no idea", r"\boxed{}", r"\boxed{3} or \boxed{4}"])
    return max(score_at(scores, i) for i in range(4)), 0.0


def _comparisons_cap_counts_no_answers() -> tuple[float, float]:
    """README: "At most 8 x (answers) comparisons per group". The cap is 8 x the votes read,
    those without an answer included: 20 answers built to share a bucket and differ, beside
    20 samples without an answer, make 190 comparisons (8 x 20 = 160). Returns comparisons
    made and the README's bound."""
    answers = [Vote(f"a{i}", f"k{i}", ("b",)) for i in range(20)]
    silent = [Vote(None, reason="no answer")] * 20
    clustering = cluster_votes([*answers, *silent], "math", same=lambda a, b: False)
    return float(clustering.comparisons), float(MAX_COMPARISONS_PER_VOTE * len(answers))


# -- methods --------------------------------------------------------------------------------


def _prm_prod_signed_steps() -> tuple[float, float]:
    """A PRM that scores steps in logits (signed, as Qwen2.5-Math-RM's scores are): two very
    bad steps (-5, -5) multiply to 25 and beat two good ones (0.9, 0.9: 0.81) under
    `prm_prod_max` (and `prm_prod_vote`: 25 is >= 0, so the negative-vote check passes).
    Returns 1.0 when the bad candidate is picked."""
    group = [Candidate("good", "1", 0, steps=(0.9, 0.9)), Candidate("bad", "2", 1, steps=(-5, -5))]
    picks = [choose(m, group).index for m in ("prm_prod_max", "prm_prod_vote")]
    return float(any(i == 1 for i in picks)), 0.0


def _prm_mean_overflow() -> tuple[float, float]:
    """Two finite step scores of 1e308 make `prm_mean`'s `fmean` raise OverflowError out of
    the method: one candidate's scores end the whole `select` run. 1.0 when it raises."""
    group = [Candidate("0", "1", 0, steps=(1e308, 1e308)), Candidate("1", "2", 1, steps=(0.9,))]
    try:
        choose("prm_mean_max", group)
    except OverflowError:
        return 1.0, 0.0
    return 0.0, 0.0


def _infinite_pick_score() -> tuple[float, float]:
    """Finite scores whose product (`prm_prod`) or raw sum overflows: the pick's score is
    `inf` and wins; the output line then holds `Infinity`, which is not JSON. Returns how
    many of the two picks have a non-finite score (no pick, score None, has none)."""
    prod = [Candidate("0", "1", 0, steps=(1e200, 1e200)), Candidate("1", "2", 1, steps=(0.9,))]
    raw = [Candidate("0", "1", 0, score=1e308), Candidate("1", "1", 0, score=1e308)]
    picks = [choose("prm_prod_max", prod), choose("weighted_majority", raw, "raw")]
    return float(sum(p.score is not None and not math.isfinite(p.score) for p in picks)), 0.0


def _softmax_weight_zero() -> tuple[float, float]:
    """README: "`sigmoid` and `softmax` weights are always positive". At `--temperature 0.01`
    a score 8 below the best gets exp(-800) = 0.0, and a sigmoid of -1000 is 0.0: such a vote
    weighs nothing. Returns the smallest weight, against the README's bound (now "never
    negative": >= 0)."""
    group = [Candidate("0", "1", 0, score=10.0), Candidate("1", "2", 1, score=2.0)]
    softmax = vote_weights(group, "softmax", 0.01)
    sigmoid = vote_weights([Candidate("0", "1", 0, score=-1000.0)], "sigmoid", 1.0)
    return min(w for w in [*softmax, *sigmoid] if w is not None), 0.0


def _failed_scores_do_not_vote() -> tuple[float, float]:
    """Guard: three candidates for a wrong answer whose scoring failed (score None) and one
    scored 0 do not outvote one right answer scored 1 (1.0: the wrong cluster wins)."""
    group = [Candidate(str(i), "7", 0, score=None, failed_by="completion") for i in range(3)]
    group += [Candidate("3", "7", 0, score=0.0), Candidate("4", "5", 1, score=1.0)]
    picked = choose("weighted_majority", group).index
    return float(group[picked].answer == "7"), 0.0


def _oracle_accuracy_vs_pass_at_k() -> tuple[float, float]:
    """README: `oracle` is pass@k. A group of a wrong candidate and an unjudged one: the
    summary grades `oracle`'s accuracy (0, graded) but leaves pass@k ungraded (None), so the
    two disagree on the same groups. Returns (graded accuracy groups, graded pass@k
    groups)."""
    group = [Candidate("0", "1", 0, correct=False), Candidate("1", "2", 1, correct=None)]
    outcome = GroupOutcome(group, choose("oracle", group), choose("majority", group))
    summary = summarize([outcome], method="oracle", cluster="math", k=None)
    assert summary is not None
    return float(summary["graded"]["accuracy"]), float(summary["graded"]["pass@k"])


# -- rewardsmith select (engine) --------------------------------------------------------------

JUDGED = {
    "rewards": {"correct": {"type": ECHO, "key": "correct"}, "rm": {"type": ECHO, "key": "rm"}}
}
"""A spec whose first component (the judge of correctness) and reward model echo metadata."""


def _summary(groups: dict[str, list[tuple[Any, float]]], method: str = "best_of_n") -> Any:
    samples = [
        {
            "id": f"{name}{i}",
            "group": name,
            "completion": BOX(i),
            "metadata": {"correct": correct, "rm": rm},
        }
        for name, rows in groups.items()
        for i, (correct, rm) in enumerate(rows)
    ]
    chosen = select(samples, method, spec=JUDGED, component="rm", workers=1)
    assert chosen.summary is not None
    return chosen.summary


def _judge_failure_on_pick() -> tuple[float, float]:
    """Engine. best_of_n picks, in group `b`, the top-scored candidate; it is wrong, and the
    judge of correctness crashes on it (`error`, caused by the completion): its `correct` is
    None and the group leaves `accuracy` (and pass@1, maj@k, pass@k): 100 instead of the 50
    the same wrong pick scores when judged. The README counts a group wrong when the
    *scores* fail on the completions, for this very reason; a failed verdict is not."""
    right = [(1, 1.0), (0, 0.0)]
    attack = _summary({"a": right, "b": [("error", 1.0), (0, 0.0)]})
    honest = _summary({"a": right, "b": [(0, 1.0), (0, 0.0)]})
    return attack["accuracy"], honest["accuracy"]


def _judge_failure_mean_accuracy() -> tuple[float, float]:
    """Engine. A wrong candidate whose verdict crashed leaves `mean_accuracy`'s denominator:
    one right and one crashed is 100% mean accuracy, one right and one wrong 50%."""
    attack = _summary({"a": [(1, 1.0), ("error", 0.0)]})
    honest = _summary({"a": [(1, 1.0), (0, 0.0)]})
    return attack["mean_accuracy"], honest["mean_accuracy"]


def _no_answer_counted_right() -> tuple[float, float]:
    """Engine. README: "A group where no candidate has an answer counts as wrong". With
    stored verdicts (`--correct-key`, e.g. a lenient external grader that accepts a hedge)
    and `best_of_n`, a group whose candidates all hedge ("3 or 5" in words, "hmm") is
    counted right: the pick is the top score, answer or not. The README now says so (the
    sentence holds for the voting methods; `best_of_n` takes the stored verdict of its pick
    as it is). Returns its accuracy, against the README's 100."""
    samples = [
        {"id": "0", "group": "g", "completion": r"\boxed{3} or \boxed{5}", "metadata": {"rm": 2.0}},
        {"id": "1", "group": "g", "completion": "hmm", "metadata": {"rm": 1.0}},
    ]
    for sample in samples:
        sample["metadata"]["ok"] = True
    chosen = select(
        samples, "best_of_n", score_key="metadata.rm", correct_key="metadata.ok", workers=1
    )
    assert chosen.summary is not None and chosen.choices[0].answer is None
    return chosen.summary["accuracy"], 100.0


def _nan_score_never_wins() -> tuple[float, float]:
    """Guard (engine): a reward model that returns NaN (or inf) for a wrong candidate makes
    its score `error`: best_of_n picks the scored candidate; order and ids are kept (group
    `b` before `a`, as in the input). 1.0 when a non-finite candidate is picked or the
    order is lost."""
    samples = [
        {"id": f"{g}{i}", "group": g, "completion": BOX(i), "metadata": {"correct": 0, "rm": rm}}
        for g in ("b", "a")
        for i, rm in enumerate([float("nan"), 5.0, float("inf")])
    ]
    chosen = select(samples, "best_of_n", spec=JUDGED, component="rm", workers=1)
    ids = [c.id for c in chosen.choices]
    return float(ids != ["b1", "a1"]), 0.0


def _k_hides_reappearing_group() -> tuple[float, float]:
    """Engine. README: "a group that reappears after another group stops the run with exit
    code 1". With `--k 1` the reappearing sample is past the group's first k and is dropped
    silently: the run ends normally. 1.0 when the run stops (InputError), against 1.0."""
    samples = [
        {"id": "1", "group": "A", "completion": BOX(1)},
        {"id": "2", "group": "A", "completion": BOX(1)},
        {"id": "3", "group": "B", "completion": BOX(1)},
        {"id": "4", "group": "A", "completion": BOX(2)},
    ]
    try:
        select(samples, "majority", k=1, workers=1)
    except InputError:
        return 1.0, 1.0
    return 0.0, 1.0


def _bad_line_number() -> tuple[float, float]:
    """Engine. A line that is JSON but not a valid sample (line 3, after a blank line 2) is
    reported as "input 2": its position among records, not its line (the CLI prints the same
    message). 1.0 when the report names line 3."""
    lines = [
        json.dumps({"id": "a", "group": "g", "completion": BOX(3)}),
        "",
        json.dumps({"id": "b", "group": "g", "completion": 5}),
        json.dumps({"id": "c", "group": "g", "completion": BOX(3)}),
    ]
    source = io.BytesIO(("\n".join(lines) + "\n").encode())
    chosen = select(read_samples(source), "majority", workers=1)
    assert len(chosen.skipped) == 1 and chosen.choices[0].candidates == 2
    return float("line 3" in chosen.skipped[0]), 1.0


def _output_is_input() -> tuple[float, float]:
    """CLI. `rewardsmith select --input F --output F` opens the output first, truncating the
    candidates, then reads nothing: exit 0, F empty. `rewardsmith score` refuses that
    (exit 2, "before anything is written"). 1.0 when the input survives."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "cands.jsonl"
        text = json.dumps({"id": "a", "group": "g", "completion": BOX(3)}) + "\n"
        data.write_text(text)
        subprocess.run(
            [sys.executable, "-m", "rewardsmith.cli", "select", "--quiet", "--workers", "1",
             "--input", str(data), "--output", str(data)],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        return float(data.read_text() == text), 1.0


NOT_BELOW: Callable[[float, float], bool] = lambda value, bound: value >= bound  # noqa: E731


ROWS = [
    # (id, attack -> (attack earns, honest earns), should(attack, honest), today)
    guard(
        "vote_empty_spellings_form_majority",
        _vote_empty_spellings_win,
        AT_MOST_HONEST,
        "0.0 vs 0.0: no answer (was 1.0: \\text{}, \\,, {} and ~ shared key '' and outvoted 3)",
    ),
    guard(
        "vote_all_empty_group_paid",
        _vote_all_empty_group_paid,
        AT_MOST_HONEST,
        "0.0 each (was 1.0 each vs 0.0)",
    ),
    guard(
        "select_reads_empty_boxes_as_answers",
        _read_empty_spellings,
        EQUAL,
        "0 of 6 empty spellings read as answers (was 6)",
    ),
    guard(
        "normalized_minus_sign_votes_with_positive",
        _normalized_minus_sign,
        AT_MOST_HONEST,
        "0.0 as under exact (was: right `3` paid 1.0 for agreeing with wrong `-3`)",
    ),
    guard("vote_two_forms_one_vote", _vote_two_forms_one_vote, EQUAL, "1 vote"),
    guard("vote_approx_votes_its_exact_side", _vote_approx_hedge, EQUAL, "0 vs 0 (tie 3-3)"),
    guard("vote_or_in_text_is_own_answer", _vote_or_hedge, AT_MOST_HONEST, "0 vs 0"),
    guard("vote_restated_question_no_answer", _vote_restated_question, EQUAL, "0"),
    guard("vote_no_answers_pay_nothing", _vote_no_answers_pay_nothing, EQUAL, "0"),
    guard(
        "comparison_cap_counts_votes_without_answer",
        _comparisons_cap_counts_no_answers,
        AT_MOST_HONEST,
        "160 comparisons for 20 answers (was 190: 8 x the votes, no-answers included)",
    ),
    guard(
        "prm_prod_signed_steps_win",
        _prm_prod_signed_steps,
        EQUAL,
        "no pick: steps outside [0, 1] (was: (-5, -5) -> 25 beat (0.9, 0.9) -> 0.81)",
    ),
    guard(
        "prm_mean_overflow_raises",
        _prm_mean_overflow,
        EQUAL,
        "no pick, with the reason (was: OverflowError out of fmean ended the run)",
    ),
    guard(
        "pick_score_overflows_to_inf",
        _infinite_pick_score,
        EQUAL,
        "no pick for either (was: 2 of 2 picks scored inf; the output line held Infinity)",
    ),
    guard(
        "softmax_sigmoid_weight_zero",
        _softmax_weight_zero,
        NOT_BELOW,
        "weight 0.0, never negative as the README now says (it said 'always positive')",
    ),
    guard("weighted_majority_failed_scores_do_not_vote", _failed_scores_do_not_vote, EQUAL, "0"),
    guard(
        "oracle_accuracy_graded_where_pass_at_k_is_not",
        _oracle_accuracy_vs_pass_at_k,
        EQUAL,
        "both ungraded: oracle gives no pick (was: oracle accuracy graded on 1 group, pass@k 0)",
    ),
    guard(
        "select_judge_failure_on_pick_ungraded",
        _judge_failure_on_pick,
        AT_MOST_HONEST,
        "accuracy 50 vs 50: the failed verdict is wrong (was 100 vs 50)",
    ),
    guard(
        "select_judge_failure_mean_accuracy",
        _judge_failure_mean_accuracy,
        AT_MOST_HONEST,
        "mean accuracy 50 vs 50 (was 100 vs 50)",
    ),
    guard(
        "select_no_answer_group_counted_right",
        _no_answer_counted_right,
        EQUAL,
        "accuracy 100, as the README now says for best_of_n with stored verdicts",
    ),
    guard("select_nan_inf_score_never_wins", _nan_score_never_wins, EQUAL, "b1, a1 picked"),
    guard(
        "select_k_hides_reappearing_group",
        _k_hides_reappearing_group,
        EQUAL,
        "the run stops with --k 1 too (was: it ended normally)",
    ),
    guard(
        "select_bad_line_reported_by_position",
        _bad_line_number,
        EQUAL,
        "reported as 'line 3' (was 'input 2': its position among records)",
    ),
    guard(
        "cli_select_output_is_input",
        _output_is_input,
        EQUAL,
        "refused, exit 2, the input intact (was: truncated to 0 bytes, exit 0)",
    ),
]


@pytest.mark.parametrize(("name", "attack", "should", "today"), ROWS)
def test_redteam_selection2(
    name: str,
    attack: Callable[[], tuple[float, float]],
    should: Callable[[float, float], bool],
    today: str,
) -> None:
    earned, honest = attack()
    assert should(earned, honest), f"{name}: attack earns {earned}, honest {honest} ({today})"
