"""`majority_vote` trained for two steps in a real TRL `GRPOTrainer` (CPU, tiny model built here).

The tokenizer gets two whole-answer tokens, `\\boxed{4}` and `\\boxed{5}`, and generation may
emit nothing else (`suppress_tokens`), one token per completion: every completion is an answer,
so each group of `num_generations` completions really votes, and its rewards can be checked by
hand against the completions TRL generated.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine, Result
from rewardsmith.integrations.trl import TRLRewards
from tests.integrations.conftest import require, tiny_tokenizer
from tests.integrations.test_trl_grpo import tiny_model

pytestmark = pytest.mark.trl

SPEC = {"rewards": {"vote": {"type": "majority_vote"}}, "timeout_s": 10}
ANSWERS = (r"\boxed{4}", r"\boxed{5}")
GENERATIONS = 4


class RecordingEngine(Engine):
    """An engine that keeps every batch TRL sends and what it returned."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[tuple[list[dict[str, Any]], list[Result]]] = []

    def score(self, samples: Any) -> list[Result]:
        samples = list(samples)
        results = super().score(samples)
        self.batches.append((samples, results))
        return results


def by_hand(completions: list[str]) -> list[float]:
    """1 for the answer with the most votes, 0 for the rest; a tie gives nobody 1."""
    counts = Counter(completions).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return [0.0] * len(completions)
    return [1.0 if c == counts[0][0] else 0.0 for c in completions]


@pytest.mark.filterwarnings("ignore::FutureWarning")  # trl 1.16 on transformers 5.23
def test_majority_vote_trains_two_grpo_steps(tmp_path: Path) -> None:
    require("trl")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = tiny_tokenizer()
    tokenizer.add_tokens(list(ANSWERS))
    allowed = set(tokenizer.convert_tokens_to_ids(list(ANSWERS)))
    model = tiny_model(tokenizer)
    dataset = Dataset.from_dict({"prompt": ["What is 2 + 2 ?", "What is 3 + 2 ?"] * 2})
    with RecordingEngine(SPEC, workers=1) as engine:
        rewards = TRLRewards(SPEC, engine=engine, num_generations=GENERATIONS)
        args = GRPOConfig(
            output_dir=str(tmp_path),
            per_device_train_batch_size=2 * GENERATIONS,  # two prompts' groups per step
            num_generations=GENERATIONS,
            max_completion_length=1,
            generation_kwargs={
                "suppress_tokens": [i for i in range(len(tokenizer)) if i not in allowed]
            },
            max_steps=2,
            logging_steps=1,
            learning_rate=1e-3,
            beta=0.0,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            seed=0,
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=rewards.funcs,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
        )
        trainer.train()

    assert trainer.state.global_step == 2
    assert len(engine.batches) == 2
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    voted = 0
    for entry, (samples, results) in zip(logs, engine.batches, strict=True):
        assert len(samples) == 2 * GENERATIONS
        completions = [s["completion"].strip() for s in samples]
        assert set(completions) <= set(ANSWERS)
        for start in range(0, len(samples), GENERATIONS):  # one prompt's generations
            group = samples[start : start + GENERATIONS]
            assert len({s["group"] for s in group}) == 1
            assert len({s["prompt"] for s in group}) == 1
            expected = by_hand(completions[start : start + GENERATIONS])
            got = [r.reward for r in results[start : start + GENERATIONS]]
            assert got == expected, completions[start : start + GENERATIONS]
            for result in results[start : start + GENERATIONS]:
                detail = result.components["vote"].detail
                assert sum(detail["clusters"]) == GENERATIONS
            voted += 0.0 < sum(expected) < GENERATIONS
        assert entry["reward"] == pytest.approx(
            sum(r.reward for r in results) / len(results), abs=1e-6
        )
        assert entry["rewardsmith/vote/failed"] == 0.0
    # With seed 0, three of the four groups split 3-1 (different rewards: a gradient) and one
    # ties 2-2 (all 0); another torch may sample otherwise, so only the consequence is checked.
    if voted:
        assert any(entry["grad_norm"] > 0 for entry in logs)
