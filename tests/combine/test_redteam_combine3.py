"""Red team (rt22, round 3) of the combination layer: attacks on the rt22 fixes (closed gates
at their lowest value, first_pass on raw verdicts, ReNorm's min, out-of-range scores, vetoes'
floors, lexicographic's check) and on what they may have broken.

One row per attack, as in `test_redteam_combine2.py`: each returns (what the attack earns,
what the honest comparison earns) and `should` says what must hold between them. The ten holes
found (strict xfails when this file was written) are fixed and kept as guards beside the
attacks that failed from the start. `today` says what the attack earned when this file was
written. A row whose spec a fix may refuse at load
returns a passing pair then.

Scores are hand-made (`tests.combine.helpers`: the result builder without workers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rewardsmith import ConfigError, Score
from rewardsmith.combine import combine
from rewardsmith.integrations._component_values import (
    charged_rewards,
    check_split,
    component_values,
)
from rewardsmith.integrations._protocol import trainer_reward
from tests.combine.helpers import UNIT, ok, row, run, spec
from tests.redteam_rows import AT_MOST_HONEST, guard

PENALTY = {"low": -1.0, "high": 0.0}
TIMEOUT = Score.failed("timeout", "ran past timeout_s")  # caused by the completion (default)
BELOW: Callable[[float, float], bool] = lambda attack, honest: attack < honest - 1e-9  # noqa: E731
EQUAL: Callable[[float, float], bool] = lambda attack, honest: abs(attack - honest) <= 1e-9  # noqa: E731


def _or_refused(
    build: Callable[[], tuple[float, float]], refused: tuple[float, float] = (0.0, 0.0)
) -> tuple[float, float]:
    """`build()`, or `refused` when its spec is refused at load (a fix may refuse it: the
    attack then earns nothing; the default pair satisfies AT_MOST_HONEST and EQUAL)."""
    try:
        return build()
    except (ConfigError, ValueError):
        return refused


def _total(s: Any, scores: dict[str, Score]) -> float:
    total, status = combine(s, scores)
    assert status == "ok" and total is not None, (total, status)
    return total


# -- first_pass: a closed gate is "never passes", not "the component at its worst" -----------


def _first_pass_gate_skips_a_negative_weight_member() -> tuple[float, float]:
    """`first_pass` over [pen (weight -1, only_if g), c (weight 2), g]. With g passing and pen
    at its worst (score 1, weighted -1), pen passes on its raw score and decides: -1.0. With g
    failing, pen counts at its lowest weighted value but "never passes", so the cascade falls
    through to c: 2.0. README: "failing a gate never pays more than passing it with the gated
    component at its worst"."""

    def attack() -> tuple[float, float]:
        s = spec(
            {
                "pen": {**UNIT, "weight": -1.0, "only_if": "g"},
                "c": {**UNIT, "weight": 2.0},
                "g": UNIT,
            },
            combine="first_pass",
        )
        failed_gate = _total(s, {"g": ok(0), "pen": ok(1), "c": ok(1)})
        passed_gate_worst = _total(s, {"g": ok(1), "pen": ok(1), "c": ok(1)})
        return failed_gate, passed_gate_worst

    return _or_refused(attack)


def _first_pass_gate_skips_a_member_whose_worst_passes() -> tuple[float, float]:
    """The same with a bonus in [0.5, 1] (its worst, 0.5, still passes): open gate at worst
    decides at 0.5, closed gate falls through to c's 2.0."""

    def attack() -> tuple[float, float]:
        s = spec(
            {
                "b": {"low": 0.5, "high": 1.0, "only_if": "g"},
                "c": {**UNIT, "weight": 2.0},
                "g": UNIT,
            },
            combine="first_pass",
        )
        failed_gate = _total(s, {"g": ok(0), "b": ok(0.5), "c": ok(1)})
        passed_gate_worst = _total(s, {"g": ok(1), "b": ok(0.5), "c": ok(1)})
        return failed_gate, passed_gate_worst

    return _or_refused(attack)


def _first_pass_raw_pass_pays_below_a_fail() -> tuple[float, float]:
    """The other way round from rt22 hole 13: q's raw 0.2 passes, and decides, but its shaped
    score (`min_max` 0.5..1) is -0.6; failing q (raw 0) lets c decide at 1.0. A policy learns
    to fail the first rule of the cascade. Passing a rule must not pay less than failing it
    (or a first_pass member whose transform can change the sign is refused at load)."""

    def attack() -> tuple[float, float]:
        q = {**UNIT, "transform": {"type": "min_max", "min": 0.5, "max": 1}}
        s = spec({"q": q, "c": UNIT}, combine="first_pass")
        passed, failed = run(
            s, [row(None, {"q": ok(0.2), "c": ok(1)}), row(None, {"q": ok(0.0), "c": ok(1)})]
        )
        return failed.reward, passed.reward  # type: ignore[return-value]

    return _or_refused(attack)


# -- ReNorm: the min of the process terms, and a lone step ------------------------------------


def _renorm_prepended_step() -> tuple[float, float]:
    """A wrong answer in one step the PRM scores 0.1 earns (0.1 - 1) / 2 = -0.45 (a lone step
    keeps its process term). Prepend one trivially true step (1.0): the bad step is now the
    answer step, its process reward is replaced by the outcome, and the min of the process
    terms is the easy step's 0: the reward rises to 0.0 (a right one from 0.55 to 1.0).
    README: "padding with easy steps can only lower the reward ... each added step can only
    lower it"."""
    s = spec({"p": UNIT, "o": UNIT}, combine={"type": "renorm", "process": "p", "outcome": "o"})
    lone = _total(s, {"p": ok(0.1, steps=[0.1]), "o": ok(0)})
    padded = _total(s, {"p": ok(0.1, steps=[1.0, 0.1]), "o": ok(0)})
    return padded, lone


def _renorm_prepended_step_right() -> tuple[float, float]:
    s = spec({"p": UNIT, "o": UNIT}, combine={"type": "renorm", "process": "p", "outcome": "o"})
    lone = _total(s, {"p": ok(0.1, steps=[0.1]), "o": ok(1)})
    padded = _total(s, {"p": ok(0.1, steps=[1.0, 0.1]), "o": ok(1)})
    return padded, lone


def _guard_renorm_appended_step() -> tuple[float, float]:
    """Appending a step after the answer's process steps never raises the reward."""
    s = spec({"p": UNIT, "o": UNIT}, combine={"type": "renorm", "process": "p", "outcome": "o"})
    short = _total(s, {"p": ok(0.5, steps=[0.4, 1.0]), "o": ok(0)})
    longer = _total(s, {"p": ok(0.5, steps=[0.4, 1.0, 1.0]), "o": ok(0)})
    return longer, short


# -- group transforms read scores that do not count -------------------------------------------

MIN_MAX_RM = {"transform": {"type": "min_max"}}
"""A reward model of unknown range, normalised over its group (range [0, 1] after it)."""


def _out_of_range_sibling_squashes_min_max() -> tuple[float, float]:
    """`r` declares [0, 1] and is normalised over the group (`min_max`); `c` weighs 0.5. X is
    right on r (1.0), Y wrong on r but c 1: X 1.0 above Y 0.5. A third sample whose r returns
    100 (outside [0, 1]) is an `error` and counts nowhere, yet min_max already divided by its
    100: X's r becomes 0.01 and X (0.01) falls below Y (0.5). An honest right answer is paid
    less because another sample's reward broke its range (the range check runs after
    shaping; it should run before group transforms read the column)."""
    s = spec({"r": {**UNIT, **MIN_MAX_RM}, "c": {**UNIT, "weight": 0.5}})
    x, y, bad = run(
        s,
        [
            row("g", {"r": ok(1.0), "c": ok(0)}),
            row("g", {"r": ok(0.0), "c": ok(1)}),
            row("g", {"r": ok(100.0), "c": ok(0)}),
        ],
    )
    assert bad.status == "error"
    return y.reward, x.reward  # type: ignore[return-value]


def _gated_off_sibling_squashes_min_max() -> tuple[float, float]:
    """The same through a closed gate: `rm` (min_max over the group, so its range is known
    and a gate on it is accepted) counts only when `fmt` passes. Z fails fmt, so its rm
    counts at 0, yet its raw 100 still sets the group's max: X's rm falls from 1.0 to 0.01
    and X (0.01) below Y (0.5). A score behind a closed gate should not shape the others."""

    def attack() -> tuple[float, float]:
        s = spec(
            {
                "fmt": {**UNIT, "weight": 0.0},
                "rm": {**MIN_MAX_RM, "only_if": "fmt"},
                "c": {**UNIT, "weight": 0.5},
            }
        )
        x, y, _ = run(
            s,
            [
                row("g", {"fmt": ok(1), "rm": ok(1.0), "c": ok(0)}),
                row("g", {"fmt": ok(1), "rm": ok(0.0), "c": ok(1)}),
                row("g", {"fmt": ok(0), "rm": ok(100.0), "c": ok(0)}),
            ],
        )
        return y.reward, x.reward  # type: ignore[return-value]

    return _or_refused(attack, refused=(0.0, 1.0))


# -- an out-of-range score is `infrastructure`: left out, never charged ------------------------


def _out_of_range_escapes_the_charge_verl() -> tuple[float, float]:
    """`c` in [0, 1], `pen` in [-1, 0]. An honest wrong answer at the worst penalty earns -1.0.
    A completion that makes `pen` return -7 (a reward bug it triggers, as a crash is) is an
    `error` caused by `infrastructure`: not charged, so verl's score is 0.0 (on_error, else
    0), above the honest -1.0. A crash of the same checker on the same completion would be
    charged -1.0 (cause `completion`). The policy picks the failure that pays."""
    s = spec({"c": UNIT, "pen": PENALTY})
    results = run(
        s, [row(None, {"c": ok(0), "pen": ok(-1)}), row(None, {"c": ok(0), "pen": ok(-7)})]
    )
    honest, broke = (
        trainer_reward(s, r) if charge is None else charge
        for r, charge in zip(results, charged_rewards(s, results), strict=True)
    )
    return broke, honest


def _out_of_range_escapes_the_charge_grpo() -> tuple[float, float]:
    """In a grpo group [right, wrong, out of range]: the out-of-range sample gets a null
    advantage (taken as 0, no update), the honest wrong answer -1.0."""
    s = spec({"r": UNIT}, group_transform={"type": "grpo"})
    _, wrong, broke = run(
        s, [row("g", {"r": ok(1.0)}), row("g", {"r": ok(0.0)}), row("g", {"r": ok(5.0)})]
    )
    return (0.0 if broke.advantage is None else broke.advantage), wrong.advantage  # type: ignore[return-value]


def _guard_crash_is_charged() -> tuple[float, float]:
    """The comparison: the same checker timing out on the completion is charged -1.0."""
    s = spec({"c": UNIT, "pen": PENALTY})
    results = run(
        s, [row(None, {"c": ok(0), "pen": ok(-1)}), row(None, {"c": ok(0), "pen": TIMEOUT})]
    )
    honest, crash = (
        trainer_reward(s, r) if charge is None else charge
        for r, charge in zip(results, charged_rewards(s, results), strict=True)
    )
    return crash, honest


# -- a reward's own detail.raw_score is read as its score once a transform is set --------------


def _detail_raw_score_read_as_the_score() -> tuple[float, float]:
    """A reward model that reports its logit as `detail.raw_score` (score 0.9 in its declared
    [0, 1], raw_score -3): without a transform the sample totals 1.9; add a `clip` that
    changes nothing and `shaped` keeps the reward's own `raw_score` (-3) as the raw value,
    so `in_range` makes the honest sample an infrastructure `error` (and gates, vetoes and
    first_pass would read -3 as its verdict). Returns (total with clip, total without)."""
    plain = spec({"r": UNIT, "c": UNIT})
    clipped = spec({"r": {**UNIT, "transform": {"type": "clip", "min": 0, "max": 1}}, "c": UNIT})
    scores = {"r": Score.ok(0.9, raw_score=-3.0), "c": ok(1)}
    with_clip = run(clipped, [row(None, scores)])[0].reward
    without = run(plain, [row(None, scores)])[0].reward
    return (-1.0 if with_clip is None else with_clip), without  # type: ignore[return-value]


# -- guards: attacks that fail today ------------------------------------------------------------


def _guard_gate_chain_min() -> tuple[float, float]:
    """`bonus -> correct -> safe` under `min`: failing `safe` closes both gates; the total
    (0) is no more than passing both gates with bonus and correct at their worst (0)."""
    s = spec(
        {
            "safe": UNIT,
            "correct": {**UNIT, "only_if": "safe"},
            "bonus": {**UNIT, "only_if": "correct"},
        },
        combine="min",
    )
    failed = _total(s, {"safe": ok(0), "correct": ok(1), "bonus": ok(1)})
    worst = _total(s, {"safe": ok(1), "correct": ok(0), "bonus": ok(0)})
    return failed, worst


def _guard_gate_on_not_applicable() -> tuple[float, float]:
    """A gate whose component does not apply is closed: the gated penalty counts at -1, as
    when the gate passes with the penalty at its worst."""
    s = spec({"a": UNIT, "g": UNIT, "pen": {**PENALTY, "only_if": "g"}})
    na = Score.failed("not_applicable", "no")
    closed = _total(s, {"a": ok(1), "g": na, "pen": ok(0)})
    open_worst = _total(s, {"a": ok(1), "g": ok(1), "pen": ok(-1)})
    return closed, open_worst - 1.0  # less g's own 1.0, the only other difference


def _guard_product_closed_gate() -> tuple[float, float]:
    """Under `product` a closed gate zeroes the total, as the gated member at its worst does:
    no more, and no leak elsewhere."""
    s = spec({"c": UNIT, "g": UNIT, "style": {**UNIT, "only_if": "g"}}, combine="product")
    closed = _total(s, {"c": ok(1), "g": ok(0), "style": ok(1)})
    open_worst = _total(s, {"c": ok(1), "g": ok(1), "style": ok(0)})
    return closed, open_worst


def _guard_veto_value_equal_to_lowest() -> tuple[float, float]:
    """`veto_value` exactly the lowest total (-1) is accepted; breaking the rule with a right
    answer earns -1, the honest worst that keeps it (c 0, pen -1, rule 1) earns 0."""
    s = spec({"c": UNIT, "pen": PENALTY, "rule": {**UNIT, "veto": True}}, veto_value=-1.0)
    broke = _total(s, {"c": ok(1), "pen": ok(0), "rule": ok(0)})
    kept = _total(s, {"c": ok(0), "pen": ok(-1), "rule": ok(1)})
    return broke, kept


def _guard_crash_vs_veto_under_on_error() -> tuple[float, float]:
    """`on_error: 0.5` above the veto's -10: a crash of the rule's checker is still charged
    at min(on_error, lowest total incl. veto_value) = -10, not 0.5 (dr_grpo advantage)."""
    components = {"correct": UNIT, "safe": {**UNIT, "veto": True}}
    top = {"veto_value": -10.0, "on_error": 0.5, "group_transform": {"type": "dr_grpo"}}
    base = [{"correct": ok(1), "safe": ok(1)}, {"correct": ok(0), "safe": ok(1)}]
    s = spec(components, **top)
    crash = run(s, [row("g", r) for r in [*base, {"correct": ok(1), "safe": TIMEOUT}]])
    vetoed = run(s, [row("g", r) for r in [*base, {"correct": ok(1), "safe": ok(0)}]])
    return crash[2].advantage, vetoed[2].advantage  # type: ignore[return-value]


def _guard_lexicographic_boundary() -> tuple[float, float]:
    """tie_scale 0.5 over [0/1, [-1, 1]] is exactly the boundary (spread 1 = width 1): refused.
    Just below (0.4999) the best wrong answer stays below the worst right one."""
    try:
        spec(
            {"c": UNIT, "r": {"low": -1.0, "high": 1.0}},
            combine={"type": "lexicographic", "tie_scale": 0.5},
        )
    except (ConfigError, ValueError):
        pass
    else:
        return 1.0, 0.0
    s = spec(
        {"c": UNIT, "r": {"low": -1.0, "high": 1.0}},
        combine={"type": "lexicographic", "tie_scale": 0.4999},
    )
    return _total(s, {"c": ok(0), "r": ok(1)}), _total(s, {"c": ok(1), "r": ok(-1)})


def _guard_lexicographic_negative_ranges() -> tuple[float, float]:
    """Penalties first and second ([-1, 0] each, tie_scale 0.9 accepted): the best on the first
    still beats the worst on the first whatever the second (and whether it applies)."""
    s = spec({"a": PENALTY, "b": PENALTY}, combine={"type": "lexicographic", "tie_scale": 0.9})
    worse = _total(s, {"a": ok(-1), "b": ok(0)})
    better = _total(s, {"a": ok(0), "b": ok(-1)})
    return worse, better


def _guard_gdpo_gated_and_vetoed() -> tuple[float, float]:
    """GDPO, [vetoed right answer, gated-off wrong answer, right answer with fmt]: the vetoed
    sample's advantage is the group's lowest."""
    s = spec(
        {
            "correct": UNIT,
            "fmt": {**UNIT, "weight": 0.2, "only_if": "correct"},
            "rule": {**UNIT, "veto": True},
        },
        group_transform={"type": "gdpo", "batch_whiten": False},
    )
    vetoed, gated, honest = run(
        s,
        [
            row("g", {"correct": ok(1), "fmt": ok(1), "rule": ok(0)}),
            row("g", {"correct": ok(0), "fmt": ok(1), "rule": ok(1)}),
            row("g", {"correct": ok(1), "fmt": ok(0), "rule": ok(1)}),
        ],
    )
    return vetoed.advantage, min(gated.advantage, honest.advantage)  # type: ignore[return-value,type-var]


def _adapter_total(components: dict[str, Any], rows: list[dict[str, Score]]) -> tuple[float, float]:
    """The largest |TRL weighted sum - engine total| over the rows (0 when they agree; a
    mismatch raises in check_split), and 0."""
    s = spec(components)
    results = run(s, [row("g", r) for r in rows])
    charged = charged_rewards(s, results, ["g"] * len(results))
    worst = 0.0
    for result, charge in zip(results, charged, strict=True):
        values = component_values(s, result, charge)
        check_split(s, result, values, charge)
        parts = [
            c.weight * v for c, v in zip(s.rewards.values(), values, strict=True) if v is not None
        ]
        expected = result.reward if charge is None else charge
        worst = max(worst, abs(sum(parts) - (expected or 0.0)))
    return worst, 0.0


def _guard_trl_split_gated_negative_weights() -> tuple[float, float]:
    """Gated components with negative weights, a penalty and a tanh transform: TRL's weighted
    sum of the per-component values is the engine's total, gate open or closed, vetoed or
    crashed (no weight counted twice)."""
    components = {
        "g": UNIT,
        "pen": {**PENALTY, "weight": 2.0, "only_if": "g"},
        "neg": {**UNIT, "weight": -0.5, "only_if": "g"},
        "t": {
            "low": -2.0,
            "high": 2.0,
            "weight": 0.3,
            "only_if": "g",
            "transform": {"type": "tanh"},
        },
        "rule": {**UNIT, "veto": True, "weight": 0.0},
    }
    base = {"pen": ok(-0.2), "neg": ok(0.3), "t": ok(1.0)}
    return _adapter_total(
        components,
        [
            {"g": ok(0), **base, "rule": ok(1)},
            {"g": ok(1), **base, "rule": ok(1)},
            {"g": ok(1), **base, "rule": ok(0)},
            {"g": ok(1), **base, "rule": TIMEOUT},
        ],
    )


def limit(name: str, attack: Any, should: Any, today: str, why: str) -> Any:
    """An attack that still pays, kept open on purpose: the README states it (`why`)."""
    mark = pytest.mark.xfail(strict=True, reason=f"stated limit: {why}")
    return pytest.param(name, attack, should, today, id=name, marks=mark)


PAPER_ANSWER_STEP = (
    "as in the paper, the answer step of a trajectory of two or more steps is judged by the "
    "outcome alone; counting its process term too would cap every multi-turn tool-use "
    "trajectory at its answer turn's process score (README's ToolRL example: 0.75 right or wrong)"
)


ROWS = [
    # (id, attack -> (attack earns, honest earns), should(attack, honest), today)
    guard(
        "first_pass_closed_gate_skips_a_negative_weight_member",
        _first_pass_gate_skips_a_negative_weight_member,
        AT_MOST_HONEST,
        "failed gate 2.0 vs passed gate at worst -1.0",
    ),
    guard(
        "first_pass_closed_gate_skips_a_member_whose_worst_passes",
        _first_pass_gate_skips_a_member_whose_worst_passes,
        AT_MOST_HONEST,
        "failed gate 2.0 vs passed gate at worst 0.5",
    ),
    guard(
        "first_pass_raw_pass_pays_below_a_fail",
        _first_pass_raw_pass_pays_below_a_fail,
        AT_MOST_HONEST,
        "failing q 1.0 vs passing q -0.6",
    ),
    limit(
        "renorm_prepended_easy_step_lifts_a_wrong_lone_step",
        _renorm_prepended_step,
        AT_MOST_HONEST,
        "padded wrong 0.0 vs lone wrong -0.45",
        PAPER_ANSWER_STEP,
    ),
    limit(
        "renorm_prepended_easy_step_lifts_a_right_lone_step",
        _renorm_prepended_step_right,
        AT_MOST_HONEST,
        "padded right 1.0 vs lone right 0.55",
        PAPER_ANSWER_STEP,
    ),
    guard(
        "renorm_appended_step_never_raises",
        _guard_renorm_appended_step,
        AT_MOST_HONEST,
        "-0.3 vs -0.3",
    ),
    guard(
        "out_of_range_sibling_squashes_min_max",
        _out_of_range_sibling_squashes_min_max,
        BELOW,
        "wrong 0.5 vs right 0.01 (right alone: 1.0)",
    ),
    guard(
        "gated_off_sibling_squashes_min_max",
        _gated_off_sibling_squashes_min_max,
        BELOW,
        "wrong 0.5 vs right 0.01 (without the gated-off sample: 1.0)",
    ),
    guard(
        "out_of_range_escapes_the_charge_verl",
        _out_of_range_escapes_the_charge_verl,
        AT_MOST_HONEST,
        "out of range 0.0 vs honest wrong -1.0",
    ),
    guard(
        "out_of_range_escapes_the_charge_grpo",
        _out_of_range_escapes_the_charge_grpo,
        AT_MOST_HONEST,
        "out of range null (0) vs honest wrong -1.0",
    ),
    guard("crash_is_charged", _guard_crash_is_charged, AT_MOST_HONEST, "-1.0 vs -1.0"),
    guard(
        "detail_raw_score_read_as_the_score",
        _detail_raw_score_read_as_the_score,
        EQUAL,
        "with clip: error (-1 here) vs without 1.9",
    ),
    guard("gate_chain_min", _guard_gate_chain_min, AT_MOST_HONEST, "0 vs 0"),
    guard("gate_on_not_applicable", _guard_gate_on_not_applicable, AT_MOST_HONEST, "0 vs 0"),
    guard("product_closed_gate", _guard_product_closed_gate, AT_MOST_HONEST, "0 vs 0"),
    guard(
        "veto_value_equal_to_lowest", _guard_veto_value_equal_to_lowest, AT_MOST_HONEST, "-1 vs 0"
    ),
    guard(
        "crash_vs_veto_under_on_error",
        _guard_crash_vs_veto_under_on_error,
        AT_MOST_HONEST,
        "crash -7.67 vs vetoed -7.67",
    ),
    guard("lexicographic_boundary", _guard_lexicographic_boundary, BELOW, "0.4999 vs 0.5001"),
    guard(
        "lexicographic_negative_ranges", _guard_lexicographic_negative_ranges, BELOW, "-1 vs -0.9"
    ),
    guard("gdpo_gated_and_vetoed", _guard_gdpo_gated_and_vetoed, AT_MOST_HONEST, "lowest"),
    guard(
        "trl_split_gated_negative_weights",
        _guard_trl_split_gated_negative_weights,
        EQUAL,
        "engine and TRL agree",
    ),
]


@pytest.mark.parametrize(("name", "attack", "should", "today"), ROWS)
def test_redteam_combination_round3(
    name: str,
    attack: Callable[[], tuple[float, float]],
    should: Callable[[float, float], bool],
    today: str,
) -> None:
    earned, honest = attack()
    assert should(earned, honest), f"{name}: attack earns {earned}, honest {honest} ({today})"
