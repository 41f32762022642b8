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

Here the completion is the query with its prompt cut off -- or, when OpenRLHF cut a long
prompt from the left, with the rest of the prompt cut off, else after the assistant turn
header the prompt ends with (counted from the query's start: a header the policy wrote never
moves it); a query where none of these finds the response is `invalid`, never scored whole --
and the chat special tokens at the ends of the response trimmed. `rewards` and `scores` are
the spec's total reward -- or, for a sample without one, the spec's `on_error` (failures),
else 0.0, always a number -- and `extra_logs` holds each component's value as the total used
it (0.0 where it does not count; `on_error`, else 0.0, where it failed) with
`<component>_failed`, `failed` (1.0 for a failed sample) and `prompt_found` (1.0 where the
whole prompt was found in the query), one value per sample. All of it is
`rewardsmith.integrations._protocol`, which the reward server's `POST /get_reward` uses too:
the same batch gets the same numbers either way. Concurrent calls (OpenRLHF runs one thread
per sample) are scored together in one worker pool per process, started on the first call.
A spec that needs whole groups (`majority_vote`, group-scoped shaping) is refused with a
`ConfigError`: OpenRLHF does not say which samples share a prompt, and a chunk may hold part
of a group.

Loading this file by path, as OpenRLHF does, checks the spec at once: without
`REWARDSMITH_SPEC` (as in Ray workers of a cluster started before the job), with a spec that
does not load, or with one OpenRLHF cannot serve (a `length` in tokens, a group-scoped
reward type or shaping), the load fails with the reason and the fix, instead of every reward
failing later.

Imports are absolute: OpenRLHF loads this file by path, outside the `rewardsmith` package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardsmith.integrations._groups import refuse_groups
from rewardsmith.integrations._protocol import openrlhf_response, openrlhf_samples
from rewardsmith.integrations._shared_engine import (
    SpecSource,
    count_this_process,
    shared_engine,
)

__all__ = ["NO_GROUPS", "answer_queries", "reward_func", "score_queries"]

NO_GROUPS = (
    "OpenRLHF hands the reward function samples without their group (one sample per call, or "
    "chunks of micro_rollout_batch_size that may cut a prompt's samples apart)"
)
"""Why a spec that needs whole groups (`majority_vote`, group-scoped shaping) is refused."""


def answer_queries(
    queries: Sequence[str],
    prompts: Sequence[Any] | None,
    labels: Sequence[Any] | None,
    *,
    spec: SpecSource | None = None,
    workers: Any = None,
) -> dict[str, Any]:
    """``{"rewards", "scores", "extra_logs"}`` as plain lists: what the reward server's
    `/get_reward` answers for the same body (the same `_protocol` functions make both)."""
    samples, found = openrlhf_samples(queries, prompts, labels)
    engine = shared_engine(spec, workers)
    refuse_groups(engine.spec, NO_GROUPS)
    results = engine.score(samples)
    return openrlhf_response(engine.spec, results, found)


def score_queries(
    queries: Sequence[str],
    prompts: Sequence[Any] | None,
    labels: Sequence[Any] | None,
    *,
    spec: SpecSource | None = None,
    workers: Any = None,
) -> tuple[list[float], dict[str, list[float]]]:
    """Rewards and per-sample logs for OpenRLHF-shaped input, as plain lists (no torch)."""
    answer = answer_queries(queries, prompts, labels, spec=spec, workers=workers)
    return answer["rewards"], answer["extra_logs"]


def reward_func(queries: Sequence[str], prompts: Sequence[Any], labels: Sequence[Any]) -> dict:
    """OpenRLHF's custom reward function: ``{"rewards", "scores", "extra_logs"}`` tensors."""
    import torch

    answer = answer_queries(queries, prompts, labels)
    return {
        "rewards": torch.tensor(answer["rewards"], dtype=torch.float32),
        "scores": torch.tensor(answer["scores"], dtype=torch.float32),
        "extra_logs": {
            k: torch.tensor(v, dtype=torch.float32) for k, v in answer["extra_logs"].items()
        },
    }


if __name__ != "rewardsmith.integrations.openrlhf":  # pragma: no branch
    # Loaded by file path, as OpenRLHF loads a reward function: check the spec now (a
    # missing or bad spec fails the load with its fix), count this process among the node's
    # reward processes, and hand out the package module's functions, which pickle by
    # reference in any process.
    count_this_process()
    refuse_groups(shared_engine().spec, NO_GROUPS)
    from rewardsmith.integrations.openrlhf import (
        answer_queries,
        reward_func,
        score_queries,
    )
