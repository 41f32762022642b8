"""One OpenRLHF batch, two paths: a real server's `POST /get_reward` and the `reward_func` file.

Both build their answer with `rewardsmith.integrations._protocol`; this checks that they give
the same rewards, scores and logs for the same queries, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewardsmith.integrations.openrlhf as openrlhf_adapter
from tests.integrations.conftest import load_openrlhf_reward_func, require

from .conftest import TOKEN, Server

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")
torch = require("torch")

SPEC = """\
rewards:
  correct: {type: math, weight: 1.0}
  format:  {type: think_format, weight: 0.2, only_if: correct}
  words:   {type: "tests.integrations.rewards_for_tests:scripted", weight: 0.01}
on_error: -1.5
"""

QWEN = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"
)
LLAMA3 = (
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 3 + 5?<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)
BATCH = [  # (prompt, query, label)
    # left padding, the prompt, the response, end of turn and end of text
    (QWEN, "<|endoftext|>" * 2 + QWEN + "<think>2 + 2 = 4</think> \\boxed{4}<|im_end|>", "4"),
    (QWEN, QWEN + "The answer is \\boxed{5}.<|im_end|><|endoftext|>", "4"),  # wrong
    (LLAMA3, LLAMA3 + "<think>3+5</think> So \\boxed{8}<|eot_id|>", "8"),
    ("[INST] 1+1? [/INST]", "<s> [INST] 1+1? [/INST] It is \\boxed{2}.</s>", "2"),  # SentencePiece
    ("Q: 1+1?  A:", "<s>Q: 1+1?\nA: 2</s>", "2"),  # decoding changed the prompt's whitespace
    (QWEN, QWEN + "raise<|im_end|>", "4"),  # a component raises: on_error
    (QWEN, QWEN + "n/a<|im_end|>", None),  # nothing applies: 0.0, not on_error
    ("a prompt not in the query", "<s>7</s>", "7"),  # no prompt/response boundary: invalid
]


@pytest.fixture(scope="module")
def parity_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parity") / "spec.yaml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def parity_server(parity_spec: Path) -> Iterator[Server]:
    running = Server(parity_spec, "--workers", "1")
    yield running
    running.stop()


@pytest.fixture
def reward_func(parity_spec: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`reward_func`, loaded by file path as OpenRLHF loads it."""
    return load_openrlhf_reward_func(parity_spec, monkeypatch)


def test_server_and_reward_func_answer_the_same(parity_server: Server, reward_func: Any) -> None:
    prompts, queries, labels = (list(column) for column in zip(*BATCH, strict=True))
    response = httpx.post(
        f"{parity_server.url}/get_reward",
        json={"query": queries, "prompts": prompts, "labels": labels},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=60,
    )
    assert response.status_code == 200
    served = response.json()
    assert served["rewards"] == pytest.approx([1.26, 0.04, 1.23, 1.03, 1.01, -1.5, 0.0, -1.5])
    assert served["extra_logs"]["failed"] == [0, 0, 0, 0, 0, 1, 0, 1]
    assert served["extra_logs"]["words_failed"] == [0, 0, 0, 0, 0, 1, 0, 1]
    assert served["extra_logs"]["format"] == [1, 0, 1, 0, 0, 0, 0, -1.5]  # gated by `correct`
    assert served["extra_logs"]["prompt_found"] == [1, 1, 1, 1, 1, 1, 1, 0]

    # The plain lists the adapter builds are the server's JSON, byte for byte.
    lists = openrlhf_adapter.answer_queries(queries, prompts, labels)
    assert json.dumps(lists).encode() == response.content

    # And the tensors OpenRLHF gets from the file hold the same numbers, under the same keys.
    tensors = reward_func(queries, prompts, labels)
    for key in ("rewards", "scores"):
        expected = torch.tensor(served[key], dtype=torch.float32)
        assert torch.equal(tensors[key], expected), key
    assert list(tensors["extra_logs"]) == list(served["extra_logs"])
    for key, values in served["extra_logs"].items():
        expected = torch.tensor(values, dtype=torch.float32)
        assert torch.equal(tensors["extra_logs"][key], expected), key
