"""Selection methods on groups checked by hand, then `rewardsmith.select` and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rewardsmith
from rewardsmith import ConfigError
from rewardsmith.selection import METHODS, Candidate
from rewardsmith.selection._methods import vote_weights

# One group: answers A (candidates 0, 2), B (1, 3, 4), none (5).
#              0      1      2      3      4      5
ANSWERS = ["A", "B", "A", "B", "B", None]
SCORES = [3.0, 1.0, 2.5, -1.0, 0.5, 9.0]  # the best score has no answer
STEPS = [(0.9, 0.8), (0.6, 0.7), (0.95, 0.1), (0.5, 0.5), (0.8, 0.9), None]
CORRECT = [True, False, True, False, False, None]


def group(**changes: list[Any]) -> list[Candidate]:
    columns = {
        "answer": ANSWERS,
        "score": SCORES,
        "steps": STEPS,
        "correct": CORRECT,
        "failed_by": [None] * len(ANSWERS),
        **changes,
    }
    clusters = {"A": 0, "B": 1}
    return [
        Candidate(
            id=str(i),
            answer=columns["answer"][i],
            cluster=clusters.get(columns["answer"][i]),
            score=columns["score"][i],
            steps=columns["steps"][i],
            correct=columns["correct"][i],
            failed_by=columns["failed_by"][i],
        )
        for i in range(len(ANSWERS))
    ]


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


# (method, weights, chosen index, its value), computed by hand from the table above
CASES = [
    ("majority", "raw", 1, 3.0),  # B has 3 votes; its first member
    ("best_of_n", "raw", 5, 9.0),  # the highest score, answer or not (rm@k)
    ("weighted_majority", "sigmoid", 0, sigmoid(3) + sigmoid(2.5)),  # 1.877 > B's 1.624
    ("prm_min_max", "raw", 0, 0.8),  # mins 0.8 0.6 0.1 0.5 0.8: the first 0.8
    ("prm_min_vote", "raw", 4, 1.9),  # A: 0.8 + 0.1; B: 0.6 + 0.5 + 0.8, its best member 4
    ("prm_last_max", "raw", 4, 0.9),
    ("prm_last_vote", "raw", 4, 2.1),  # A: 0.8 + 0.1; B: 0.7 + 0.5 + 0.9
    ("prm_prod_max", "raw", 0, 0.72),
    ("prm_prod_vote", "raw", 4, 0.42 + 0.25 + 0.72),  # A: 0.72 + 0.095 = 0.815
    ("prm_mean_max", "raw", 0, 0.85),  # means .85 .65 .525 .5 .85: the first .85
    ("prm_mean_vote", "raw", 4, 0.65 + 0.5 + 0.85),
    ("oracle", "raw", 0, 1.0),
]


@pytest.mark.parametrize(("method", "weights", "index", "value"), CASES)
def test_methods_by_hand(method: str, weights: str, index: int, value: float) -> None:
    pick = METHODS[method].choose(group(), weights, 1.0)  # type: ignore[arg-type]
    assert (pick.index, pick.score) == (index, pytest.approx(value))


def test_votes_below_zero_give_no_pick() -> None:
    """Sums are votes only when no weight is negative: a group where an answer's raw score
    (or PRM value) is below 0 gets no pick (a vote there would count against its answer)."""
    unsigned = group(score=[3.0, 1.0, 2.5, 0.0, 0.5, -9.0])  # -9.0 has no answer: no vote
    pick = METHODS["weighted_majority"].choose(unsigned, "raw", 1.0)
    assert (pick.index, pick.score) == (0, 5.5)  # A: 3 + 2.5; B: 1 + 0 + 0.5
    signed = METHODS["weighted_majority"].choose(group(), "raw", 1.0)  # candidate 3 at -1
    assert (signed.index, signed.wrong) == (None, False)
    assert signed.reason.startswith("a vote's raw weight must be >= 0 (candidate 3 has -1")
    prm = METHODS["prm_last_vote"].choose(group(steps=[(0.9, -0.2), *STEPS[1:]]), "raw", 1.0)
    assert prm.index is None and prm.reason.startswith("a vote's PRM last must be >= 0")


def test_softmax_weights_follow_the_temperature() -> None:
    # at T = 1 the large score of candidate 0 dominates: A wins; at T = 100 weights are
    # nearly equal and B's three votes win
    assert METHODS["weighted_majority"].choose(group(), "softmax", 1.0).index == 0
    assert METHODS["weighted_majority"].choose(group(), "softmax", 100.0).index == 1


def test_softmax_weights_stay_finite() -> None:
    """Scores far apart at a tiny temperature: s / T overflows, (s - best) / T does not."""
    far = [Candidate("0", "1", 0, score=1e300), Candidate("1", "2", 1, score=-1e300)]
    assert vote_weights(far, "softmax", 1e-300) == [1.0, 0.0]


def test_ties_go_to_the_first_cluster_and_member() -> None:
    tied = group(answer=["A", "B", "B", "A", None, None])
    pick = METHODS["majority"].choose(tied, "raw", 1.0)
    assert (pick.index, pick.score) == (0, 2.0)
    equal = group(score=[1.0, 2.0, 2.0, 0.0, 0.0, None])
    assert METHODS["best_of_n"].choose(equal, "raw", 1.0).index == 1


def test_nothing_to_choose_says_why() -> None:
    silent = group(answer=[None] * 6)
    pick = METHODS["majority"].choose(silent, "raw", 1.0)
    assert pick.index is None and pick.wrong
    unscored = METHODS["best_of_n"].choose(group(score=[None] * 6), "raw", 1.0)
    assert unscored.index is None and not unscored.wrong
    assert unscored.reason == "no candidate was scored"
    wrong = METHODS["oracle"].choose(group(correct=[False] * 6), "raw", 1.0)
    assert (wrong.index, wrong.score, wrong.reason) == (0, 0.0, "no candidate is correct")
    unknown = METHODS["oracle"].choose(group(correct=[False] * 5 + [None]), "raw", 1.0)
    assert unknown.index is None and not unknown.wrong  # as pass@k: not graded
    assert unknown.reason == "no judged candidate is correct; 1 not judged"


CAUSES = {"c": "completion", "d": "dataset", "i": "infrastructure", "-": None}
UNSCORED = [None] * 6
# (method, the values it weighs, who made each missing one fail, per candidate: c completion,
# d dataset, i infrastructure, - nobody, e.g. not in the data; whether the empty pick counts
# as a wrong answer): wrong only when every missing value it weighs failed on the completion
EMPTY_PICKS = [
    ("best_of_n", {"score": UNSCORED}, "cccccc", True),
    ("best_of_n", {"score": UNSCORED}, "cccccd", False),
    ("best_of_n", {"score": UNSCORED}, "ccccci", False),
    ("best_of_n", {"score": UNSCORED}, "ccccc-", False),
    ("best_of_n", {"score": UNSCORED}, "------", False),
    # only candidate 5, which has no answer, is scored: the answered ones decide
    ("weighted_majority", {"score": [*UNSCORED[:5], 9.0]}, "ccccc-", True),
    ("weighted_majority", {"score": [*UNSCORED[:5], 9.0]}, "ccicc-", False),
    ("prm_min_max", {"steps": UNSCORED}, "cccccc", True),
    ("prm_min_vote", {"steps": [*UNSCORED[:5], (0.9,)]}, "ccccc-", True),
    ("prm_min_vote", {"steps": UNSCORED}, "cccccd", True),  # 5 has no answer: no vote
]


@pytest.mark.parametrize(("method", "values", "causes", "wrong"), EMPTY_PICKS)
def test_an_empty_pick_is_wrong_when_the_completions_made_the_scoring_fail(
    method: str, values: dict[str, list[Any]], causes: str, wrong: bool
) -> None:
    candidates = group(**values, failed_by=[CAUSES[c] for c in causes])
    pick = METHODS[method].choose(candidates, "raw", 1.0)
    assert (pick.index, pick.wrong) == (None, wrong)
    assert pick.reason.endswith("scoring failed on every completion") == wrong


def candidates() -> list[dict[str, Any]]:
    """Two problems: q1 answered 1/2 in three forms and 3 once; q2 split 7/8 with a tie."""
    rows = [
        ("q1", r"\boxed{\frac{1}{2}}", "1/2", 0.2, [0.9]),
        ("q1", r"\boxed{3}", "1/2", 0.9, [0.2]),
        ("q1", "The answer is 0.5", "1/2", 0.1, [0.8]),
        ("q1", r"\boxed{0.50}", "1/2", 0.3, [0.7]),
        ("q2", r"\boxed{7}", "8", 0.5, [0.1, 0.9]),
        ("q2", r"\boxed{8}", "8", 0.4, [0.9, 0.8]),
    ]
    return [
        {
            "id": f"{g}-{i}",
            "group": g,
            "completion": text,
            "reference": gold,
            "metadata": {"rm": rm, "step_scores": steps},
        }
        for i, (g, text, gold, rm, steps) in enumerate(rows)
    ]


def test_select_api_majority_with_the_math_reward_as_judge() -> None:
    selection = rewardsmith.select(candidates(), "majority", cluster="math", workers=1)
    q1, q2 = selection.choices
    assert (q1.id, q1.answer, q1.correct) == ("q1-0", r"\frac{1}{2}", True)
    assert q1.clusters == [(r"\frac{1}{2}", 3), ("3", 1)]
    assert (q2.id, q2.correct) == ("q2-4", False)  # a 1-1 tie: the first answer
    summary = selection.summary
    assert summary is not None
    assert {k: summary[k] for k in ("groups", "accuracy", "pass@1", "maj@k", "pass@k")} == {
        "groups": 2,
        "accuracy": 50.0,
        "pass@1": 50.0,
        "maj@k": 50.0,
        "pass@k": 100.0,
    }
    assert summary["mean_accuracy"] == pytest.approx(100 * (3 / 4 + 1 / 2) / 2)


def test_select_api_best_of_n_prm_and_k() -> None:
    rm = rewardsmith.select(candidates(), "best_of_n", score_key="metadata.rm", workers=1)
    assert [c.id for c in rm.choices] == ["q1-1", "q2-4"]
    assert rm.summary is not None and rm.summary["accuracy"] == 0.0
    prm = rewardsmith.select(candidates(), "prm_min_max", workers=1)  # metadata.step_scores
    assert [c.id for c in prm.choices] == ["q1-0", "q2-5"]
    first_two = rewardsmith.select(candidates(), "oracle", k=2, workers=1)
    assert first_two.summary is not None and first_two.summary["k"] == 2
    assert [c.candidates for c in first_two.choices] == [2, 2]


def test_select_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="needs scores"):
        rewardsmith.select(candidates(), "best_of_n")
    with pytest.raises(ConfigError, match="unknown method"):
        rewardsmith.select(candidates(), "majority_of_best")
    with pytest.raises(ConfigError, match="not in the spec"):
        rewardsmith.select(candidates(), "best_of_n", component="rm")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli", "select", "--quiet", "--workers", "1", *args],
        capture_output=True,
        text=True,
    )


def test_cli_lines_summary_and_bad_lines(tmp_path: Path) -> None:
    data = tmp_path / "in.jsonl"
    lines = [json.dumps(row) for row in candidates()]
    lines.insert(2, "{not json")
    data.write_text("\n".join(lines) + "\n")
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = cli("--input", str(data), "--output", str(out), "--json", str(summary))
    assert done.returncode == 0, done.stderr
    assert "skipped malformed input" in done.stderr and "line 3" in done.stderr
    chosen = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(c["group"], c["id"], c["correct"]) for c in chosen] == [
        ("q1", "q1-0", True),
        ("q2", "q2-4", False),
    ]
    assert chosen[0]["clusters"] == [
        {"answer": r"\frac{1}{2}", "size": 3},
        {"answer": "3", "size": 1},
    ]
    assert json.loads(summary.read_text())["maj@k"] == 50.0


def test_cli_stops_where_a_group_reappears_after_writing_the_groups_before(tmp_path: Path) -> None:
    rows = candidates()
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in [*rows, rows[0] | {"id": "late"}]))
    out = tmp_path / "out.jsonl"
    done = cli("--input", str(data), "--output", str(out))
    assert done.returncode == 1
    assert "group 'q1' reappears at sample 'late'" in done.stderr.replace("\n", " ")
    assert [json.loads(line)["group"] for line in out.read_text().splitlines()] == ["q1", "q2"]


def test_cli_refuses_an_output_that_is_the_input(tmp_path: Path) -> None:
    """As `score` does, before the output is opened (which would empty the input)."""
    data = tmp_path / "in.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in candidates())
    data.write_text(text)
    (tmp_path / "link.jsonl").symlink_to(data)
    done = cli("--input", str(data), "--output", str(tmp_path / "link.jsonl"))
    assert done.returncode == 2 and "is the input file" in done.stderr
    assert data.read_text() == text


def test_candidates_without_group_are_groups_of_their_own_whatever_their_ids() -> None:
    """Keyed by input position, as the engine keys them: a shared id neither merges two
    such candidates nor lets `k` drop the second."""
    rows = [
        {"id": "a", "completion": r"\boxed{4}", "reference": "5"},
        {"id": "a", "completion": r"\boxed{5}", "reference": "5"},
        {"id": "a", "completion": r"\boxed{5}", "reference": "4"},
    ]
    selection = rewardsmith.select(rows, "majority", k=1, workers=1)
    assert [(c.group, c.answer, c.correct, c.clusters) for c in selection.choices] == [
        (None, "4", False, [("4", 1)]),
        (None, "5", True, [("5", 1)]),
        (None, "5", False, [("5", 1)]),
    ]
    assert selection.summary is not None and selection.summary["groups"] == 3


ECHO = "tests.combine.rewards_for_tests:echo"


@pytest.mark.parametrize(
    ("failures", "component", "accuracy", "graded"),
    [
        (["error", "error"], "rm", 50.0, 2),  # crashed on what both wrote: answered wrong
        (["error", "error"], None, 50.0, 2),  # the same through the spec's total
        (["infrastructure", "infrastructure"], "rm", 100.0, 1),  # server down: not graded
        (["error", "infrastructure"], "rm", 100.0, 1),
        (["error", None], None, 100.0, 1),  # one not applicable: not graded
    ],
)
def test_select_accuracy_counts_a_group_the_completions_made_unscorable_as_wrong(
    failures: list[Any], component: str | None, accuracy: float, graded: int
) -> None:
    """Group `a` is answered right; every score of group `b` failed, with these causes."""
    b = [(f"b{i}", failure, False) for i, failure in enumerate(failures)]
    rows = [("a0", 1.0, True), ("a1", 0.0, False), *b]
    samples = [
        {"id": i, "group": i[0], "completion": "x", "metadata": {"rm": rm, "ok": right}}
        for i, rm, right in rows
    ]
    selection = rewardsmith.select(
        samples,
        "best_of_n",
        spec={"rewards": {"rm": {"type": ECHO, "key": "rm"}}},
        component=component,
        correct_key="metadata.ok",
        workers=1,
    )
    assert selection.summary is not None
    assert (selection.summary["accuracy"], selection.summary["graded"]["accuracy"]) == (
        accuracy,
        graded,
    )
    chosen = selection.choices[1]
    assert (chosen.id, chosen.correct) == (None, False if graded == 2 else None)
