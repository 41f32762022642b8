"""`process`: steps, aggregation checked by hand, a token-classification PRM against the
Qwen2.5-Math-PRM recipe written out with plain transformers, vLLM STEP pooling through the
stand-in server, the generative PRM through the judge backends, ReNorm fed end to end."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine, Sample
from rewardsmith.judges import _judge
from rewardsmith.judges._backends import Backend, BackendConfig, JudgeReply, JudgeRequest
from rewardsmith.reward_models import process
from rewardsmith.reward_models._process import aggregate, split_steps

PROBLEM = "Natalia sold clips to 48 of her friends in April , and then she sold half as many ."
SOLUTION = "Step 1 : compute the total .\n\nStep 2 : divide by two .\n\nSo the answer is 72 ."


@pytest.mark.parametrize(
    ("text", "separator", "steps"),
    [
        (
            SOLUTION,
            "\n\n",
            ["Step 1 : compute the total .", "Step 2 : divide by two .", "So the answer is 72 ."],
        ),
        ("a\n\n\n\n  \n\nb\n\n", "\n\n", ["a", "b"]),  # blank pieces are no steps
        ("one line only", "\n\n", ["one line only"]),
        ("x\ny\nz", "\n", ["x", "y", "z"]),
        ("", "\n\n", []),
        ("   \n\n  ", "\n\n", []),
    ],
)
def test_split_steps(text: str, separator: str, steps: list[str]) -> None:
    assert split_steps(text, separator) == steps


@pytest.mark.parametrize(
    ("steps", "how", "expected"),
    [
        ([0.9, 0.5, 0.8], "min", 0.5),
        ([0.9, 0.5, 0.8], "last", 0.8),
        ([0.9, 0.5, 0.8], "prod", 0.36),  # 0.9 x 0.5 x 0.8
        ([0.9, 0.5, 0.8], "mean", 2.2 / 3),
        ([0.25], "min", 0.25),
        ([0.25], "prod", 0.25),
        ([1.0, 1.0, 0.0], "prod", 0.0),
        ([0.1, 0.2, 0.3, 0.4], "mean", 0.25),
    ],
)
def test_aggregation_by_hand(steps: list[float], how: Any, expected: float) -> None:
    assert aggregate(steps, how) == pytest.approx(expected)


def qwen_recipe(folder: Path, question: str, steps: list[str]) -> list[float]:
    """Qwen2.5-Math-PRM's model-card recipe, written out: the steps joined by ``<extra_0>``
    as the assistant turn, the chat template, one forward pass, softmax, label 1 at each tag."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForTokenClassification.from_pretrained(folder).eval()
    messages = [
        {"role": "user", "content": question},
        {"role": "assistant", "content": "<extra_0>".join(steps) + "<extra_0>"},
    ]
    text = tok.apply_chat_template(messages, tokenize=False)
    ids = tok(text, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        probs = model(input_ids=ids).logits[0].softmax(-1)
    mask = ids[0] == tok.convert_tokens_to_ids("<extra_0>")
    return [float(p) for p in probs[mask][:, 1]]


@pytest.fixture(scope="module")
def prm(tiny_prm: Path) -> Any:
    pytest.importorskip("transformers")
    return process(model=str(tiny_prm), aggregate="min")


def sample(completion: str, **extra: Any) -> Sample:
    return Sample(id="s", prompt=PROBLEM, completion=completion, **extra)


def test_prm_steps_follow_the_qwen_recipe(prm: Any, tiny_prm: Path) -> None:
    score = prm(sample(SOLUTION))
    assert score.status == "ok", score.detail
    expected = qwen_recipe(tiny_prm, PROBLEM, split_steps(SOLUTION, "\n\n"))
    assert score.detail["steps"] == pytest.approx(expected, abs=1e-5)
    assert score.score == pytest.approx(min(expected), abs=1e-5)
    assert score.detail["aggregate"] == "min"


def test_step_tags_written_by_the_policy_are_no_steps(prm: Any) -> None:
    forged = "Step 1 : compute<extra_0><extra_0> the total .\n\nSo the answer is 72 ."
    score = prm(sample(forged))
    assert len(score.detail["steps"]) == 2
    assert score.detail["special_tokens_removed"] == 2


def test_no_step_is_zero_not_invalid(prm: Any) -> None:
    for empty in ("", "  \n\n \n\n"):
        score = prm(sample(empty))
        assert score.status == "ok" and score.score == 0.0 and score.detail["steps"] == []
        assert "no step" in score.detail["reason"]


def test_steps_past_max_length_score_zero(tiny_prm: Path) -> None:
    short = process(model=str(tiny_prm), max_length=120)
    long = "\n\n".join(f"Step {i} : compute the total ." for i in range(30))
    score = short(sample(long))
    assert score.status == "ok" and score.score == 0.0
    assert "did not fit in max_length=120" in score.detail["reason"]
    assert score.detail["steps"] == [] and score.detail["truncated"]  # no model asked


def test_aggregations_read_the_same_steps(tiny_prm: Path) -> None:
    steps = None
    for how in ("min", "last", "prod", "mean"):
        score = process(model=str(tiny_prm), aggregate=how)(sample(SOLUTION))
        steps = steps or score.detail["steps"]
        assert score.detail["steps"] == steps
        assert score.score == pytest.approx(aggregate(steps, how))  # type: ignore[arg-type]


def test_a_step_tag_of_several_tokens_is_refused(tiny_prm: Path) -> None:
    with pytest.raises(ValueError, match="one token"):
        process(model=str(tiny_prm), step_tag="Step by step")


def test_vllm_step_pooling_through_the_standin(standin: Any, tiny_prm: Path, prm: Any) -> None:
    base = standin("vllm", tiny_prm)
    remote = process(backend="vllm", base_url=base, tokenizer=str(tiny_prm))
    score = remote(sample(SOLUTION))
    assert score.status == "ok", score.detail
    assert score.detail["steps"] == pytest.approx(prm(sample(SOLUTION)).detail["steps"], abs=1e-5)


# -- the generative PRM: a judge asked about each step -------------------------------------------


class StepScript(Backend):
    """A judge that says YES to steps without "wrong" (P(YES) 0.9), else NO (P(YES) 0.2)."""

    name = "scripted"

    def __init__(self) -> None:
        super().__init__(BackendConfig())
        self.requests: list[JudgeRequest] = []

    async def _complete(self, request: JudgeRequest) -> JudgeReply:
        self.requests.append(request)
        step = request.messages[-1][1].split("<step>")[1]
        yes = "wrong" not in step
        logprobs = {"YES": math.log(0.9 if yes else 0.2), "NO": math.log(0.1 if yes else 0.8)}
        return JudgeReply(
            text="YES" if yes else "NO", top_logprobs=[logprobs], tokens=["YES" if yes else "NO"]
        )


def test_generative_prm_asks_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = StepScript()
    monkeypatch.setattr(_judge, "make_backend", lambda config, cache_path: backend)
    fn = process(backend="judge", judge={"cache": False}, aggregate="prod")
    text = "Step 1 : fine .\n\nStep 2 : wrong <b>.\n\nSo 72 ."
    score = fn(sample(text))
    assert score.status == "ok", score.detail
    assert score.detail["steps"] == pytest.approx([0.9, 0.2, 0.9])
    assert score.score == pytest.approx(0.9 * 0.2 * 0.9)
    asked = [r.messages[-1][1] for r in backend.requests]
    assert len(asked) == 3
    third = next(a for a in asked if "So 72" in a.split("<step>")[1])
    assert "Step 2 : wrong &lt;b&gt;." in third.split("<steps_before>")[1]  # escaped, in order
    assert PROBLEM in asked[0]


def test_generative_prm_options_are_the_judges() -> None:
    with pytest.raises(ValueError, match="unknown key 'modle'"):
        process(backend="judge", judge={"modle": "x"})
    with pytest.raises(ValueError, match="only for backend: judge"):
        process(model="x", judge={"backend": "openai"})


def test_generative_prm_with_the_embedded_model() -> None:
    """The real embedded judge (SmolLM2-135M): plumbing, not quality."""
    from rewardsmith.judges._backends import BackendError
    from rewardsmith.judges._local import default_local_model

    try:
        default_local_model()
    except BackendError as exc:
        pytest.skip(str(exc))
    local = {"backend": "local", "cache": False, "deadline_s": 600}  # the first call loads
    fn = process(backend="judge", judge=local, aggregate="mean")
    score = fn(Sample(id="x", prompt="What is 2 + 2?", completion="2 + 2 = 4.\n\nThe answer is 4."))
    assert score.status == "ok", score.detail
    assert len(score.detail["steps"]) == 2
    assert all(0.0 <= p <= 1.0 for p in score.detail["steps"])


# -- ReNorm fed by the process reward, end to end -------------------------------------------------


def test_renorm_reads_the_prm_steps(tiny_prm: Path) -> None:
    spec = {
        "rewards": {
            "steps": {"type": "process", "model": str(tiny_prm)},
            "outcome": {"type": "math"},
        },
        "combine": {"type": "renorm", "process": "steps", "outcome": "outcome", "beta": 1.0},
        "timeout_s": 60,
    }
    batch = [
        sample(SOLUTION, reference="72").model_copy(update={"id": "right"}),
        sample(SOLUTION.replace("72", "71"), reference="72").model_copy(update={"id": "wrong"}),
    ]
    with Engine(spec, workers=1) as engine:
        right, wrong = engine.score(batch)
    for result, r_o in ((right, 1.0), (wrong, 0.0)):
        process_steps = result.components["steps"].detail["steps"]
        assert len(process_steps) == 3
        expected = [p + r_o - 1.0 for p in process_steps[:-1]] + [r_o]
        assert result.steps == pytest.approx(expected)
        assert result.reward == pytest.approx((min(expected[:-1]) + r_o) / 2)
    assert max(wrong.steps) <= 0.0 <= min(right.steps)  # type: ignore[arg-type]


def test_a_deadline_leaves_no_step_coroutine_unawaited() -> None:
    """The generative PRM's step calls, cut by the deadline, are cancelled or closed: none is
    left never awaited (red team 15, hole 4)."""
    import asyncio
    import gc
    import warnings

    from rewardsmith.judges._backends import run_sync
    from rewardsmith.judges._judge import gather_bounded

    async def slow() -> None:
        await asyncio.sleep(0.2)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TimeoutError):
            run_sync(gather_bounded([slow() for _ in range(20)], 2), 0.05)
        time.sleep(0.3)
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
