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
