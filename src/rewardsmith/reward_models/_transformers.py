"""Models the host runs with transformers on PyTorch (CPU or GPU).

Three kinds, one per reward family:

* `SequenceClassifier`: ``AutoModelForSequenceClassification`` (scalar reward models,
  Bradley-Terry heads): the logits of each input.
* `StepClassifier`: ``AutoModelForTokenClassification`` (process reward models in the style of
  Qwen2.5-Math-PRM: a two-label head read at each step-tag token): the probability of the
  positive label at each step tag.
* `SentenceEncoder`: ``AutoModel`` with mean pooling and L2 normalisation (sentence-transformers
  encoders such as all-MiniLM-L6-v2): one unit vector per input.

Inputs arrive as token ids (workers tokenize, see `_inputs`); a micro-batch is right-padded
with the model's pad token and run in one forward pass. Models load from a local folder only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._host import HostedModel

__all__ = ["SentenceEncoder", "SequenceClassifier", "StepClassifier", "TorchModel"]

TokenIds = tuple[int, ...]

Dtype = Literal["auto", "float32", "bfloat16", "float16"]


@dataclass(frozen=True)
class TorchModel(HostedModel):
    """A transformers model folder and where to run it."""

    device: str = "cpu"
    """``cpu``, ``cuda``, ``cuda:1``..."""
    dtype: Dtype = "auto"
    """``auto``: float32 on the CPU, the checkpoint's dtype elsewhere."""
    threads: int | None = None
    """PyTorch CPU threads in the host (default: PyTorch's choice)."""
    pad_id: int = 0
    """Padding id when the model's config names none (the tokenizer's pad or EOS token)."""

    def _load(self, auto_class: str) -> Any:
        import torch
        import transformers

        transformers.utils.logging.disable_progress_bar()
        if self.threads:
            torch.set_num_threads(self.threads)
        if self.dtype != "auto":
            dtype: Any = getattr(torch, self.dtype)
        else:
            dtype = torch.float32 if self.device == "cpu" else "auto"
        model = getattr(transformers, auto_class).from_pretrained(
            self.path, dtype=dtype, local_files_only=True
        )
        if getattr(model.config, "pad_token_id", None) is None:
            model.config.pad_token_id = self.pad_id
        return model.to(self.device).eval()


class _Forward:
    """Pads a micro-batch of token ids and runs the model on it."""

    def __init__(self, model: Any, device: str) -> None:
        self.model = model
        self.device = device
        self.pad_id = int(model.config.pad_token_id)

    def tensors(self, items: list[TokenIds]) -> tuple[Any, Any]:
        import torch

        width = max(len(ids) for ids in items)
        ids = torch.full((len(items), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(items), width), dtype=torch.long)
        for row, item in enumerate(items):
            ids[row, : len(item)] = torch.tensor(item, dtype=torch.long)
            mask[row, : len(item)] = 1
        return ids.to(self.device), mask.to(self.device)


@dataclass(frozen=True)
class SequenceClassifier(TorchModel):
    """A sequence-classification reward model: the logits of each input."""

    def load(self) -> _ClassifierRunner:
        return _ClassifierRunner(self._load("AutoModelForSequenceClassification"), self.device)


class _ClassifierRunner(_Forward):
    def run(self, items: list[TokenIds]) -> list[tuple[float, ...]]:
        import torch

        ids, mask = self.tensors(items)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask).logits
        return [tuple(row) for row in logits.float().cpu().tolist()]


@dataclass(frozen=True)
class StepClassifier(TorchModel):
    """A token-classification process reward model, read at its step-tag tokens."""

    step_id: int = -1
    """The token id that ends each step (e.g. ``<extra_0>`` for Qwen2.5-Math-PRM)."""
    positive: int = 1
    """The label that means "this step is correct"."""

    def load(self) -> _StepRunner:
        model = self._load("AutoModelForTokenClassification")
        return _StepRunner(model, self.device, self.step_id, self.positive)


class _StepRunner(_Forward):
    def __init__(self, model: Any, device: str, step_id: int, positive: int) -> None:
        super().__init__(model, device)
        self.step_id = step_id
        self.positive = positive

    def run(self, items: list[TokenIds]) -> list[tuple[float, ...]]:
        import torch

        ids, mask = self.tensors(items)
        with torch.inference_mode():
            probs = self.model(input_ids=ids, attention_mask=mask).logits.float().softmax(-1)
        at_tags = (ids == self.step_id) & mask.bool()
        return [
            tuple(probs[row][at_tags[row], self.positive].cpu().tolist())
            for row in range(len(items))
        ]


@dataclass(frozen=True)
class SentenceEncoder(TorchModel):
    """A sentence encoder: mean of the token embeddings, scaled to unit length."""

    def load(self) -> _EncoderRunner:
        return _EncoderRunner(self._load("AutoModel"), self.device)


class _EncoderRunner(_Forward):
    def run(self, items: list[TokenIds]) -> list[tuple[float, ...]]:
        import torch

        ids, mask = self.tensors(items)
        with torch.inference_mode():
            hidden = self.model(input_ids=ids, attention_mask=mask).last_hidden_state.float()
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        unit = torch.nn.functional.normalize(mean, dim=-1)
        return [tuple(row) for row in unit.cpu().tolist()]
