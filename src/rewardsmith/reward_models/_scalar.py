"""`reward_model`: the scalar of a sequence-classification reward model (a Bradley-Terry head,
as trained by TRL's RewardTrainer or OpenRLHF), in process or from a server.

The model reads the prompt and the completion through its own chat template (see `_inputs`).
The score is the logit of `label` (``raw``), its sigmoid, or the softmax probability of
`label` over the labels. Per-group z-scores and PAR are the spec's transforms on top
(``transform: mean_std`` and ``transform: par`` with ``metadata.reference_rewards``).

An answer with no visible character (nothing, or a ``<think>`` never closed; in a
conversation, the last assistant turn's: tool text after it is no answer) is not shown to the
model: it committed nothing; nor is one that does not fit in `max_length` tokens with the
prompt: a model reads the whole answer. Either scores 0, the lowest, with ``sigmoid`` and
``softmax``; with ``raw`` logits, which have no lowest value, it is an `error` caused by the
completion (charged below its group's lowest reward). An output that is not a finite number
is an `error`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from ..combine._shaping import sigmoid
from ..models import Sample, Score
from ..registry import RewardFn, reward
from ._backend import Backend, check_common, model_client, tokenizer_folder
from ._inputs import (
    AnswerTooLong,
    Template,
    Tokenization,
    Unshown,
    dialogue,
    has_text,
    images_unread,
    load_tokenizer,
)
from ._remote import Endpoint, remote_input
from ._reward import ModelReward, Prepared
from ._transformers import Dtype, SequenceClassifier

__all__ = ["reward_model"]

Normalize = Literal["raw", "sigmoid", "softmax"]


class _RewardModel(ModelReward):
    def __init__(
        self,
        tokenization: Tokenization,
        remote: bool,
        label: int,
        normalize: Normalize,
        strip_think: bool,
        system: str | None,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.tokenization = tokenization
        self.remote = remote
        self.label = label
        self.normalize = normalize
        self.strip_think = strip_think
        self.system = system

    def prepare(self, sample: Sample) -> Prepared | Score:
        if (unread := images_unread(sample)) is not None:
            return unread
        conversation = dialogue(sample, strip_think=self.strip_think, system=self.system)
        if not has_text(self.tokenization.clean(conversation.answer)[0]):
            return self._unread("empty answer: nothing to show the reward model")
        try:
            [encoded] = self.tokenization.encode_dialogues([conversation])
        except AnswerTooLong as exc:
            return self._unread(f"{exc}: a model reads the whole answer", **exc.facts())
        except Unshown as exc:
            return exc.score()
        item: Any = encoded.ids
        if self.remote:
            item = remote_input(encoded.ids, self.tokenization.decode(encoded.ids), sample)
        return Prepared((item,), encoded.facts())

    def _unread(self, reason: str, **detail: Any) -> Score:
        """An answer not shown to the model: the lowest score, 0, with ``sigmoid`` and
        ``softmax``; raw logits have no lowest, so an `error` charged to the completion."""
        if self.normalize == "raw":
            return Score.failed("error", reason, cause="completion", **detail)
        return Score.ok(0.0, reason=reason, **detail)

    def finish(self, sample: Sample, prepared: Prepared, outputs: list[Any]) -> Score:
        logits = _vector(outputs[0])
        if logits is None:
            return Score.failed(  # charged: an input can drive a model to overflow
                "error",
                f"the model's output is not a vector of finite numbers: {outputs[0]!r:.200}",
            )
        if not 0 <= self.label < len(logits):  # the spec's doing, not the policy's
            return Score.failed(
                "error",
                f"label {self.label} is not one of the model's {len(logits)} outputs",
                cause="infrastructure",
            )
        logit = logits[self.label]
        detail: dict[str, Any] = {**prepared.context, "logit": logit}
        if len(logits) > 1:
            detail["logits"] = logits
        if self.normalize == "raw":
            return Score.ok(logit, **detail)
        if self.normalize == "sigmoid":
            return Score.ok(sigmoid(logit), **detail)
        if len(logits) < 2:
            return Score.failed(
                "error",
                "normalize: softmax needs a model with 2 or more labels",
                cause="infrastructure",
            )
        top = max(logits)
        weights = [math.exp(x - top) for x in logits]
        return Score.ok(weights[self.label] / math.fsum(weights), **detail)


def _vector(output: Any) -> list[float] | None:
    """A reward model's output as a vector: a number, a vector, or per-token rows (the last)."""
    if isinstance(output, int | float) and not isinstance(output, bool):
        return [float(output)] if math.isfinite(output) else None
    if isinstance(output, list | tuple) and output:
        if isinstance(output[-1], list | tuple):
            output = output[-1]
        if all(isinstance(x, int | float) and not isinstance(x, bool) for x in output):
            values = [float(x) for x in output]
            return values if all(math.isfinite(x) for x in values) else None
    return None


@reward("reward_model", preload=("transformers", "httpx"))
def reward_model(
    *,
    backend: Backend = "transformers",
    model: str | None = None,
    tokenizer: str | None = None,
    base_url: str | None = None,
    endpoint: Endpoint = "classify",
    template: Template = "model",
    system: str | None = None,
    strip_think: bool = True,
    max_length: int = 4096,
    label: int = 0,
    normalize: Normalize = "raw",
    batch_size: int = 8,
    device: str = "cpu",
    dtype: Dtype = "auto",
    threads: int | None = None,
    load_timeout_s: float = 300.0,
    deadline_s: float = 50.0,
    api_key_env: str = "REWARDSMITH_RM_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
) -> RewardFn:
    """Scalar reward of a sequence-classification reward model on prompt + completion.

    Args:
        backend: ``transformers`` (the model folder `model`, loaded once per node by the model
            host), or a server: ``vllm`` (`endpoint` ``classify`` or ``pooling``), ``sglang``,
            ``openrlhf`` (``/get_reward``), at `base_url`, serving `model`.
        tokenizer: the model's tokenizer folder (default: `model`; required for servers).
        template: ``model`` (the RM's chat template) or ``none`` (texts concatenated).
        system: a system turn added before the prompt (when the prompt has none).
        strip_think: the model reads the answer, not the ``<think>`` reasoning.
        max_length: at most this many tokens: an answer that does not fit with the prompt
            is not shown (scored as an empty one, ``detail.truncated``).
        label, normalize: the score is the logit of `label` (``raw``), its ``sigmoid``, or its
            ``softmax`` probability over the labels.
        batch_size: most inputs per forward pass (per request to a server).
        deadline_s: longest wait for one sample's output (then `timeout`).
    """
    check_common(batch_size=batch_size, max_length=max_length, deadline_s=deadline_s)
    if label < 0:
        raise ValueError(f"label: must be >= 0, got {label}")
    tokenization = Tokenization(
        load_tokenizer(tokenizer_folder(backend, model, tokenizer)),
        template=template,
        max_length=max_length,
        strip_think=strip_think,
    )
    client = model_client(
        backend,
        SequenceClassifier,
        model=model,
        pad_id=tokenization.pad_id,
        batch_size=batch_size,
        device=device,
        dtype=dtype,
        threads=threads,
        load_timeout_s=load_timeout_s,
        base_url=base_url,
        endpoint=endpoint,
        api_key_env=api_key_env,
        max_concurrency=max_concurrency,
        request_timeout_s=request_timeout_s,
        max_retries=max_retries,
    )
    return _RewardModel(
        tokenization,
        remote=backend != "transformers",
        label=label,
        normalize=normalize,
        strip_think=strip_think,
        system=system,
        client=client,
        deadline_s=deadline_s,
    )
