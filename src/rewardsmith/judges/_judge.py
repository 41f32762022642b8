"""What every judged reward shares: backend settings, the guard, bounded parse retries, and
the bridge from the engine's synchronous call to the async judge calls.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .._exceptions import ConfigError
from ..models import Sample, Score
from ..verifiers._completion_parts import answer_part
from ._backends import (
    Backend,
    BackendConfig,
    BackendError,
    ContextOverflow,
    InputRejected,
    JudgeReply,
    JudgeRequest,
    run_sync,
)
from ._backends import make_backend as _make_backend
from ._cache import default_cache_path
from ._guard import Guard
from ._prompts import Messages, parse_rating, rating_schema, render_conversation, with_image_parts

__all__ = ["COMMON", "Judge", "Unparseable", "gather_bounded", "judge_settings", "unparsed"]

COMMON = frozenset(
    {
        "backend",
        "base_url",
        "model",
        "api_key_env",
        "max_concurrency",
        "request_timeout_s",
        "max_retries",
        "structured_output",
        "cache",
        "parse_retries",
        "deadline_s",
        "temperature",
        "top_logprobs",
        "guard",
        "guard_openers",
        "strip_think",
        "n_ctx",
        "n_threads",
        "runtime",
    }
)
"""The parameters every judged reward takes (see `judge_settings`)."""

T = TypeVar("T")

_RETRY_TEMPERATURE = 0.7
"""Temperature of a retry after an unparseable reply (a greedy retry would repeat it)."""


class Unparseable(Exception):
    """The judge's replies could not be parsed within the allowed attempts, or a retry was
    refused as too long (`retry_refused`: the request's length, as any overflow)."""

    def __init__(self, replies: list[str], retry_refused: bool = False) -> None:
        super().__init__(f"unparseable judge reply after {len(replies)} attempts")
        self.replies = replies
        self.retry_refused = retry_refused


def unparsed(exc: Unparseable, reason: str | None = None, **detail: Any) -> Score:
    """The failure of a judgement whose replies stayed unparseable: `error` charged to the
    completion (the judge's prompts and settings are fixed, so what the request reads made
    the judge stray, or its retry overflow, and a policy must not escape a verdict by
    provoking either)."""
    why = reason or str(exc)
    if exc.retry_refused:
        why += "; a retry did not fit the judge's context"
    return Score.failed("error", why, cause="completion", replies=exc.replies, **detail)


def make_backend(config: BackendConfig, cache_path: str | None) -> Backend:
    """Indirection so tests can substitute a scripted backend."""
    return _make_backend(config, cache_path)


@dataclass
class Judge:
    """A configured judge: backend, cache, guard, retries, deadline."""

    config: BackendConfig
    cache_path: str | None
    guard: Guard | None
    parse_retries: int
    deadline_s: float
    temperature: float
    top_logprobs: int
    strip_think: bool
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def backend(self) -> Backend:
        return make_backend(self.config, self.cache_path)

    def text_of(self, sample: Sample) -> str:
        """What is judged: the completion, without its ``<think>`` block when `strip_think`."""
        return self.strip(sample.text)

    def strip(self, text: str) -> str:
        """`text` without its ``<think>`` block when `strip_think`."""
        return answer_part(text) if self.strip_think else text

    def conversation(self, sample: Sample) -> str:
        """The rendered conversation; its assistant turns without reasoning when `strip_think`."""
        return render_conversation(sample.prompt, self.strip_think)

    def sibling_guard(self, text: str) -> str | None:
        """The guard's rule for another answer the judge would read beside the sample (a
        pairwise sibling, a group member), its reasoning stripped; an empty answer is stopped
        even without the guard. None when it may be judged."""
        shown = self.strip(text)
        if not shown.strip():
            return "empty"
        return self.guard.check(shown) if self.guard is not None else None

    def guarded(self, text: str) -> Score | None:
        """Score 0 (status ok, `detail.guard`) when the text is a master key, else None."""
        rule = self.guard.check(text) if self.guard is not None else None
        if rule is None:
            return None
        return Score.ok(0.0, guard=rule, reason=f"not sent to the judge: {rule}")

    async def ask(
        self,
        messages: Messages,
        parse: Callable[[JudgeReply], T | None],
        max_tokens: int,
        *,
        logprobs: bool = True,
        schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        retry_schema: dict[str, Any] | None = None,
    ) -> tuple[T, JudgeReply]:
        """Ask; parse; on an unparseable reply ask again (at most `parse_retries` times, at a
        higher temperature with a new seed, so the retry is a new, cacheable request), then
        raise `Unparseable` (flagged when a retry was refused as too long: its larger reply
        budget is the same for every sample, so the request's length decided). Transport
        failures raise `BackendError`, as does a reply budget that alone fills the context
        (see the backends).

        `retry_schema`: the reply's JSON form; retries send it as structured output (a
        grammar on llama.cpp, `json_schema` on OpenAI-style servers) unless the backend's
        `structured_output` is `none`, so a model that rambles is constrained the second time.
        The embedded model is constrained from the first attempt.
        """
        replies: list[str] = []
        messages = with_image_parts(messages)
        base = self.temperature if temperature is None else temperature
        structured = self.config.structured_output != "none"
        upfront = self.config.kind == "local"  # a grammar costs the embedded model nothing
        for attempt in range(self.parse_retries + 1):
            constrain = (attempt > 0 or upfront) and retry_schema is not None and structured
            request = JudgeRequest(
                messages=messages,
                max_tokens=max(max_tokens, 32) if constrain else max_tokens,
                temperature=base if attempt == 0 else max(base, _RETRY_TEMPERATURE),
                top_logprobs=self.top_logprobs if logprobs else 0,
                seed=seed if attempt == 0 else (seed or 0) * 1000 + attempt,
                schema=retry_schema if constrain else schema,
            )
            try:
                reply = await self.backend.complete(request)
            except ContextOverflow:
                if attempt == 0:
                    raise
                raise Unparseable(replies, retry_refused=True) from None
            parsed = parse(reply)
            if parsed is not None:
                return parsed, reply
            replies.append(reply.text[:200])
        raise Unparseable(replies)

    async def prompt_size(self, messages: Messages) -> int | None:
        """How many tokens the backend reads in `messages` (one call, a one-token reply, cached
        like any other), or None when it will not read them (too long for its context, or
        held back by a content filter); 0 when the backend does not say."""
        request = JudgeRequest(messages=with_image_parts(messages), max_tokens=1)
        try:
            reply = await self.backend.complete(request)
        except InputRejected:
            return None
        return reply.prompt_tokens

    async def rate(
        self, messages: Messages, low: int, high: int, max_tokens: int
    ) -> tuple[int, float | None, dict[str, Any], JudgeReply]:
        """(rating, G-Eval expectation or None, detail, reply) for a reply that must be an
        integer in [low, high].

        The expectation is read from the logprobs where the rating was generated. When the
        scale's ratings share a first token the judge did not follow ("1" starts both 1 and
        10), the local model scores every rating exactly (`choices`); a server cannot, so the
        expectation is kept only if the unresolved mass moves it by at most 1% of the scale,
        and is otherwise None (the rating alone scores), with the reason in the detail."""

        def parse(reply: JudgeReply) -> tuple[int, Any] | None:
            return parse_rating(reply.text, low, high, reply.top_logprobs, reply.tokens)

        (value, distribution), reply = await self.ask(
            messages, parse, max_tokens, retry_schema=rating_schema(low, high)
        )
        detail: dict[str, Any] = {}
        expected: float | None = None
        backend = self.backend
        if distribution is None:
            detail["expectation_from"] = None
        elif not distribution.unresolved:
            expected, detail["expectation_from"] = distribution.expectation(), "logprobs"
        elif backend.supports_choices:
            labels = tuple(str(n) for n in range(low, high + 1))
            scored = await backend.complete(JudgeRequest(messages=messages, choices=labels))
            top = max(scored.choice_logprobs.values())
            weights = {int(k): math.exp(v - top) for k, v in scored.choice_logprobs.items()}
            expected = sum(k * w for k, w in weights.items()) / sum(weights.values())
            detail["expectation_from"] = "choices"
        else:
            lowest, highest = distribution.bounds()
            detail["expected_rating_bounds"] = [round(lowest, 4), round(highest, 4)]
            if highest - lowest <= 0.01 * (high - low):
                expected, detail["expectation_from"] = (lowest + highest) / 2, "logprobs"
            else:
                detail["expectation_from"] = None
                groups = sorted({g for g, _ in distribution.unresolved})
                detail["expectation_note"] = (
                    f"ratings {', '.join('/'.join(g) for g in groups)} start with the same "
                    "token and the server's logprobs do not tell them apart: scored by the "
                    "rating"
                )
        return value, expected, detail, reply

    def run(self, coro: Coroutine[Any, Any, Score]) -> Score:
        """Run the sample's judge calls under the deadline (loading the embedded model on first
        use does not count; the engine's `timeout_s` still bounds it); failures become
        statuses."""
        started = time.monotonic()
        backend = self.backend
        before = backend.usage()
        try:
            score = run_sync(coro, self.deadline_s, backend.loading_s)
        except TimeoutError as exc:  # the judge server's doing: the sample is left out
            score = Score.failed(
                "timeout", str(exc), cause="infrastructure", deadline_s=self.deadline_s
            )
        except Unparseable as exc:  # charged: else provoking it escapes the verdict
            score = unparsed(exc)
        except InputRejected as exc:  # charged: else provoking it escapes the verdict
            score = Score.failed("error", f"judge backend: {exc}", cause="completion")
        except BackendError as exc:
            score = Score.failed("error", f"judge backend: {exc}", cause="infrastructure")
        score.detail.setdefault("judge_s", round(time.monotonic() - started, 3))
        after = backend.usage()
        score.detail["usage"] = {k: v - before.get(k, 0) for k, v in after.items()}
        return score


def judge_settings(
    *,
    backend: Literal["local", "openai"],
    base_url: str | None,
    model: str | None,
    api_key_env: str,
    max_concurrency: int,
    request_timeout_s: float,
    max_retries: int,
    structured_output: Literal["auto", "json_schema", "json_object", "none"],
    cache: bool | str,
    parse_retries: int,
    deadline_s: float,
    temperature: float,
    top_logprobs: int,
    guard: bool,
    guard_openers: list[str] | None,
    strip_think: bool,
    n_ctx: int,
    n_threads: int | None,
    runtime: Literal["transformers", "llama_cpp"],
) -> Judge:
    """Validate the options every judged reward takes and build its `Judge`."""
    if backend == "openai" and not base_url:
        import os

        if not os.environ.get("OPENAI_BASE_URL"):
            raise ConfigError("backend openai: set base_url (or $OPENAI_BASE_URL)")
    if max_concurrency < 1:
        raise ConfigError(f"max_concurrency: must be >= 1, got {max_concurrency}")
    if parse_retries < 0 or max_retries < 0:
        raise ConfigError("parse_retries and max_retries must be >= 0")
    if deadline_s <= 0 or request_timeout_s <= 0:
        raise ConfigError("deadline_s and request_timeout_s must be > 0")
    if not 0 <= top_logprobs <= 20:
        raise ConfigError(f"top_logprobs: must be in 0..20, got {top_logprobs}")
    config = BackendConfig(
        kind=backend,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        max_concurrency=max_concurrency,
        request_timeout_s=request_timeout_s,
        max_retries=max_retries,
        structured_output=structured_output,
        n_ctx=n_ctx,
        n_threads=n_threads,
        runtime=runtime,
    )
    cache_path = default_cache_path() if cache is True else (cache or None)
    judge = Judge(
        config=config,
        cache_path=cache_path if isinstance(cache_path, str) else None,
        guard=Guard(guard_openers or ()) if guard else None,
        parse_retries=parse_retries,
        deadline_s=deadline_s,
        temperature=temperature,
        top_logprobs=top_logprobs,
        strip_think=strip_think,
    )
    try:  # a missing or unloadable model fails the spec now, not every sample later
        judge.backend.prepare()
    except BackendError as exc:
        raise ConfigError(f"backend {backend}: {exc}") from None
    return judge


async def gather_bounded(coros: list[Coroutine[Any, Any, T]], limit: int) -> list[T]:
    """Run `coros` at most `limit` at a time; the first exception (or a cancellation: a
    deadline) cancels the rest, and closes those never started (no "never awaited")."""
    semaphore = asyncio.Semaphore(limit)

    async def one(coro: Coroutine[Any, Any, T]) -> T:
        async with semaphore:
            return await coro

    tasks = [asyncio.ensure_future(one(c)) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        for coro in coros:
            if inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
                coro.close()
        raise
