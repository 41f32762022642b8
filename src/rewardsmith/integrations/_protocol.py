"""Trainer-facing conversions, one implementation for the adapters and the reward server.

OpenRLHF's contract (prompt + response queries in; always-a-float rewards and per-component
logs out) is served twice: by `integrations/openrlhf.py` (a `reward_func` file) and by the
server's `POST /get_reward`. Both call `openrlhf_samples` and `openrlhf_response` here, so the
same query gets the same completion, reward and logs through either; verl shares
`trainer_reward` and `component_logs`.

This module lives under `integrations/` and imports neither an engine nor FastAPI: the server
imports it (server -> integrations -> models/spec), never the other way round. Absolute
imports only: trainers load the adapter files by path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsmith.models import FAILURE_STATUSES, Result, Sample
from rewardsmith.spec import RewardSpec

__all__ = [
    "DEFAULT_FAILURE_REWARD",
    "check_columns",
    "completion_from_query",
    "component_logs",
    "failure_reward",
    "openrlhf_response",
    "openrlhf_samples",
    "plain",
    "strip_prompt",
    "strip_special_tokens",
    "trainer_reward",
]

DEFAULT_FAILURE_REWARD = 0.0
"""Reward of a failed sample when the spec sets no `on_error`."""

_RESERVED_LOG_KEYS = frozenset({"reward", "score", "failed", "prompt_found"})
"""Log keys a component name must not take (the trainer's own keys, and our flags)."""

_TOKEN = (
    r"<\|[^|<>\s]{1,40}\|>"  # <|im_end|> <|endoftext|> <|eot_id|> <|end_of_text|> <|end|>
    r"|<｜[^｜<>]{1,40}｜>"  # DeepSeek: <｜end▁of▁sentence｜> <｜Assistant｜>
    r"|</?s>|<pad>|<unk>|<eos>|<bos>|<end_of_turn>|\[PAD\]|\[CLS\]|\[SEP\]"
)
_HEADER = (  # an assistant turn header, when the prompt was templated without one
    r"(?:<\|im_start\|>|<start_of_turn>)(?:assistant|model)\n"
    r"|<\|start_header_id\|>assistant<\|end_header_id\|>\s*"
    r"|<\|assistant\|>\n?"
)
_LEADING = re.compile(rf"\A(?:\s*(?:{_HEADER}|{_TOKEN}))*\s*")
_TRAILING = re.compile(rf"(?:\s*(?:{_TOKEN}))+\s*\Z")


def plain(value: Any) -> Any:
    """Trainer data (numpy arrays and scalars, OmegaConf containers) as plain Python data."""
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return plain(tolist())
    if isinstance(value, Sequence):  # e.g. OmegaConf ListConfig
        return [plain(v) for v in value]
    return value


def strip_special_tokens(text: str) -> str:
    """`text` without chat special tokens (and assistant turn headers) at either end.

    Leading whitespace goes too (SentencePiece decodes `[/INST] It` with the word's space;
    the response itself starts at `It`, as decoding the response alone gives it). Text
    between the first and last non-special characters is kept as it is.
    """
    text = _LEADING.sub("", text, count=1)
    return _TRAILING.sub("", text, count=1)


def strip_prompt(query: str, prompt: str | None) -> tuple[str, bool]:
    """The part of `query` after its prompt, and whether the prompt was found in it.

    The prompt ends where it first occurs (padding or a BOS token may precede it); failing
    that, where it first occurs up to whitespace (decoding may change the prompt's
    whitespace). When the prompt is absent or not found, the whole query, reported as not
    found.
    """
    if not prompt:
        return query, False
    at = query.find(prompt)
    if at >= 0:
        return query[at + len(prompt) :], True
    target = "".join(prompt.split())
    if target:
        kept = [i for i, char in enumerate(query) if not char.isspace()]
        at = "".join(query[i] for i in kept).find(target)
        if at >= 0:
            return query[kept[at + len(target) - 1] + 1 :], True
    return query, False


def completion_from_query(query: str, prompt: str | None) -> tuple[str, bool]:
    """The response inside an OpenRLHF query, and whether the prompt was found in it.

    OpenRLHF decodes prompt + response with `skip_special_tokens=False`: left padding, the
    templated prompt, the response, end-of-turn and end-of-text tokens. The prompt is cut
    (`strip_prompt`), then the special tokens at the ends of what is left
    (`strip_special_tokens`).
    """
    response, found = strip_prompt(query, prompt)
    return strip_special_tokens(response), found


def check_columns(n: int, **columns: Sequence[Any] | None) -> None:
    """Raise ValueError when a given column does not have one item per query."""
    for name, values in columns.items():
        if values is not None and len(values) != n:
            raise ValueError(f"{name} has {len(values)} items but query has {n}")


def openrlhf_samples(
    queries: Sequence[str],
    prompts: Sequence[Any] | None,
    labels: Sequence[Any] | None,
    metas: Sequence[Mapping[str, Any] | None] | None = None,
) -> tuple[list[Sample], list[bool]]:
    """One sample per query (ids 1, 2, ...), and whether each query's prompt was found.

    The label is the sample's `reference`, a meta its `metadata`; a prompt that is not text
    is neither cut from the query nor kept.
    """
    check_columns(len(queries), prompts=prompts, labels=labels, metas=metas)
    samples, found = [], []
    for i, query in enumerate(queries):
        prompt = prompts[i] if prompts is not None else None
        prompt = prompt if isinstance(prompt, str) else None
        completion, ok = completion_from_query(str(query), prompt)
        meta = metas[i] if metas is not None else None
        samples.append(
            Sample(
                id=str(i + 1),
                completion=completion,
                prompt=prompt,
                reference=plain(labels[i]) if labels is not None else None,
                metadata=dict(meta) if meta else {},
            )
        )
        found.append(ok)
    return samples, found


def failure_reward(spec: RewardSpec) -> float:
    """The float given a failed sample: the spec's `on_error`, else 0.0."""
    return DEFAULT_FAILURE_REWARD if spec.on_error is None else float(spec.on_error)


def trainer_reward(spec: RewardSpec, result: Result) -> float:
    """The reward of a result as a float, for trainers that cannot take a missing reward.

    The total when there is one; else, for a failed sample, `failure_reward` (the spec's
    `on_error`, else 0.0); else 0.0 (a sample no component applied to: not a failure, so
    not `on_error`). Callers report the failure next to the number (`component_logs`).
    """
    if result.reward is not None:
        return float(result.reward)
    if result.status in FAILURE_STATUSES:
        return failure_reward(spec)
    return 0.0


def _log_key(name: str) -> str:
    return f"component_{name}" if name in _RESERVED_LOG_KEYS else name


def component_logs(spec: RewardSpec, result: Result, missing: float = math.nan) -> dict[str, float]:
    """Per-sample numbers for a trainer's logs: `failed` (1.0 when the sample failed) and
    each component's score (`missing` when it has none). The same keys for every sample; a
    component named like a reserved key (`reward`, `score`, `failed`, `prompt_found`) is
    logged as `component_<name>`."""
    logs = {"failed": 1.0 if result.status in FAILURE_STATUSES else 0.0}
    for name in spec.rewards:
        score = result.components[name]
        ok = score.status == "ok" and score.score is not None
        logs[_log_key(name)] = float(score.score) if ok else missing  # type: ignore[arg-type]
    return logs


def openrlhf_response(
    spec: RewardSpec, results: Sequence[Result], prompt_found: Sequence[bool]
) -> dict[str, Any]:
    """`{"rewards", "scores", "extra_logs"}` as lists of floats, one per sample.

    `rewards` and `scores` are `trainer_reward`. `extra_logs` is `component_logs` per key,
    with 0.0 where a component has no score (JSON has no NaN, and OpenRLHF averages the logs
    over the batch), plus `prompt_found` (1.0 where the prompt was found in the query).
    """
    rewards = [trainer_reward(spec, r) for r in results]
    rows = [component_logs(spec, r, missing=0.0) for r in results]
    keys = ["failed", *(_log_key(name) for name in spec.rewards)]
    logs = {key: [row[key] for row in rows] for key in keys}
    logs["prompt_found"] = [float(f) for f in prompt_found]
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": logs}
