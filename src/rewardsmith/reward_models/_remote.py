"""Reward-model servers, each in its own request and response format: vLLM, SGLang, OpenRLHF.

The inputs are tokenized here (`_inputs`: the RM's chat template, the doubled-BOS check,
special tokens removed, truncation), so a server sees exactly the tokens the in-process
backend would run, whatever its own tokenization defaults. Formats, from the upstream docs
and code:

* **vLLM** ``POST /classify`` (``vllm/entrypoints/pooling/classify``; "Classification API"
  in the pooling-models docs): ``{"model", "input": [[token ids], ...], "use_activation":
  false}`` -> ``{"data": [{"index", "label", "probs": [...], "num_classes"}, ...]}``. With
  ``use_activation: false`` the ``probs`` are the raw logits (our `normalize` applies after).
* **vLLM** ``POST /pooling`` (``vllm/entrypoints/pooling/pooling/protocol.py``): the same
  request -> ``{"data": [{"index", "object": "pooling", "data": [...] | [[...], ...]}]}``: one
  vector (a classifier), one row per token (a reward model with ``ALL`` pooling: the last row
  is read), or one row per step tag (a process reward model with ``STEP`` pooling).
* **SGLang** ``POST /classify`` (native API, "reward model"): ``{"model", "input_ids":
  [[token ids], ...]}`` (``EmbeddingReqInput``: text or input_ids) -> ``[{"embedding":
  [...], "meta_info": {...}}, ...]``.
* **OpenRLHF** ``POST /get_reward`` (``openrlhf/cli/serve_rm.py``): ``{"query": [text], "prompts":
  [text], "labels": [text]}`` -> ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``.
  The query is the full rendered conversation (the server tokenizes it with
  ``add_special_tokens=False``), decoded from our token ids so that it carries them exactly.

Transport: the judges' `JsonClient` (bounded concurrency, a timeout per request, retries with
backoff and jitter on 429, 5xx and connection errors). A worker's batch goes out in requests of
at most `batch_size` inputs.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal

from ..judges._backends import BackendConfig, BackendError, JsonClient, submit
from ..models import Sample
from ._ahead import Ahead, ModelError

__all__ = ["RemoteInput", "Server", "ServerClient", "remote_input"]

ServerKind = Literal["vllm", "sglang", "openrlhf"]
Endpoint = Literal["classify", "pooling"]


@dataclass(frozen=True)
class RemoteInput:
    """One input as the servers need it."""

    ids: tuple[int, ...]
    """The tokenized conversation (vLLM, SGLang)."""
    text: str
    """The same tokens as text (OpenRLHF's query)."""
    prompt: str = ""
    """The prompt's text (OpenRLHF's ``prompts``)."""
    label: str = ""
    """The reference as text (OpenRLHF's ``labels``)."""


def remote_input(ids: tuple[int, ...], text: str, sample: Sample) -> RemoteInput:
    """A tokenized sample as the servers need it (`text`: the same tokens as text)."""
    prompt = sample.prompt if isinstance(sample.prompt, str) else ""
    if isinstance(sample.prompt, list):
        prompt = "\n\n".join(m.content for m in sample.prompt if isinstance(m.content, str))
    label = "" if sample.reference is None else str(sample.reference)
    return RemoteInput(ids=ids, text=text, prompt=prompt, label=label)


@dataclass(frozen=True)
class Server:
    """Where a reward model is served and how to talk to it."""

    kind: ServerKind
    base_url: str
    model: str | None = None
    """The served model name (vLLM, SGLang); None: the server's only model."""
    endpoint: Endpoint = "classify"
    """vLLM only: ``classify`` or ``pooling``."""
    activation: bool = False
    """vLLM only: whether the server applies the pooler's activation (``use_activation``):
    off for reward models (raw logits), on for STEP-pooled PRMs (probabilities)."""

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        if self.kind == "openrlhf":
            return base if base.endswith("/get_reward") else base + "/get_reward"
        return base + (
            "/pooling" if self.kind == "vllm" and self.endpoint == "pooling" else "/classify"
        )

    def body(self, inputs: list[RemoteInput]) -> dict[str, Any]:
        """The request for a batch of inputs."""
        if self.kind == "openrlhf":
            return {
                "query": [i.text for i in inputs],
                "prompts": [i.prompt for i in inputs],
                "labels": [i.label for i in inputs],
            }
        model = {"model": self.model} if self.model else {}
        if self.kind == "sglang":
            return {**model, "input_ids": [list(i.ids) for i in inputs]}
        return {
            **model,
            "input": [list(i.ids) for i in inputs],
            "use_activation": self.activation,
        }

    def outputs(self, reply: Any, count: int) -> list[Any]:
        """Each input's raw output, in input order: a number, a vector or rows of vectors."""
        try:
            if self.kind == "openrlhf":
                values = list(reply["rewards"])
            elif self.kind == "sglang":
                values = [item["embedding"] for item in reply]
            else:
                rows = sorted(reply["data"], key=lambda item: item["index"])
                if [row["index"] for row in rows] != list(range(len(rows))):
                    raise ModelError(
                        f"vllm reply's indices are not 0..{len(rows) - 1}: "
                        f"{[row['index'] for row in rows][:20]}"
                    )
                field = "probs" if self.endpoint == "classify" else "data"
                values = [row[field] for row in rows]
        except (KeyError, TypeError) as exc:
            raise ModelError(
                f"{self.kind} reply has not the expected form: {str(reply)[:300]}"
            ) from exc
        if len(values) != count:
            raise ModelError(f"{self.kind} replied {len(values)} outputs for {count} inputs")
        return values


class ServerClient(Ahead):
    """A worker's client of one reward-model server: a batch goes out in requests of at most
    `batch_size` inputs on the judges' event loop, while the worker scores."""

    def __init__(self, server: Server, transport: BackendConfig, batch_size: int) -> None:
        super().__init__()
        self.server = server
        self.http = JsonClient(transport)
        self.batch_size = batch_size
        self._futures: dict[Hashable, concurrent.futures.Future[list[Any]]] = {}
        self._chunks: dict[concurrent.futures.Future[list[Any]], list[Hashable]] = {}

    def _send(self, items: list[Hashable]) -> None:
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            future = submit(self._post(chunk))
            self._chunks[future] = chunk
            for item in chunk:
                self._futures[item] = future

    async def _post(self, chunk: list[Any]) -> list[Any]:
        reply = await self.http.post(self.server.url, self.server.body(chunk))
        return self.server.outputs(reply, len(chunk))

    def _wait(self, item: Hashable, timeout_s: float) -> None:
        future = self._futures[item]
        try:
            values = future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            return  # the caller checks its deadline
        except (BackendError, ModelError) as exc:
            values = None
            failure = f"reward model server: {exc}"
        chunk = self._chunks.pop(future)
        for index, i in enumerate(chunk):
            if values is None:
                self._put(i, False, failure)
            else:
                self._put(i, True, values[index])
            del self._futures[i]
