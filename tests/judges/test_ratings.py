"""Labels and ratings that span several tokens: SmolLM2's tokenizer writes "10" as "1", "0"
and "YES" as "Y", "ES". The G-Eval expectation and P(met) must follow the tokens the judge
generated, and say so when the logprobs cannot tell two ratings apart."""

from __future__ import annotations

import math

import pytest

from rewardsmith import Sample
from rewardsmith.judges import judge_pointwise, rubric
from rewardsmith.judges._backends import JudgeReply, JudgeRequest
from rewardsmith.judges._prompts import label_distribution, rating_messages

from .conftest import ON_LOCAL_MODEL, SLOW_S, ScriptedBackend

SAMPLE = Sample(id="s", prompt="Rate my haiku.", completion="Autumn moonlight / a worm digs")
P = math.log
TEN = [str(n) for n in range(1, 11)]

# (reply tokens, top logprobs per position, labels, expected resolved probs, unresolved)
CASES = [
    pytest.param(
        ["7"],
        [{"7": P(0.5), "8": P(0.3), "6": P(0.2)}],
        [str(n) for n in range(1, 6)] + ["6", "7", "8"],
        {"6": 0.2, "7": 0.5, "8": 0.3},
        {},
        id="single tokens",
    ),
    pytest.param(
        ["1", "0"],
        [{"1": P(0.9), "9": P(0.1)}, {"0": P(0.95), "<|im_end|>": P(0.05)}],
        TEN,
        {"10": 0.9 * 0.95, "1": 0.9 * 0.05, "9": 0.1},
        {},
        id="10 generated as 1,0",
    ),
    pytest.param(
        ["1", ""],
        [{"1": P(0.8), "5": P(0.2)}, {"<|im_end|>": P(0.7), "0": P(0.3)}],
        TEN,
        {"1": 0.8 * 0.7, "10": 0.8 * 0.3, "5": 0.2},
        {},
        id="1 generated, end-of-turn position seen",
    ),
    pytest.param(
        ["7"],
        [{"7": P(0.6), "1": P(0.3), "8": P(0.1)}],
        TEN,
        {"7": 0.6, "8": 0.1},
        {("1", "10"): 0.3},
        id="1 not generated: 1 or 10",
    ),
    pytest.param(
        ["1"],
        [{"1": P(0.9), "9": P(0.1)}],
        TEN,
        {"9": 0.1},
        {("1", "10"): 0.9},
        id="1 generated, nothing after it",
    ),
    pytest.param(
        [" 10", "/", "10"],
        [{" 10": P(0.6), " 9": P(0.4)}, {"/": 0.0}, {"10": 0.0}],
        TEN,
        {"10": 0.6, "9": 0.4},
        {},
        id="one token per number",
    ),
    pytest.param(
        ["Y", "ES"],
        [{"Y": P(0.6), " NO": P(0.3), "N": P(0.1)}, {"ES": P(0.99), "ESTERDAY": P(0.01)}],
        ["yes", "no"],
        {"yes": 0.6 * 0.99, "no": 0.4},
        {},
        id="YES as Y,ES",
    ),
    pytest.param(
        ["NO"],
        [{"NO": P(0.7), "Yes": P(0.2), "Maybe": P(0.1)}],
        ["yes", "no"],
        {"yes": 0.2, "no": 0.7},
        {},
        id="non-labels left out",
    ),
]


@pytest.mark.parametrize(("tokens", "top", "labels", "probs", "unresolved"), CASES)
def test_label_distribution(tokens, top, labels, probs, unresolved) -> None:
    found = label_distribution(tokens, top, labels, "".join(tokens))
    assert found is not None
    total = sum(probs.values()) + sum(unresolved.values())
    for label in labels:
        assert found.probs[label] == pytest.approx(probs.get(label, 0.0) / total)
    assert {g: pytest.approx(p / total) for g, p in found.unresolved} == unresolved


def test_verdict_inside_json_is_read_where_it_was_generated() -> None:
    tokens = ['{"', "ver", "dict", '":', ' "', "Y", "ES", '"}']
    top = [{t: 0.0} for t in tokens]
    top[5] = {"Y": P(0.7), "NO": P(0.3)}
    text = "".join(tokens)
    found = label_distribution(tokens, top, ["yes", "no"], text, text.index("YES"))
    assert found is not None and found.probs["yes"] == pytest.approx(0.7)


class ServerLike(ScriptedBackend):
    """A scripted backend that, like an OpenAI-compatible server, cannot score choices."""


class LocalLike(ScriptedBackend):
    """A scripted backend that scores choices, like the embedded model."""

    supports_choices = True


def _install(monkeypatch, backend: ScriptedBackend) -> ScriptedBackend:
    from rewardsmith.judges import _judge

    monkeypatch.setattr(_judge, "make_backend", lambda config, cache_path: backend)
    return backend


def test_geval_reads_a_ten_split_into_two_tokens(monkeypatch) -> None:
    """On a 1-10 scale, a reply "10" generated as "1", "0": today's reading at the "1" gave
    an expectation of 1.8 (score 0.09) for a confident 10."""
    reply = JudgeReply(
        text="10",
        tokens=["1", "0"],
        top_logprobs=[{"1": P(0.9), "9": P(0.1)}, {"0": P(0.95), "<|im_end|>": P(0.05)}],
    )
    _install(monkeypatch, ServerLike(lambda request: reply))
    result = judge_pointwise(scale_max=10, cache=False)(SAMPLE)
    expected = 10 * 0.9 * 0.95 + 1 * 0.9 * 0.05 + 9 * 0.1
    assert result.detail["rating"] == 10
    assert result.detail["expected_rating"] == pytest.approx(expected)
    assert result.detail["expectation_from"] == "logprobs"
    assert result.score == pytest.approx((expected - 1) / 9)


def test_server_logprobs_that_cannot_tell_1_from_10(monkeypatch) -> None:
    """The judge said 7 and put 30% on "1", which starts both 1 and 10: no expectation is
    invented; the rating scores, and the detail says why (and the bounds)."""
    reply = JudgeReply(
        text="7", tokens=["7"], top_logprobs=[{"7": P(0.6), "1": P(0.3), "8": P(0.1)}]
    )
    _install(monkeypatch, ServerLike(lambda request: reply))
    result = judge_pointwise(scale_max=10, cache=False)(SAMPLE)
    assert result.detail["expected_rating"] is None
    assert result.detail["expected_rating_bounds"] == pytest.approx([5.3, 8.0])
    assert "1/10" in result.detail["expectation_note"]
    assert result.score == pytest.approx((7 - 1) / 9)


def test_server_logprobs_with_negligible_ambiguity(monkeypatch) -> None:
    reply = JudgeReply(
        text="7", tokens=["7"], top_logprobs=[{"7": P(0.898), "8": P(0.1), "1": P(0.002)}]
    )
    _install(monkeypatch, ServerLike(lambda request: reply))
    result = judge_pointwise(scale_max=10, cache=False)(SAMPLE)
    low, high = result.detail["expected_rating_bounds"]
    assert result.detail["expected_rating"] == pytest.approx((low + high) / 2)


def test_local_model_scores_every_rating_when_tokens_cannot_tell(monkeypatch) -> None:
    exact = {str(n): P(0.01) for n in range(1, 11)} | {"7": P(0.6), "10": P(0.31)}

    def script(request: JudgeRequest) -> JudgeReply:
        if request.choices:
            assert request.choices == tuple(TEN)
            return JudgeReply(text="", choice_logprobs={c: exact[c] for c in request.choices})
        return JudgeReply(text="7", tokens=["7"], top_logprobs=[{"7": P(0.6), "1": P(0.4)}])

    backend = _install(monkeypatch, LocalLike(script))
    result = judge_pointwise(scale_max=10, cache=False)(SAMPLE)
    weights = {int(k): math.exp(v) for k, v in exact.items()}
    expected = sum(k * w for k, w in weights.items()) / sum(weights.values())
    assert result.detail["expectation_from"] == "choices"
    assert result.detail["expected_rating"] == pytest.approx(expected)
    assert [bool(r.choices) for r in backend.requests] == [False, True]


def test_p_met_of_a_yes_split_into_two_tokens(monkeypatch) -> None:
    """SmolLM2 writes "YES" as "Y", "ES": today P(met) read no label at "Y", fell back to
    the first position's "NO" and gave P(met) = 0 for a confident YES."""
    reply = JudgeReply(
        text="YES",
        tokens=["Y", "ES"],
        top_logprobs=[{"Y": P(0.8), "NO": P(0.2)}, {"ES": P(1.0)}],
    )
    _install(monkeypatch, ServerLike(lambda request: reply))
    result = rubric(rubric=["Is a haiku."], cache=False, soft=True)(SAMPLE)
    row = result.detail["criteria"][0]
    assert row["met"] is True
    assert row["p_met"] == pytest.approx(0.8)
    assert result.score == pytest.approx(0.8)


# -- the real embedded model -----------------------------------------------------------------------


def test_smollm2_splits_digits_and_yes(model_path: str) -> None:
    from transformers import AutoTokenizer

    from rewardsmith.judges._transformers import converted_model

    tokenizer = AutoTokenizer.from_pretrained(converted_model(model_path))
    assert [tokenizer.decode([t]) for t in tokenizer.encode("10")] == ["1", "0"]
    assert [tokenizer.decode([t]) for t in tokenizer.encode("YES")] == ["Y", "ES"]


def test_choices_agree_with_generated_logprobs(runtime: str) -> None:
    """On a 1-5 scale (one token per rating) the expectation read from the generated reply's
    logprobs and the one from scoring each rating exactly agree: the same model, two ways."""
    from rewardsmith.judges._backends import BackendConfig, run_sync
    from rewardsmith.judges._local import LocalBackend

    backend = LocalBackend(BackendConfig(runtime=runtime, n_ctx=1024))
    messages = rating_messages("", SAMPLE.text, "Rate the poem.", 1, 5)
    labels = tuple(str(n) for n in range(1, 6))

    async def both():
        reply = await backend.complete(JudgeRequest(messages=messages, top_logprobs=20))
        scored = await backend.complete(JudgeRequest(messages=messages, choices=labels))
        return reply, scored

    reply, scored = run_sync(both(), SLOW_S)
    # the reply's first word, whatever follows it ("1. The poem is...")
    distribution = label_distribution(reply.tokens, reply.top_logprobs, labels, reply.text)
    assert distribution is not None and not distribution.unresolved, reply.text
    weights = {int(k): math.exp(v) for k, v in scored.choice_logprobs.items()}
    exact = sum(k * w for k, w in weights.items()) / sum(weights.values())
    assert distribution.expectation() == pytest.approx(exact, abs=0.15)


def test_geval_on_a_ten_point_scale_with_the_local_model(runtime: str) -> None:
    result = judge_pointwise(scale_max=10, runtime=runtime, **ON_LOCAL_MODEL)(SAMPLE)
    assert result.status == "ok" or result.cause == "completion", result.detail
    if result.status == "ok":
        assert result.detail["expectation_from"] in ("logprobs", "choices")
        assert 1.0 <= result.detail["expected_rating"] <= 10.0


def test_the_two_runtimes_agree(model_path: str) -> None:
    """The same prompt through transformers (float32 from the dequantized file) and llama.cpp
    (the quantized file): the same first token and the same top logprobs, within 0.25 nats."""
    pytest.importorskip("llama_cpp")
    from rewardsmith.judges._backends import BackendConfig, run_sync
    from rewardsmith.judges._local import LocalBackend

    messages = rating_messages("", SAMPLE.text, "Rate the poem.", 1, 5)
    request = JudgeRequest(messages=messages, max_tokens=1, top_logprobs=5)
    replies = {
        runtime: run_sync(
            LocalBackend(BackendConfig(runtime=runtime, n_ctx=1024)).complete(request), SLOW_S
        )
        for runtime in ("transformers", "llama_cpp")
    }
    ours, theirs = replies["transformers"], replies["llama_cpp"]
    assert ours.tokens[:1] == theirs.tokens[:1]
    shared = set(ours.top_logprobs[0]) & set(theirs.top_logprobs[0])
    assert len(shared) >= 4
    for token in shared:  # llama.cpp's CPU kernels quantize activations to 8 bits, and which
        # kernel runs depends on the CPU: the largest gap was 0.12 nats on one host, 0.17 on an
        # AMD EPYC with AVX-512; a wrong template or dequantization is off by whole nats
        assert ours.top_logprobs[0][token] == pytest.approx(theirs.top_logprobs[0][token], abs=0.25)
