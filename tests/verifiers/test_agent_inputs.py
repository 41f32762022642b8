"""No completion a policy writes makes an agent reward fail: whatever the text, the status is
`ok` and the score lies in the range the reward declares (a failure would be a null reward,
which beats an honest 0)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.models import Sample
from rewardsmith.registry import RewardFn, declared_bounds
from rewardsmith.verifiers.agents import detection, gui_action, iou_reward, sql, tool_call

HUGE = str(10**400)
PIECES = [
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "<tool_call>",
    "</tool_call>",
    "<response>",
    "</response>",
    "<box>",
    "</box>",
    "<solution>",
    "</solution>",
    "</observation>",
    "```sql\n",
    "```\n",
    "\n",
    " ",
    "[",
    "]",
    "{",
    "}",
    ",",
    '"',
    "'",
    "1",
    "-",
    ".5",
    "1e999",
    HUGE,
    "NaN",
    "Infinity",
    '"name": "f", "parameters": ',
    '"arguments": "{',
    '{"bbox_2d": ',
    '"label": ',
    "{'action': 'click', 'coordinate': ",
    "[[[[[[[[",
    "SELECT 1",
    "None",
    "[]",
]


def rewards(db: Path) -> list[tuple[RewardFn, object]]:
    return [
        (tool_call(), {"tool_calls": [{"name": "f", "parameters": {"q": 1}}]}),
        (
            tool_call(think=False, granularity="intermediate"),
            '<tool_call>\n{"name": "g", "parameters": {}}\n</tool_call>',
        ),
        (iou_reward(), {"box": [0, 0, 10, 10]}),
        (detection(), {"boxes": [[0, 0, 10, 10]], "labels": ["cat"]}),
        (gui_action(), {"action": "click", "box": [0, 0, 10, 10]}),
        (gui_action(think=False), {"action": "type", "text": "hi"}),
        (sql(), {"db": str(db), "query": "SELECT 1"}),
        (sql(extract="skyrl"), {"db": str(db), "query": "SELECT 1"}),
    ]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import sqlite3

    path = tmp_path_factory.mktemp("inputs") / "one.sqlite"
    sqlite3.connect(path).close()
    return path


def check(fn: Callable[[Sample], object], sample: Sample) -> None:
    score = fn(sample)
    bounds = declared_bounds(fn)
    assert score.status == "ok", (sample.completion, score)  # type: ignore[attr-defined]
    assert bounds is not None and bounds[0] <= score.score <= bounds[1]  # type: ignore[attr-defined]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=24).map("".join))
def test_any_text_scores(db: Path, text: str) -> None:
    for fn, reference in rewards(db):
        check(fn, Sample(id="t", completion=text, reference=reference))


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=12,
    ),
    st.sampled_from(["arguments", "parameters", "function", "name"]),
)
def test_any_structured_tool_call_scores(db: Path, value: object, key: str) -> None:
    calls = [{"function": {"name": "f", key: value}}, {key: json.dumps(value)}, value]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    for fn, reference in rewards(db)[:2]:
        check(fn, Sample(id="s", completion=[message], reference=reference))
