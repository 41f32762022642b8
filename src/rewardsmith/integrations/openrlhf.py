"""OpenRLHF: a spec as the `reward_func` of `--remote_rm_url /path/to/this/file.py`.

    REWARDSMITH_SPEC=/abs/path/math_spec.yaml python -m openrlhf.cli.train_ppo_ray ... \\
        --remote_rm_url $(python -c \\
            "import rewardsmith.integrations.openrlhf as m; print(m.__file__)") \\
        --label_key answer

The contract, as OpenRLHF uses it (checked against OpenRLHF/OpenRLHF: the single-turn agent
executor, which loads the file with `importlib.util.spec_from_file_location("reward_func",
path)` and calls ``reward_func(queries, prompts, labels)`` in a thread, one sample per call;
older versions call it with chunks of `micro_rollout_batch_size` from a Ray task):

- `queries`: prompt + response text, decoded with `skip_special_tokens=False`, so the
  response ends with the end-of-turn token; `prompts`: the prompts (chat template applied);
  `labels`: the `--label_key` values (the references).
- returns ``{"rewards": tensor, "scores": tensor, "extra_logs": {name: tensor}}``: `rewards`
  drive the advantages, `scores` the dynamic filtering, and each `extra_logs` value is read
  per sample (`value.flatten()[0].item()` for one-sample calls) and logged.

Here the completion is the query with its prompt cut off and the chat special tokens at the
ends of the response trimmed. `rewards` and `scores` are the spec's total reward -- or, for a
sample without one, the spec's `on_error` (failures), else 0.0, always a number -- and
`extra_logs` holds each component's score (NaN where it has none) and `failed` (1.0 for a
failed sample), one value per sample. Concurrent calls (OpenRLHF runs one thread per sample)
are scored together in one worker pool per process, started on the first call.

Imports are absolute: OpenRLHF loads this file by path, outside the `rewardsmith` package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardsmith.integrations._common import (
    SpecSource,
    completion_from_query,
    component_logs,
    plain,
    shared_batcher,
    trainer_reward,
)

__all__ = ["reward_func", "score_queries"]


def score_queries(
    queries: Sequence[str],
    prompts: Sequence[Any] | None,
    labels: Sequence[Any] | None,
    *,
    spec: SpecSource | None = None,
    workers: Any = None,
) -> tuple[list[float], dict[str, list[float]]]:
    """Rewards and per-sample logs for OpenRLHF-shaped input, as plain lists (no torch)."""
    n = len(queries)
    for name, column in (("prompts", prompts), ("labels", labels)):
        if column is not None and len(column) != n:
            raise ValueError(f"{name} has {len(column)} items for {n} queries")
    samples = []
    for i, query in enumerate(queries):
        prompt = prompts[i] if prompts is not None else None
        prompt_text = prompt if isinstance(prompt, str) else None
        sample: dict[str, Any] = {
            "completion": completion_from_query(str(query), prompt_text),
            "reference": plain(labels[i]) if labels is not None else None,
        }
        if prompt_text is not None:
            sample["prompt"] = prompt_text
        samples.append(sample)
    batcher = shared_batcher(spec, workers)
    spec_ = batcher.engine.spec
    results = batcher.score(samples)
    rewards = [trainer_reward(spec_, r) for r in results]
    per_sample = [component_logs(spec_, r) for r in results]
    keys = list(per_sample[0]) if per_sample else ["failed", *spec_.rewards]
    logs = {key: [row[key] for row in per_sample] for key in keys}
    return rewards, logs


def reward_func(queries: Sequence[str], prompts: Sequence[Any], labels: Sequence[Any]) -> dict:
    """OpenRLHF's custom reward function: ``{"rewards", "scores", "extra_logs"}`` tensors."""
    import torch

    rewards, logs = score_queries(queries, prompts, labels)
    reward_tensor = torch.tensor(rewards, dtype=torch.float32)
    return {
        "rewards": reward_tensor,
        "scores": reward_tensor.clone(),
        "extra_logs": {k: torch.tensor(v, dtype=torch.float32) for k, v in logs.items()},
    }
