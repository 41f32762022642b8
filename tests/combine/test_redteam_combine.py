"""Red team (rt17) of the combination layer after issue #17 and issue #11 items 22-23.

One row per attack, written as a policy paid for every unit of advantage would try it. Each
row computes what the attack earns and what an honest wrong answer earns in the same setting,
and asserts what the attack *should* earn (never more than the honest wrong answer, unless
it is a better answer). `today` says what the attack earned when this file was written.
Rows marked `xfail(strict=True)` are open holes: they flip loudly when fixed. The others are
attacks that fail today and guard against regressions. `closed` rows were holes
since fixed (fix17): `today` there says what the attack earned before the fix.

Scores are hand-made (`tests.combine.helpers`: the result builder without workers), except
one row that runs the engine on a real checker crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rewardsmith import ConfigError, Engine, Score
from tests.combine.helpers import UNIT, ok, row, run, spec

PENALTY = {"low": -1.0, "high": 0.0}
TIMEOUT = Score.failed("timeout", "ran past timeout_s")  # caused by the completion (default)


def _adv(components: dict[str, Any], rows: list[dict[str, Score]], **top: Any) -> list[float]:
    """The advantages of one group whose samples score `rows`."""
    results = run(spec(components, **top), [row("g", scores) for scores in rows])
    return [r.advantage for r in results]  # type: ignore[misc]


# -- failure beats an honest wrong answer when the rest of the group is right ---------------


def _charged_vs_wrong(transform: dict[str, Any]) -> tuple[float, float]:
    """Two correct answers and a third sample: an honest wrong answer, or a timeout the
    completion caused (`on_error` unset: the default)."""
    group = {"correct": UNIT}
    wrong = _adv(group, [{"correct": ok(1)}, {"correct": ok(1)}, {"correct": ok(0)}],
                 group_transform=transform)  # fmt: skip
    failed = _adv(group, [{"correct": ok(1)}, {"correct": ok(1)}, {"correct": TIMEOUT}],
                  group_transform=transform)  # fmt: skip
    return failed[2], wrong[2]


def _engine_checker_crash() -> tuple[float, float]:
    """The same on the engine with a real checker crash: IFBench's `ratio:overlap` divides by
    the response's character trigrams, so a two-letter reply ("ab", which has words) raises
    ZeroDivisionError -> `error`, charged. Beside two replies that follow the constraint."""
    leaf = {"id": "ratio:overlap", "kwargs": {"reference_text": "the cat sat on the mat",
                                              "percentage": 100}}  # fmt: skip
    body = {"rewards": {"c": {"type": "constraints"}}, "group_transform": {"type": "grpo"}}
    good = "the cat sat on the mat"

    def third(text: str, engine: Engine) -> float:
        samples = [
            {"id": str(i), "completion": c, "reference": leaf, "group": "g"}
            for i, c in enumerate([good, good, text])
        ]
        results = engine.score(samples)
        assert [r.status for r in results[:2]] == ["ok", "ok"]
        return results[2].advantage  # type: ignore[return-value]

    with Engine(body, workers=1) as engine:
        return third("ab", engine), third("a dog ran far away", engine)


# -- GDPO: a gated-off component is credited at its group mean ------------------------------


def _gdpo_gate() -> tuple[float, float]:
    """`format` counts only when `correct` passes (README's own example gates format on
    correct). Six correct well-formed answers, one correct badly formatted, one wrong. GDPO
    adds 0 (the group mean of format's z-scores) for the wrong answer's gated-off format, so
    the wrong answer (reward 0) gets a better advantage than the correct one (reward 1)."""
    components = {"correct": UNIT, "format": {**UNIT, "only_if": "correct", "weight": 1.5}}
    rows = [{"correct": ok(1), "format": ok(1)}] * 6 + [
        {"correct": ok(1), "format": ok(0)},
        {"correct": ok(0), "format": ok(0)},
    ]
    adv = _adv(components, rows, group_transform={"type": "gdpo", "batch_whiten": False})
    return adv[7], adv[6]  # the wrong answer (the attack), the correct badly formatted one


# -- a veto on a penalty can never pass: silently no signal ---------------------------------


def _veto_on_penalty() -> tuple[float, float]:
    """`veto: true` on a component scoring in [-1, 0] (an overlong penalty): its best score,
    0, is "failed (score <= 0)", so the veto fires on every sample. Today every sample gets
    the lowest total and every advantage is 0, with no warning. It should be refused at load
    (a hard rule that no sample can pass); the row returns 1.0 when refused."""
    try:
        adv = _adv(
            {"correct": UNIT, "overlong": {**PENALTY, "veto": True}},
            [{"correct": ok(1), "overlong": ok(0)}, {"correct": ok(0), "overlong": ok(0)}],
            group_transform={"type": "grpo"},
        )
    except (ConfigError, ValueError):
        return 1.0, 0.0
    return adv[0] - adv[1], 0.0  # today 0: a correct answer is not told from a wrong one


# -- guards: attacks that fail today --------------------------------------------------------


def _guard_veto_never_pays() -> tuple[float, float]:
    """A correct answer that breaks a format veto scores below a well-formed wrong one."""
    components = {"correct": UNIT, "fmt": {**UNIT, "veto": True}, "len": PENALTY}
    rows = [
        {"correct": ok(1), "fmt": ok(0), "len": ok(-1)},
        {"correct": ok(0), "fmt": ok(1), "len": ok(-1)},
        {"correct": ok(1), "fmt": ok(1), "len": ok(0)},
    ]
    adv = _adv(components, rows, group_transform={"type": "grpo"})
    return adv[0], adv[1]


def _guard_on_error_charged() -> tuple[float, float]:
    """With `on_error: -1` the timeout enters below the honest wrong answer."""
    components = {"correct": UNIT}
    top = {"group_transform": {"type": "grpo"}, "on_error": -1.0}
    wrong = _adv(components, [{"correct": ok(1)}, {"correct": ok(0)}, {"correct": ok(0)}], **top)
    failed = _adv(components, [{"correct": ok(1)}, {"correct": ok(0)}, {"correct": TIMEOUT}],
                  **top)  # fmt: skip
    return failed[2], wrong[2]


def _guard_gate_chain() -> tuple[float, float]:
    """`bonus -> correct -> safe`: with `safe` failed, `bonus` does not open on `correct`'s
    raw score (issue #17 item 5)."""
    components = {
        "safe": UNIT,
        "correct": {**UNIT, "only_if": "safe"},
        "bonus": {**UNIT, "only_if": "correct"},
    }
    results = run(
        spec(components),
        [row(None, {"safe": ok(0), "correct": ok(1), "bonus": ok(1)}),
         row(None, {"safe": ok(0), "correct": ok(0), "bonus": ok(0)})],
    )  # fmt: skip
    return results[0].reward, results[1].reward  # type: ignore[return-value]


def _guard_tournament_ties() -> tuple[float, float]:
    """An all-equal group gets exactly 0 in a tournament (issue #11 item 23)."""
    adv = _adv({"correct": UNIT}, [{"correct": ok(1)}] * 8, group_transform={"type": "tournament"})
    return max(abs(a) for a in adv), 0.0


def _guard_product_refused() -> tuple[float, float]:
    try:
        spec({"a": PENALTY, "b": PENALTY}, combine="product")
    except (ConfigError, ValueError):
        return 1.0, 0.0
    return 0.0, 0.0


def _guard_uncertainty_lambda_refused() -> tuple[float, float]:
    try:
        spec({"a": UNIT, "b": UNIT, "c": PENALTY}, combine={"type": "uncertainty", "lambda": 0.5})
    except (ConfigError, ValueError):
        return 1.0, 0.0
    return 0.0, 0.0


AT_MOST_HONEST: Callable[[float, float], bool] = lambda attack, honest: attack <= honest + 1e-9  # noqa: E731
POSITIVE: Callable[[float, float], bool] = lambda attack, honest: attack > honest  # noqa: E731
EQUAL: Callable[[float, float], bool] = lambda attack, honest: attack == pytest.approx(honest)  # noqa: E731


def guard(name: str, attack: Any, should: Any, today: str) -> Any:
    """An attack that fails today."""
    return pytest.param(name, attack, should, today, id=name)


def closed(name: str, attack: Any, should: Any, today: str, reason: str) -> Any:
    """A hole since closed: `today` and `reason` say what the attack earned before the fix."""
    return pytest.param(name, attack, should, f"before the fix: {today}; {reason}", id=name)


ESCAPE = (
    "a failure the completion caused is charged at its group's lowest reward; when every "
    "scored sample is correct it ties them (advantage 0) where an honest wrong answer gets "
    "a negative advantage"
)


def _charged(kind: str, **options: Any) -> Callable[[], tuple[float, float]]:
    return lambda: _charged_vs_wrong({"type": kind, **options})


ROWS = [
    # (id, attack -> (attack earns, honest earns), should(attack, honest), today)
    closed("timeout_grpo", _charged("grpo"), AT_MOST_HONEST, "0.0 vs wrong -1.414", ESCAPE),
    closed("timeout_rloo", _charged("rloo"), AT_MOST_HONEST, "0.0 vs wrong -1.0", ESCAPE),
    closed("timeout_dr_grpo", _charged("dr_grpo"), AT_MOST_HONEST, "0.0 vs wrong -0.667", ESCAPE),
    closed("timeout_rank", _charged("rank"), AT_MOST_HONEST, "0.0 vs wrong -0.5", ESCAPE),
    closed(
        "timeout_gdpo",
        _charged("gdpo", batch_whiten=False),
        AT_MOST_HONEST,
        "0.0 vs wrong -1.414",
        ESCAPE,
    ),
    closed(
        "engine_checker_crash",
        _engine_checker_crash,
        AT_MOST_HONEST,
        "'ab' (ZeroDivisionError in ratio:overlap) 0.0 vs wrong -1.414",
        ESCAPE + " (a real checker crash, through the engine)",
    ),
    closed(
        "gdpo_gate_credits_wrong_answer",
        _gdpo_gate,
        AT_MOST_HONEST,
        "wrong answer -2.646 vs correct badly formatted -3.296",
        "GDPO credits a gated-off component at its group mean (0), so a wrong answer gets a "
        "better advantage than a correct one",
    ),
    closed(
        "veto_on_penalty_never_passes",
        _veto_on_penalty,
        POSITIVE,
        "the veto fires on every sample: all advantages 0, no warning",
        "a veto on a component whose best score is <= 0 can never pass: it silently flattens "
        "every group instead of being refused",
    ),
    guard("timeout_tournament", _charged("tournament"), AT_MOST_HONEST, "loses to every sample"),
    guard("on_error_charged", _guard_on_error_charged, AT_MOST_HONEST, "-1 enters below wrong"),
    guard("veto_never_pays", _guard_veto_never_pays, AT_MOST_HONEST, "below well-formed wrong"),
    guard("gate_chain_closed", _guard_gate_chain, EQUAL, "bonus closed"),
    guard("tournament_all_equal_zero", _guard_tournament_ties, EQUAL, "all 0"),
    guard("product_of_penalties_refused", _guard_product_refused, POSITIVE, "refused"),
    guard(
        "uncertainty_large_lambda_refused", _guard_uncertainty_lambda_refused, POSITIVE, "refused"
    ),
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
