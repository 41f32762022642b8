"""tool_call: ToolRL's reward on hand-built cases, each value computed by hand from the formula.

R_correct = (max - min) * S / S_max + min; with ToolRL's range [-3, 3] that is 6 S/S_max - 3.
S = J(names) + sum over gold calls of J(parameter names) + equal values of its best unused
predicted call (same name, strictly better than 0); S_max = 1 + sum (1 + parameters). The
comment of each case gives S / S_max.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rewardsmith._exceptions import ConfigError
from rewardsmith.models import MAX_NESTING, Sample
from rewardsmith.registry import declared_bounds, registry
from rewardsmith.verifiers.agents.tool_calls import calls_from_text
from rewardsmith.verifiers.agents.tools import (
    Gold,
    _layout_ok,
    correctness_match,
    jaccard,
    same_value,
    tool_call,
)

Calls = list[tuple[str, dict[str, Any]]]


def call(name: str, **params: Any) -> tuple[str, dict[str, Any]]:
    return name, params


def toolrl_text(calls: Calls, think: bool = True) -> str:
    """A completion in ToolRL's layout: think, then one JSON call per line in one block."""
    lines = "\n".join(json.dumps({"name": n, "parameters": p}) for n, p in calls)
    return ("<think>reasoning</think>\n" if think else "") + f"<tool_call>\n{lines}\n</tool_call>"


def reference(calls: Calls, **extra: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "parameters": p} for n, p in calls], **extra}


W = [call("get_weather", city="Paris", unit="C")]  # S_max = 1 + (1 + 2) = 4
TWO = [call("search", query="llama", limit=5), call("translate", text="hi", target="fr")]  # 7
NOW = [call("now")]  # S_max = 1 + 1 = 2
ADD = [call("add", a=1, b=2), call("add", a=3, b=4)]  # S_max = 7
TEMP = [call("set_temp", value=21)]  # S_max = 3

CASES: list[tuple[str, Calls, Any, float, dict[str, Any]]] = [
    # (id, gold, predicted calls (or raw completion text), R_correct, tool_call options)
    # -- fine-grained (ToolRL's default), one call with two parameters
    ("exact", W, W, 3.0, {}),
    ("one wrong value", W, [call("get_weather", city="Paris", unit="F")], 6 * 3 / 4 - 3, {}),
    ("both values wrong", W, [call("get_weather", city="Rome", unit="F")], 6 * 2 / 4 - 3, {}),
    # keys J([city, unit], [city]) = 1/2, one equal value: S = 1 + 0.5 + 1 = 2.5
    ("missing parameter", W, [call("get_weather", city="Paris")], 6 * 2.5 / 4 - 3, {}),
    # keys J = 2/3, two equal: S = 1 + 2/3 + 2 = 11/3
    (
        "extra parameter",
        W,
        [call("get_weather", city="Paris", unit="C", lang="en")],
        6 * (11 / 3) / 4 - 3,
        {},
    ),
    ("wrong name", W, [call("get_forecast", city="Paris", unit="C")], -3.0, {}),  # S = 0
    ("no parameters", W, [call("get_weather")], 6 * 1 / 4 - 3, {}),  # call scores 0: no match
    ("renamed parameters", W, [call("get_weather", town="Paris", units="C")], -1.5, {}),  # S = 1
    ("value case differs", W, [call("get_weather", city="Paris", unit="c")], 1.5, {}),  # 3/4
    ("value type differs", W, [call("get_weather", city="Paris", unit=1)], 1.5, {}),  # 3/4
    # names J([gw], [gw, gw]) = 1/2, the first copy matches fully: S = 0.5 + 3
    ("gold call twice", W, W * 2, 6 * 3.5 / 4 - 3, {}),
    ("gold call five times", W, W * 5, 6 * 3.2 / 4 - 3, {}),  # J = 1/5: S = 3.2
    (
        "wrong copy then right copy",  # the best unused call matches: S = 0.5 + 3
        W,
        [call("get_weather", city="Paris", unit="F"), *W],
        2.25,
        {},
    ),
    ("unrelated call first", W, [call("ping", host="x"), *W], 2.25, {}),  # J = 1/2: S = 3.5
    # -- numbers: equality is JSON value equality (21 == 21.0, "21" is not 21)
    ("integral float", TEMP, [call("set_temp", value=21.0)], 3.0, {}),
    ("number as string", TEMP, [call("set_temp", value="21")], 6 * 2 / 3 - 3, {}),
    ("wrong number", TEMP, [call("set_temp", value=22)], 1.0, {}),  # S = 2 / 3
    # -- two different calls
    ("two calls exact", TWO, TWO, 3.0, {}),
    ("two calls reversed", TWO, TWO[::-1], 3.0, {}),  # J of names is a multiset: S = 7
    ("only the first call", TWO, TWO[:1], 0.0, {}),  # J = 1/2: S = 3.5
    (
        "second call one wrong value",  # S = 1 + 3 + 2 = 6
        TWO,
        [TWO[0], call("translate", text="hi", target="de")],
        6 * 6 / 7 - 3,
        {},
    ),
    (
        "number given as text",  # S = 1 + 2 + 3 = 6
        TWO,
        [call("search", query="llama", limit="5"), TWO[1]],
        6 * 6 / 7 - 3,
        {},
    ),
    (
        "one right call and an unknown one",  # J([s, t], [t, foo]) = 1/3: S = 1/3 + 3
        TWO,
        [TWO[1], call("foo")],
        6 * (10 / 3) / 7 - 3,
        {},
    ),
    (
        "each call missing a parameter",  # S = 1 + 1.5 + 1.5 = 4
        TWO,
        [call("search", query="llama"), call("translate", text="hi")],
        6 * 4 / 7 - 3,
        {},
    ),
    # -- a call without parameters
    ("no-argument call", NOW, NOW, 3.0, {}),
    ("no-argument call given one", NOW, [call("now", tz="UTC")], 0.0, {}),  # S = 1 / 2
    ("no-argument call twice", NOW, NOW * 2, 1.5, {}),  # J = 1/2, J([], []) = 1: S = 1.5 / 2
    # -- the same tool twice: each gold call takes the best unused prediction
    ("same tool twice exact", ADD, ADD, 3.0, {}),
    ("same tool twice swapped", ADD, ADD[::-1], 3.0, {}),  # S = 1 + 3 + 3
    ("same tool once", ADD, ADD[:1], 0.0, {}),  # J = 1/2: S = 3.5
    (
        "crossed values, first wins ties",  # gold 1 takes pred 0 (2 = 2), gold 2 pred 1: S = 5
        ADD,
        [call("add", a=1, b=4), call("add", a=3, b=2)],
        6 * 5 / 7 - 3,
        {},
    ),
    (
        "greedy in gold order",  # gold 1 takes pred 1 (3 > 2), gold 2 gets pred 0 (1): S = 5
        ADD,
        [call("add", a=1, b=9), call("add", a=1, b=2)],
        6 * 5 / 7 - 3,
        {},
    ),
    # -- unparseable answers and missing calls: the minimum
    ("not JSON", W, "<think>r</think>\n<tool_call>\n{get_weather Paris}\n</tool_call>", -3.0, {}),
    ("unclosed tag", W, '<think>r</think>\n<tool_call>\n{"name": "get_weather"', -3.0, {}),
    ("plain prose", W, "The weather in Paris is mild.", -3.0, {}),
    ("no parameters key", W, '<tool_call>\n{"name": "get_weather"}\n</tool_call>', -3.0, {}),
    ("parameters not an object", W, '[{"name": "get_weather", "parameters": [1]}]', -3.0, {}),
    ("empty answer", W, "", -3.0, {}),
    ("reasoning only", W, "<think>I would call get_weather</think>", -3.0, {}),
    # -- a gold without calls: correctness is neutral, the middle of the range
    ("gold calls nothing, answer calls", [], W, 0.0, {}),
    (
        "gold calls nothing, answer replies",
        [],
        "<think>r</think>\n<response>hi</response>",
        0.0,
        {},
    ),
    # -- coarse (COARSEREWARD): max or min
    ("coarse exact", W, W, 3.0, {"granularity": "coarse"}),
    (
        "coarse one wrong value",
        W,
        [call("get_weather", city="Paris", unit="F")],
        -3.0,
        {"granularity": "coarse"},
    ),
    ("coarse reversed", TWO, TWO[::-1], -3.0, {"granularity": "coarse"}),  # order matters
    # -- intermediate (INTERMEDIATEREWARD): a gold call counts 1 when an identical one exists
    ("intermediate exact", W, W, 3.0, {"granularity": "intermediate"}),
    (
        "intermediate one wrong value",  # S = 1 + 0, S_max = 1 + 1
        W,
        [call("get_weather", city="Paris", unit="F")],
        0.0,
        {"granularity": "intermediate"},
    ),
    (
        "intermediate one of two",  # S = 1 + 1 + 0, S_max = 3
        TWO,
        [TWO[0], call("translate", text="hi", target="de")],
        1.0,
        {"granularity": "intermediate"},
    ),
    ("intermediate reversed", TWO, TWO[::-1], 3.0, {"granularity": "intermediate"}),
    # -- strict lists (REFINEDREWARD): a name or key list scores 1 only when identical
    (
        "strict extra parameter",  # keys 0, two equal: S = 1 + 2 = 3
        W,
        [call("get_weather", city="Paris", unit="C", lang="en")],
        1.5,
        {"strict_lists": True},
    ),
    ("strict reversed", TWO, TWO[::-1], 6 * 6 / 7 - 3, {"strict_lists": True}),  # names 0
    (
        "strict key order with a wrong value",  # [unit, city] != [city, unit]: S = 1 + 0 + 1
        W,
        [call("get_weather", unit="F", city="Paris")],
        0.0,
        {"strict_lists": True},
    ),
    (
        "strict key order, exact values",  # the calls are equal: exact match
        W,
        [call("get_weather", unit="C", city="Paris")],
        3.0,
        {"strict_lists": True},
    ),
    # -- CORRECTMAX1: range [-1, 1], R = 2 S/S_max - 1
    (
        "range 1 one wrong value",
        W,
        [call("get_weather", city="Paris", unit="F")],
        0.5,
        {"correct_max": 1.0, "correct_min": -1.0},
    ),
    ("range 1 unparseable", W, "nothing", -1.0, {"correct_max": 1.0, "correct_min": -1.0}),
]


def score(gold: Calls, predicted: Any, options: dict[str, Any], **sample: Any) -> Any:
    text = predicted if isinstance(predicted, str) else toolrl_text(predicted)
    return tool_call(**options)(
        Sample(id="t", completion=text, reference=reference(gold), **sample)
    )


def test_at_least_fifty_hand_computed_cases() -> None:
    assert len(CASES) >= 50


@pytest.mark.parametrize(
    ("gold", "predicted", "expected", "options"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_correctness_matches_toolrl(
    gold: Calls, predicted: Any, expected: float, options: dict[str, Any]
) -> None:
    result = score(gold, predicted, options)
    assert result.status == "ok"
    assert result.detail["correctness"] == pytest.approx(expected, abs=1e-12)
    assert result.score == pytest.approx(result.detail["format"] + expected, abs=1e-12)


def test_the_gold_call_repeated_earns_less_than_the_call_once() -> None:
    once = score(W, W, {}).score
    rewards = [score(W, W * k, {}).score for k in (2, 3, 5, 10)]
    assert rewards == sorted(rewards, reverse=True) and all(r < once for r in rewards)


@pytest.mark.parametrize(
    ("gold", "predicted", "s", "s_max"),
    [(W, W, 4.0, 4.0), (TWO, TWO[::-1], 7.0, 7.0), (ADD, ADD[:1], 3.5, 7.0), (NOW, [], 0.0, 2.0)],
)
def test_match_sums(gold: Calls, predicted: Calls, s: float, s_max: float) -> None:
    assert correctness_match(gold, predicted) == (s, s_max)


@pytest.mark.parametrize(
    ("a", "b", "strict", "expected"),
    [
        (["x"], ["x"], False, 1.0),
        ([], [], False, 1.0),
        (["x"], [], False, 0.0),
        (["x", "y"], ["y", "x"], False, 1.0),
        (["x", "y"], ["y", "x"], True, 0.0),
        (["x", "x", "y"], ["x", "y", "y"], False, 2 / 4),  # shared {x, y}: 2 / (3 + 3 - 2)
        (["x"], ["x", "x", "x"], False, 1 / 3),
    ],
)
def test_jaccard(a: list[str], b: list[str], strict: bool, expected: float) -> None:
    assert jaccard(a, b, strict=strict) == pytest.approx(expected)


# -- format: ToolRL's layout ----------------------------------------------------------------

LINE = json.dumps({"name": "get_weather", "parameters": {"city": "Paris", "unit": "C"}})

FORMAT_CASES = [
    # (reference extras, completion, options, R_format)
    ({}, f"<think>r</think>\n<tool_call>\n{LINE}\n</tool_call>", {}, 1.0),
    ({}, f"<tool_call>\n{LINE}\n</tool_call>", {}, 0.0),  # no think block
    ({}, f"<tool_call>\n{LINE}\n</tool_call>", {"think": False}, 1.0),
    ({}, f"<think>r</think>\n<tool_call>\n{LINE}\n</tool_call>\nDone.", {}, 0.0),  # trailing text
    ({}, f"<think>r</think>\n<tool_call>{LINE}</tool_call>", {}, 0.0),  # no newlines in block
    (
        {},  # two blocks (Qwen's layout for two calls): ToolRL wants one block
        f"<think>r</think>\n<tool_call>\n{LINE}\n</tool_call>\n<tool_call>\n{LINE}\n</tool_call>",
        {},
        0.0,
    ),
    (
        {"response": True},
        f"<think>r</think>\n<tool_call>\n{LINE}\n</tool_call>\n<response>Checking.</response>",
        {},
        1.0,
    ),
    ({"response": True}, f"<think>r</think>\n<tool_call>\n{LINE}\n</tool_call>", {}, 0.0),
    ({}, f"```json\n{LINE}\n```", {"format_rule": "parsed"}, 1.0),
    ({}, "no call", {"format_rule": "parsed"}, 0.0),
]


@pytest.mark.parametrize(("extra", "completion", "options", "expected"), FORMAT_CASES)
def test_format_term(
    extra: dict[str, Any], completion: str, options: dict[str, Any], expected: float
) -> None:
    sample = Sample(id="f", completion=completion, reference=reference(W, **extra))
    assert tool_call(**options)(sample).detail["format"] == expected


def test_gold_response_only_layout() -> None:
    fn = tool_call()
    gold = {"tool_calls": [], "response": "Hello!"}
    good = fn(
        Sample(id="r", completion="<think>r</think>\n<response>Hi</response>", reference=gold)
    )
    called = fn(Sample(id="r", completion=f"<think>r</think>\n{LINE}", reference=gold))
    assert (good.detail["format"], good.score) == (1.0, 1.0)
    assert (called.detail["format"], called.score) == (0.0, 0.0)


def test_two_qwen_blocks_are_both_read() -> None:
    text = (
        "<tool_call>\n" + json.dumps({"name": "search", "arguments": TWO[0][1]}) + "\n</tool_call>"
    )
    text += (
        "\n<tool_call>" + json.dumps({"name": "translate", "arguments": TWO[1][1]}) + "</tool_call>"
    )
    result = tool_call()(Sample(id="q", completion=text, reference=reference(TWO)))
    assert result.detail["correctness"] == 3.0 and result.detail["source"] == "tool_call_tags"


def test_openai_tool_calls_in_the_final_message() -> None:
    completion = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps(W[0][1])},
                }
            ],
        }
    ]
    result = tool_call()(Sample(id="o", completion=completion, reference=reference(W)))
    assert result.score == 4.0 and result.detail["source"] == "tool_calls"
    bad = json.loads(json.dumps(completion))
    bad[0]["tool_calls"][0]["function"]["arguments"] = "{city: Paris"
    failed = tool_call()(Sample(id="o", completion=bad, reference=reference(W)))
    assert failed.status == "ok" and failed.score == -3.0 and "not JSON" in failed.detail["reason"]


def test_toolrl_ground_truth_text_as_reference() -> None:
    gold = f"<think>plan</think>\n<tool_call>\n{LINE}\n</tool_call>"
    result = tool_call()(Sample(id="g", completion=gold, reference=gold))
    assert result.score == 4.0


def test_reasoning_never_holds_the_call() -> None:
    text = f"<think><tool_call>\n{LINE}\n</tool_call></think>\nI will not call anything."
    assert tool_call()(Sample(id="t", completion=text, reference=reference(W))).score == -3.0


@pytest.mark.parametrize(
    ("schedule", "step", "predicted", "format_term", "correctness"),
    [
        # linear (SCHEDULEREWARD): from [-2, 2] at step 0 to [-3, 3] at step 150
        ("linear", 0, W, 2.0, 2.0),
        # step 75: correctness in [-2.5, 2.5], 5 * 0.75 - 2.5; format max 2 - 0.5
        ("linear", 75, [call("get_weather", city="Paris", unit="F")], 1.5, 1.25),
        ("linear", 300, W, 1.0, 3.0),  # held at the configured range
        ("linear", 75, "nothing", -1.0, -2.5),  # ToolRL's clamp: format min -1 from step 75
        # two_stage (MAX1STEP30MAX3): correctness / 3 before step 30, format / 2 from it
        ("two_stage", 10, [call("get_weather", city="Paris", unit="F")], 1.0, 0.5),
        ("two_stage", 30, W, 0.5, 3.0),
    ],
)
def test_schedules(
    schedule: str, step: int, predicted: Any, format_term: float, correctness: float
) -> None:
    result = score(W, predicted, {"schedule": schedule}, metadata={"step": step})
    assert result.detail["format"] == pytest.approx(format_term)
    assert result.detail["correctness"] == pytest.approx(correctness)


def test_weights_and_detail() -> None:
    result = score(W, [call("get_weather", city="Paris", unit="F")], {"format_weight": 0.5})
    assert result.score == pytest.approx(0.5 * 1.0 + 1.5)
    assert result.detail["match"] == 3.0 and result.detail["max_match"] == 4.0


@pytest.mark.parametrize(
    ("reference", "metadata", "status"),
    [
        (None, {}, "not_applicable"),
        ({"calls": []}, {}, "invalid"),
        ({"tool_calls": [{"parameters": {}}]}, {}, "invalid"),
        ({"tool_calls": "get_weather"}, {}, "invalid"),
        ("<tool_call>\nnot json\n</tool_call>", {}, "invalid"),
    ],
)
def test_bad_references_are_invalid(reference: Any, metadata: dict, status: str) -> None:
    result = tool_call()(Sample(id="b", completion="x", reference=reference, metadata=metadata))
    assert result.status == status


def test_a_schedule_without_a_step_is_invalid() -> None:
    result = tool_call(schedule="linear")(Sample(id="s", completion="x", reference=reference(W)))
    assert result.status == "invalid" and "metadata.step" in result.detail["reason"]


def test_arguments_alias_and_json_text_in_the_reference() -> None:
    gold = {"tool_calls": [{"name": "get_weather", "arguments": json.dumps(W[0][1])}]}
    assert tool_call()(Sample(id="a", completion=toolrl_text(W), reference=gold)).score == 4.0


def test_calls_from_text_sources() -> None:
    assert calls_from_text("hello").source == "none"
    assert calls_from_text(f"[{LINE}, {LINE}]").calls == W * 2
    assert calls_from_text('{"answer": 4}').problem == "a call needs a string 'name'"
    assert calls_from_text("[" * 100_000).problem is not None  # bounded, never raises


def test_config_errors_and_registration() -> None:
    with pytest.raises(ConfigError):
        tool_call(correct_min=3, correct_max=-3)
    assert registry.get("tool_call").factory is tool_call


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (True, True, True),
        (True, 1, False),  # Python's == says True == 1
        (False, 0, False),
        (1, 1.0, True),  # JSON does not tell 1 from 1.0
        (1, "1", False),
        (None, 0, False),
        (None, None, True),
        ([1, True], [1, 1], False),
        ({"a": [True]}, {"a": [1]}, False),
        ({"a": [1.0]}, {"a": [1]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([1, 2], [2, 1], False),
        ("x", "x", True),
    ],
)
def test_values_are_equal_with_their_json_types(a: Any, b: Any, equal: bool) -> None:
    assert same_value(a, b) is equal and same_value(b, a) is equal


def test_a_boolean_written_as_a_number_is_a_wrong_value() -> None:
    gold = reference([call("toggle", flag=True, level=2)])
    wrong = tool_call(think=False)(
        Sample(
            id="b",
            completion=toolrl_text([call("toggle", flag=1, level=2.0)], think=False),
            reference=gold,
        )
    )
    assert wrong.detail["correctness"] == pytest.approx(6 * 3 / 4 - 3)  # level counts, flag not
    for granularity in ("intermediate", "coarse"):
        fn = tool_call(think=False, granularity=granularity)
        text = toolrl_text([call("toggle", flag=1, level=2)], think=False)
        assert fn(Sample(id="b", completion=text, reference=gold)).detail["correctness"] < 3


def test_arguments_nested_too_deep_are_unparseable_and_not_echoed() -> None:
    deep: Any = []
    for _ in range(MAX_NESTING + 5):
        deep = [deep]
    text = toolrl_text([call("f", q=deep)], think=False)
    result = tool_call(think=False)(Sample(id="d", completion=text, reference=reference(W)))
    assert result.detail["correctness"] == -3.0 and result.detail["calls"] == []
    assert "nested more than" in result.detail["reason"]
    deep_gold = {"tool_calls": [{"name": "f", "parameters": {"q": deep}}]}
    with pytest.raises(ValidationError, match="nested more than"):  # an invalid input line
        Sample(id="g", completion=text, reference=deep_gold)


def old_layout_ok(text: str, gold_calls: bool, response: bool, think: bool) -> bool:
    """ToolRL's layout check as the regex it was before the linear scan (the oracle)."""
    head = r"^<think>.*?</think>\n" if think else "^"
    block = r"<tool_call>\n.*?\n</tool_call>"
    reply = r"<response>.*?</response>"
    counts: dict[str, int] = {}
    if gold_calls and response:
        pattern, counts = head + block + r"\n" + reply + "$", {"<tool_call>": 1, "<response>": 1}
    elif gold_calls:
        pattern, counts = head + block + "$", {"<tool_call>": 1}
    elif response:
        pattern, counts = head + reply + "$", {"<response>": 1}
    else:
        pattern = r"^<think>.*?</think>$" if think else r"^(?!.*<tool_call>).*$"
    if re.search(pattern, text, re.DOTALL) is None:
        return False
    return all(
        text.count(tag) == n and text.count(tag.replace("<", "</")) == n
        for tag, n in counts.items()
    )


LAYOUT_PIECES = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<response>"]
LAYOUT_PIECES += ["</response>", "\n", " ", "x", "{}"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(LAYOUT_PIECES), max_size=14).map("".join),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_layout_scan_matches_toolrl_regex(
    text: str, gold_calls: bool, response: bool, think: bool
) -> None:
    gold = Gold([call("f")] if gold_calls else [], response)
    text = text.strip()
    assert _layout_ok(text, gold, think) == old_layout_ok(text, gold_calls, response, think)


def test_tool_call_declares_its_range() -> None:
    assert declared_bounds(tool_call()) == (-3.0, 4.0)
    assert declared_bounds(tool_call(correct_min=0, correct_max=1, format_weight=0)) == (0, 1)
    # linear: [-2, 2] + [-2, 2] at step 0, [-1, 1] + [-3, 3] from step 150
    assert declared_bounds(tool_call(schedule="linear")) == (-4.0, 4.0)
    assert declared_bounds(tool_call(schedule="two_stage")) == (-3.0, 3.5)  # format halves


@pytest.mark.parametrize(
    ("options", "hedge", "honest"),
    [
        ({}, 6 * 4.25 / 5 - 3, 6 * 4 / 5 - 3),  # names J = 1/4, the exact call 1 + 3: 2.1
        ({"strict_lists": True}, 6 * 4 / 5 - 3, 6 * 4 / 5 - 3),  # names 0: no gain
        ({"granularity": "coarse"}, -3.0, -3.0),
    ],
)
def test_calls_covering_guesses_of_two_values(
    options: dict[str, Any], hedge: float, honest: float
) -> None:
    """Four calls of one tool, both guesses for two uncertain values of three, against one
    call with one value wrong (README: ToolRL's formula pays the hedge; strict_lists does
    not)."""
    gold = reference([call("f", a=1, b=2, c=3)])
    guesses = [call("f", a=a, b=b, c=3) for a in (1, 9) for b in (2, 8)]
    fn = tool_call(think=False, **options)
    scores = [
        fn(Sample(id="h", completion=toolrl_text(calls, think=False), reference=gold))
        for calls in (guesses, [call("f", a=9, b=2, c=3)])
    ]
    assert [s.detail["correctness"] for s in scores] == pytest.approx([hedge, honest])
