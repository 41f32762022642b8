"""Group transforms through the engine: ordering, buffering, failures and the output lines."""

from __future__ import annotations

import io
import json

import pytest

from rewardsmith import Engine, InputError, Score
from rewardsmith.io import write_result

from .hack_table import GATE_CHAIN_SPEC
from .helpers import ECHO

SPEC = {
    "rewards": {
        "correct": {"type": ECHO, "key": "correct"},
        "fmt": {"type": ECHO, "key": "fmt", "weight": 0.5},
    },
    "group_transform": {"type": "grpo", "epsilon": 0},
}


def sample(i: int, group: str | None, correct, fmt=1.0) -> dict:
    return {
        "id": f"s{i}",
        "completion": "x",
        "group": group,
        "metadata": {"correct": correct, "fmt": fmt},
    }


def lines(results) -> list[dict]:
    out = io.StringIO()
    for result in results:
        write_result(out, result)
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.fixture(scope="module")
def engine():
    with Engine(SPEC, workers=2) as engine:
        yield engine


def test_grpo_advantages_in_the_output_with_failures_charged_or_left_out(engine) -> None:
    samples = [
        sample(0, "q1", 1.0),
        sample(1, "q1", 0.0),
        sample(2, "q1", "error"),  # the completion's doing: charged below the group's lowest
        sample(3, "q2", 1.0),
        sample(4, "q2", 1.0),
        sample(5, None, 0.0),
        {"id": "bad", "completion": 3},  # not a valid sample: keeps its place, no group
        sample(6, "q3", 0.0, fmt=0.0),
        sample(7, "q3", 1.0, fmt=0.0),
        sample(8, "q3", "infrastructure"),  # not the completion's doing: left out
    ]
    rows = lines(engine.iter_score(samples))
    ids = ["s0", "s1", "s2", "s3", "s4", "s5", "bad", "s6", "s7", "s8"]
    assert [r["id"] for r in rows] == ids
    assert [r["reward"] for r in rows] == [1.5, 0.5, None, 1.5, 1.5, 0.5, None, 0.0, 1.0, None]
    # the echo rewards declare no range, so the error enters q1's statistics strictly below
    # the group's lowest (by the spread, at least 1): [1.5, 0.5, -0.5]
    unit = 1.5**0.5
    assert [r["advantage"] for r in rows] == pytest.approx(
        [unit, 0.0, -unit, 0.0, 0.0, 0.0, None, -1.0, 1.0, None]
    )
    assert rows[6]["advantage"] is None and rows[9]["advantage"] is None
    assert rows[2]["status"] == "error" and rows[6]["status"] == "invalid"
    assert rows[2]["components"]["correct"]["detail"]["cause"] == "completion"
    assert rows[9]["components"]["correct"]["detail"]["cause"] == "infrastructure"
    assert all("steps" not in r for r in rows)


def test_an_invalid_line_inside_a_group_does_not_split_it(engine) -> None:
    samples = [sample(0, "q", 1.0), InputError("not JSON", line=2), sample(1, "q", 0.0)]
    rows = lines(engine.iter_score(samples))
    assert [r["advantage"] for r in rows] == [1.0, None, -1.0]


def test_a_group_that_reappears_is_an_error_naming_it(engine) -> None:
    samples = [sample(0, "q1", 1.0), sample(1, "q2", 1.0), sample(2, "q1", 0.0)]
    seen = []
    with pytest.raises(InputError, match="group 'q1' reappears at sample 's2'"):
        for result in engine.iter_score(samples):
            seen.append(result.id)
    assert seen == ["s0", "s1"]  # everything before the repeat, then the error


def test_the_builder_alone_refuses_a_reappearing_group_too() -> None:
    from .helpers import row, run, spec

    s = spec({"correct": {}}, group_transform="grpo")
    with pytest.raises(InputError, match="group 'a' reappears"):
        run(s, [row(g, {"correct": Score.ok(1.0)}) for g in "aba"])


def test_group_ids_may_repeat_across_calls(engine) -> None:
    batch = [sample(0, "q", 1.0), sample(1, "q", 0.0)]
    assert [r.advantage for r in engine.score(batch)] == [1.0, -1.0]
    assert [r.advantage for r in engine.score(batch)] == [1.0, -1.0]


def test_without_group_work_the_output_is_unchanged() -> None:
    spec = {k: v for k, v in SPEC.items() if k != "group_transform"}
    with Engine(spec, workers=1) as engine:
        rows = lines(engine.iter_score([sample(0, "q", 1.0), sample(1, "q", 0.0)]))
    assert all(set(r) == {"id", "reward", "status", "components"} for r in rows)


def test_renorm_steps_in_the_output() -> None:
    spec = {
        "rewards": {
            "prm": {"type": ECHO, "key": "prm"},
            "correct": {"type": ECHO, "key": "correct"},
        },
        "combine": {"type": "renorm", "process": "prm", "outcome": "correct"},
    }
    samples = [
        {
            "id": "a",
            "completion": "x",
            "metadata": {"prm": 0.0, "prm_detail": {"steps": [0.5, 1.0]}, "correct": 0.0},
        },
        {
            "id": "b",
            "completion": "x",
            "metadata": {"prm": 0.0, "prm_detail": {"steps": [0.5, 1.0]}, "correct": 1.0},
        },
    ]
    with Engine(spec, workers=1) as engine:
        rows = lines(engine.iter_score(samples))
    assert [(r["steps"], r["reward"]) for r in rows] == [([-0.5, 0.0], -0.25), ([0.5, 1.0], 0.75)]


def test_a_completion_that_times_out_gets_no_better_advantage_than_the_worst() -> None:
    """Issue 17 item 1, end to end: the hung sample's worker is killed; it used to come back
    with a null advantage (better than the honest wrong answer's negative one)."""
    spec = {
        "rewards": {"r": {"type": "tests.engine.rewards_for_tests:scripted"}},
        "group_transform": {"type": "grpo", "epsilon": 0},
        "timeout_s": 1,
    }
    samples = [
        {"id": "long", "completion": "abcd", "group": "q"},
        {"id": "short", "completion": "ab", "group": "q"},
        {"id": "hang", "completion": "hang", "group": "q"},
    ]
    with Engine(spec, workers=2) as engine:
        rows = lines(engine.iter_score(samples))
    assert [r["status"] for r in rows] == ["ok", "ok", "timeout"]
    assert rows[2]["reward"] is None  # no on_error: the status says what happened
    assert rows[2]["components"]["r"]["detail"]["cause"] == "completion"
    assert rows[2]["advantage"] < rows[1]["advantage"] <= 0 < rows[0]["advantage"]


def test_a_gate_chain_closes_when_its_first_gate_fails() -> None:
    """Issue 17 item 5: `bonus` (only_if correct) used to open on correct's raw score while
    `correct` itself was gated off by `safe`."""
    with Engine(GATE_CHAIN_SPEC, workers=1) as engine:
        unsafe, safe = engine.score([{"completion": "42 bonus"}, {"completion": "safe 42 bonus"}])
    assert (unsafe.reward, safe.reward) == (0.0, 2.5)
