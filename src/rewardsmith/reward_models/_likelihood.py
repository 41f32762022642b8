"""`likelihood`: how probable a language model finds the reference answer after the
completion's reasoning (RLPR: Yu et al. 2025, "RLPR: Extrapolating RLVR to General Domains
without Verifiers", arXiv 2506.18254).

The completion is cut at the last `marker` (the answer marker: ``<answer>``, ``A:``,
``The answer is``...): the reasoning up to and including it stays, the policy's own answer is
replaced by the reference, and the model reads the prompt, a blank line, that reasoning and
the reference as plain text (no chat template). The reward is the mean over the reference's
tokens of their probability (``mode: prob``, RLPR's choice: less sensitive to one unlikely
token than log-probabilities) or of their log-probability (``mode: logprob``), bounded below
by `floor` (so the reward is bounded: [floor, 0]).

The model is the judges' (their backends, reused): the embedded model (``backend: local``,
SmolLM2-135M-Instruct by default) or any OpenAI-compatible server that returns prompt
log-probabilities for ``/completions`` with ``echo`` (vLLM, llama.cpp's python server). A
log-probability that is not finite or is above 0 is the server's fault: an `error` with
``cause: infrastructure``, never a score.

A completion without the marker committed no answer: it scores the lowest reward (0, or
`floor` in ``logprob`` mode) with the reason. What the reward does not catch: reasoning
that lists several candidate answers raises the reference's probability, and the answer the
policy committed after the marker is never read (RLPR replaces it by the reference): right
reasoning followed by a wrong answer earns what the right answer earns. ``detail.committed``
reports that answer (its first 200 characters): pair this reward with an outcome check (an
exact match or math verifier on the committed answer) and a hedging check.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from ..judges._backends import (
    BackendConfig,
    BackendError,
    ContinuationTooLong,
    InputRejected,
    make_backend,
    run_sync,
)
from ..models import Sample, Score
from ..registry import RewardFn, reward
from ._inputs import images_unread, prompt_text

__all__ = ["likelihood"]

Mode = Literal["prob", "logprob"]


def _reference(value: Any) -> str | None:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value).strip()
        return text or None
    return None


class _Likelihood:
    def __init__(
        self, config: BackendConfig, marker: str, mode: Mode, floor: float, deadline_s: float
    ) -> None:
        self.config = config
        self.marker = marker
        self.mode = mode
        self.floor = floor
        self.deadline_s = deadline_s

    def __call__(self, sample: Sample) -> Score:
        if sample.reference is None:
            return Score.failed("not_applicable", "no reference")
        reference = _reference(sample.reference)
        if reference is None:
            return Score.failed("invalid", "reference: a non-empty string or number is needed")
        if (unread := images_unread(sample, completion="final")) is not None:
            return unread
        text = sample.text
        cut = text.rfind(self.marker)
        if cut < 0:
            lowest = 0.0 if self.mode == "prob" else self.floor
            return Score.ok(lowest, reason=f"no answer marker {self.marker!r}: no committed answer")
        end = cut + len(self.marker)
        after = text[end:]
        gap = after[: len(after) - len(after.lstrip())][:1]  # one space or newline, if any
        prompt = ("" if sample.prompt is None else prompt_text(sample) + "\n\n") + text[:end]
        read = make_backend(self.config).continuation_logprobs
        try:
            try:
                logprobs = run_sync(read(prompt, gap + reference), self.deadline_s)
            except ContinuationTooLong:
                if not gap:
                    raise
                # the completion's gap tipped it over: whether it fits is the reference's alone
                logprobs = run_sync(read(prompt, reference), self.deadline_s)
        except TimeoutError as exc:
            return Score.failed(
                "timeout", str(exc), cause="infrastructure", deadline_s=self.deadline_s
            )
        except ContinuationTooLong as exc:  # the dataset's reference: left out, as invalid
            return Score.failed("invalid", f"reference: {exc}")
        except InputRejected as exc:  # charged: its reasoning made it too long, or was filtered
            return Score.failed("error", f"likelihood backend: {exc}", cause="completion")
        except BackendError as exc:
            return Score.failed("error", f"likelihood backend: {exc}", cause="infrastructure")
        if not all(math.isfinite(x) and x <= 0.0 for x in logprobs):  # the server's fault
            return Score.failed(
                "error",
                f"likelihood backend: log-probabilities not finite and <= 0: {logprobs!r:.200}",
                cause="infrastructure",
            )
        mean_logprob = max(self.floor, math.fsum(logprobs) / len(logprobs))
        mean_prob = math.fsum(math.exp(x) for x in logprobs) / len(logprobs)
        value = mean_prob if self.mode == "prob" else mean_logprob
        return Score.ok(
            value,
            tokens=len(logprobs),
            mean_prob=mean_prob,
            mean_logprob=mean_logprob,
            committed=after.strip()[:200],
        )


@reward("likelihood", preload=("httpx",))
def likelihood(
    *,
    backend: Literal["local", "openai"] = "local",
    base_url: str | None = None,
    model: str | None = None,
    runtime: Literal["transformers", "llama_cpp"] = "transformers",
    marker: str = "<answer>",
    mode: Mode = "prob",
    floor: float = -30.0,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
    deadline_s: float = 50.0,
    n_ctx: int = 2048,
    n_threads: int | None = None,
) -> RewardFn:
    """Mean per-token probability (or log-probability) of the reference answer after the
    completion's reasoning, cut at the answer `marker` (RLPR).

    Args:
        backend: ``local`` (the embedded model, or the GGUF file `model`, run by `runtime`) or
            ``openai`` (a server at `base_url` serving `model`, with prompt logprobs).
        marker: the answer marker; the reasoning is the completion up to its last occurrence.
        mode: ``prob`` (mean token probability, RLPR's reward) or ``logprob``.
        floor: the lowest mean log-probability (``logprob`` mode's reward for no answer).
        deadline_s: longest wait for one sample (then `timeout`).
    """
    if not marker:
        raise ValueError("marker: must not be empty")
    if not math.isfinite(floor) or floor >= 0:
        raise ValueError(f"floor: a negative log-probability, got {floor}")
    if backend == "openai" and not base_url:
        raise ValueError("backend openai: set base_url")
    if deadline_s <= 0 or request_timeout_s <= 0 or max_concurrency < 1 or max_retries < 0:
        raise ValueError(
            "deadline_s and request_timeout_s > 0, max_concurrency >= 1, max_retries >= 0"
        )
    config = BackendConfig(
        kind=backend,
        base_url=base_url,
        model=model,
        runtime=runtime,
        api_key_env=api_key_env,
        max_concurrency=max_concurrency,
        request_timeout_s=request_timeout_s,
        max_retries=max_retries,
        n_ctx=n_ctx,
        n_threads=n_threads,
    )
    try:
        make_backend(config).prepare()  # the embedded model's one-time conversion, not in a task
    except BackendError as exc:
        raise ValueError(str(exc)) from exc
    return _Likelihood(config, marker, mode, floor, deadline_s)
