"""OpenRLHF's remote reward contract: `POST /get_reward`.

OpenRLHF (`--remote_rm_url http://host:port/get_reward`) posts, per chunk of rollouts::

    {"query": [str], "prompts": [str], "labels": [...]}

(`openrlhf/utils/remote_rm_utils.py`: `remote_rm_fn` -> `request_api_wrapper`, JSON body,
only a Content-Type header, up to 5 tries one second apart on any error) and reads the
`rewards` key of the JSON answer; newer versions also read `scores` (dynamic filtering) and
`extra_logs` (logged to wandb), as from a `reward_func(queries, prompts, labels)` file.

Each `query` is the decoded token sequence: left padding, the templated prompt, the response,
end-of-turn and end-of-text tokens. We find the matching prompt in it and take what follows;
chat special tokens are then stripped from both ends. The label is the sample's `reference`.

Every sample gets a float: a result without a reward (a failed component, or nothing
applicable) gets the spec's `on_error`, or 0.0 when the spec leaves `on_error` unset, since
OpenRLHF turns the list into a tensor and cannot take a null.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from ..models import FAILURE_STATUSES, Result, Sample
from ..spec import RewardSpec

__all__ = [
    "DEFAULT_FAILURE_REWARD",
    "OpenRLHFRequest",
    "completion_from_query",
    "failure_reward",
    "openrlhf_response",
    "strip_special_tokens",
]

DEFAULT_FAILURE_REWARD = 0.0
"""Reward of a sample without one when the spec sets no `on_error`."""

_TOKEN = (
    r"<\|[A-Za-z0-9_.\-]{1,40}\|>"  # <|im_end|> <|endoftext|> <|eot_id|> <|end_of_text|> <|end|>
    r"|<｜[^｜<>]{1,40}｜>"  # DeepSeek: <｜end▁of▁sentence｜> <｜Assistant｜>
    r"|</?s>|<pad>|<unk>|<eos>|<bos>|<end_of_turn>|\[PAD\]|\[CLS\]|\[SEP\]"
)
_HEADER = (  # an assistant turn header, when the prompt was templated without one
    r"(?:<\|im_start\|>|<start_of_turn>)(?:assistant|model)\n"
    r"|<\|start_header_id\|>assistant<\|end_header_id\|>\s*"
    r"|<\|assistant\|>\n?"
)
_LEADING = re.compile(rf"\A(?:{_HEADER}|{_TOKEN})+")
_TRAILING = re.compile(rf"(?:\s*(?:{_TOKEN}))+\s*\Z")


def strip_special_tokens(text: str) -> str:
    """`text` without chat special tokens (and an assistant header) at either end."""
    text = _LEADING.sub("", text, count=1)
    return _TRAILING.sub("", text, count=1)


def completion_from_query(query: str, prompt: str | None) -> tuple[str, bool]:
    """The response inside an OpenRLHF query, and whether the prompt was found in it.

    The first occurrence of the prompt ends the prefix (padding and BOS tokens may precede
    it). When the prompt is absent or not found (a tokenizer that does not round-trip it),
    the whole query, special tokens stripped, is the completion: reported as not found.
    """
    found = False
    if prompt:
        at = query.find(prompt)
        if at >= 0:
            query, found = query[at + len(prompt) :], True
    return strip_special_tokens(query), found


class OpenRLHFRequest(BaseModel):
    """The JSON body OpenRLHF sends (keys other than these are ignored)."""

    model_config = ConfigDict(extra="ignore")

    query: list[str]
    """Prompt + response per sample, as decoded by the trainer."""
    prompts: list[str | None] | None = None
    """The templated prompt of each query."""
    labels: list[Any] | None = None
    """The reference of each sample (`--label_key` column)."""
    metas: list[dict[str, Any] | None] | None = None
    """Optional per-sample extras (some OpenRLHF versions send them); become `metadata`."""

    @model_validator(mode="after")
    def _same_lengths(self) -> OpenRLHFRequest:
        for name in ("prompts", "labels", "metas"):
            values = getattr(self, name)
            if values is not None and len(values) != len(self.query):
                raise ValueError(f"{name} has {len(values)} items but query has {len(self.query)}")
        return self

    def samples(self) -> tuple[list[Sample], list[bool]]:
        """One sample per query (ids 1, 2, ...), and whether each query's prompt was found."""
        samples, found = [], []
        for i, query in enumerate(self.query):
            prompt = self.prompts[i] if self.prompts is not None else None
            completion, ok = completion_from_query(query, prompt)
            samples.append(
                Sample(
                    id=str(i + 1),
                    completion=completion,
                    prompt=prompt,
                    reference=self.labels[i] if self.labels is not None else None,
                    metadata=(self.metas[i] or {}) if self.metas is not None else {},
                )
            )
            found.append(ok)
        return samples, found


def failure_reward(spec: RewardSpec) -> float:
    """The float sent for a sample without a reward: `on_error`, else 0.0."""
    return DEFAULT_FAILURE_REWARD if spec.on_error is None else float(spec.on_error)


def openrlhf_response(
    spec: RewardSpec, results: list[Result], prompt_found: list[bool]
) -> dict[str, Any]:
    """`{"rewards", "scores", "extra_logs"}`: floats only, one per sample.

    `extra_logs` holds each component's score (0.0 where it has none), `reward_failed`
    (1.0 where a component failed: timeout, error, invalid) and `prompt_found` (1.0 where
    the prompt was found in the query), each a list with one float per sample.
    """
    fallback = failure_reward(spec)
    rewards = [fallback if r.reward is None else r.reward for r in results]
    logs: dict[str, list[float]] = {
        name: [
            s.score if s.status == "ok" and s.score is not None else 0.0
            for s in (r.components[name] for r in results)
        ]
        for name in spec.rewards
    }
    extras = {
        "reward_failed": [float(r.status in FAILURE_STATUSES) for r in results],
        "prompt_found": [float(f) for f in prompt_found],
    }
    for key, values in extras.items():
        logs.setdefault(key, values)
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": logs}
