"""`likelihood` (RLPR): the reasoning cut at the answer marker, the reference scored in place
of the policy's answer, through the judges' backends: an OpenAI-compatible server's echoed
prompt log-probabilities (the stand-in, serving a tiny causal LM) against the same numbers
computed with plain transformers, and the embedded model."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Sample
from rewardsmith.reward_models import likelihood

from .conftest import Start, free_port

pytest.importorskip("transformers")

QUESTION = "What is 2 + 2 ?"


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from .tiny_models import save_language_model

    return save_language_model(tmp_path_factory.mktemp("lm"))


def plain_logprobs(folder: Path, prompt: str, continuation: str) -> list[float]:
    """log P(each continuation token | everything before it), with plain transformers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    text = prompt + continuation
    encoded = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = encoded["input_ids"]
    with torch.inference_mode():
        rows = model(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
    return [
        float(rows[i - 1][t])
        for i, (t, (a, b)) in enumerate(zip(ids, encoded["offset_mapping"], strict=True))
        if i > 0 and b > len(prompt)
    ]


@pytest.fixture(scope="module")
def served(standin: Start, tiny_lm: Path) -> str:
    return standin("vllm", tiny_lm) + "/v1"


def test_server_echo_logprobs_match_plain_transformers(served: str, tiny_lm: Path) -> None:
    completion = "2 + 2 makes 4 .\nA: 4"
    fn = likelihood(backend="openai", base_url=served, model="tiny", marker="A:")
    score = fn(Sample(id="1", prompt=QUESTION, completion=completion, reference="4"))
    assert score.status == "ok", score.detail
    expected = plain_logprobs(tiny_lm, f"{QUESTION}\n\n2 + 2 makes 4 .\nA:", " 4")
    assert score.detail["tokens"] == len(expected)
    assert score.detail["mean_logprob"] == pytest.approx(sum(expected) / len(expected), abs=1e-5)
    assert score.score == pytest.approx(
        sum(math.exp(x) for x in expected) / len(expected), abs=1e-6
    )
    logprob = likelihood(backend="openai", base_url=served, marker="A:", mode="logprob")
    again = logprob(Sample(id="1", prompt=QUESTION, completion=completion, reference="4"))
    assert again.score == pytest.approx(score.detail["mean_logprob"])


def test_the_reasoning_is_cut_at_the_last_marker(served: str, tiny_lm: Path) -> None:
    fn = likelihood(backend="openai", base_url=served, marker="A:")
    completion = "A: maybe 3 .\nA: 5 , no"
    score = fn(Sample(id="1", prompt=QUESTION, completion=completion, reference="4"))
    expected = plain_logprobs(tiny_lm, f"{QUESTION}\n\nA: maybe 3 .\nA:", " 4")
    assert score.detail["mean_logprob"] == pytest.approx(sum(expected) / len(expected), abs=1e-5)
    assert score.detail["committed"] == "5 , no"  # never read by the reward: reported


@pytest.mark.parametrize(
    ("completion", "reference", "status", "value"),
    [
        ("four", "4", "ok", 0.0),  # no marker: no committed answer, 0 with the reason
        ("A: 4", None, "not_applicable", None),
        ("A: 4", {"x": 1}, "invalid", None),
        ("A: 4", "  ", "invalid", None),
    ],
)
def test_statuses(served: str, completion: str, reference: Any, status: str, value: Any) -> None:
    fn = likelihood(backend="openai", base_url=served, marker="A:")
    score = fn(Sample(id="1", prompt=QUESTION, completion=completion, reference=reference))
    assert score.status == status and score.score == value


def test_no_answer_is_the_lowest_reward_in_either_mode(served: str) -> None:
    no_answer = Sample(id="1", prompt=QUESTION, completion="four", reference="4")
    logprob = likelihood(backend="openai", base_url=served, marker="A:", mode="logprob")
    assert logprob(no_answer).score == -30.0  # not 0: that is the best a log-probability gets
    floored = likelihood(backend="openai", base_url=served, marker="A:", mode="logprob", floor=-2)
    score = floored(Sample(id="2", prompt=QUESTION, completion="A: 4", reference="4"))
    assert -2.0 <= score.score <= 0.0  # the random tiny LM is far below: clipped
    with pytest.raises(ValueError, match="floor"):
        likelihood(backend="openai", base_url=served, floor=0.0)


def test_reasoning_past_the_servers_context_is_charged(served: str) -> None:
    """The server refuses a prompt longer than its context (vLLM's 400); the reasoning is the
    policy's, so the sample is charged, not left out of its group."""
    long = Sample(id="1", prompt=QUESTION, completion="so " * 1500 + "A: 4", reference="4")
    score = likelihood(backend="openai", base_url=served, marker="A:")(long)
    assert score.status == "error" and "maximum context length" in score.detail["reason"]
    assert score.cause == "completion"


def test_no_server_is_an_error() -> None:
    fn = likelihood(backend="openai", base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    score = fn(Sample(id="1", prompt=QUESTION, completion="<answer>4", reference="4"))
    assert score.status == "error" and "likelihood backend" in score.detail["reason"]
    assert score.cause == "infrastructure"  # left out of its group, as with the judges


def test_the_embedded_model_prefers_the_answer_its_reasoning_reached() -> None:
    """SmolLM2-135M-Instruct through the judges' embedded backend: reasoning that reached 18
    makes " 18" more probable than reasoning that reached 24."""
    from rewardsmith.judges._local import default_local_model

    try:
        default_local_model()
    except Exception as exc:
        pytest.skip(str(exc))
    fn = likelihood(marker="A:", deadline_s=600)
    question = "Janet has 16 eggs and uses 7. She sells the rest at $2 each. How much?"
    right = fn(
        Sample(
            id="r",
            prompt=question,
            completion="16 - 7 = 9 eggs, 9 * 2 = 18.\nA: 18",
            reference="18",
        )
    )
    wrong = fn(
        Sample(
            id="w",
            prompt=question,
            completion="16 - 4 = 12 eggs, 12 * 2 = 24.\nA: 24",
            reference="18",
        )
    )
    assert right.status == wrong.status == "ok", (right.detail, wrong.detail)
    assert right.score > wrong.score


def test_a_reference_past_the_embedded_models_context_is_the_datasets() -> None:
    """The embedded model cuts the reasoning on the left to fit its context, so a long
    completion is still read; a reference that does not fit on its own is the dataset's
    fault: `invalid`, left out, not an infrastructure failure and not charged."""
    from rewardsmith.judges._local import default_local_model

    try:
        default_local_model()
    except Exception as exc:
        pytest.skip(str(exc))
    fn = likelihood(marker="A:", n_ctx=64, deadline_s=600)
    long_reasoning = fn(
        Sample(id="c", prompt=QUESTION, completion="so " * 500 + "A: 4", reference="4")
    )
    assert long_reasoning.status == "ok", long_reasoning.detail
    long_reference = fn(Sample(id="r", prompt=QUESTION, completion="A: 4", reference="4 " * 200))
    assert long_reference.status == "invalid", long_reference.detail
    assert long_reference.cause == "dataset"
    assert "no room in the context" in long_reference.detail["reason"]
    # a reference that fits with a token to spare: the completion's whitespace after the
    # marker (two more tokens as U+3000 or U+0085) must not make it the dataset's (rt: helper-38)
    near_full = ",".join(["ab"] * 31)
    for gap in (" ", "\u3000", "\x85", "\n"):
        score = fn(Sample(id="g", prompt="Q?", completion=f"r A:{gap}17", reference=near_full))
        assert score.status == "ok", (repr(gap), score.detail)


def test_an_image_prompt_is_not_scored_without_it(served: str) -> None:
    """The model reads text only: a prompt with an image is an infrastructure error."""
    image = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    prompt = [{"role": "user", "content": [image, {"type": "text", "text": "What is it ?"}]}]
    fn = likelihood(backend="openai", base_url=served, marker="A:")
    score = fn(Sample(id="i", prompt=prompt, completion="A: a cat", reference="a cat"))
    assert score.status == "error" and score.cause == "infrastructure", score
