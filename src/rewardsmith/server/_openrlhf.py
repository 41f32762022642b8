"""OpenRLHF's remote reward contract: `POST /get_reward`.

OpenRLHF (`--remote_rm_url http://host:port/get_reward`) posts, per chunk of rollouts::

    {"query": [str], "prompts": [str], "labels": [...]}

(`openrlhf/utils/remote_rm_utils.py`: `remote_rm_fn` -> `request_api_wrapper`, JSON body,
only a Content-Type header, up to 5 tries one second apart on any error) and reads the
`rewards` key of the JSON answer; newer versions also read `scores` (dynamic filtering) and
`extra_logs` (logged to wandb), as from a `reward_func(queries, prompts, labels)` file.

Only the request model is the server's own. Query -> completion, the always-a-float reward
and the logs are `rewardsmith.integrations._protocol`, which the `reward_func` file
(`rewardsmith.integrations.openrlhf`) uses too: the same batch gets the same answer either way.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from .._exceptions import InputError
from ..integrations._protocol import check_columns, openrlhf_response, openrlhf_samples
from ..models import Sample

__all__ = ["OpenRLHFRequest", "openrlhf_response"]


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
        check_columns(len(self.query), prompts=self.prompts, labels=self.labels, metas=self.metas)
        return self

    def samples(self) -> tuple[list[Sample | InputError], list[bool]]:
        """One sample per query (ids 1, 2, ...), and whether each query's prompt was found;
        an `InputError` for a query whose response cannot be told from its prompt."""
        return openrlhf_samples(self.query, self.prompts, self.labels, self.metas)
