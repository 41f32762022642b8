"""The data contract."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rewardsmith import Sample, Score


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


@pytest.mark.parametrize(
    "part",
    [
        {"type": "text"},
        {"type": "image_url"},
        {"type": "image_url", "image_url": "https://x/y.png"},
        OVERSIZED,
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


def test_unknown_part_types_are_kept_and_ignored() -> None:
    content = [
        {"type": "input_audio", "input_audio": {"data": "..."}},
        {"type": "text", "text": "t"},
    ]
    sample = Sample.model_validate(
        {"id": "u", "completion": [{"role": "assistant", "content": content}]}
    )
    assert sample.text == "t" and sample.final_turn.images == []  # type: ignore[union-attr]
