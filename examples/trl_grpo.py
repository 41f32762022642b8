"""GRPO with TRL, rewarded by a rewardsmith spec: one TRL reward function per component.

    pip install ".[trl]"
    python examples/trl_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct --max-steps 10

A few arithmetic prompts with gold answers stand in for a dataset; the reward is
`examples/math_spec.yaml` (correctness, a gated format bonus, an overlong penalty). TRL logs
`rewards/<component>/mean` for every component, and rewardsmith adds
`rewardsmith/<component>/failed` and `/not_applicable` (fractions of the batch).
"""

from __future__ import annotations

import argparse
from pathlib import Path

HERE = Path(__file__).parent
QUESTIONS = {
    "Janet's ducks lay 16 eggs a day. She eats 3 and bakes with 4. She sells the rest at $2 "
    "each. How many dollars does she make a day?": "#### 18",
    "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in "
    "total does it take?": "#### 3",
    "Simplify 1/3 + 1/4.": "7/12",
    "What is 12 * 12 - 44?": "100",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    parser.add_argument("--spec", default=str(HERE / "math_spec.yaml"))
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--output-dir", default="grpo-output")
    parser.add_argument("--workers", type=int, default=None, help="reward worker processes")
    args = parser.parse_args()

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rewardsmith.integrations.trl import TRLRewards

    dataset = Dataset.from_dict(
        {
            "prompt": [
                f"{q} Think in <think></think>, then answer in \\boxed{{}}." for q in QUESTIONS
            ],
            "answer": list(QUESTIONS.values()),  # the reference column (a GSM8K-style gold)
            "level": [1, 1, 2, 2],  # any other column travels in the samples' metadata
        }
    )

    with TRLRewards(args.spec, workers=args.workers) as rewards:  # one worker pool, reused
        trainer = GRPOTrainer(
            model=args.model,
            reward_funcs=rewards.funcs,  # one function per component, named after it
            train_dataset=dataset,  # the `answer` column becomes each sample's reference
            args=GRPOConfig(
                output_dir=args.output_dir,
                reward_weights=rewards.weights,  # the spec's weights: TRL's sum is the spec's
                max_steps=args.max_steps,
                per_device_train_batch_size=4,
                num_generations=4,
                max_completion_length=256,
                logging_steps=1,
                report_to="none",
                use_cpu=not torch.cuda.is_available(),
                bf16=torch.cuda.is_available(),
            ),
        )
        trainer.train()
    for entry in trainer.state.log_history:
        if "reward" in entry:
            print({k: v for k, v in entry.items() if k.startswith(("reward", "rewardsmith"))})


if __name__ == "__main__":
    main()
