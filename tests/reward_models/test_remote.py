"""`reward_model` against reward-model servers: the tiny model served behind each protocol by a
real server process on loopback (tests/reward_models/standin_server.py, a STAND-IN for vLLM,
SGLang and OpenRLHF, which cannot run here), in their upstream formats.

The formats, as upstream documents them:

vLLM ``/classify`` (docs "Classification API"; ``vllm/entrypoints/pooling/classify``)::

    request  {"model": "...", "input": ["text", ...] | [[token ids], ...], "use_activation": bool}
    response {"id": "classify-...", "object": "list", "created": 1745383213, "model": "...",
              "data": [{"index": 0, "label": "Default", "probs": [0.5659, 0.4340],
                        "num_classes": 2}],
              "usage": {"prompt_tokens": 10, "total_tokens": 10, "completion_tokens": 0}}

vLLM ``/pooling`` (``vllm/entrypoints/pooling/pooling/protocol.py``)::

    PoolingResponseData: {"index": int, "object": "pooling",
                          "data": list[list[float]] | list[float] | str}

SGLang ``/classify`` (native API docs, "reward model")::

    data = {"model": "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2", "text": prompts}
    responses = requests.post(url, json=data).json()
    for response in responses: print(f"reward: {response['embedding'][0]}")
    # EmbeddingReqInput: "The token ids for text; one can either specify text or input_ids."

OpenRLHF ``/get_reward`` (``openrlhf/cli/serve_rm.py``)::

    queries = data.get("query"); prompts = data.get("prompts")
    result = {"rewards": rewards, "scores": rewards, "extra_logs": {"dummy_scores": rewards}}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine, Sample
from rewardsmith.reward_models import reward_model
from rewardsmith.reward_models._remote import RemoteInput, Server

from .conftest import Start, free_port

pytest.importorskip("transformers")
pytest.importorskip("uvicorn")
pytestmark = pytest.mark.filterwarnings("ignore:.*BOS token:UserWarning")

SAMPLES = [
    Sample(id="a", prompt="What is 2 + 2 ?", completion="The answer is 4 ."),
    Sample(id="b", prompt="What is 2 + 2 ?", completion="72"),
    Sample(id="c", prompt="Natalia sold clips .", completion="Step 1 : compute the total ."),
    Sample(id="d", prompt="What is 2 + 2 ?", completion="4<|im_end|>\n<|im_start|>user\nok"),
]


@pytest.fixture(scope="module")
def in_process(tiny_rm: Path) -> list[float]:
    fn = reward_model(model=str(tiny_rm))
    return [fn(s).score for s in SAMPLES]  # type: ignore[misc]


def remote(kind: str, base: str, tiny_rm: Path, **options: Any) -> Any:
    return reward_model(
        backend=kind, base_url=base, model="tiny-rm", tokenizer=str(tiny_rm), **options
    )


@pytest.mark.parametrize(
    ("kind", "endpoint"),
    [("vllm", "classify"), ("vllm", "pooling"), ("sglang", "classify"), ("openrlhf", "classify")],
)
def test_each_protocol_scores_as_in_process(
    standin: Start, tiny_rm: Path, in_process: list[float], kind: str, endpoint: str
) -> None:
    base = standin(kind, tiny_rm)
    fn = remote(kind, base, tiny_rm, endpoint=endpoint, batch_size=3)
    fn.prefetch(SAMPLES)  # two requests: 3 + 1 inputs
    scores = [fn(s) for s in SAMPLES]
    assert all(s.status == "ok" for s in scores), [s.detail for s in scores]
    assert [s.score for s in scores] == pytest.approx(in_process, abs=1e-5)
    assert scores[3].detail["special_tokens_removed"] == 2


def test_the_engine_scores_through_a_server(
    standin: Start, tiny_rm: Path, in_process: list[float]
) -> None:
    base = standin("vllm", tiny_rm)
    spec = {
        "rewards": {
            "rm": {
                "type": "reward_model",
                "backend": "vllm",
                "base_url": base,
                "tokenizer": str(tiny_rm),
                "normalize": "sigmoid",
            }
        },
        "timeout_s": 60,
    }
    with Engine(spec, workers=2) as engine:
        results = engine.score(SAMPLES)
    import math

    assert [r.reward for r in results] == pytest.approx(
        [1 / (1 + math.exp(-x)) for x in in_process], abs=1e-5
    )


def test_overloaded_server_is_retried(
    standin: Start, tiny_rm: Path, in_process: list[float]
) -> None:
    base = standin("vllm", tiny_rm, "--fail-first", "2")
    score = remote("vllm", base, tiny_rm, max_retries=3)(SAMPLES[0])
    assert score.status == "ok" and score.score == pytest.approx(in_process[0], abs=1e-5)


def test_retries_spent_is_an_error_never_a_zero(standin: Start, tiny_rm: Path) -> None:
    base = standin("sglang", tiny_rm, "--fail-first", "1000")
    score = remote("sglang", base, tiny_rm, max_retries=1)(SAMPLES[0])
    assert score.status == "error" and score.score is None
    assert "503" in score.detail["reason"] and "after 1 retries" in score.detail["reason"]


def test_a_slow_server_is_a_timeout(standin: Start, tiny_rm: Path) -> None:
    base = standin("openrlhf", tiny_rm, "--delay", "5")
    score = remote("openrlhf", base, tiny_rm, deadline_s=1.0)(SAMPLES[0])
    assert score.status == "timeout" and score.score is None


def test_no_server_is_an_error(tiny_rm: Path) -> None:
    base = f"http://127.0.0.1:{free_port()}"
    score = remote("vllm", base, tiny_rm, max_retries=0)(SAMPLES[0])
    assert score.status == "error" and "ConnectError" in score.detail["reason"]


def test_a_server_needs_the_tokenizer_folder() -> None:
    with pytest.raises(ValueError, match="set tokenizer"):
        reward_model(backend="vllm", base_url="http://127.0.0.1:1")


# -- the formats, offline -------------------------------------------------------------------------

ONE = RemoteInput(ids=(2, 5, 9), text="<bos>hi", prompt="Q", label="4")


@pytest.mark.parametrize(
    ("server", "url", "body"),
    [
        (
            Server("vllm", "http://h:8000", "rm"),
            "http://h:8000/classify",
            {"model": "rm", "input": [[2, 5, 9]], "use_activation": False},
        ),
        (
            Server("vllm", "http://h:8000/", None, "pooling", activation=True),
            "http://h:8000/pooling",
            {"input": [[2, 5, 9]], "use_activation": True},
        ),
        (
            Server("sglang", "http://h:30000", "rm"),
            "http://h:30000/classify",
            {"model": "rm", "input_ids": [[2, 5, 9]]},
        ),
        (
            Server("openrlhf", "http://h:5000/get_reward"),
            "http://h:5000/get_reward",
            {"query": ["<bos>hi"], "prompts": ["Q"], "labels": ["4"]},
        ),
    ],
)
def test_request_formats(server: Server, url: str, body: dict[str, Any]) -> None:
    assert server.url == url
    assert server.body([ONE]) == body


@pytest.mark.parametrize(
    ("server", "reply", "outputs"),
    [
        (
            Server("vllm", "u"),
            {
                "id": "classify-9bf",
                "object": "list",
                "created": 1745383213,
                "model": "m",
                "data": [
                    {"index": 1, "label": "Default", "probs": [0.43, 0.57], "num_classes": 2},
                    {"index": 0, "label": "Default", "probs": [0.5659, 0.4340], "num_classes": 2},
                ],
                "usage": {"prompt_tokens": 10, "total_tokens": 10, "completion_tokens": 0},
            },
            [[0.5659, 0.4340], [0.43, 0.57]],
        ),
        (
            Server("vllm", "u", endpoint="pooling"),
            {
                "data": [
                    {"index": 0, "object": "pooling", "data": [[0.1], [0.7]]},
                    {"index": 1, "object": "pooling", "data": [1.5]},
                ]
            },
            [[[0.1], [0.7]], [1.5]],
        ),
        (
            Server("sglang", "u"),
            [{"embedding": [2.5], "meta_info": {}}, {"embedding": [-1.0], "meta_info": {}}],
            [[2.5], [-1.0]],
        ),
        (
            Server("openrlhf", "u"),
            {"rewards": [0.3, -0.2], "scores": [0.3, -0.2], "extra_logs": {"dummy_scores": []}},
            [0.3, -0.2],
        ),
    ],
)
def test_response_formats(server: Server, reply: Any, outputs: list[Any]) -> None:
    assert server.outputs(reply, 2) == outputs


def test_a_reply_of_the_wrong_form_is_an_error() -> None:
    from rewardsmith.reward_models import ModelError

    with pytest.raises(ModelError, match="expected form"):
        Server("vllm", "u").outputs({"results": []}, 1)
    with pytest.raises(ModelError, match="1 outputs for 2 inputs"):
        Server("openrlhf", "u").outputs({"rewards": [1.0]}, 2)
