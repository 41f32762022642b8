"""Trainer adapters: a rewardsmith spec as the reward of TRL, verl and OpenRLHF.

- `rewardsmith.integrations.trl`: `reward_funcs(spec)` -> `(reward_funcs, reward_weights)` for
  `GRPOTrainer` / `RLOOTrainer`, and `total_reward_func(spec)` for any combination.
- `rewardsmith.integrations.verl`: a file for verl's `custom_reward_function.path`, with
  `compute_score` (one sample, or verl's batched lists) and `compute_score_async`.
- `rewardsmith.integrations.openrlhf`: a file for OpenRLHF's `--remote_rm_url`, with
  `reward_func(queries, prompts, labels)`.

None of them imports its trainer: each speaks the trainer's calling convention only.
"""
