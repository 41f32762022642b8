"""`scope: turns`: every assistant turn of a trajectory scored on its own, per-turn values in
`detail.steps`, and a multi-turn tool-use trajectory scored per step by ReNorm through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine
from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Sample, Score
from rewardsmith.registry import bounded, declared_bounds, declared_time, timed
from rewardsmith.spec import RewardSpec, load_spec
from rewardsmith.turns import per_turn, turn_views

ROOT = Path(__file__).resolve().parents[2]


def call(name: str, **parameters: Any) -> dict[str, Any]:
    return {"name": name, "parameters": parameters}


def openai_call(name: str, **arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"id": f"call_{name}", "type": "function", "function": function}


def tagged(name: str, **parameters: Any) -> str:
    return f"<tool_call>\n{json.dumps(call(name, **parameters))}\n</tool_call>"


def trajectory(convert_to: str, final: str) -> list[dict[str, Any]]:
    """Weather in Paris, then a unit conversion, then the answer: three assistant turns."""
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [openai_call("get_weather", city="Paris", unit="F")],
        },
        {"role": "tool", "tool_call_id": "call_get_weather", "content": "72"},
        {"role": "assistant", "content": tagged("convert", value=72, src="F", dst=convert_to)},
        {"role": "tool", "content": "22.2"},
        {"role": "assistant", "content": final},
    ]


TURN_GOLD = [
    {"tool_calls": [call("get_weather", city="Paris", unit="F")]},
    {"tool_calls": [call("convert", value=72, src="F", dst="C")]},
    {"tool_calls": []},
]
PROMPT = "What is the temperature in Paris, in Celsius?"


def test_turn_views_put_what_came_before_in_the_prompt() -> None:
    sample = Sample(id="t", prompt=PROMPT, completion=trajectory("C", "Answer: 22.2"))
    views = list(turn_views(sample))
    assert len(views) == 3
    assert [len(v.prompt) for v in views] == [1, 3, 5]  # type: ignore[arg-type]
    assert views[0].prompt[0].role == "user" and views[0].prompt[0].text == PROMPT
    assert views[2].text == "Answer: 22.2" and views[2].prompt[-1].role == "tool"
    assert all(len(v.completion) == 1 for v in views)
    assert list(turn_views(Sample(id="s", completion="plain text"))) == [
        Sample(id="s", completion="plain text")
    ]


def length_of_turn(sample: Sample) -> Score:
    if sample.reference == "skip":
        return Score.failed("not_applicable", "skipped")
    if sample.reference == "boom":
        return Score.failed("error", "exploded")
    return Score.ok(len(sample.text) / 10, reference=sample.reference)


def chat(*texts: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": t} for t in texts]


@pytest.mark.parametrize(
    ("texts", "references", "steps", "score", "extra"),
    [
        (["a", "bb", "ccc"], None, [0.1, 0.2, 0.3], 0.2, {}),
        # a turn past the references scores 0, with the reason
        (["a", "bb", "ccc"], ["x", "y"], [0.1, 0.2, 0.0], 0.1, {}),
        # a gold turn never reached counts 0 in the mean, not in the steps
        (["a", "bb"], ["x", "y", "z", "w"], [0.1, 0.2], 0.3 / 4, {"missing_turns": 2}),
        # a turn that does not apply has no step and is left out of the mean
        (["a", "bb", "ccc"], ["x", "skip", "z"], [0.1, None, 0.3], 0.2, {}),
    ],
)
def test_per_turn_scores(
    texts: list[str], references: list[str] | None, steps: list, score: float, extra: dict
) -> None:
    metadata = {} if references is None else {"turn_references": references}
    result = per_turn(length_of_turn)(Sample(id="p", completion=chat(*texts), metadata=metadata))
    assert result.status == "ok"
    assert result.detail["steps"] == pytest.approx(steps)
    assert result.score == pytest.approx(score)
    for key, value in extra.items():
        assert result.detail[key] == value
    if references is not None and len(texts) > len(references):
        assert "no reference for assistant turn 2" in result.detail["turns"][2]["reason"]


def signed_length(sample: Sample) -> Score:
    """A reward declared in [-3, 3]: a turn's length against its reference's, -3 when wrong."""
    return Score.ok(3.0 if sample.text == sample.reference else -3.0 + len(sample.text) / 10)


@pytest.mark.parametrize(
    ("texts", "references", "steps", "score"),
    [
        # a turn past the references scores the declared floor, -3, not the middle 0
        (["x", "y", "z"], ["x", "y"], [3.0, 3.0, -3.0], 1.0),
        # a gold turn never reached counts the floor in the mean
        (["x"], ["x", "y", "z"], [3.0], -1.0),
        # padding with empty turns never beats an honest wrong turn
        (["w", "", "", ""], ["x"], [-2.9, -3.0, -3.0, -3.0], -2.975),
    ],
)
def test_missing_and_extra_turns_score_the_declared_floor(
    texts: list[str], references: list[str], steps: list[float], score: float
) -> None:
    fn = per_turn(bounded(signed_length, -3.0, 3.0))
    result = fn(Sample(id="f", completion=chat(*texts), metadata={"turn_references": references}))
    assert result.status == "ok"
    assert result.detail["steps"] == pytest.approx(steps) and result.score == pytest.approx(score)
    assert declared_bounds(fn) == (-3.0, 3.0)  # the component declares its turns' range


def test_built_in_agent_rewards_declare_their_floor() -> None:
    floors = {
        "tool_call": -3.0,
        "sql": -1.0,
        "iou": 0.0,
        "detection": 0.0,
        "gui_action": 0.0,
    }
    for name, floor in floors.items():
        bounds = load_spec({"rewards": {"r": {"type": name}}}).rewards["r"].build()
        assert declared_bounds(bounds) is not None and declared_bounds(bounds)[0] == floor, name


@pytest.mark.parametrize("texts", [["x"], ["x", "y", "z"]])
def test_a_null_turn_reference_is_invalid_however_many_turns(texts: list[str]) -> None:
    """Whether the trajectory reaches the null entry is the policy's choice: the verdict is
    the same either way, decided by the dataset alone."""
    metadata = {"turn_references": ["x", "y", None]}
    result = per_turn(length_of_turn)(Sample(id="n", completion=chat(*texts), metadata=metadata))
    assert result.status == "invalid" and "turn_references[2] is null" in result.detail["reason"]


def test_turn_views_are_built_one_at_a_time() -> None:
    views = turn_views(Sample(id="g", completion=chat("a", "b")))
    assert next(views).text == "a" and next(views).text == "b"


def test_a_failing_turn_fails_the_component_naming_the_turn() -> None:
    sample = Sample(id="p", completion=chat("a", "b"), metadata={"turn_references": ["x", "boom"]})
    result = per_turn(length_of_turn)(sample)
    assert result.status == "error" and result.detail["reason"] == "turn 1: exploded"


def test_no_turn_applying_is_not_applicable() -> None:
    sample = Sample(id="p", completion=chat("a"), metadata={"turn_references": ["skip"]})
    assert per_turn(length_of_turn)(sample).status == "not_applicable"


def test_malformed_turn_references_are_invalid() -> None:
    sample = Sample(id="p", completion=chat("a"), metadata={"turn_references": "x"})
    assert per_turn(length_of_turn)(sample).status == "invalid"


def test_scope_is_a_checked_component_key() -> None:
    spec = load_spec({"rewards": {"n": {"type": "think_format", "scope": "turns"}}})
    assert spec.rewards["n"].scope == "turns"
    with pytest.raises(ConfigError, match="scope"):
        load_spec({"rewards": {"n": {"type": "think_format", "scope": "turn"}}})


def test_scope_turns_in_the_engine() -> None:
    spec = {
        "rewards": {
            "calls": {"type": "tool_call", "scope": "turns", "format_rule": "parsed"},
            "last": {"type": "tool_call", "format_rule": "parsed"},
        }
    }
    sample = {
        "id": "e",
        "prompt": PROMPT,
        "completion": trajectory("C", "Answer: 22.2"),
        "reference": TURN_GOLD[2],
        "metadata": {"turn_references": TURN_GOLD},
    }
    with Engine(spec, workers=1) as engine:
        (result,) = engine.score([sample])
    calls, last = result.components["calls"], result.components["last"]
    # each turn: format 1 + correctness 3 (exact), 1 + 3, then 1 + 0 (no call expected)
    assert calls.detail["steps"] == [4.0, 4.0, 1.0] and calls.score == pytest.approx(3.0)
    assert last.score == 1.0 and "steps" not in last.detail  # scope: final is the last turn


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    command = [sys.executable, "-m", "rewardsmith.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)


RENORM_SPEC = """
rewards:
  calls:                 # process: each tool-calling turn against its gold calls, in [0, 1]
    type: tool_call
    scope: turns
    correct_min: 0
    correct_max: 1
    format_weight: 0
  answer:                # outcome: the final answer
    type: exact_match
    extract: after_marker
combine: {type: renorm, process: calls, outcome: answer}
"""


def test_multi_turn_tool_use_scored_per_step_through_renorm_and_the_cli(tmp_path: Path) -> None:
    """ReNorm: a step before the last gets process + outcome - 1, the last step the outcome.

    Per-turn process scores (correctness in [0, 1] = S / S_max): turn 0 exact (1), turn 1 one
    wrong value of three (S = 1 + 1 + 2 = 4 of 5: 0.8), turn 2 calls nothing as the gold asks
    (the middle of the range, 0.5; replaced by the outcome).
    """
    rows = [
        ("right", trajectory("C", "Answer: 22.2"), TURN_GOLD),
        ("wrong-unit", trajectory("K", "Answer: 22.2"), TURN_GOLD),
        ("wrong-answer", trajectory("C", "Answer: 30"), TURN_GOLD),
        ("both-wrong", trajectory("K", "Answer: 30"), TURN_GOLD),
        (
            "extra-turn",
            [
                *trajectory("C", "Let me check again."),
                {"role": "assistant", "content": "Answer: 22.2"},
            ],
            TURN_GOLD,
        ),
    ]
    inp, out, spec = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "spec.yaml"
    spec.write_text(RENORM_SPEC)
    lines = [
        json.dumps(
            {
                "id": name,
                "prompt": PROMPT,
                "completion": completion,
                "reference": "22.2",
                "metadata": {"turn_references": gold},
            }
        )
        for name, completion, gold in rows
    ]
    inp.write_text("\n".join(lines) + "\n")
    proc = run_cli("score", "--spec", str(spec), "--input", str(inp), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    expected = {
        "right": [1.0, 1.0, 1.0],  # r_o = 1: [1 + 1 - 1, 1 + 1 - 1, 1]
        "wrong-unit": [1.0, 0.8, 1.0],  # [1, 0.8 + 1 - 1, 1]
        "wrong-answer": [0.0, 0.0, 0.0],  # r_o = 0: [1 - 1, 1 - 1, 0]
        "both-wrong": [0.0, -0.2, 0.0],  # [1 - 1, 0.8 - 1, 0]
        # the extra turn has no gold: 0, so 0 + 1 - 1; the last step is the outcome
        "extra-turn": [1.0, 1.0, 0.5, 1.0],
    }
    for name, steps in expected.items():
        result = results[name]
        assert result["status"] == "ok", result
        assert result["steps"] == pytest.approx(steps), name
        # half the worst process term, half the outcome (the last step)
        assert result["reward"] == pytest.approx((min(steps[:-1]) + steps[-1]) / 2), name
    raw = results["wrong-unit"]["components"]["calls"]["detail"]["steps"]
    assert raw == pytest.approx([1.0, 0.8, 0.5])


def slow_turn(sample: Sample) -> Score:
    """1 for every turn; the turn "slow" takes 1 s."""
    if sample.text == "slow":
        time.sleep(1.0)
    return Score.ok(1.0)


def test_turns_past_the_time_budget_score_the_floor() -> None:
    """Under a 2.5 s timeout, a reward declaring 0.8 s per turn leaves a budget of 1.6 s: the
    turns that would start after it score the floor, and the component declares 1.6 + 0.8 s.
    A budget is never shorter than one turn: declaring 1.5 s, the component declares 3 s,
    which a 2.5 s spec refuses (turns of ordinary speed would otherwise score the floor)."""
    fn = per_turn(timed(bounded(slow_turn, -1.0, 1.0), 0.8), timeout_s=2.5)
    result = fn(Sample(id="b", completion=chat("fast", "slow", "slow", "fast", "fast")))
    assert result.status == "ok" and result.detail["steps"] == [1.0, 1.0, 1.0, -1.0, -1.0]
    assert "turns 3 and on not scored" in result.detail["turns"][4]["reason"]
    assert "over the budget of 1.6s" in result.detail["turns"][3]["reason"]
    assert declared_time(fn) == pytest.approx(2.4)
    long_turns = per_turn(timed(bounded(slow_turn, -1.0, 1.0), 1.5), timeout_s=2.5)
    assert declared_time(long_turns) == pytest.approx(3.0)


def test_no_time_budget_without_a_declared_range() -> None:
    """Without a declared range the floor would be 0, above a bad turn's score: every turn
    is scored, however long they take, and the component declares no worst case."""

    def undeclared(sample: Sample) -> Score:  # `bounded` marks a function: not slow_turn
        return slow_turn(sample)

    fn = per_turn(undeclared, timeout_s=0.5)
    result = fn(Sample(id="u", completion=chat("slow", "fast", "fast")))
    assert result.status == "ok" and result.detail["steps"] == [1.0, 1.0, 1.0]
    assert declared_time(fn) is None


def test_scope_turns_keeps_the_declared_worst_case() -> None:
    """A turn that alone outlives the spec's timeout is refused under `scope: turns` as
    without it; one that fits is accepted, its turns budgeted."""
    for scope in ("final", "turns"):
        with pytest.raises(ConfigError, match="timeout_s"):
            load_spec({"rewards": {"c": {"type": "code", "timeout_s": 10, "scope": scope}}})
    spec = load_spec({"rewards": {"q": {"type": "sql", "scope": "turns"}}, "timeout_s": 12})
    assert spec.rewards["q"].worst_case_s == pytest.approx(12 - 0.1)
    with pytest.raises(ConfigError, match=r"two turns' worst case \(4\.75s each.*above 9\.5"):
        load_spec({"rewards": {"q": {"type": "sql", "scope": "turns"}}, "timeout_s": 9})


@pytest.mark.parametrize("timeout_s", [12, 12.0, "12"])
def test_components_learn_the_validated_timeout(timeout_s: Any) -> None:
    """The budget reads the spec's `timeout_s` as validated (a string "12" is 12.0), however
    the spec is built; both then refuse one too short, a string as a number. No dump shows
    the timeout the components learnt (it is the spec's own key)."""
    data = {"rewards": {"q": {"type": "sql", "scope": "turns"}}, "timeout_s": timeout_s}
    for spec in (load_spec(data), RewardSpec.model_validate(data)):
        assert spec.rewards["q"].worst_case_s == pytest.approx(12 - 0.1)
        assert "sample_timeout_s" not in spec.model_dump_json()
    with pytest.raises(ConfigError, match=r"above 9\.5"):
        load_spec({**data, "timeout_s": "5"})
    with pytest.raises(ValueError, match=r"above 9\.5"):
        RewardSpec.model_validate({**data, "timeout_s": "5"})
