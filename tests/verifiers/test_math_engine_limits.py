"""Pathological math inputs through the real engine: none takes longer than timeout + 1 s."""

from __future__ import annotations

import time

import pytest

from rewardsmith import Engine

TIMEOUT_S = 2.0

PATHOLOGICAL = {
    "power_tower": "\\boxed{9^{9^{9^{9}}}}",
    "one_megabyte": "The answer is 42. " + "x" * 1_000_000,
    "five_thousand_boxes": " ".join(f"\\boxed{{{i}}}" for i in range(5_000)),
    "unbalanced_braces": "\\boxed{\\frac{1}{2" + "{" * 10_000,
    "deep_nesting": "\\boxed{" + "{" * 5_000 + "1" + "}" * 5_000 + "}",
    "huge_factorial": "\\boxed{100000!}",
    "huge_power": "\\boxed{(x+1)^{100000}}",
    "megabyte_of_digits": "\\boxed{" + "9" * 1_000_000 + "}",
}


@pytest.fixture(scope="module")
def engine() -> Engine:
    spec = {"rewards": {"correct": {"type": "math"}}, "timeout_s": TIMEOUT_S}
    with Engine(spec, workers=2) as engine:
        engine.score([{"completion": "\\boxed{1}", "reference": "1"}])  # workers up
        yield engine


@pytest.mark.parametrize("completion", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_each_pathological_sample_is_bounded(engine: Engine, completion: str) -> None:
    started = time.monotonic()
    (result,) = engine.score([{"completion": completion, "reference": "42"}])
    assert time.monotonic() - started < TIMEOUT_S + 1.0
    assert result.status in {"ok", "invalid", "timeout"}
    assert result.reward in {0.0, 1.0, None}
    if result.status != "ok":
        assert result.reward is None  # a failure is never silently a 0


def test_a_batch_of_them_does_not_stall_normal_samples(engine: Engine) -> None:
    samples = [{"completion": c, "reference": "7"} for c in PATHOLOGICAL.values()]
    samples += [{"completion": f"\\boxed{{{i}}}", "reference": str(i)} for i in range(500)]
    started = time.monotonic()
    results = engine.score(samples)
    assert time.monotonic() - started < TIMEOUT_S + 1.0 + 5.0
    assert all(r.reward == 1.0 for r in results[len(PATHOLOGICAL) :])


_HUGE_IDENTITY = r"\sin(10^{4000})^2 + \cos(10^{4000})^2 - 1"
COSTLY = {
    "near-cancellation, finished form off": (r"\boxed{" + _HUGE_IDENTITY + "}", False),
    "ten near-cancellations": (
        r"\boxed{" + " + ".join([f"({_HUGE_IDENTITY})"] * 10) + "}",
        False,
    ),
    "costly rival box": (r"\boxed{0} and \boxed{" + _HUGE_IDENTITY + "}", True),
}


@pytest.mark.parametrize(("completion", "finished_form"), COSTLY.values(), ids=COSTLY.keys())
def test_costly_answers_are_zero_not_timeouts(completion: str, finished_form: bool) -> None:
    """Answers crafted to need thousands of digits hit the numeric cap, never the engine's
    default timeout (a timeout is a null, which a policy would learn to produce)."""
    spec = {"rewards": {"correct": {"type": "math", "finished_form": finished_form}}}
    with Engine(spec, workers=1) as engine:
        (result,) = engine.score([{"completion": completion, "reference": "0"}])
    assert (result.status, result.reward) == ("ok", 0.0), result.components


def test_a_comparison_cut_by_the_clock_is_not_remembered() -> None:
    """The comparison cache kept "not evaluated: took too long" for good, so a pair once
    compared with no time left (a group's spent budget, a loaded worker) stayed different in
    that process; now only verdicts the clock did not decide are cached."""
    from rewardsmith.verifiers.math import same_answer, time_limit

    a, b = "(y+7)^3", "y^3+21y^2+147y+343"
    with time_limit(0):
        assert not same_answer(a, b)
    assert same_answer(a, b)
