"""The OpenRLHF adapter, loaded and called exactly as OpenRLHF does (OpenRLHF needs CUDA/vLLM).

Call shapes copied from OpenRLHF/OpenRLHF (`SingleTurnAgentExecutor` in the agent executor
module, the version that calls `_fetch_rewards_via_func`):

- loading: ``importlib.util.spec_from_file_location("reward_func", remote_rm_url[0])``, then
  `exec_module`, then ``reward_module.reward_func``;
- per generated sample: ``query = hf_tokenizer.decode(observation_tokens,
  skip_special_tokens=False)`` (prompt tokens + response tokens), then
  ``await asyncio.gather(asyncio.to_thread(reward_func, [query], [prompt], [label]))``, one
  call per sample, many samples concurrently;
- reading the result: ``reward=rewards_info.get("rewards")``,
  ``scores=rewards_info.get("scores") or rewards_info.get("rewards")``,
  ``extra_logs=rewards_info.get("extra_logs") or {}``; later ``torch.tensor([reward_val])``
  and, per extra log, ``value.flatten()[0].item()`` (older versions: ``value.item()``).
Older versions call ``reward_func(queries, prompts, labels)`` with chunks of
`micro_rollout_batch_size` samples and concatenate the returned tensors.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rewardsmith.integrations.openrlhf as openrlhf_adapter
from rewardsmith.integrations._protocol import completion_from_query, strip_prompt

from .conftest import WAYS, load_openrlhf_reward_func, require, serve_for, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED_INTEGRATIONS = "tests.integrations.rewards_for_tests:scripted"

torch = require("torch")

SPEC_YAML = """\
rewards:
  correct: {type: math, weight: 1.0}
  format:  {type: think_format, weight: 0.2, only_if: correct}
"""

QWEN_PROMPT = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"
)
LLAMA_PROMPT = (
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 3 + 5?<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)
SAMPLES = [  # (prompt, query, label): the query is the prompt followed by the response
    (QWEN_PROMPT, QWEN_PROMPT + "<think>2 + 2 = 4</think> \\boxed{4}<|im_end|>", "4"),
    (QWEN_PROMPT, QWEN_PROMPT + "The answer is \\boxed{5}.<|im_end|><|endoftext|>", "4"),
    (LLAMA_PROMPT, LLAMA_PROMPT + "<think>3+5</think> So \\boxed{8}<|eot_id|>", "8"),
    ("Q: 1+1? A:", "<s> Q: 1+1? A: 2</s>", "2"),  # BOS before the prompt, EOS after
]


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("openrlhf") / "spec.yaml"
    path.write_text(SPEC_YAML)
    return path


@pytest.fixture(params=WAYS)
def reward_func(
    request: pytest.FixtureRequest,
    spec_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: dict[Path, Any],
) -> Any:
    """`reward_func` loaded as OpenRLHF loads it; scoring in-process, then on a real server."""
    if request.param == "server":
        serve_for(spec_path, monkeypatch, servers)
    return load_openrlhf_reward_func(spec_path, monkeypatch)


def test_completion_is_the_response_without_prompt_or_special_tokens() -> None:
    got = [completion_from_query(query, prompt) for prompt, query, _ in SAMPLES]
    assert [completion for completion, _ in got] == [
        "<think>2 + 2 = 4</think> \\boxed{4}",
        "The answer is \\boxed{5}.",
        "<think>3+5</think> So \\boxed{8}",
        "2",
    ]
    assert all(found for _, found in got)
    # decoding may change whitespace in the prompt; the response is still found
    assert strip_prompt("Q:  1+1?\nA: 2", "Q: 1+1? A:") == (" 2", True)
    assert strip_prompt("no prompt here", "missing") == ("no prompt here", False)


def test_single_turn_executor_calls_one_sample_per_thread(reward_func: Any) -> None:
    async def fetch(prompt: str, query: str, label: str) -> dict[str, Any]:
        (rewards_info,) = await asyncio.gather(
            asyncio.to_thread(reward_func, [query], [prompt], [label])
        )
        return rewards_info

    async def main() -> list[dict[str, Any]]:
        return await asyncio.gather(*(fetch(*sample) for sample in SAMPLES))

    outputs = asyncio.run(main())
    rewards = []
    for rewards_info in outputs:
        reward_val = rewards_info.get("rewards")
        score_val = rewards_info.get("scores") or rewards_info.get("rewards")
        info = {"reward": torch.tensor([reward_val]), "score": torch.tensor([score_val])}
        for key, value in (rewards_info.get("extra_logs") or {}).items():
            info[key] = torch.tensor([value.flatten()[0].item()])  # newer OpenRLHF
            assert value.item() == info[key].item()  # older OpenRLHF: value.item()
        rewards.append(info["reward"].item())
        assert set(info) == {
            *("reward", "score", "failed", "prompt_found"),
            *("correct", "correct_failed", "format", "format_failed"),
        }
    assert rewards == pytest.approx([1.2, 0.0, 1.2, 1.0])


def test_chunked_call_of_older_versions(reward_func: Any) -> None:
    prompts, queries, labels = (list(column) for column in zip(*SAMPLES, strict=True))
    chunks = [
        reward_func(queries[i : i + 2], prompts[i : i + 2], labels[i : i + 2]) for i in (0, 2)
    ]
    rewards = torch.cat([chunk["rewards"] for chunk in chunks])
    assert rewards.dtype == torch.float32
    assert rewards.tolist() == pytest.approx([1.2, 0.0, 1.2, 1.0])
    correct = torch.cat([chunk["extra_logs"]["correct"] for chunk in chunks])
    assert correct.tolist() == [1.0, 0.0, 1.0, 1.0]


def test_failures_get_the_spec_value_and_are_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {
        "rewards": {"a": {"type": "tests.integrations.rewards_for_tests:scripted"}},
        "on_error": -2.0,
    }
    rewards, logs = openrlhf_adapter.score_queries(
        ["P raise", "P one two", "P n/a"], ["P "] * 3, [None] * 3, spec=spec, workers=1
    )
    assert rewards == [-2.0, 2.0, 0.0]  # on_error; the total; nothing applied -> 0.0
    assert logs["failed"] == [1.0, 0.0, 0.0]
    assert logs["a"] == [-2.0, 2.0, 0.0]  # failed: on_error; not applicable: 0.0
    assert logs["a_failed"] == [1.0, 0.0, 0.0]
    assert logs["prompt_found"] == [1.0, 1.0, 1.0]


LONG_PROMPT = (
    "<|im_start|>system\nYou are a helpful assistant. Think step by step, then give the "
    "final answer in \\boxed{}. Réponds en français si on te le demande.<|im_end|>\n"
    "<|im_start|>user\nWhat is 2 + 2? Explain it twice, carefully.<|im_end|>\n"
    "<|im_start|>assistant\n"
)
RESPONSE = "<think>2 + 2 = 4</think> The answer is \\boxed{4}."


def test_a_prompt_cut_from_the_left_leaves_the_response_alone() -> None:
    """OpenRLHF's executor cuts a long prompt's token ids from the left
    (``prompt_token_ids[-max_prompt_length:]``) and decodes them with the response's ids
    (``skip_special_tokens=False``); the prompt given to the reward is the whole text."""
    tokenizer = tiny_tokenizer()
    prompt_ids = tokenizer(text=LONG_PROMPT, add_special_tokens=False)["input_ids"]
    action_ids = [*tokenizer.encode(RESPONSE + "<|im_end|>"), tokenizer.eos_token_id]
    for keep in range(1, len(prompt_ids)):
        if len(tokenizer.decode(prompt_ids[-keep:])) < 8:  # too little prompt left to tell
            continue
        query = tokenizer.decode(prompt_ids[-keep:] + action_ids, skip_special_tokens=False)
        completion, found = completion_from_query(query, LONG_PROMPT)
        assert completion == RESPONSE, (keep, query)
        assert not found


def test_a_cut_prompt_does_not_change_the_reward(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {
        "rewards": {
            "correct": {"type": "math"},
            "short": {"type": "length", "unit": "words", "max_length": 20, "cache_length": 6},
        }
    }
    whole = LONG_PROMPT + RESPONSE + "<|im_end|>"
    cut = LONG_PROMPT[-120:] + RESPONSE + "<|im_end|>"  # 14 more words if counted
    rewards, _ = openrlhf_adapter.score_queries(
        [whole, cut], [LONG_PROMPT] * 2, ["4", "4"], spec=spec, workers=1
    )
    assert rewards == [1.0, 1.0]  # the length penalty counts the response's words only


def test_a_query_without_a_boundary_is_invalid_not_scored_whole() -> None:
    spec = {"rewards": {"a": {"type": SCRIPTED_INTEGRATIONS}}, "on_error": -3.0}
    rewards, logs = openrlhf_adapter.score_queries(
        ["a query with nothing of its prompt", "P one"],
        ["the prompt", "P "],
        [None, None],
        spec=spec,
        workers=1,
    )
    assert rewards == [-3.0, 1.0]
    assert logs["failed"] == [1.0, 0.0] and logs["a_failed"] == [1.0, 0.0]


LOAD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("reward_func", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("loaded", flush=True)
"""


@pytest.mark.parametrize(
    ("spec_text", "message"),
    [
        (None, "REWARDSMITH_SPEC is not set here"),
        ("rewards:\n  c: {type: mathh}\n", "unknown reward type 'mathh'"),
        ("rewards:\n  n: {type: length, max_length: 9, cache_length: 3}\n", "length in tokens"),
    ],
)
def test_loading_the_file_without_a_usable_spec_fails_with_the_fix(
    tmp_path: Path, spec_text: str | None, message: str
) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    env.pop("REWARDSMITH_SPEC", None)
    if spec_text is not None:
        (tmp_path / "spec.yaml").write_text(spec_text)
        env["REWARDSMITH_SPEC"] = str(tmp_path / "spec.yaml")
    proc = subprocess.run(
        [sys.executable, "-c", LOAD, openrlhf_adapter.__file__],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode != 0 and "loaded" not in proc.stdout
    assert "Error: " in proc.stderr and message in proc.stderr


# The special tokens that end a response were found by a regex searched from every position,
# whose `\s*` ran to the end from each: 20,000 spaces then a letter took seconds.
@pytest.mark.parametrize(
    ("query", "response"),
    [
        ("Q: hi" + " " * 20_000 + "4", "4"),
        ("Q: hi 4" + " " * 20_000 + "x", "4" + " " * 20_000 + "x"),
        ("Q: hi 4" + " </s>" * 5_000 + "\n", "4"),
        ("Q: hi 4" + "</s>" * 5_000 + "x", "4" + "</s>" * 5_000 + "x"),
    ],
    ids=["spaces", "spaces then a letter", "tokens", "tokens then a letter"],
)
def test_long_runs_at_the_end_of_a_response(query: str, response: str) -> None:
    assert completion_from_query(query, "Q: hi") == (response, True)
