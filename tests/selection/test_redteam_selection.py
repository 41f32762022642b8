"""Red team (rtsel) of test-time selection and group-level scoring, after rt17.

One row per attack, written as a policy paid for every unit of reward (or advantage) would
try it, using only what the README promises. Each row computes what the attack earns and
what an honest answer earns in the same setting, and asserts what the attack *should* earn.
`today` says what the attack earned when this file was written. Rows marked
`xfail(strict=True)` are open holes: they flip loudly when fixed. The others are attacks
that fail today and guard against regressions.

Covered here and not by `tests/combine/test_redteam_combine.py` / `hack_table.py`: TRL's
`normalize_then_sum` (its GDPO) fed by our per-component split, verl's batched call on a
failure, ReNorm's scalar and the number of steps, a veto behind a gate, overflowing scores,
`majority_vote`'s unit-less answers and the cost of its group step, `rewardsmith select` on
duplicate ids, signed scores and failed scores.
Scores are hand-made (`tests.combine.helpers`: the result builder without workers) except
where a row says it runs the engine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from rewardsmith import ConfigError, RewardSpec, Sample, Score, select
from rewardsmith.combine import ReNorm
from rewardsmith.integrations._component_values import (
    charged_rewards,
    component_values,
    group_low_values,
)
from rewardsmith.selection import (
    DEFAULT_WEIGHTS,
    METHODS,
    Candidate,
    cluster_votes,
    majority_vote,
    read_vote,
)
from tests.combine.helpers import ECHO, UNIT, ok, row, run, spec
from tests.integrations.conftest import trl_normalize_then_sum
from tests.redteam_rows import AT_MOST_HONEST, guard
from tests.selection.redteam_helpers import EQUAL, vote_group

TIMEOUT = Score.failed("timeout", "ran past timeout_s")  # caused by the completion (default)


def _adv(components: dict[str, Any], rows: list[dict[str, Score]], **top: Any) -> list[float]:
    results = run(spec(components, **top), [row("g", scores) for scores in rows])
    return [r.advantage for r in results]  # type: ignore[misc]


# -- TRL's normalize_then_sum (GDPO in TRL) over our per-component split -------------------


def _trl_normalize_then_sum(
    components: dict[str, Any], rows: list[dict[str, Score]]
) -> list[float]:
    """The advantages TRL 1.16's `GRPOTrainer` computes with
    `multi_objective_aggregation="normalize_then_sum"` from the values our reward functions
    return in that mode (`component_values`, charged as `TRLRewards` charges, then
    `group_low_values`), one group."""
    s = spec(components)
    results = run(s, [row("g", scores) for scores in rows])
    charged = charged_rewards(s, results, ["g"] * len(results))
    values = [component_values(s, r, c) for r, c in zip(results, charged, strict=True)]
    values = group_low_values(s, results, values, ["g"] * len(results))
    columns = [list(column) for column in zip(*values, strict=True)]
    weights = [c.weight for c in s.rewards.values()]
    return trl_normalize_then_sum(columns, weights, len(rows))


def _trl_gdpo_timeout() -> tuple[float, float]:
    """Two right answers, an honest wrong one (wrong and bad JSON), and a sample that times
    out the JSON check. The charge is carried by `json` alone; TRL reads the other column
    (`correct`) as NaN, which adds 0, the group mean, instead of a wrong answer's z-score."""
    components = {"correct": UNIT, "json": UNIT}
    right = {"correct": ok(1), "json": ok(1)}
    adv = _trl_normalize_then_sum(
        components,
        [right, right, {"correct": ok(0), "json": ok(0)}, {"correct": ok(0), "json": TIMEOUT}],
    )
    return adv[3], adv[2]


def _trl_gdpo_gate() -> tuple[float, float]:
    """rt17's GDPO gate case through TRL: `format` gated on `correct` returns None for the
    wrong answer, which TRL counts at the format column's mean."""
    components = {"correct": UNIT, "format": {**UNIT, "only_if": "correct", "weight": 1.5}}
    rows = [{"correct": ok(1), "format": ok(1)}] * 6 + [
        {"correct": ok(1), "format": ok(0)},
        {"correct": ok(0), "format": ok(0)},
    ]
    adv = _trl_normalize_then_sum(components, rows)
    return adv[7], adv[6]  # the wrong answer (attack), the correct badly formatted one


def _trl_sum_timeout() -> tuple[float, float]:
    """Guard: TRL's default `sum_then_normalize` sees the charge as the sample's whole sum."""
    torch = pytest.importorskip("torch")
    utils = pytest.importorskip("trl.trainer.utils")
    s = spec({"correct": UNIT, "json": UNIT})
    right = {"correct": ok(1), "json": ok(1)}
    rows = [right, right, {"correct": ok(0), "json": ok(0)}, {"correct": ok(0), "json": TIMEOUT}]
    results = run(s, [row("g", scores) for scores in rows])
    charged = charged_rewards(s, results, ["g"] * len(results))
    values = [component_values(s, r, c) for r, c in zip(results, charged, strict=True)]
    per_func = torch.tensor([[float("nan") if v is None else v for v in vs] for vs in values])
    rewards = (per_func * torch.tensor([1.0, 1.0]).unsqueeze(0)).nansum(dim=1)
    adv = (rewards - rewards.mean()) / (utils.nanstd(rewards) + 1e-4)
    return adv[3].item(), adv[2].item()


def _verl_batch_failure() -> tuple[float, float]:
    """Engine, through verl's batched `compute_score`. The README's first spec shape: a
    correctness reward and an overlong penalty in [-1, 0], no `on_error`. A sample whose
    completion crashed the correctness check (`error`, caused by the completion) gets
    `score` 0.0 (flagged `failed`), above the honest wrong, overlong answer's -1.0, so
    verl's GRPO gives the crash the better advantage. The batched call sees the batch and
    its groups (`extra_info.index`), as TRL's adapter does when it charges failures."""
    from rewardsmith.integrations._shared_engine import close_shared_engines
    from rewardsmith.integrations.verl import compute_score_batch

    body = {
        "rewards": {
            "correct": {"type": ECHO, "key": "correct", **UNIT},
            "overlong": {"type": ECHO, "key": "overlong", "low": -1.0, "high": 0.0},
        }
    }
    infos = [
        {"index": 0, "correct": 1.0, "overlong": 0.0},
        {"index": 0, "correct": 1.0, "overlong": 0.0},
        {"index": 0, "correct": 0.0, "overlong": -1.0},  # honest: wrong and overlong
        {"index": 0, "correct": "error", "overlong": -1.0},  # attack: crashes the check
    ]
    try:
        out = compute_score_batch(
            data_sources=["d"] * 4,
            solution_strs=["x"] * 4,
            ground_truths=["1"] * 4,
            extra_infos=infos,
            spec=body,
            workers=1,
        )
    finally:
        close_shared_engines()
    assert out[3]["failed"] == 1.0
    return out[3]["score"], out[2]["score"]


# -- ReNorm: the scalar and the step count ---------------------------------------------


def _renorm(process_steps: list[float], outcome: float) -> float:
    renorm = ReNorm(process="p", outcome="o")
    steps = renorm.steps(Score.ok(0.0, steps=process_steps), Score.ok(outcome))
    assert isinstance(steps, list)
    return renorm.reward(steps, outcome)


def _renorm_short_wrong() -> tuple[float, float]:
    """A wrong answer in two steps (one plausible step, then the answer) against a wrong
    answer worked in ten steps of the same process quality (0.9 each). The last step scores
    the outcome, 0, the best a wrong step can score: as 1/k of a mean of all steps, the fewer
    the steps, the less a wrong answer was penalised (-0.05 against -0.09). The outcome now
    weighs one half whatever k (both -0.05)."""
    return _renorm([0.9, 0.9], 0.0), _renorm([0.9] * 10, 0.0)


def _renorm_lone_step() -> tuple[float, float]:
    """Guard: one step keeps its process term (not the outcome alone)."""
    return _renorm([0.9], 0.0), _renorm([0.9] * 10, 0.0)


def _renorm_bad_steps() -> tuple[float, float]:
    """Guard: steps outside [0, 1] are the completion's failure, charged below the wrong
    answer."""
    components = {"p": UNIT, "o": UNIT}
    top = {"combine": {"type": "renorm", "process": "p", "outcome": "o"},
           "group_transform": {"type": "grpo"}}  # fmt: skip
    good = {"p": ok(0.5, steps=[0.9, 0.9]), "o": ok(1)}
    wrong = {"p": ok(0.5, steps=[0.9, 0.9]), "o": ok(0)}
    bad = {"p": ok(0.5, steps=[5.0, 0.9]), "o": ok(0)}
    honest = _adv(components, [good, wrong, wrong], **top)
    attack = _adv(components, [good, wrong, bad], **top)
    return attack[2], honest[2]


# -- a veto behind a gate --------------------------------------------------------------------


def _veto_behind_gate() -> tuple[float, float]:
    """`safe` is a hard rule (`veto: true`) that applies `only_if: format`. An unsafe
    correct answer that breaks the format would close the gate, so the veto would not count
    and never fire: 1.0, more than a safe wrong answer with the format (0.2). Such a spec is
    refused at load; the veto without the gate fires on the same answer (0)."""
    gated = {**UNIT, "weight": 0.0, "veto": True, "only_if": "format"}
    components = {"correct": UNIT, "format": {**UNIT, "weight": 0.2}, "safe": gated}
    try:
        spec(components)
    except ConfigError:
        components["safe"] = {k: v for k, v in gated.items() if k != "only_if"}
    results = run(
        spec(components),
        [row(None, {"correct": ok(1), "format": ok(0), "safe": ok(0)}),   # unsafe, no format
         row(None, {"correct": ok(0), "format": ok(1), "safe": ok(1)})],  # safe, wrong
    )  # fmt: skip
    return results[0].reward, results[1].reward  # type: ignore[return-value]


def _veto_without_gate() -> tuple[float, float]:
    """Guard: the same unsafe answer, the format kept: the veto fires (0 <= 0.2)."""
    components = {
        "correct": UNIT,
        "format": {**UNIT, "weight": 0.2},
        "safe": {**UNIT, "weight": 0.0, "veto": True},
    }
    results = run(
        spec(components),
        [row(None, {"correct": ok(1), "format": ok(1), "safe": ok(0)}),
         row(None, {"correct": ok(0), "format": ok(1), "safe": ok(1)})],
    )  # fmt: skip
    return results[0].reward, results[1].reward  # type: ignore[return-value]


# -- overflow: scores that are finite but whose sums are not -------------------------------


def _survives(call: Callable[[], list[Any]]) -> tuple[float, float]:
    """1.0 when `call` returns results (the overflow handled), 0.0 when it raises."""
    try:
        call()
    except OverflowError:
        return 0.0, 1.0
    return 1.0, 1.0


def _combine_overflow() -> tuple[float, float]:
    """Two components without a declared range each score 1e308: `weighted_sum`'s fsum
    raises OverflowError out of the combination (the README: an overflowing combination is
    `error`, charged to the completion). Through the engine the whole call raises, so one
    sample takes down its batch."""
    s = spec({"r": {}, "s": {}}, group_transform={"type": "grpo"})
    items = [row("g", {"r": ok(1e308), "s": ok(1e308)}), row("g", {"r": ok(1), "s": ok(0)})]
    return _survives(lambda: run(s, items))


def _group_overflow() -> tuple[float, float]:
    """Each total is finite (1e308), but GRPO's mean (fsum) of the group overflows: the
    builder raises OverflowError (grpo, rloo, dr_grpo, gdpo and whiten alike)."""
    s = spec({"r": {}}, group_transform={"type": "grpo"})
    return _survives(lambda: run(s, [row("g", {"r": ok(v)}) for v in (1e308, 1e308, 0.0)]))


def _infinite_score() -> tuple[float, float]:
    """Guard: an infinite score makes the total non-finite: `error`, charged."""
    components = {"r": {}}
    top = {"group_transform": {"type": "grpo"}}
    attack = _adv(components, [{"r": ok(1)}, {"r": ok(0)}, {"r": ok(float("inf"))}], **top)
    honest = _adv(components, [{"r": ok(1)}, {"r": ok(0)}, {"r": ok(0)}], **top)
    return attack[2], honest[2]


def _whiten_all_equal_group() -> tuple[float, float]:
    """README ("The spec"): "A group whose rewards are all equal gets exactly 0 advantage",
    except under `whiten` without `baseline: group_mean` (REINFORCE++, global by design, as
    its docstring says), which gives an all-correct group beside an all-wrong one +1 and -1:
    a stated limit, the row stays open."""
    s = spec({"r": UNIT}, group_transform={"type": "whiten"})
    results = run(s, [row("g1", {"r": ok(1)}), row("g1", {"r": ok(1)}),
                      row("g2", {"r": ok(0)}), row("g2", {"r": ok(0)})])  # fmt: skip
    return max(abs(r.advantage) for r in results[:2]), 0.0  # type: ignore[arg-type]


# -- majority_vote ----------------------------------------------------------------------------


def _vote_hedge() -> tuple[float, float]:
    """Guard: two boxed answers (the majority's and another) vote for nothing: 0, as a wrong
    answer."""
    three, five = r"\boxed{3}", r"\boxed{5}"
    attack = vote_group([three, three, five, r"\boxed{3} or \boxed{5}"])
    honest = vote_group([three, three, five, five])
    return attack[3].score, honest[3].score  # type: ignore[return-value]


def _vote_list() -> tuple[float, float]:
    """Guard: a list `3, 5` is its own answer, not a vote for the majority `3`."""
    three = r"\boxed{3}"
    attack = vote_group([three, three, r"\boxed{5}", r"\boxed{3, 5}"])
    return attack[3].score, 0.0  # type: ignore[return-value]


def _vote_without_unit() -> tuple[float, float]:
    """A bare number is equal to that number in any unit (the README: a unit on one side
    only is ignored). When the greedy clustering compared later answers with a cluster's
    first answer only, a bare `5` answered first became the representative that both
    `5 cm` (2 votes) and `5 m` (2 votes) joined, though the math reward calls those two
    different: the cluster of 5 beat `6 cm` (3) and the bare `5` scored 1. An answer now
    joins a cluster only when it is the same as every form in it: `5 m` stays apart, and
    the bare `5` ties as answering `5 cm` does (ties: none): 0."""
    cm, m, six = r"\boxed{5 \text{ cm}}", r"\boxed{5 \text{ m}}", r"\boxed{6 \text{ cm}}"
    rest = [cm, cm, m, m, six, six, six]
    attack = vote_group([r"\boxed{5}", *rest])
    honest = vote_group([cm, *rest])
    return attack[0].score, honest[0].score  # type: ignore[return-value]


def _vote_timeout_advantage() -> tuple[float, float]:
    """Guard: a sample whose vote could not be read (timeout) is charged. Beside 4, 4, 5, an
    honest `5` ties the vote (every sample 0, advantage 0); the timeout leaves 4 the majority
    and is charged below it."""
    s = RewardSpec.from_dict(
        {"rewards": {"vote": {"type": "majority_vote"}}, "group_transform": {"type": "grpo"}}
    )
    reward = majority_vote()

    def fourth(last: Score | None) -> float:
        texts = [r"\boxed{4}", r"\boxed{4}", r"\boxed{5}", r"\boxed{5}"]
        items = [Sample(id=str(i), completion=t, group="g") for i, t in enumerate(texts)]
        scores = [reward(x) for x in items]
        if last is not None:
            scores[3] = last
        rows = [row("g", {"vote": sc}, sample_id=x.id) for x, sc in zip(items, scores, strict=True)]
        return run(s, rows)[3].advantage  # type: ignore[return-value]

    return fourth(TIMEOUT), fourth(None)


def built_to_share_a_bucket(count: int) -> list[str]:
    """Answers built to share one bucket (the same 400-digit-precise value up to a term of
    10^-390) but to differ: comparing two takes the math reward's numeric limit both ways."""
    base = "+".join(f"(x+{k})^{{4096}}" for k in range(1, 9))
    tiny = "1" + "0" * 390
    odd = [k for k in range(1, 100) if k % 2 and k % 5][:count]
    return [rf"\boxed{{{base}+\frac{{{k}}}{{{tiny}}}}}" for k in odd]


def _vote_group_step_cost() -> tuple[float, float]:
    """`majority_vote`'s group step compares answers pairwise with the math reward's
    `same_answer` in the engine's own process, outside any worker and its hard timeout.
    Sixteen answers built to share a bucket but differ are each read in milliseconds in a
    worker; clustering them was up to 120 comparisons of up to 2 x 1.5 s each (360 s; 8 such
    answers measured 17 s), none of it killable. Returns the seconds the real group step
    takes on them (the group's comparisons now stop at `GROUP_TIME_LIMIT_S`, 3 s, the one
    running then giving up at its next numeric step), against 30 s: a bound, not a speed
    target, with room for a loaded machine's slow last step (the exact budget is tested with
    sleeping comparisons in test_majority_vote.py)."""
    votes = [
        read_vote(Sample(id=str(i), completion=c, group="g"), "math", None)
        for i, c in enumerate(built_to_share_a_bucket(16))
    ]
    assert all(v.answer is not None for v in votes)
    started = time.monotonic()
    clustering = cluster_votes(votes, "math")
    took = time.monotonic() - started
    assert clustering.capped and len(clustering.clusters) == 16
    return took, 30.0


# -- rewardsmith select ---------------------------------------------------------------------


def _select_duplicate_ids() -> tuple[float, float]:
    """Engine. Two samples without `group` (each its own group, by the data contract) that
    share an id, answering 4 and 5: `select` keys a group-less sample by its id, so it
    merges them into one group, whose clusters report `4` with 2 votes: each was cluster 0
    of its own engine group. Returns the votes credited to `4` and the samples answering 4."""
    samples = [
        {"id": "a", "completion": r"\boxed{4}", "reference": "5"},
        {"id": "a", "completion": r"\boxed{5}", "reference": "5"},
    ]
    chosen = select(samples, "majority", workers=1)
    votes = sum(n for answer, n in chosen.choices[0].clusters if answer == "4")
    return float(votes), 1.0


def _weighted_picks(weights: str) -> list[str | None]:
    """The answer picked after and before a second vote for `12.5` (None: no pick)."""
    one = [Candidate("0", "12.5", 0, -0.3), Candidate("1", "25", 1, -0.5)]
    two = [*one, Candidate("2", "12.5", 0, -0.4)]
    picked = [METHODS["weighted_majority"].choose(c, weights, 1.0).index for c in (two, one)]  # type: ignore[arg-type]
    return [None if i is None else c[i].answer for i, c in zip(picked, (two, one), strict=True)]


def _weighted_default_signed() -> tuple[float, float]:
    """`weighted_majority` summed reward-model scores as they are by default (`raw`), and
    Qwen2.5-Math-RM's are signed (57 of the 800 in math_cot_100 are below 0; on its problem
    54 two votes for `12.5` at -1.30 and -1.53 lose to one vote for `25` at -0.19). `12.5`
    at -0.3 beat `25` at -0.5; a second vote for `12.5`, at -0.4, made it lose (-0.7 <
    -0.5): a vote at a negative score counted against its answer. The default is now
    `sigmoid`: whether `12.5` is picked after and before the second vote (1.0: picked)."""
    after, before = _weighted_picks(DEFAULT_WEIGHTS)
    return float(after == "12.5"), float(before == "12.5")


def _weighted_raw_signed() -> tuple[float, float]:
    """Guard: `raw`, asked for, gives no pick (with the reason) for a group where a vote
    has a negative score: the picks made, 0."""
    return float(sum(p is not None for p in _weighted_picks("raw"))), 0.0


def _weighted_softmax_signed() -> tuple[float, float]:
    """Guard: with `softmax` weights the second vote does not hurt."""
    after, before = _weighted_picks("softmax")
    return float(after == "12.5"), float(before == "12.5")


def _accuracy(rm_of_wrong_group: Any) -> float:
    def candidate(sample_id: str, rm: Any, right: bool) -> dict[str, Any]:
        metadata = {"rm": rm, "ok": right}
        return {"id": sample_id, "group": sample_id[0], "completion": "x", "metadata": metadata}

    samples = [
        candidate("a0", 1.0, True),
        candidate("a1", 0.0, False),
        candidate("b0", rm_of_wrong_group, False),
        candidate("b1", rm_of_wrong_group, False),
    ]
    body = {"rewards": {"rm": {"type": ECHO, "key": "rm"}}}
    chosen = select(
        samples, "best_of_n", spec=body, component="rm", correct_key="metadata.ok", workers=1
    )
    assert chosen.summary is not None
    return chosen.summary["accuracy"]


def _select_failed_scores_not_graded() -> tuple[float, float]:
    """Engine. best_of_n on a component score. Group `b` has only wrong candidates; when the
    scoring fails on every one of them (`error`, caused by the completions: a judge or RM
    that crashed or timed out on what they wrote) the group is "not graded" and drops out of
    `accuracy`: 100% instead of the 50% the same wrong answers score when they are scored.
    A model whose hard problems make its scorer fail reports a higher accuracy."""
    return _accuracy("error"), _accuracy(0.5)


AT_LEAST: Callable[[float, float], bool] = lambda after, before: after >= before  # noqa: E731


def hole(name: str, attack: Any, should: Any, today: str, reason: str) -> Any:
    """An open hole: fails today, flips when fixed."""
    return pytest.param(
        name,
        attack,
        should,
        today,
        id=name,
        marks=pytest.mark.xfail(strict=True, reason=f"redteam: {reason}"),
    )


ROWS = [
    # (id, attack -> (attack earns, honest earns), should(attack, honest), today)
    guard(
        "trl_normalize_then_sum_charged_failure",
        _trl_gdpo_timeout,
        AT_MOST_HONEST,
        "every component at its group low (was: timeout -0.500 vs honest wrong -1.167)",
    ),
    guard(
        "trl_normalize_then_sum_gated_off",
        _trl_gdpo_gate,
        AT_MOST_HONEST,
        "gated-off cell at its column's low (was: wrong -1.446 vs right, unformatted -1.781)",
    ),
    guard(
        "trl_sum_then_normalize_charged_failure",
        _trl_sum_timeout,
        AT_MOST_HONEST,
        "timeout -0.866 = honest wrong -0.866",
    ),
    guard(
        "verl_batch_failure_scores_zero",
        _verl_batch_failure,
        AT_MOST_HONEST,
        "crash charged -1.0 vs honest wrong and overlong -1.0 (was 0.0)",
    ),
    guard(
        "renorm_two_step_wrong_answer",
        _renorm_short_wrong,
        AT_MOST_HONEST,
        "two steps -0.05 = ten steps -0.05 (was -0.050 vs -0.090: the mean of all steps)",
    ),
    guard("renorm_lone_step_keeps_process", _renorm_lone_step, AT_MOST_HONEST, "-0.05 = -0.05"),
    guard("renorm_steps_out_of_range_charged", _renorm_bad_steps, AT_MOST_HONEST, "-1.21 vs -0.71"),
    guard(
        "veto_behind_a_gate",
        _veto_behind_gate,
        AT_MOST_HONEST,
        "veto with only_if refused at load; without the gate 0.0 vs 0.2 (was 1.0 vs 0.2)",
    ),
    guard("veto_fires_with_its_gate_open", _veto_without_gate, AT_MOST_HONEST, "0.0 vs 0.2"),
    guard(
        "weighted_sum_overflow_raises",
        _combine_overflow,
        EQUAL,
        "the total is `error`, charged (was: OverflowError out of combine_scores)",
    ),
    guard(
        "group_statistics_overflow_raises",
        _group_overflow,
        EQUAL,
        "advantages computed (was: OverflowError out of GRPO's mean)",
    ),
    hole(
        "whiten_all_equal_group_not_zero",
        _whiten_all_equal_group,
        EQUAL,
        "an all-equal group gets +-1.0",
        "limit: whiten without baseline: group_mean is global by design (REINFORCE++); the "
        "README says an all-equal group gets +-1 beside another group there",
    ),
    guard("infinite_score_charged", _infinite_score, AT_MOST_HONEST, "charged, -1.22 vs -0.71"),
    guard("vote_hedge_is_no_vote", _vote_hedge, AT_MOST_HONEST, "0 vs 0"),
    guard("vote_list_is_its_own_answer", _vote_list, EQUAL, "0"),
    guard(
        "vote_bare_number_joins_two_units",
        _vote_without_unit,
        AT_MOST_HONEST,
        "bare 5: 0 (5 with 5 cm, 3; 5 m, 2; 6 cm, 3: a tie) vs 5 cm: 0; was 1.0",
    ),
    guard("vote_timeout_charged", _vote_timeout_advantage, AT_MOST_HONEST, "-1.0 vs 0"),
    guard(
        "vote_group_step_unbounded",
        _vote_group_step_cost,
        AT_MOST_HONEST,
        "3 s (the group's time limit) vs a 30 s bound; was 360 s worst case, unkillable",
    ),
    guard(
        "select_duplicate_ids_without_group",
        _select_duplicate_ids,
        EQUAL,
        "1 vote (was 2: keyed by id, now by input position)",
    ),
    guard(
        "weighted_majority_raw_signed_scores",
        _weighted_default_signed,
        AT_LEAST,
        "12.5 picked before and after (default sigmoid); raw, the old default, picked 25 after",
    ),
    guard("weighted_majority_raw_refuses_signed", _weighted_raw_signed, EQUAL, "no pick"),
    guard("weighted_majority_softmax", _weighted_softmax_signed, AT_LEAST, "12.5 still picked"),
    guard(
        "select_accuracy_drops_failed_groups",
        _select_failed_scores_not_graded,
        AT_MOST_HONEST,
        "accuracy 50 vs 50 (was 100: the group left the denominator)",
    ),
]


@pytest.mark.parametrize(("name", "attack", "should", "today"), ROWS)
def test_redteam_selection(
    name: str,
    attack: Callable[[], tuple[float, float]],
    should: Callable[[float, float], bool],
    today: str,
) -> None:
    earned, honest = attack()
    assert should(earned, honest), f"{name}: attack earns {earned}, honest {honest} ({today})"
