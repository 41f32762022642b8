"""Metrics on hand-made rows whose answers are known, plus properties of the rank statistics."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.evaluate import auroc, best_of_n_score
from rewardsmith.evaluate._data import JudgmentRow, LabelledRow, PairRow
from rewardsmith.evaluate._health import spearman
from rewardsmith.evaluate._metrics import Measured, judge_pair, labelled_metrics, pair_metrics
from rewardsmith.evaluate._run import Summary
from rewardsmith.models import Result, Score


@pytest.mark.parametrize(
    ("chosen", "rejected", "expected"),
    [
        ([1.0], [0.0, 0.5, 0.2], 1.0),
        ([1.0], [1.0, 0.5, 0.2], 0.5),  # tied with one rejected at the max
        ([1.0], [1.0, 1.0, 1.0], 0.25),
        ([0.4], [1.0, 0.5, 0.2], 0.0),
        ([0.9, 0.9], [0.1], 0.5),  # two chosen tied at the max: 1/2
        ([None], [0.1], 0.0),  # a failed chosen is never at the max
        ([0.3], [None, None], 0.0),  # a failed rejected one is never beaten, as in pairs
    ],
)
def test_best_of_n_is_one_over_the_ties_at_the_max(
    chosen: list[float | None], rejected: list[float | None], expected: float
) -> None:
    assert best_of_n_score(chosen, rejected) == expected


def _brute_auroc(pos: list[float], neg: list[float]) -> float:
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


values = st.lists(st.integers(-3, 3).map(float), min_size=1, max_size=12)


@settings(deadline=None)
@given(values, values)
def test_auroc_equals_the_pairwise_definition(pos: list[float], neg: list[float]) -> None:
    assert auroc(pos, neg) == pytest.approx(_brute_auroc(pos, neg))


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=3, max_size=20))
def test_spearman_is_symmetric_and_bounded(pairs: list[tuple[int, int]]) -> None:
    x, y = [float(a) for a, _ in pairs], [float(b) for _, b in pairs]
    rho = spearman(x, y)
    assert rho == spearman(y, x)
    if rho is not None:
        assert -1 - 1e-9 <= rho <= 1 + 1e-9
        assert spearman(x, x) == pytest.approx(1.0)


def _pair(subset: str = "s", k: int = 1) -> PairRow:
    return PairRow(
        "r", 1, subset, {}, tuple(f"c{i}" for i in range(k)), tuple(f"r{i}" for i in range(k))
    )


def test_rmbench_matrix_triangles_follow_rmbench() -> None:
    """Rows are the chosen style, columns the rejected style: the upper triangle (a plainer
    chosen against a fancier rejected) is `hard`, the lower `easy`, the diagonal `normal`."""
    chosen = [0.5, 0.6, 0.7]
    rejected = [0.55, 0.58, 0.9]
    cells = {(i, j): chosen[i] > rejected[j] for i in range(3) for j in range(3)}
    measured = pair_metrics([_pair(k=3)], [cells])
    assert measured.tables["rmbench_matrix"] == [[0, 0, 0], [1, 1, 0], [1, 1, 0]]
    assert measured.metrics["hard"] == 0.0
    assert measured.metrics["normal"] == pytest.approx(1 / 3)
    assert measured.metrics["easy"] == 1.0
    assert measured.metrics["accuracy"] == pytest.approx(4 / 9)


def test_pair_accuracy_weighted_and_per_subset() -> None:
    rows = [_pair("a"), _pair("a"), _pair("a"), _pair("b")]
    cells = [{(0, 0): True}, {(0, 0): True}, {(0, 0): False}, {(0, 0): True}]
    measured = pair_metrics(rows, cells)
    assert measured.metrics["accuracy"] == 0.75
    assert measured.metrics["accuracy_subset_mean"] == pytest.approx((2 / 3 + 1) / 2)
    assert measured.subsets["a"] == {"accuracy": pytest.approx(2 / 3), "n": 3}


@pytest.mark.parametrize(
    ("label", "decisions", "correct"),
    [
        ("A>B", ("A>B", "B>A"), True),  # both orders right (the second flipped back)
        ("A>B", ("A>B", "A=B"), True),  # +1 and 0
        ("A>B", ("A>B", "A>B"), False),  # +1 and -1: position bias, a tie
        ("A>B", ("A=B", "A=B"), False),
        ("B>A", ("B>A", None), True),
        ("B>A", (None, None), False),
        ("A>B", ("B>A", "A>B"), False),
    ],
)
def test_judgebench_pair_verdicts_sum_in_favour_of_the_label(
    label: str, decisions: tuple[str | None, ...], correct: bool
) -> None:
    row = JudgmentRow("p", 1, None, {}, label=label, decisions=decisions)
    assert judge_pair(row)["correct"] is correct


def _result(reward: float | None, reason: str = "") -> Result:
    score = Score.ok(reward, reason=reason) if reward is not None else Score.failed("error", "boom")
    return Result(id="x", reward=reward, status=score.status, components={"c": score})


def test_labelled_metrics_list_errors_with_their_reasons() -> None:
    labels = [True, True, False, False, True]
    rewards = [1.0, 0.0, 1.0, 0.0, None]
    rows = [LabelledRow(str(i), i, None, {}, "", lab) for i, lab in enumerate(labels)]
    results = [_result(r, reason=f"why {i}") for i, r in enumerate(rewards)]
    measured = labelled_metrics(rows, results, threshold=0.5)
    m = measured.metrics
    assert (m["true_positives"], m["false_positives"], m["false_negatives"], m["failed"]) == (
        1,
        1,
        1,
        1,
    )
    assert m["agreement"] == 0.5 and m["precision"] == 0.5 and m["recall"] == 0.5
    assert measured.tables["false_positives"] == [{"id": "2", "reward": 1.0, "reason": "c: why 2"}]
    assert measured.tables["false_negatives"][0]["reason"] == "c: why 1"
    assert measured.tables["failed"][0]["status"] == "error"


def test_not_applicable_is_counted_apart_from_failures_per_subset_too() -> None:
    """A reward with nothing to grade is not broken: `not_applicable` is no `failed`; a subset
    with nothing scored keeps its counts and shows no rate (no silent 0)."""
    rows = [LabelledRow(str(i), i, s, {}, "", True) for i, s in enumerate(["a", "b", "b"])]
    results = [
        _result(1.0),
        Result(id="1", reward=None, status="not_applicable", components={}),
        Result(id="2", reward=None, status="error", components={}),
    ]
    measured = labelled_metrics(rows, results, threshold=0.5)
    assert (measured.metrics["failed"], measured.metrics["not_applicable"]) == (1, 1)
    assert measured.subsets["b"] == {"n": 0, "failed": 1, "not_applicable": 1}
    assert [r["id"] for r in measured.tables["not_applicable"]] == ["1"]


def test_the_json_summary_records_its_threshold() -> None:
    """Labelled metrics mean nothing without the threshold they were measured at."""
    summary = Summary("labelled", 0, Measured(), {}, threshold=0.7)
    assert summary.as_json()["threshold"] == 0.7
