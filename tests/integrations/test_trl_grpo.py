"""Two real `GRPOTrainer` steps on the CPU with rewardsmith's reward functions.

The model (a 2-layer Qwen2 with random weights) and its tokenizer (trained here with the
`tokenizers` library) are built in the test: nothing comes from a hub (HF_HUB_OFFLINE=1 is
set in conftest.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import ConfigError
from rewardsmith.integrations.trl import TRLRewards

from .conftest import CountingEngine, require, tiny_tokenizer

pytestmark = pytest.mark.trl

SPEC = {
    "rewards": {
        "correct": {"type": "math", "weight": 1.0},
        "format": {"type": "think_format", "weight": 0.2, "only_if": "correct"},
        "overlong": {"type": "length", "max_length": 6, "cache_length": 4, "unit": "tokens"},
        # varies between random completions, so the groups have non-zero advantages
        "brevity": {"type": "length", "max_length": 40, "cache_length": 35, "unit": "chars"},
    },
    "combine": "weighted_sum",
    "timeout_s": 10,
}


def tiny_model(tokenizer):  # type: ignore[no-untyped-def]
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    return Qwen2ForCausalLM(config)


def grpo_trainer(tmp_path: Path, rewards: TRLRewards, **config: Any) -> Any:
    """A `GRPOTrainer` over four arithmetic prompts, 2 generations each, on the CPU."""
    require("trl")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = tiny_tokenizer()
    dataset = Dataset.from_dict(
        {
            "prompt": ["What is 2 + 2 ?", "What is 3 + 5 ?", "Compute 10 - 7 .", "What is 1 + 1 ?"],
            "answer": ["4", "8", "3", "2"],  # the reference column
            "level": [1, 1, 2, 1],  # another column: travels in metadata
        }
    )
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        logging_steps=1,
        learning_rate=1e-3,
        beta=0.0,
        reward_weights=rewards.weights,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
        **config,
    )
    return GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=rewards.funcs,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )


# trl 1.16's GRPOConfig sets a field that transformers 5.23 deprecates (FutureWarning).
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_grpo_trainer_calls_and_logs_every_component(tmp_path: Path) -> None:
    with CountingEngine(SPEC, workers=1) as engine:
        trainer = grpo_trainer(tmp_path, TRLRewards(SPEC, engine=engine), max_steps=2)
        trainer.train()

    assert trainer.state.global_step == 2
    assert engine.calls == 2  # one scoring per generation batch, shared by the 3 functions
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logs) == 2
    for entry, results in zip(logs, engine.batches, strict=True):
        assert len(results) == 2  # 1 prompt x 2 generations
        for name in SPEC["rewards"]:
            assert f"rewards/{name}/mean" in entry  # TRL's own per-function metrics
            assert entry[f"rewardsmith/{name}/failed"] == 0.0  # ours, through log_metric
        # the reference column arrived: `correct` scored every completion (never n/a)
        assert all(r.components["correct"].status == "ok" for r in results)
        assert math.isfinite(entry["rewards/correct/mean"])
        # completion_ids arrived: the token-length penalty was computed
        assert all(r.components["overlong"].status == "ok" for r in results)
        assert math.isfinite(entry["rewards/overlong/mean"])
        # TRL's total is the spec's total
        totals = [r.reward for r in results]
        assert entry["reward"] == pytest.approx(sum(totals) / len(totals), abs=1e-5)
    # the rewards differ within a group, so the policy got a gradient from them
    assert any(entry["grad_norm"] > 0 for entry in logs)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_normalize_then_sum_is_seen_and_needs_num_generations(tmp_path: Path) -> None:
    """TRL's GDPO mode (`multi_objective_aggregation="normalize_then_sum"`) is read from the
    trainer behind `log_metric`: without num_generations the per-component values cannot
    keep a failure below the worst answer, so the first step fails naming the fix; with
    it, the step trains (the values are checked in test_trl_adapter.py)."""
    mode = {"multi_objective_aggregation": "normalize_then_sum", "max_steps": 1}
    with CountingEngine(SPEC, workers=1) as engine:
        trainer = grpo_trainer(tmp_path, TRLRewards(SPEC, engine=engine), **mode)
        with pytest.raises(ConfigError, match="pass num_generations"):
            trainer.train()
    with CountingEngine(SPEC, workers=1) as engine:
        rewards = TRLRewards(SPEC, engine=engine, num_generations=2)
        trainer = grpo_trainer(tmp_path, rewards, **mode)
        trainer.train()
    assert trainer.state.global_step == 1
    (results,) = engine.batches
    assert all(r.status == "ok" for r in results)
