"""Engines shared by the adapter tests (one worker each: the machine has two cores)."""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine, Result

# Nothing here may reach a model hub: the trainer tests build their model and tokenizer.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

SCRIPTED = "tests.integrations.rewards_for_tests:scripted"

MATH_SPEC: dict[str, Any] = {
    "rewards": {
        "correct": {"type": "math", "weight": 1.0},
        "format": {"type": "think_format", "weight": 0.2, "only_if": "correct"},
        "overlong": {"type": "length", "max_length": 8, "cache_length": 4, "unit": "tokens"},
    },
    "combine": "weighted_sum",
    "timeout_s": 5,
}


def require(module: str) -> Any:
    """Import a trainer dependency: skipped when missing, except in CI (`CI` set), where the
    `[trl]` extra must be installed and a missing module is a failure, not a quiet skip."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)


def load_openrlhf_reward_func(spec: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`reward_func` of the OpenRLHF adapter, loaded by file path as OpenRLHF loads it, with
    `spec` as `REWARDSMITH_SPEC` and one worker."""
    import rewardsmith.integrations.openrlhf as openrlhf_adapter

    monkeypatch.setenv("REWARDSMITH_SPEC", str(spec))
    monkeypatch.setenv("REWARDSMITH_WORKERS", "1")
    module_spec = importlib.util.spec_from_file_location("reward_func", openrlhf_adapter.__file__)
    assert module_spec is not None and module_spec.loader is not None
    reward_module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(reward_module)
    return reward_module.reward_func


CORPUS = [
    "What is 2 + 2 ? The answer is \\boxed{4} .",
    "<think> two plus two is four </think> The answer is \\boxed{4} .",
    "What is 3 + 5 ? The answer is \\boxed{8} .",
    "<think> three plus five </think> so 8 is the answer .",
    "Compute 10 - 7 . The answer is 3 .",
]


def tiny_tokenizer():  # type: ignore[no-untyped-def]
    """A byte-level BPE tokenizer trained here (so any text round-trips), with special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
        unk_token="<unk>",
    )


class CountingEngine(Engine):
    """An engine that counts the batches it scores."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0
        self.batches: list[list[Result]] = []

    def score(self, samples: Any) -> list[Result]:
        self.calls += 1
        results = super().score(samples)
        self.batches.append(results)
        return results


@pytest.fixture(scope="session")
def math_engine() -> Iterator[CountingEngine]:
    with CountingEngine(MATH_SPEC, workers=1) as engine:
        yield engine


def scripted_spec(on_error: float | None = None, **extra: Any) -> dict[str, Any]:
    """`a`: the scripted reward (weight 2); `b`: a word-count length penalty (weight 0.5)."""
    return {
        "rewards": {
            "a": {"type": SCRIPTED, "weight": 2.0},
            "b": {
                "type": "length",
                "max_length": 4,
                "cache_length": 2,
                "unit": "words",
                "weight": 0.5,
            },
        },
        "on_error": on_error,
        **extra,
    }


def trl_normalize_then_sum(
    columns: list[list[float | None]], weights: list[float], size: int
) -> list[float]:
    """The advantages trl 1.16's `GRPOTrainer` computes with
    `multi_objective_aggregation="normalize_then_sum"` (`_generate_and_score_completions`)
    from each reward function's column: None is NaN; each function normalised over the group
    (nanmean, TRL's nanstd), weighted, `nansum`-med, then whitened over the batch."""
    torch = require("torch")
    nanstd = require("trl.trainer.utils").nanstd
    per_func = torch.tensor([[math.nan if v is None else v for v in c] for c in columns]).T
    grouped = per_func.view(-1, size, per_func.shape[1])
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = nanstd(grouped, dim=1, keepdim=True)
    reward_k = ((grouped - mean_k) / (std_k + 1e-4)).view(-1, per_func.shape[1])
    rewards = (reward_k * torch.tensor(weights).unsqueeze(0)).nansum(dim=1)
    rewards[torch.isnan(per_func).all(dim=1)] = torch.nan
    advantages = (rewards - torch.nanmean(rewards)) / (nanstd(rewards) + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0).tolist()  # type: ignore[no-any-return]


WAYS = ["in-process", "server"]
"""How an adapter scores: its own worker pool, or a real `rewardsmith serve` on loopback
(`REWARDSMITH_URL`)."""


def serve_for(spec: Path, monkeypatch: pytest.MonkeyPatch, servers: dict[Path, Any]) -> Any:
    """Point the adapters at a real `rewardsmith serve` of `spec` (one per spec file)."""
    from tests.server.conftest import TOKEN, Server

    if spec not in servers:
        servers[spec] = Server(spec, "--workers", "1")
    monkeypatch.setenv("REWARDSMITH_URL", servers[spec].url)
    monkeypatch.setenv("REWARDSMITH_TOKEN", TOKEN)
    return servers[spec]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[Path, Any]]:
    """Reward servers started by this module's tests, stopped with it."""
    running: dict[Path, Any] = {}
    yield running
    for server in running.values():
        server.stop()
