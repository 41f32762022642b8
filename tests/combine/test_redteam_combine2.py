"""Red team (rt22) of the combination layer: attacks not in `test_redteam_combine.py` or
`hack_table.py`.

One row per attack, written as a policy paid for every unit of reward or advantage would
try it. Each row returns (what the attack earns, what the honest comparison earns) and
`should` says what must hold between them. Rows marked `xfail(strict=True)` are open holes:
they assert the correct behaviour, so they fail today and flip loudly when fixed. The others
are attacks that fail today, kept as guards. `today` says what the attack earned when this
file was written. A row whose spec the fix may refuse at load returns a passing pair then.

Scores are hand-made (`tests.combine.helpers`: the result builder without workers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from rewardsmith import ConfigError, Score
from rewardsmith.combine import combine
from tests.combine.helpers import UNIT, ok, row, run, spec

PENALTY = {"low": -1.0, "high": 0.0}
TIMEOUT = Score.failed("timeout", "ran past timeout_s")  # caused by the completion (default)
AT_MOST_HONEST: Callable[[float, float], bool] = lambda attack, honest: attack <= honest + 1e-9  # noqa: E731
BELOW: Callable[[float, float], bool] = lambda attack, honest: attack < honest - 1e-9  # noqa: E731
POSITIVE: Callable[[float, float], bool] = lambda attack, honest: attack > honest  # noqa: E731


def _or_refused(
    build: Callable[[], tuple[float, float]], refused: tuple[float, float] = (0.0, 0.0)
) -> tuple[float, float]:
    """`build()`, or `refused` when its spec is refused at load (a fix may refuse it: the
    attack then earns nothing; the default pair satisfies AT_MOST_HONEST)."""
    try:
        return build()
    except (ConfigError, ValueError):
        return refused


def _length(n: int) -> Score:
    """A `length` component's score: the overlong penalty 0 with the length it measured."""
    return ok(0.0, length=n)


def _rewards(components: dict[str, Any], rows: list[dict[str, Score]], **top: Any) -> list[Any]:
    """The results of one group (`g`) whose samples score `rows`."""
    return run(spec(components, **top), [row("g", scores) for scores in rows])


# -- length transforms read correctness through a closed gate --------------------------------

GATED_CORRECT = {"safe": UNIT, "correct": {**UNIT, "only_if": "safe"}}


def _cosine_through_gate() -> tuple[float, float]:
    """`correct` counts only when `safe` passes; `len` is cosine-scaled by `correct`. An
    unsafe answer's correctness is gated off (it earns 0 from `correct`), yet cosine reads
    the raw `correct` and pays the correct branch (+0.99) instead of the wrong one (-0.99):
    with the gate closed, being right still pays 1.98 through the length component."""
    components = {
        **GATED_CORRECT,
        "len": {"transform": {"type": "cosine", "correct": "correct", "max_length": 100}},
    }
    unsafe_right, unsafe_wrong = _rewards(
        components,
        [
            {"safe": ok(0), "correct": ok(1), "len": _length(10)},
            {"safe": ok(0), "correct": ok(0), "len": _length(10)},
        ],
    )
    return unsafe_right.reward, unsafe_wrong.reward


def _kimi_through_gate() -> tuple[float, float]:
    """The same with Kimi's group length reward: the unsafe right answer gets the correct
    branch's +0.5, the unsafe wrong one of the same length 0."""
    components = {**GATED_CORRECT, "len": {"transform": {"type": "kimi", "correct": "correct"}}}
    unsafe_right, unsafe_wrong, _ = _rewards(
        components,
        [
            {"safe": ok(0), "correct": ok(1), "len": _length(10)},
            {"safe": ok(0), "correct": ok(0), "len": _length(10)},
            {"safe": ok(1), "correct": ok(0), "len": _length(50)},
        ],
    )
    return unsafe_right.reward, unsafe_wrong.reward


# -- a closed gate removes a member from a mean / a minimum / a variance ---------------------


def _average_gate_dodge() -> tuple[float, float]:
    """`combine: average`, `c` gated on a light `b`. Passing `b` and scoring 0 on `c` averages
    three members (1 + 0.1 + 0) / 3 = 0.37; failing `b` drops `c` and averages two,
    (1 + 0) / 2 = 0.5. Failing the gate pays."""
    s = spec(
        {"a": UNIT, "b": {**UNIT, "weight": 0.1}, "c": {**UNIT, "only_if": "b"}}, combine="average"
    )
    failed_gate, _ = combine(s, {"a": ok(1), "b": ok(0), "c": ok(0)})
    passed_gate, _ = combine(s, {"a": ok(1), "b": ok(1), "c": ok(0)})
    return failed_gate, passed_gate  # type: ignore[return-value]


def _uncertainty_gate_dodge() -> tuple[float, float]:
    """UWO over two reward models, `rm2` gated on a format check. When the models disagree
    (1 vs 0), failing the format drops `rm2` from the ensemble: no disagreement, no variance,
    the total jumps from 0.35 to 1.0 (above a well-formatted answer both models like half)."""
    components = {"fmt": {**UNIT, "weight": 0.1}, "rm1": UNIT, "rm2": {**UNIT, "only_if": "fmt"}}
    s = spec(components, combine={"type": "uncertainty", "lambda": 1.0, "members": ["rm1", "rm2"]})
    failed_gate, _ = combine(s, {"fmt": ok(0), "rm1": ok(1), "rm2": ok(0)})
    passed_gate, _ = combine(s, {"fmt": ok(1), "rm1": ok(1), "rm2": ok(0)})
    return failed_gate, passed_gate  # type: ignore[return-value]


def _gated_penalty(mode: str, weight: float) -> Callable[[], tuple[float, float]]:
    """A penalty gated on a check: failing the check escapes the penalty. Under `min` the
    total rises from -1 to 0; under `weighted_sum` with the penalty weighing more than the
    check, from 0 to 1. A closed gate must not be cheaper than the penalty it closes on (or
    a gated penalty is refused at load, as a gated veto is)."""

    def attack() -> tuple[float, float]:
        s = spec(
            {"a": UNIT, "b": UNIT, "pen": {**PENALTY, "weight": weight, "only_if": "b"}},
            combine=mode,
        )
        failed_gate, _ = combine(s, {"a": ok(1), "b": ok(0), "pen": ok(-1)})
        passed_gate, _ = combine(s, {"a": ok(1), "b": ok(1), "pen": ok(-1)})
        return failed_gate, passed_gate  # type: ignore[return-value]

    return lambda: _or_refused(attack)


# -- vetoes ----------------------------------------------------------------------------------


def _veto_value_above_a_wrong_answer() -> tuple[float, float]:
    """`veto_value: 0.5` is finite, so it is accepted, but it is above what an honest wrong
    answer that keeps the rule earns (0.2): a correct answer that breaks the hard rule gets
    min(0.5, 1.0) = 0.5. README: "breaking a hard rule never pays better than keeping it"."""

    def attack() -> tuple[float, float]:
        s = spec({"correct": UNIT, "fmt": {**UNIT, "veto": True, "weight": 0.2}}, veto_value=0.5)
        broke, _ = combine(s, {"correct": ok(1), "fmt": ok(0)})
        kept_wrong, _ = combine(s, {"correct": ok(0), "fmt": ok(1)})
        return broke, kept_wrong  # type: ignore[return-value]

    return _or_refused(attack)


def _gdpo_veto_unknown_range() -> tuple[float, float]:
    """GDPO counts a vetoed sample's components at their lowest, and at 0.0 when the range is
    unknown. A reward model scoring -5 and -3 on the honest answers puts the vetoed sample's
    0.0 above both: its rm z-score is the best of the group, and its advantage (-0.12) beats
    the honest rule-keeping answer's (-0.43)."""
    results = _rewards(
        {"rm": {}, "rule": {**UNIT, "veto": True}},
        [
            {"rm": ok(-5), "rule": ok(1)},
            {"rm": ok(-3), "rule": ok(1)},
            {"rm": ok(-9), "rule": ok(0)},
        ],
        veto_value=-10.0,
        group_transform={"type": "gdpo", "batch_whiten": False},
    )
    return results[2].advantage, results[0].advantage


def _crash_beats_veto() -> tuple[float, float]:
    """With `veto_value: -10` below the lowest total of the components (0), a completion that
    would break the rule is better off making the rule's checker time out: it is charged at
    min(lowest_total = 0, the group's lowest) = 0, not at -10. Under dr_grpo, beside a right
    (2) and a wrong (1) answer: the crash earns -1.0, the rule breaker -7.67. README: charged
    at "the lowest total the spec can produce", and this spec can produce -10."""
    components = {"correct": UNIT, "safe": {**UNIT, "veto": True}}
    top = {"veto_value": -10.0, "group_transform": {"type": "dr_grpo"}}
    base = [{"correct": ok(1), "safe": ok(1)}, {"correct": ok(0), "safe": ok(1)}]
    crash = _rewards(components, [*base, {"correct": ok(1), "safe": TIMEOUT}], **top)
    vetoed = _rewards(components, [*base, {"correct": ok(1), "safe": ok(0)}], **top)
    return crash[2].advantage, vetoed[2].advantage


def _veto_with_grpo_lambda() -> tuple[float, float]:
    """A veto component shaped by `grpo_lambda` becomes `not_applicable` in a mostly wrong
    group, so the veto never fires there: breaking the rule (and the penalty's 0) earns 0.0,
    keeping it -0.5. README: "A veto applies to every sample"."""

    def attack() -> tuple[float, float]:
        shaped = {"type": "grpo_lambda", "correct": "correct"}
        broke, kept = _rewards(
            {"correct": UNIT, "fmt": {**UNIT, "veto": True, "transform": shaped}, "pen": PENALTY},
            [
                {"correct": ok(0), "fmt": ok(0), "pen": ok(0)},
                {"correct": ok(0), "fmt": ok(1), "pen": ok(-0.5)},
            ],
        )
        return broke.reward, kept.reward

    return _or_refused(attack)


# -- orderings -------------------------------------------------------------------------------


def _lexicographic_unbounded_secondary() -> tuple[float, float]:
    """`combine: lexicographic` over 0/1 correctness then a reward model of unknown range:
    a wrong answer the model scores 2000 totals 0 + 1e-3 * 2000 = 2.0, above the right
    answer's 1.0. The order is lexicographic only under a bound the spec never checks
    (uncertainty refuses members of unknown range; lexicographic accepts them)."""

    def attack() -> tuple[float, float]:
        s = spec({"correct": UNIT, "rm": {}}, combine="lexicographic")
        wrong, _ = combine(s, {"correct": ok(0), "rm": ok(2000)})
        right, _ = combine(s, {"correct": ok(1), "rm": ok(0)})
        return wrong, right  # type: ignore[return-value]

    return _or_refused(attack, refused=(-1.0, 0.0))


def _renorm_padding() -> tuple[float, float]:
    """ReNorm's scalar reward is half the mean of the process terms: a wrong trajectory with
    one bad step (0.1) earns -0.45; the same trajectory padded with nine trivially true steps
    (1.0 each) earns -0.045. Padding cut a wrong answer's penalty tenfold; the scalar now
    takes the min of the process terms (both -0.45)."""
    s = spec({"p": UNIT, "o": UNIT}, combine={"type": "renorm", "process": "p", "outcome": "o"})
    padded, _ = combine(s, {"p": ok(0.1, steps=[1.0] * 9 + [0.1, 1.0]), "o": ok(0)})
    honest, _ = combine(s, {"p": ok(0.1, steps=[0.1, 1.0]), "o": ok(0)})
    return padded, honest  # type: ignore[return-value]


def _first_pass_reads_the_shaped_score() -> tuple[float, float]:
    """`first_pass` over [q, correct]: q's raw score -0.5 fails (score <= 0), but `min_max`
    maps it to 0.25 > 0, so q "passes" and decides: the wrong answer earns 0.25, exactly the
    right one's. Gates and vetoes judge the raw score; the cascade judged the shaped one, so
    the correct answer (2.0 by the raw cascade) was not told from the wrong one. A transform
    on a first_pass member is now refused at load (rt22 round 3)."""

    def attack() -> tuple[float, float]:
        q = {"low": -1.0, "high": 1.0, "transform": {"type": "min_max", "min": -1, "max": 1}}
        s = spec({"q": q, "correct": {**UNIT, "weight": 2.0}}, combine="first_pass")
        wrong, right = run(
            s,
            [
                row(None, {"q": ok(-0.5), "correct": ok(0)}),
                row(None, {"q": ok(-0.5), "correct": ok(1)}),
            ],
        )
        return wrong.reward, right.reward  # type: ignore[return-value]

    return _or_refused(attack, refused=(0.0, 2.0))


def _out_of_range_product() -> tuple[float, float]:
    """Two components that declare [0, 1] return -2 each (a reward bug, or a reward model
    behind a wrong declaration): `product` was accepted because its members are declared
    non-negative, and pays 4.0, four times the best in-range total. A score outside its
    declared range was taken as it is, status `ok`; it is now an `error`, charged to the
    completion."""
    s = spec({"a": UNIT, "b": UNIT}, combine="product")
    total, status = combine(s, {"a": ok(-2), "b": ok(-2)})
    return (total if status == "ok" and total is not None else 0.0), 1.0


def _renorm_nan_beta() -> tuple[float, float]:
    """`beta: .nan` is accepted, and every reward is NaN with status `ok` (a NaN enters group
    statistics). Returns (1, 0) when refused, (0, 0) when accepted."""
    try:
        s = spec(
            {"p": UNIT, "o": UNIT},
            combine={"type": "renorm", "process": "p", "outcome": "o", "beta": math.nan},
        )
    except (ConfigError, ValueError):
        return 1.0, 0.0
    (result,) = run(s, [row(None, {"p": ok(0.5, steps=[0.5, 1.0]), "o": ok(1)})])
    assert result.status == "ok" and math.isnan(result.reward)  # type: ignore[arg-type]
    return 0.0, 0.0


# -- guards: attacks that fail today ---------------------------------------------------------


def _guard_lone_crash() -> tuple[float, float]:
    """A group of one: a crash gets 0, as a lone honest wrong answer does (no positive
    advantage from having no one to compare with)."""
    top = {"group_transform": {"type": "rloo"}}
    (crash,) = _rewards({"r": UNIT}, [{"r": TIMEOUT}], **top)
    (wrong,) = _rewards({"r": UNIT}, [{"r": ok(0)}], **top)
    return crash.advantage, wrong.advantage


def _guard_kimi_short_wrong() -> tuple[float, float]:
    """Kimi: the shortest wrong answer is not paid for being short (min(0, 0.5) = 0)."""
    results = _rewards(
        {
            "correct": {**UNIT, "weight": 0.0},
            "len": {"transform": {"type": "kimi", "correct": "correct"}},
        },
        [{"correct": ok(0), "len": _length(1)}, {"correct": ok(1), "len": _length(100)}],
    )
    return results[0].components["len"].score, 0.0  # type: ignore[return-value]


def _guard_cosine_truncation() -> tuple[float, float]:
    """Cosine: a right answer cut past `max_length` earns `exceed` (-1), below the right
    answer at exactly `max_length` (0.5): truncation is no shortcut."""
    cos = {"transform": {"type": "cosine", "correct": "correct", "max_length": 100}}
    over, at = _rewards(
        {"correct": {**UNIT, "weight": 0.0}, "len": cos},
        [{"correct": ok(1), "len": _length(101)}, {"correct": ok(1), "len": _length(100)}],
    )
    return over.reward, at.reward


def _guard_gdpo_veto_known_range() -> tuple[float, float]:
    """GDPO with known ranges: a vetoed right answer gets an advantage below every honest
    sample's (its components count at their range's low end)."""
    results = _rewards(
        {"correct": UNIT, "rule": {**UNIT, "veto": True}, "pen": PENALTY},
        [
            {"correct": ok(0), "rule": ok(1), "pen": ok(-1)},
            {"correct": ok(1), "rule": ok(1), "pen": ok(0)},
            {"correct": ok(1), "rule": ok(0), "pen": ok(0)},
        ],
        group_transform={"type": "gdpo", "batch_whiten": False},
    )
    return results[2].advantage, min(r.advantage for r in results[:2])


def _guard_renorm_bad_steps_charged() -> tuple[float, float]:
    """A process reward reporting steps out of [0, 1] makes the sample `error`, charged:
    its advantage is no better than an honest wrong trajectory's."""
    components = {"p": UNIT, "o": UNIT}
    top = {
        "combine": {"type": "renorm", "process": "p", "outcome": "o"},
        "group_transform": {"type": "grpo"},
    }
    right = {"p": ok(1, steps=[1.0, 1.0]), "o": ok(1)}
    crash = _rewards(components, [right, right, {"p": ok(1, steps=[7.0, 1.0]), "o": ok(0)}], **top)
    wrong = _rewards(components, [right, right, {"p": ok(0, steps=[0.0, 1.0]), "o": ok(0)}], **top)
    assert crash[2].status == "error" and crash[2].cause == "completion"
    return crash[2].advantage, wrong[2].advantage


def _guard_uncertainty_veto() -> tuple[float, float]:
    """Under `uncertainty`, a fired veto scores no better than an honest wrong answer."""
    s = spec(
        {"a": UNIT, "b": UNIT, "rule": {**UNIT, "veto": True, "weight": 0.1}},
        combine={"type": "uncertainty", "lambda": 0.5, "members": ["a", "b"]},
    )
    broke, _ = combine(s, {"a": ok(1), "b": ok(1), "rule": ok(0)})
    wrong, _ = combine(s, {"a": ok(0), "b": ok(0), "rule": ok(1)})
    return broke, wrong  # type: ignore[return-value]


def _guard_rank_charged() -> tuple[float, float]:
    """`rank` over an all-correct group: the crash ranks with (never above) a wrong answer."""
    top = {"group_transform": {"type": "rank"}}
    crash = _rewards({"r": UNIT}, [{"r": ok(1)}, {"r": ok(1)}, {"r": TIMEOUT}], **top)
    wrong = _rewards({"r": UNIT}, [{"r": ok(1)}, {"r": ok(1)}, {"r": ok(0)}], **top)
    return crash[2].advantage, wrong[2].advantage


def _guard_lexicographic_bounded() -> tuple[float, float]:
    """With a secondary in [-1, 1], the best wrong answer stays below the worst right one."""
    s = spec({"correct": UNIT, "rm": {"low": -1.0, "high": 1.0}}, combine="lexicographic")
    wrong, _ = combine(s, {"correct": ok(0), "rm": ok(1)})
    right, _ = combine(s, {"correct": ok(1), "rm": ok(-1)})
    return wrong, right  # type: ignore[return-value]


def hole(name: str, attack: Any, should: Any, today: str, reason: str) -> Any:
    """An open hole: the row asserts the correct behaviour and fails today."""
    return pytest.param(
        name, attack, should, today, id=name, marks=pytest.mark.xfail(strict=True, reason=reason)
    )


def guard(name: str, attack: Any, should: Any, today: str) -> Any:
    """An attack that fails today."""
    return pytest.param(name, attack, should, today, id=name)


ROWS = [
    # (id, attack -> (attack earns, honest earns), should(attack, honest), today)
    guard(
        "cosine_reads_correct_through_a_closed_gate",
        _cosine_through_gate,
        AT_MOST_HONEST,
        "unsafe right 0.99 vs unsafe wrong -0.99",
    ),
    guard(
        "kimi_reads_correct_through_a_closed_gate",
        _kimi_through_gate,
        AT_MOST_HONEST,
        "unsafe right 0.5 vs unsafe wrong 0.0",
    ),
    guard(
        "average_closed_gate_drops_a_low_member",
        _average_gate_dodge,
        AT_MOST_HONEST,
        "failed gate 0.5 vs passed gate 0.37",
    ),
    guard(
        "uncertainty_closed_gate_drops_a_disagreeing_member",
        _uncertainty_gate_dodge,
        AT_MOST_HONEST,
        "failed gate 1.0 vs passed gate 0.35",
    ),
    guard(
        "min_gated_penalty_dodged",
        _gated_penalty("min", 1.0),
        AT_MOST_HONEST,
        "failed gate 0.0 vs passed gate -1.0",
    ),
    guard(
        "weighted_sum_gated_penalty_dodged",
        _gated_penalty("weighted_sum", 2.0),
        AT_MOST_HONEST,
        "failed gate 1.0 vs passed gate 0.0",
    ),
    guard(
        "veto_value_above_a_wrong_answer",
        _veto_value_above_a_wrong_answer,
        AT_MOST_HONEST,
        "rule broken, right 0.5 vs rule kept, wrong 0.2",
    ),
    guard(
        "gdpo_vetoed_component_of_unknown_range_at_zero",
        _gdpo_veto_unknown_range,
        AT_MOST_HONEST,
        "vetoed -0.12 vs honest -0.43",
    ),
    guard(
        "crash_escapes_a_veto_value_below_the_lowest_total",
        _crash_beats_veto,
        AT_MOST_HONEST,
        "crash -1.0 vs rule broken -7.67 (dr_grpo)",
    ),
    guard(
        "veto_dodged_by_grpo_lambda",
        _veto_with_grpo_lambda,
        AT_MOST_HONEST,
        "rule broken 0.0 vs rule kept -0.5 in a mostly wrong group",
    ),
    guard(
        "lexicographic_unbounded_secondary_outranks_correctness",
        _lexicographic_unbounded_secondary,
        BELOW,
        "wrong with rm 2000: 2.0 vs right 1.0",
    ),
    guard(
        "renorm_padding_with_easy_steps",
        _renorm_padding,
        AT_MOST_HONEST,
        "padded wrong -0.045 vs honest wrong -0.45",
    ),
    guard(
        "first_pass_reads_the_shaped_score",
        _first_pass_reads_the_shaped_score,
        BELOW,
        "wrong 0.25 vs right 0.25",
    ),
    guard(
        "out_of_range_scores_under_product",
        _out_of_range_product,
        AT_MOST_HONEST,
        "4.0 from two [0, 1] components at -2",
    ),
    guard(
        "renorm_nan_beta_accepted", _renorm_nan_beta, POSITIVE, "accepted: reward NaN, status ok"
    ),
    guard("lone_crash_is_zero", _guard_lone_crash, AT_MOST_HONEST, "0 vs 0"),
    guard("kimi_short_wrong_not_paid", _guard_kimi_short_wrong, AT_MOST_HONEST, "0"),
    guard("cosine_truncation_no_shortcut", _guard_cosine_truncation, BELOW, "-1 vs 0.5"),
    guard("gdpo_veto_known_range", _guard_gdpo_veto_known_range, AT_MOST_HONEST, "lowest"),
    guard("renorm_bad_steps_charged", _guard_renorm_bad_steps_charged, AT_MOST_HONEST, "ties"),
    guard("uncertainty_veto", _guard_uncertainty_veto, AT_MOST_HONEST, "0 vs 0"),
    guard("rank_charged", _guard_rank_charged, AT_MOST_HONEST, "-0.5 vs -0.5"),
    guard("lexicographic_bounded", _guard_lexicographic_bounded, BELOW, "0.001 vs 0.999"),
]


@pytest.mark.parametrize(("name", "attack", "should", "today"), ROWS)
def test_redteam_combination(
    name: str,
    attack: Callable[[], tuple[float, float]],
    should: Callable[[float, float], bool],
    today: str,
) -> None:
    earned, honest = attack()
    assert should(earned, honest), f"{name}: attack earns {earned}, honest {honest} ({today})"


# -- non-finite spec parameters: spec.py says "an infinite or NaN number" is an error ----------

NAN, INF = math.nan, math.inf
BODY = {"r": UNIT}


def _with_transform(transform: dict[str, Any]) -> dict[str, Any]:
    return {"correct": UNIT, "r": {"transform": transform}}


def _refused(name: str, components: dict[str, Any], reason: str | None = None, **top: Any) -> Any:
    """A spec that must be refused; `reason` marks an open hole (accepted today)."""
    marks = () if reason is None else pytest.mark.xfail(strict=True, reason=reason)
    return pytest.param(components, top, marks=marks, id=name)


COSINE_INF = {"type": "cosine", "correct": "correct", "max_length": 9, "exceed": -INF}
KIMI_INF = {"type": "kimi", "correct": "correct", "correct_threshold": INF}
LAMBDA_NAN = {"type": "grpo_lambda", "correct": "correct", "correct_threshold": NAN}

NON_FINITE = [
    _refused(
        "clip_min_nan",
        _with_transform({"type": "clip", "min": NAN, "max": 1}),
    ),
    _refused(
        "clip_max_inf",
        _with_transform({"type": "clip", "min": 0, "max": INF}),
    ),
    _refused(
        "tanh_scale_inf",
        _with_transform({"type": "tanh", "scale": INF}),
    ),
    _refused(
        "mean_std_mean_nan",
        _with_transform({"type": "mean_std", "mean": NAN, "std": 1}),
    ),
    _refused(
        "cosine_exceed_inf",
        _with_transform(COSINE_INF),
    ),
    _refused(
        "kimi_threshold_inf",
        _with_transform(KIMI_INF),
    ),
    _refused(
        "grpo_lambda_threshold_nan",
        _with_transform(LAMBDA_NAN),
    ),
    _refused(
        "grpo_epsilon_inf",
        BODY,
        group_transform={"type": "grpo", "epsilon": INF},
    ),
    _refused(
        "whiten_epsilon_inf",
        BODY,
        group_transform={"type": "whiten", "epsilon": INF},
    ),
    _refused(
        "uncertainty_lambda_inf",
        BODY,
        combine={"type": "uncertainty", "lambda": INF},
    ),
    _refused("min_max_nan", _with_transform({"type": "min_max", "min": NAN, "max": 1})),
    _refused("veto_value_nan", BODY, veto_value=NAN),
    _refused("on_error_inf", BODY, on_error=INF),
    _refused("timeout_inf", BODY, timeout_s=INF),
    _refused("tie_scale_nan", BODY, combine={"type": "lexicographic", "tie_scale": NAN}),
    _refused("weight_nan", {"r": {**UNIT, "weight": NAN}}),
]


@pytest.mark.parametrize(("components", "top"), NON_FINITE)
def test_a_non_finite_spec_number_is_refused(components: dict[str, Any], top: dict[str, Any]):
    with pytest.raises(ConfigError):
        spec(components, **top)
