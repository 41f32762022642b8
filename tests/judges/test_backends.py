"""The two backends for real: the openai backend against a llama.cpp server on loopback (through
a counting proxy), the local backend in-process; the cache; retries; deadlines."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from rewardsmith import Sample, score
from rewardsmith.judges import judge_group, rubric
from rewardsmith.judges._backends import _OVERFLOW, BackendConfig, JudgeRequest, OpenAIBackend

from .conftest import SLOW_S, Proxy

SLOW = {"request_timeout_s": SLOW_S, "deadline_s": SLOW_S}
"""Tests against the real llama.cpp server check what it answers, not how fast."""

RUBRIC = [
    {
        "criterion": "The response says that Paris is the capital of France.",
        "points": 5,
        "tags": ["axis:accuracy"],
    },
    {"criterion": "The response is polite.", "points": 2, "tags": ["axis:communication"]},
    {"criterion": "The response insults the user.", "points": -4},
]
SAMPLES = [
    Sample(
        id="a",
        prompt="What is the capital of France?",
        completion="The capital of France is Paris.",
    ),
    Sample(id="b", prompt="What is the capital of France?", completion="Lyon, obviously."),
]


def _check_verdicts(result_score) -> None:
    assert result_score.status == "ok", result_score.detail
    rows = result_score.detail["criteria"]
    assert len(rows) == len(RUBRIC)
    for row in rows:
        assert isinstance(row["met"], bool)
        assert row["p_met"] is not None and 0.0 <= row["p_met"] <= 1.0


def test_openai_backend_against_llama_server(proxy: Proxy, tmp_path: Path) -> None:
    fn = rubric(
        rubric=RUBRIC,
        aggregate="healthbench",
        backend="openai",
        base_url=proxy.url,
        **SLOW,
        cache=str(tmp_path / "c.sqlite3"),
    )
    result = fn(SAMPLES[0])
    _check_verdicts(result)
    assert proxy.calls >= len(RUBRIC)
    assert result.detail["usage"]["prompt_tokens"] > 0
    assert "axis:accuracy" in result.detail["tag_scores"]


def test_local_backend_in_process(runtime: str) -> None:
    fn = rubric(
        rubric=RUBRIC,
        aggregate="explicit",
        backend="local",
        runtime=runtime,
        cache=False,
        n_ctx=1024,
        deadline_s=SLOW_S,
    )
    result = fn(SAMPLES[0])
    _check_verdicts(result)
    assert result.detail["usage"]["calls"] >= len(RUBRIC)


def test_cache_second_run_makes_no_backend_call(proxy: Proxy, tmp_path: Path) -> None:
    """First run in this process, second through the engine's worker processes: the second
    reaches the server zero times (counted by the proxy in front of it)."""
    cache = str(tmp_path / "judge.sqlite3")
    params = {
        "rubric": RUBRIC,
        "aggregate": "healthbench",
        "backend": "openai",
        "base_url": proxy.url,
        "cache": cache,
        **SLOW,
    }
    first = [rubric(**params)(s) for s in SAMPLES]
    assert all(r.status == "ok" for r in first)
    made = proxy.calls
    assert made >= 2 * len(RUBRIC)
    spec = {
        "rewards": {"judged": {"type": "rewardsmith.judges:rubric", **params}},
        "timeout_s": SLOW_S + 60,
    }
    results = score(SAMPLES, spec, workers=2)
    assert proxy.calls == made, "the rerun reached the server"
    for before, after in zip(first, results, strict=True):
        component = after.components["judged"]
        assert component.status == "ok"
        assert component.score == before.score
        assert all(row["cached"] for row in component.detail["criteria"])
        assert component.detail["usage"]["calls"] == 0
        assert component.detail["usage"]["cache_hits"] == len(RUBRIC)


def test_transport_retries_then_success(proxy: Proxy, tmp_path: Path) -> None:
    proxy.fail_with.extend([503, 429])
    backend = OpenAIBackend(
        BackendConfig(kind="openai", base_url=proxy.url, backoff_s=0.01, request_timeout_s=SLOW_S)
    )
    request = JudgeRequest(messages=(("user", "Say YES."),), max_tokens=2)

    async def go():
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    reply = asyncio.run(go())
    assert reply.text
    assert backend.retries == 2 and proxy.calls == 3


def test_transport_failure_is_error_not_zero(proxy: Proxy) -> None:
    proxy.fail_with.extend([503] * 10)
    fn = rubric(rubric=RUBRIC[:1], backend="openai", base_url=proxy.url, cache=False, max_retries=2)
    result = fn(SAMPLES[0])
    assert result.status == "error" and result.score is None
    assert proxy.calls == 3  # one try + two retries, then it stops


def test_client_error_is_not_retried(proxy: Proxy) -> None:
    proxy.fail_with.append(400)
    fn = rubric(rubric=RUBRIC[:1], backend="openai", base_url=proxy.url, cache=False)
    result = fn(SAMPLES[0])
    assert result.status == "error" and "400" in result.detail["reason"]
    assert result.cause == "infrastructure"  # a refusal that is not about the context
    assert proxy.calls == 1


@pytest.mark.parametrize(
    ("refusal", "overflow"),
    [
        (
            "This model's maximum context length is 2048 tokens. However, you requested 4235 "
            "tokens (4231 in the messages, 4 in the completion).",
            True,
        ),  # llama-cpp-python, vLLM
        ('{"code": "context_length_exceeded"}', True),  # OpenAI
        (
            "The decoder prompt (length 4381) is longer than the maximum model length of 2048.",
            True,
        ),  # vLLM V1
        ("the request exceeds the available context size, try increasing it", True),  # llama.cpp
        ('"type": "exceed_context_size_error"', True),  # llama.cpp's error type
        (
            "The input (5000 tokens) is longer than the model's context length (4096 tokens).",
            True,
        ),  # SGLang
        ("model 'judge' not found", False),
        ("response_format json_schema is not supported", False),
        ("'temperature' must be between 0 and 2", False),
    ],
)
def test_context_refusals_are_told_apart(refusal: str, overflow: bool) -> None:
    assert bool(_OVERFLOW.search(refusal)) is overflow


def test_completion_past_the_servers_context_is_charged(proxy: Proxy) -> None:
    """llama.cpp's server refuses a request longer than its context (400,
    `context_length_exceeded`); the completion made it long, so the sample is charged (it
    must not escape its verdict by being left out of its group), and nothing is retried."""
    fn = rubric(rubric=RUBRIC[:1], backend="openai", base_url=proxy.url, cache=False, **SLOW)
    result = fn(SAMPLES[0].model_copy(update={"completion": "Paris is lovely. " * 800}))
    assert result.status == "error" and "context" in result.detail["reason"]
    assert result.cause == "completion"
    assert proxy.calls == 1


def test_unparseable_reply_retried_then_charged(proxy: Proxy) -> None:
    proxy.garbage = 100
    fn = rubric(
        rubric=RUBRIC[:1],
        backend="openai",
        base_url=proxy.url,
        cache=False,
        parse_retries=2,
        structured_output="json_object",
        **SLOW,
    )
    result = fn(SAMPLES[0])
    assert result.status == "error" and result.score is None and result.cause == "completion"
    assert proxy.calls == 3  # bounded: 1 + parse_retries
    assert result.detail["criteria"][0]["replies"] == ["Hmm, it depends :)"] * 3


def test_unparseable_then_structured_retry_recovers(proxy: Proxy) -> None:
    """The retry is constrained by the verdict's JSON schema (auto: `json_schema` first, the
    llama.cpp server refuses it, the backend switches to `json_object` + schema)."""
    proxy.garbage = 1
    fn = rubric(
        rubric=RUBRIC[:1],
        backend="openai",
        base_url=proxy.url,
        cache=False,
        parse_retries=2,
        **SLOW,
    )
    result = fn(SAMPLES[0])
    assert result.status == "ok", result.detail
    assert isinstance(result.detail["criteria"][0]["met"], bool)
    assert proxy.calls == 3  # garbage, refused json_schema, json_object + schema: parsed


def test_bounded_concurrency(proxy: Proxy) -> None:
    proxy.fail_with.extend([400] * 0)
    criteria = [
        {"criterion": f"The response mentions the number {n}.", "weight": 1} for n in range(6)
    ]
    fn = rubric(
        rubric=criteria,
        backend="openai",
        base_url=proxy.url,
        cache=False,
        max_concurrency=2,
        **SLOW,
    )
    result = fn(SAMPLES[0])
    assert result.status == "ok" or result.cause == "completion"
    assert proxy.calls >= 6
    assert proxy.max_inflight <= 2


def test_deadline_gives_timeout_status(proxy: Proxy) -> None:
    proxy.delay_s = 2.0
    fn = rubric(
        rubric=RUBRIC[:1], backend="openai", base_url=proxy.url, cache=False, deadline_s=0.3
    )
    result = fn(SAMPLES[0])
    assert result.status == "timeout" and result.score is None


def test_structured_output_group_ranking_on_server(proxy: Proxy) -> None:
    group = [
        {"id": "a", "completion": "Paris."},
        {"id": "b", "completion": "Lyon."},
        {"id": "c", "completion": "Marseille."},
    ]
    fn = judge_group(
        backend="openai",
        base_url=proxy.url,
        cache=False,
        structured=True,
        model="SmolLM2-135M-Instruct.Q4_1.gguf",
        **SLOW,
    )
    sample = Sample(
        id="b",
        prompt="Capital of France?",
        completion="Lyon.",
        metadata={"group_completions": group},
    )
    result = fn(sample)
    assert result.status == "ok", result.detail
    assert sorted(result.detail["ranking"]) == ["a", "b", "c"]
    assert result.score in (0.0, 0.5, 1.0)


@pytest.mark.parametrize("backend", ["openai", "local"])
def test_guard_makes_no_call(proxy: Proxy, backend: str, model_path: str) -> None:
    fn = rubric(rubric=RUBRIC, backend=backend, base_url=proxy.url, cache=False)
    result = fn(Sample(id="x", prompt="Q?", completion="Let's solve this problem step by step."))
    assert result.status == "ok" and result.score == 0.0
    assert result.detail["guard"] == "generic_opener"
    assert proxy.calls == 0


def test_local_runtime_holds_the_reply_to_a_schema(runtime: str) -> None:
    """Sampled (temperature 0.7), the reply still follows the ranking's schema (llama.cpp: as
    JSON; transformers: its bare form, "R2, R1, R3"), and the same seed gives the same reply."""
    from rewardsmith.judges._backends import run_sync
    from rewardsmith.judges._local import LocalBackend

    schema = {
        "type": "object",
        "properties": {
            "ranking": {
                "type": "array",
                "items": {"type": "string", "enum": ["R1", "R2", "R3"]},
                "minItems": 3,
                "maxItems": 3,
            }
        },
        "required": ["ranking"],
    }
    backend = LocalBackend(BackendConfig(runtime=runtime, n_ctx=1024))
    request = JudgeRequest(
        messages=(("user", "Rank R1 (Paris), R2 (Lyon), R3 (Nice) as the capital of France."),),
        max_tokens=40,
        temperature=0.7,
        seed=7,
        schema=schema,
    )
    first = run_sync(backend.complete(request), SLOW_S)
    again = run_sync(backend.complete(request), SLOW_S)
    json_form = r'\{ ?"ranking" ?: ?\[ ?"R\d", ?"R\d", ?"R\d" ?\] ?\}'
    form = json_form if runtime == "llama_cpp" else r"R\d, ?R\d, ?R\d"
    assert re.fullmatch(form, first.text.strip()), first.text
    assert again.text == first.text


def test_local_prompt_longer_than_the_context_is_an_error(runtime: str) -> None:
    fn = rubric(rubric=RUBRIC[:1], runtime=runtime, cache=False, n_ctx=256)
    result = fn(SAMPLES[0].model_copy(update={"completion": "Paris is lovely. " * 100}))
    assert result.status == "error" and result.score is None
    assert "context" in result.detail["reason"] and result.cause == "completion"
