"""The data contract."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator, Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from rewardsmith import Sample, Score
from rewardsmith.models import (
    MAX_DATA_URL_CHARS,
    MAX_NESTING,
    OMITTED_IMAGE,
    Message,
    Result,
    nested_deeper_than,
    result_json,
)


@pytest.mark.parametrize("alias", ["reference", "answer", "solution", "ground_truth", "label"])
def test_reference_aliases(alias: str) -> None:
    assert Sample.model_validate({"id": "a", "completion": "x", alias: "42"}).reference == "42"


def test_unknown_columns_travel_in_metadata() -> None:
    sample = Sample.model_validate(
        {"id": 7, "completion": "x", "level": 3, "metadata": {"source": "gsm8k"}}
    )
    assert sample.id == "7"
    assert sample.metadata == {"level": 3, "source": "gsm8k"}


def test_chat_completion_text_is_the_last_assistant_turn() -> None:
    sample = Sample.model_validate(
        {
            "id": "c",
            "completion": [
                {"role": "assistant", "content": "first"},
                {"role": "assistant", "content": "second"},
                {"role": "tool", "content": "output"},
            ],
        }
    )
    assert sample.text == "second"


@pytest.mark.parametrize(
    "data",
    [{"id": "a"}, {"id": "a", "completion": 3}, {"id": "a", "completion": "x", "metadata": []}],
)
def test_invalid_samples_raise(data: dict) -> None:
    with pytest.raises(ValidationError):
        Sample.model_validate(data)


def test_score_helpers() -> None:
    assert Score.ok(1).model_dump() == {"score": 1.0, "status": "ok", "detail": {}}
    failed = Score.failed("timeout", "slow", timeout_s=5)
    assert failed.score is None and failed.detail == {"reason": "slow", "timeout_s": 5}
    assert Score.ok(0.5).passed and not Score.ok(0.0).passed and not failed.passed


def test_several_gold_columns_first_alias_wins_others_kept() -> None:
    row = {"id": "m", "completion": "x", "solution": "long text \\boxed{7}", "answer": "7"}
    sample = Sample.model_validate(row)
    assert sample.reference == "7"
    assert sample.metadata == {"solution": "long text \\boxed{7}"}
    both = Sample.model_validate({"id": "b", "completion": "x", "reference": "1", "label": True})
    assert both.reference == "1" and both.metadata == {"label": True}


IMAGE_PART = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


def test_content_parts_text_and_images() -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, IMAGE_PART, {"type": "text", "text": "b"}],
    }
    sample = Sample.model_validate({"id": "p", "completion": [message]})
    assert sample.text == "a\nb"
    assert [p.as_sent() for p in sample.final_turn.images] == [IMAGE_PART]  # type: ignore[union-attr]


@pytest.mark.parametrize("roles", [["model"], ["gpt"], ["Assistant"], ["user", "tool"], []])
def test_a_chat_without_an_assistant_message_is_invalid(roles: list[str]) -> None:
    """The pipeline names the roles, never the policy: a chat without an `assistant` message
    is invalid data, not an empty answer (which `length` would score best)."""
    completion = [{"role": role, "content": "The answer is 4."} for role in roles]
    with pytest.raises(ValidationError, match="no assistant message in the completion"):
        Sample.model_validate({"id": "r", "completion": completion})


def test_final_turn_is_the_last_assistant_message() -> None:
    completion = [
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]},
        {"role": "tool", "content": "out"},
    ]
    sample = Sample.model_validate({"id": "f", "completion": completion})
    assert (
        sample.final_turn is not None
        and sample.final_turn.tool_calls == completion[0]["tool_calls"]
    )
    assert sample.text == "" and Sample(id="s", completion="x").final_turn is None


OVERSIZED = {"type": "image_url", "image_url": {"url": "data:," + "A" * 21 * 2**20}}


def oversized(scheme: str) -> dict:
    return {"type": "image_url", "image_url": {"url": scheme + "A" * (MAX_DATA_URL_CHARS + 1)}}


@pytest.mark.parametrize(
    "part",
    [
        {"type": "text"},
        {"type": "image_url"},
        {"type": "image_url", "image_url": "https://x/y.png"},
        OVERSIZED,
        oversized("DATA:image/png;base64,"),  # URL schemes are case-insensitive
        oversized(" data:,"),
        oversized("https://x/?q="),  # the limit is on the URL, whatever its scheme
    ],
)
def test_malformed_or_oversized_parts_are_invalid(part: dict) -> None:
    data = {"id": "m", "completion": "x", "prompt": [{"role": "user", "content": [part]}]}
    with pytest.raises(ValidationError):
        Sample.model_validate(data)


def test_an_oversized_data_url_is_an_invalid_result() -> None:
    from rewardsmith import Engine

    data = {"id": "m", "completion": "x", "prompt": [{"role": "user", "content": [OVERSIZED]}]}
    with Engine({"rewards": {"n": {"type": "think_format"}}}, workers=1) as engine:
        (result,) = engine.score([data])
    assert result.status == "invalid"
    assert "over the limit" in result.components["n"].detail["reason"]


def test_an_oversized_image_in_the_completion_is_omitted_not_invalid() -> None:
    """The completion is the policy's side: its oversized image is replaced by a part no
    reward reads and no judge is sent, and the text is scored."""
    parts = [{"type": "text", "text": "Answer: 7"}, oversized("data:image/png;base64,")]
    data = {"id": "o", "completion": [{"role": "assistant", "content": parts}]}
    sample = Sample.model_validate(data)
    final = sample.final_turn
    assert final is not None and final.images == [] and sample.text == "Answer: 7"
    assert final.content[1].type == OMITTED_IMAGE  # type: ignore[index,union-attr]
    assert "over the limit" in final.content[1].as_sent()["reason"]  # type: ignore[index,union-attr]
    assert data["completion"][0]["content"][1]["type"] == "image_url"  # the input is untouched
    from rewardsmith import Engine

    spec = {"rewards": {"m": {"type": "exact_match", "extract": "after_marker"}}}
    with Engine(spec, workers=1) as engine:
        right, wrong = engine.score([{**data, "reference": "7"}, {**data, "reference": "8"}])
    assert (right.status, right.reward, wrong.status, wrong.reward) == ("ok", 1.0, "ok", 0.0)


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_tool_call_arguments_nested_too_deep_travel_as_json_text() -> None:
    shallow = {"type": "function", "function": {"name": "f", "arguments": {"q": nested(10)}}}
    deep = {"type": "function", "function": {"name": "f", "arguments": {"q": nested(600)}}}
    message = Message(role="assistant", tool_calls=[shallow, deep])
    assert message.tool_calls is not None and message.tool_calls[0] == shallow
    arguments = message.tool_calls[1]["function"]["arguments"]
    assert isinstance(arguments, str) and json.loads(arguments) == {"q": nested(600)}
    assert not nested_deeper_than(message.tool_calls, MAX_NESTING)
    deep_elsewhere = {"type": "function", "function": {"name": "f"}, "x": nested(600)}
    (kept,) = Message(role="assistant", tool_calls=[deep_elsewhere]).tool_calls or []
    assert isinstance(kept, str) and json.loads(kept) == deep_elsewhere
    assert nested_deeper_than(nested(MAX_NESTING + 1)) and not nested_deeper_than(nested(100))


def test_unknown_part_types_are_kept_and_ignored() -> None:
    content = [
        {"type": "input_audio", "input_audio": {"data": "..."}},
        {"type": "text", "text": "t"},
    ]
    sample = Sample.model_validate(
        {"id": "u", "completion": [{"role": "assistant", "content": content}]}
    )
    assert sample.text == "t" and sample.final_turn.images == []  # type: ignore[union-attr]


LONE = "\ud800"
"""Half of a UTF-16 pair: a valid JSON escape and Python str, not encodable as UTF-8."""


@pytest.mark.parametrize(
    ("field", "value", "read"),
    [
        ("completion", f"A {LONE}", "A \ufffd"),
        ("completion", [{"role": "assistant", "content": LONE}], None),
        ("prompt", f"{LONE}{LONE}", "\ufffd\ufffd"),
        ("reference", {"k": [f"x{LONE}"]}, {"k": ["x\ufffd"]}),
        ("metadata", {f"k{LONE}": 1}, {"k\ufffd": 1}),
        ("completion", "emoji \U0001f600 kept", "emoji \U0001f600 kept"),
    ],
)
def test_lone_surrogates_in_text_become_the_replacement_character(
    field: str, value: object, read: object
) -> None:
    sample = Sample.model_validate({"id": "a", "completion": "x", field: value})
    got = getattr(sample, field)
    if read is None:  # a conversation: its text
        assert sample.text == "\ufffd"
    else:
        assert got == read
    json.dumps(sample.model_dump(mode="json"), ensure_ascii=False).encode()  # writable


@pytest.mark.parametrize("field", ["id", "group"])
def test_a_lone_surrogate_in_an_id_is_refused(field: str) -> None:
    data = {"id": "a", "completion": "x", field: f"q{LONE}"}
    with pytest.raises(ValidationError, match="lone UTF-16 surrogate") as caught:
        Sample.model_validate(data)
    assert caught.value.errors()[0]["loc"] == (field,)


def test_result_json_escapes_lone_surrogates_a_reward_echoed() -> None:
    echoed = Score.ok(1.0, answer=f"x{LONE}\u00e9", bad=float("nan"))
    result = Result(id=f"i{LONE}", reward=1.0, status="ok", components={"m": echoed})
    text = result_json(result)
    text.encode("utf-8")  # the point: it can be written
    assert "\\ud800" in text and "\u00e9" in text  # only the surrogate is escaped
    back = json.loads(text)
    assert back["id"] == f"i{LONE}"
    assert back["components"]["m"]["detail"] == {"answer": f"x{LONE}\u00e9", "bad": None}
    assert "advantage" not in back  # unset optional fields stay out, as on the fast path
    plain = Result(id="i", reward=1.0, status="ok", components={})
    assert result_json(plain) == plain.model_dump_json(exclude_unset=True)


def _depth(value: object) -> int:
    """Levels of lists, tuples and dicts in `value`, by recursion (the oracle)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


_NESTED = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=40,
)


@given(_NESTED, st.integers(min_value=0, max_value=8))
def test_nested_deeper_than_measures_the_depth(value: object, limit: int) -> None:
    assert nested_deeper_than(value, limit) == (_depth(value) > limit)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # integer ids and groups become text, also when columns move or metadata is bad
        ({"id": 3, "group": 4, "completion": "x"}, {"id": "3", "group": "4"}),
        ({"id": 3, "completion": "x", "answer": "5"}, {"id": "3", "reference": "5"}),
        # the gold column moves; the other gold columns and unknown ones go to metadata
        (
            {"id": "a", "completion": "x", "solution": "s", "answer": "5", "level": 2},
            {"reference": "5", "metadata": {"solution": "s", "level": 2}},
        ),
        # a lone surrogate in an unknown column's name is replaced once it is in metadata
        ({"id": "a", "completion": "x", f"k{LONE}": 1}, {"metadata": {"k\ufffd": 1}}),
    ],
)
def test_a_dataset_row_becomes_a_sample(data: dict, expected: dict) -> None:
    sample = Sample.model_validate(data)
    assert {k: getattr(sample, k) for k in expected} == expected


@pytest.mark.parametrize(
    ("data", "locs"),
    [
        ({"id": True, "completion": "x"}, {("id",)}),  # a bool is no number id
        # bad metadata: the row is left as it is for the errors (the id is still text)
        ({"id": 1, "completion": "x", "metadata": "m", "level": 2}, {("metadata",), ("level",)}),
        # an unknown column at the nesting limit is one level deeper in metadata
        ({"id": "a", "completion": "x", "deep": "PLACEHOLDER"}, {()}),
    ],
)
def test_rows_that_cannot_be_samples_are_refused(data: dict, locs: set) -> None:
    if data.get("deep") == "PLACEHOLDER":
        deep: object = 1
        for _ in range(MAX_NESTING - 1):
            deep = [deep]
        data = {**data, "deep": deep}
        assert not nested_deeper_than(data)  # as given, within the limit
    with pytest.raises(ValidationError) as caught:
        Sample.model_validate(data)
    assert {error["loc"] for error in caught.value.errors()} == locs


def test_built_models_are_the_ones_model_construct_makes() -> None:
    """`built` skips pydantic's per-field work; a pydantic upgrade that changes what a
    model holds must fail here, not in a written result."""
    from rewardsmith.models import built

    detail = {"extracted": "18", "cause": "completion"}
    score = Score.received(1.0, "ok", detail)
    assert score == Score.model_construct(score=1.0, status="ok", detail=detail)
    values = {"id": "a", "reward": 0.5, "status": "ok", "components": {"m": score}}
    written = ("id", "reward", "status", "components")
    result = built(Result, {**values, "advantage": None, "steps": None}, written)
    expected = Result.model_construct(set(written), **values, advantage=None, steps=None)
    assert result == expected and result.model_fields_set == expected.model_fields_set
    assert result_json(result) == result_json(expected)
    assert result.__pydantic_extra__ is expected.__pydantic_extra__
    assert result.__pydantic_private__ is expected.__pydantic_private__
    result.steps = [0.5]  # set later: written, and only in this result's own fields
    assert "steps" in result_json(result) and "steps" not in result_json(expected)
    assert Result.model_validate(result.model_dump()) == result
    assert pickle.loads(pickle.dumps(result)) == result


class _Row(Mapping):
    """A mapping that is not a dict, as a dataset library may give."""

    def __init__(self, data: dict) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class _ListedKeys(dict):
    def keys(self) -> list:  # type: ignore[override]
        return list(super().keys())


def test_rows_that_are_not_plain_dicts_validate_as_dicts_do() -> None:
    """Red team (helper-58) on the fused validators."""
    assert Sample.model_validate(_Row({"id": 1, "completion": "x"})).id == "1"
    assert Sample.model_validate(_ListedKeys(id="a", completion="x", level=2)).metadata == {
        "level": 2
    }


def test_an_id_too_long_to_write_as_text_is_an_id_error() -> None:
    with pytest.raises(ValidationError) as caught:
        Sample.model_validate({"id": 10**5000, "completion": "x"})
    assert [error["loc"] for error in caught.value.errors()] == [("id",)]


def test_a_cyclic_or_shared_structure_is_measured_at_once() -> None:
    """Depth first: a structure that refers to itself, or shares halves at every level,
    is found too deep along one path instead of being walked level by level (2^depth)."""
    cycle: list = []
    cycle += [cycle, cycle]
    shared: list = []
    for _ in range(120):
        shared = [shared, shared]
    assert nested_deeper_than(cycle) and nested_deeper_than(shared)
    with pytest.raises(ValidationError, match="nested more than"):
        Sample.model_validate({"id": "a", "completion": "x", "metadata": {"m": cycle}})
